/**
 * The paraphrase set (test-data/paraphrase, CC0, written for this project): markdown documents
 * whose `## Pnnn …` sections are the passages, and questions that each name their passage.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { contentStems, contentText, jaccard, porterTerms, shared as sharedOf } from './overlap.js';

export const PARAPHRASE_DIR = resolve(import.meta.dirname, '../../test-data/paraphrase');

/** A passage id as it appears in a section heading (and so in a hit's `sectionPath`). */
export const PASSAGE_ID = /\bP\d{3}\b/;

export type QueryKind = 'paraphrase' | 'keyword';

export interface ParaphraseQuery {
  id: string;
  query: string;
  passage: string;
  kind: QueryKind;
}

export interface Passage {
  id: string;
  file: string;
  /** The `#` heading of its document. */
  docTitle: string;
  /** The `##` heading without the id. */
  title: string;
  body: string;
}

export interface ParaphraseSet {
  docs: { name: string; markdown: string }[];
  passages: Map<string, Passage>;
  queries: ParaphraseQuery[];
}

export function loadParaphrase(dir = PARAPHRASE_DIR): ParaphraseSet {
  const docsDir = join(dir, 'docs');
  const docs = readdirSync(docsDir)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((name) => ({ name, markdown: readFileSync(join(docsDir, name), 'utf8') }));
  const passages = new Map<string, Passage>();
  for (const doc of docs) {
    let docTitle = '';
    let current: Passage | undefined;
    const flush = () => {
      if (current === undefined) return;
      current.body = current.body.trim();
      if (passages.has(current.id)) throw new Error(`duplicate passage ${current.id}`);
      passages.set(current.id, current);
      current = undefined;
    };
    for (const line of doc.markdown.split('\n')) {
      const heading = /^(#{1,6})\s+(.*)$/.exec(line);
      if (heading !== null) {
        flush();
        const [, hashes = '', text = ''] = heading;
        if (hashes.length === 1) docTitle = text.trim();
        const id = /^(P\d{3})\s+(.*)$/.exec(text.trim());
        if (hashes.length === 2 && id !== null)
          current = { id: id[1]!, file: doc.name, docTitle, title: id[2]!, body: '' };
      } else if (current !== undefined) {
        current.body += line + '\n';
      }
    }
    flush();
  }
  const queries = readFileSync(join(dir, 'queries.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as ParaphraseQuery);
  return { docs, passages, queries };
}

/** Problems with the set (empty when it is well-formed). */
export function validateParaphrase(set: ParaphraseSet): string[] {
  const problems: string[] = [];
  const ids = new Set<string>();
  for (const q of set.queries) {
    if (ids.has(q.id)) problems.push(`duplicate query id ${q.id}`);
    ids.add(q.id);
    if (!set.passages.has(q.passage)) problems.push(`${q.id}: unknown passage ${q.passage}`);
    if (!['paraphrase', 'keyword'].includes(q.kind)) problems.push(`${q.id}: bad kind`);
  }
  for (const p of set.passages.values()) {
    if (p.body.length < 300 || p.body.length > 900)
      problems.push(`${p.id}: body is ${p.body.length} chars (want 300..900)`);
  }
  return problems;
}

export interface QueryOverlap {
  id: string;
  kind: QueryKind;
  passage: string;
  /** Jaccard of the crude-stemmed content words of question and passage (headings included). */
  jaccard: number;
  /** Crude stems the question shares with its passage. */
  shared: string[];
  /** Porter (FTS5) terms the question shares with its passage: what BM25 can match. */
  porterShared: string[];
}

export interface OverlapSummary {
  kind: QueryKind;
  queries: number;
  meanJaccard: number;
  meanShared: number;
  /** Share of queries with at most one shared crude stem. */
  atMostOneShared: number;
  meanPorterShared: number;
  atMostOnePorterShared: number;
  noPorterShared: number;
}

/** The indexed text of a passage: its heading trail and its section (heading line + body). */
export const passageText = (p: Passage): string => `${p.docTitle}\n${p.title}\n${p.body}`;

export function overlapReport(set: ParaphraseSet): {
  perQuery: QueryOverlap[];
  summary: OverlapSummary[];
} {
  const passageIds = [...set.passages.keys()];
  const passageTerms = porterTerms(passageIds.map((id) => passageText(set.passages.get(id)!)));
  const porterOf = new Map(passageIds.map((id, i) => [id, passageTerms[i]!]));
  const queryTermsList = porterTerms(set.queries.map((q) => contentText(q.query)));
  const perQuery = set.queries.map((q, i): QueryOverlap => {
    const passage = set.passages.get(q.passage);
    const pStems = passage === undefined ? new Set<string>() : contentStems(passageText(passage));
    const qStems = contentStems(q.query);
    return {
      id: q.id,
      kind: q.kind,
      passage: q.passage,
      jaccard: jaccard(qStems, pStems),
      shared: sharedOf(qStems, pStems),
      porterShared: sharedOf(queryTermsList[i]!, porterOf.get(q.passage) ?? new Set()),
    };
  });
  const summary = (['paraphrase', 'keyword'] as const).map((kind): OverlapSummary => {
    const rows = perQuery.filter((r) => r.kind === kind);
    const n = Math.max(1, rows.length);
    const mean = (f: (r: QueryOverlap) => number) => rows.reduce((s, r) => s + f(r), 0) / n;
    return {
      kind,
      queries: rows.length,
      meanJaccard: mean((r) => r.jaccard),
      meanShared: mean((r) => r.shared.length),
      atMostOneShared: mean((r) => (r.shared.length <= 1 ? 1 : 0)),
      meanPorterShared: mean((r) => r.porterShared.length),
      atMostOnePorterShared: mean((r) => (r.porterShared.length <= 1 ? 1 : 0)),
      noPorterShared: mean((r) => (r.porterShared.length === 0 ? 1 : 0)),
    };
  });
  return { perQuery, summary };
}
