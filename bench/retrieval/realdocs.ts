/**
 * The real-document set (test-data/realdocs): documentation shipped by Debian packages, uploaded
 * as the files they are (PDF, HTML, plain text, markdown, man page text) so the product's own
 * converter and chunker run on them, and questions written as users ask them.
 *
 * A hit answers a question when it comes from the question's document and its content holds one
 * of the question's quotes (compared without case, markdown emphasis, escapes or link targets, and
 * with runs of white space as one space): robust to chunk ids and chunk boundaries moving.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Hit } from './harness.js';
import type { EvalQuery, EvalSet } from './sets.js';

export const REALDOCS_DIR = resolve(import.meta.dirname, '../../test-data/realdocs');

/** The kinds of questions; `unanswerable` ones have no answer in the corpus. */
export const QUESTION_TYPES = ['keyword', 'paraphrase', 'fact'] as const;
export type QuestionType = (typeof QUESTION_TYPES)[number] | 'unanswerable';

export interface RealdocsQuestion {
  id: string;
  type: QuestionType;
  question: string;
  /** The file name of the document that answers it (absent when unanswerable). */
  doc?: string;
  /** Distinctive substrings of the answering passage; a hit holding any one of them answers. */
  quotes?: string[];
}

/** Text as compared: markdown links reduced to their text, no emphasis or escapes, one space. */
export function normalizeText(text: string): string {
  return text
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[\\*_`]/g, '')
    .replace(/\s+/g, ' ');
}

export function loadRealdocsQuestions(dir = REALDOCS_DIR): RealdocsQuestion[] {
  return readFileSync(join(dir, 'questions.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as RealdocsQuestion);
}

/** The document names the questions refer to, in first-seen order. */
export function realdocsFiles(questions: readonly RealdocsQuestion[]): string[] {
  return [...new Set(questions.flatMap((q) => (q.doc === undefined ? [] : [q.doc])))];
}

export const UNANSWERABLE_GROUP = 'realdocs unanswerable';
export const REALDOCS_ALL = 'realdocs all';

/**
 * The set: every document of the questions uploaded as it is; each answerable question reported
 * under its type and under `realdocs all`; unanswerable ones only under UNANSWERABLE_GROUP (their
 * top scores calibrate minScore).
 */
export function realdocsSet(dir = REALDOCS_DIR, limit?: number): EvalSet {
  const questions = loadRealdocsQuestions(dir).slice(0, limit);
  const names = realdocsFiles(questions);
  /** Document id → file name, learned as the bench uploads them. */
  const documentNames = new Map<string, string>();
  const queries: EvalQuery[] = questions.map((q) => {
    if (q.type === 'unanswerable') {
      return { id: q.id, text: q.question, relevant: new Set(), group: UNANSWERABLE_GROUP };
    }
    const quotes = (q.quotes ?? []).map(normalizeText);
    const answers = (hit: Hit) =>
      documentNames.get(hit.documentId) === q.doc &&
      quotes.some((quote) => normalizeText(hit.content).includes(quote));
    return {
      id: q.id,
      text: q.question,
      relevant: new Set(['answer']),
      group: `realdocs ${q.type}`,
      alsoIn: REALDOCS_ALL,
      keyOf: (hit: Hit) => (answers(hit) ? 'answer' : `chunk:${hit.id}`),
    };
  });
  return {
    name: 'realdocs',
    files: [],
    uploads: names.map((name) => ({ name, data: readFileSync(join(dir, name)) })),
    onUploaded: (name, id) => documentNames.set(id, name),
    index: {},
    queries,
    keyOf: (hit) => `chunk:${hit.id}`,
  };
}
