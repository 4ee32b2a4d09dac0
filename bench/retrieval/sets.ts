/** The evaluation sets: what to upload, how to index it, the queries and what counts as relevant. */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Hit } from './harness.js';
import { loadParaphrase, PASSAGE_ID, type ParaphraseSet } from './paraphrase.js';

export const SCIFACT_DIR = resolve(import.meta.dirname, '../../../shared/datasets/scifact');

export interface EvalQuery {
  id: string;
  text: string;
  relevant: Set<string>;
  /** Row of the results table the query is reported under. */
  group: string;
  /** A second row it is also reported under (e.g. a set's overall row). */
  alsoIn?: string;
  /** How this query judges a hit, instead of the set's keyOf. */
  keyOf?: (hit: Hit) => string;
}

export interface EvalSet {
  name: string;
  files: { name: string; markdown: string }[];
  /** Files uploaded as they are (the converter picks the format by the name's extension). */
  uploads?: { name: string; data: Uint8Array }[];
  /** Told each upload's document id. */
  onUploaded?: (name: string, documentId: string) => void;
  index: { maxChars?: number; overlapChars?: number };
  queries: EvalQuery[];
  /** The unit a hit is judged as (document or passage id); hits of one unit count once. */
  keyOf(hit: Hit): string;
  /** The order of the set's rows in the results table (default: as the queries first name them). */
  groups?: string[];
  /** List, on stderr, each query whose first hit is not relevant (modes chosen by --misses). */
  reportMisses?: boolean;
  /** Report, on stderr, the hits a request with the defaults (no minScore) gets: padding. */
  reportPadding?: boolean;
}

/**
 * SciFact train, through the product's path: one markdown file, one `# <doc id>` section per
 * abstract (title as first line), one chunk per abstract (maxChars 8000). Read from the shared
 * dataset folder at run time; never copied (CC BY-NC).
 */
export function scifactSet(dir = SCIFACT_DIR, limit?: number): EvalSet {
  interface Row {
    _id: string;
    title?: string;
    text: string;
  }
  const readJsonl = (file: string): Row[] =>
    readFileSync(join(dir, file), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Row);
  const corpus = readJsonl('corpus.jsonl');
  const qrels = new Map<string, Set<string>>();
  for (const line of readFileSync(join(dir, 'qrels-train.tsv'), 'utf8').split('\n').slice(1)) {
    const [q, d, score] = line.split('\t');
    if (q === undefined || d === undefined || Number(score) <= 0) continue;
    if (!qrels.has(q)) qrels.set(q, new Set());
    qrels.get(q)?.add(d);
  }
  const queries = readJsonl('queries-train.jsonl')
    .filter((q) => qrels.has(q._id))
    .slice(0, limit)
    .map((q) => ({
      id: q._id,
      text: q.text,
      relevant: qrels.get(q._id) ?? new Set<string>(),
      group: 'scifact train',
    }));
  const markdown = corpus.map((d) => `# ${d._id}\n\n${d.title ?? ''}\n\n${d.text}\n`).join('\n');
  return {
    name: 'scifact',
    files: [{ name: 'scifact.md', markdown }],
    index: { maxChars: 8000, overlapChars: 400 },
    queries,
    keyOf: (hit) => hit.sectionPath.split(' > ')[0] ?? '',
  };
}

export const PARAPHRASE_GROUP = 'paraphrase';
export const CONTROL_GROUP = 'paraphrase controls';

/**
 * The paraphrase set, default chunking (each passage is one chunk). A hit is relevant when its
 * `sectionPath` holds the passage id; hits outside any passage (document intros) are distinct
 * non-relevant units.
 */
export function paraphraseSet(set: ParaphraseSet = loadParaphrase(), limit?: number): EvalSet {
  return {
    name: 'paraphrase',
    files: set.docs,
    index: {},
    queries: set.queries.slice(0, limit).map((q) => ({
      id: q.id,
      text: q.query,
      relevant: new Set([q.passage]),
      group: q.kind === 'keyword' ? CONTROL_GROUP : PARAPHRASE_GROUP,
    })),
    keyOf: (hit) => PASSAGE_ID.exec(hit.sectionPath)?.[0] ?? `chunk:${hit.id}`,
  };
}

/** A SciFact abstract as a markdown file to upload. */
export interface ScifactAbstract {
  name: string;
  text: string;
}

/** The first `limit` SciFact abstracts as markdown files (`# title`, then the text), for ingest benches. */
export function scifactAbstracts(limit: number): ScifactAbstract[] {
  const lines = readFileSync(join(SCIFACT_DIR, 'corpus.jsonl'), 'utf8').split('\n');
  const out: ScifactAbstract[] = [];
  for (const line of lines) {
    if (out.length >= limit) break;
    if (line.trim() === '') continue;
    const row = JSON.parse(line) as { _id: string; title: string; text: string };
    out.push({ name: `${row._id}.md`, text: `# ${row.title}\n\n${row.text}\n` });
  }
  return out;
}
