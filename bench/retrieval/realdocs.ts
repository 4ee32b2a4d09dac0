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

/** The objects of a JSON Lines file (blank lines skipped). */
export function readJsonl<T>(file: string): T[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

export function loadRealdocsQuestions(dir = REALDOCS_DIR): RealdocsQuestion[] {
  return readJsonl<RealdocsQuestion>(join(dir, 'questions.jsonl'));
}

/** The document names the questions refer to, in first-seen order. */
export function realdocsFiles(questions: readonly { doc?: string }[]): string[] {
  return [...new Set(questions.flatMap((q) => (q.doc === undefined ? [] : [q.doc])))];
}

export const UNANSWERABLE_GROUP = 'realdocs unanswerable';
export const REALDOCS_ALL = 'realdocs all';

/** A question judged by quotes (realdocs' own, or another set's such as identifiers). */
export interface QuotedQuestion {
  id: string;
  question: string;
  /** Absent: unanswerable. */
  doc?: string;
  quotes?: string[];
}

export interface QuoteSetOptions<Q extends QuotedQuestion> {
  /** The set's name (the bench's server label). */
  name: string;
  questions: readonly Q[];
  /** Where the documents named by the questions are read from. */
  docDir: string;
  /** The row an answerable question is reported under. */
  group: (q: Q) => string;
  /** The row every answerable question is also reported under. */
  all: string;
  /** Which questions have no answer (default: those without a doc). */
  unanswerable?: (q: Q) => boolean;
}

/**
 * A set judged by quotes: every document of the questions uploaded as it is (read from docDir);
 * each answerable question reported under its group and under `all`; unanswerable ones only under
 * UNANSWERABLE_GROUP. A hit answers when it comes from the question's document and its
 * content holds one of the quotes (both normalized by normalizeText).
 */
export function quoteSet<Q extends QuotedQuestion>(options: QuoteSetOptions<Q>): EvalSet {
  const { questions, docDir } = options;
  const names = realdocsFiles(questions);
  const unanswerable = options.unanswerable ?? ((q: Q) => q.doc === undefined);
  /** Document id → file name, learned as the bench uploads them. */
  const documentNames = new Map<string, string>();
  const queries: EvalQuery[] = questions.map((q) => {
    if (unanswerable(q)) {
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
      group: options.group(q),
      alsoIn: options.all,
      keyOf: (hit: Hit) => (answers(hit) ? 'answer' : `chunk:${hit.id}`),
    };
  });
  return {
    name: options.name,
    files: [],
    uploads: names.map((name) => ({ name, data: readFileSync(join(docDir, name)) })),
    onUploaded: (name, id) => documentNames.set(id, name),
    index: {},
    queries,
    keyOf: (hit) => `chunk:${hit.id}`,
    reportPadding: true,
  };
}

/**
 * The set: every document of the questions uploaded as it is; each answerable question reported
 * under its type and under `realdocs all`; unanswerable ones only under UNANSWERABLE_GROUP (their
 * top scores calibrate minScore).
 */
export function realdocsSet(dir = REALDOCS_DIR, limit?: number): EvalSet {
  return quoteSet({
    name: 'realdocs',
    questions: loadRealdocsQuestions(dir).slice(0, limit),
    docDir: dir,
    group: (q) => `realdocs ${q.type}`,
    all: REALDOCS_ALL,
    unanswerable: (q) => q.type === 'unanswerable',
  });
}
