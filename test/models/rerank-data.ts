/**
 * What the rerank suites read: real chunks (curl's FAQ cut as indexing cuts it, ~1,400
 * characters), (query, passage) pairs, the judged questions of test-data/realdocs, and how a
 * latency is summed up.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chunkMarkdown } from '../../src/knowledge/chunking/markdown-chunker.js';

const REALDOCS = join(import.meta.dirname, '../../test-data/realdocs');

export const FAQ_FILE = join(REALDOCS, 'curl-faq.txt');

/** `count` chunks of curl's FAQ at the indexing defaults (maxChars 1400, overlap 15 %). */
export function faqChunks(count = 30): string[] {
  const text = readFileSync(FAQ_FILE, 'utf8');
  return chunkMarkdown(text, { maxChars: 1400, overlapChars: 210 })
    .map((c) => c.content)
    .filter((c) => c.length >= 900)
    .slice(0, count);
}

/** The query the 30 chunks are reranked for in the latency figures. */
export const FAQ_QUERY = 'How can I upload a file with curl using a POST request?';

/** Pairs with clear answers (from the research notes of issue 40), grouped by query. */
export const PAIRS: { query: string; passages: string[] }[] = [
  {
    query: 'How many people live in Berlin?',
    passages: [
      'Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.',
      'New York City is famous for the Metropolitan Museum of Art.',
    ],
  },
  {
    query: 'how do I make curl follow redirects',
    passages: [
      'Use the -L, --location option to tell curl to follow HTTP redirects to the new location.',
      'libcurl is a free and easy-to-use client-side URL transfer library.',
    ],
  },
  {
    query: 'what is the capital of France',
    passages: ['Paris is the capital and most populous city of France.'],
  },
];

export interface JudgedQuestion {
  id: string;
  type: string;
  doc: string;
  question: string;
  quotes: string[];
}

/** The judged questions about one realdocs document. */
export function judgedQuestions(doc: string): JudgedQuestion[] {
  return readFileSync(join(REALDOCS, 'questions.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as JudgedQuestion)
    .filter((q) => q.doc === doc);
}

const squash = (s: string) => s.replace(/\s+/g, ' ').toLowerCase();

/** Whether a passage holds one of the question's quotes (whitespace and case aside). */
export function answers(content: string, question: JudgedQuestion): boolean {
  const text = squash(content);
  return question.quotes.some((q) => text.includes(squash(q)));
}

/** p50 and p95 (nearest rank) of some durations, rounded to ms. */
export function percentiles(ms: readonly number[]): { p50: number; p95: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
  return { p50: Math.round(at(0.5) ?? 0), p95: Math.round(at(0.95) ?? 0) };
}
