/**
 * Tunes the hybrid fusion (src/knowledge/fusion.ts) on SciFact train and on the paraphrase set:
 *
 *   npx tsx bench/fusion-sweep.ts [--limit N] [--distractors 1000] [--seed 42] [--dataset DIR]
 *
 * In process, for speed: each set is ingested through the product's path (storage → documents →
 * indexing: converter, chunker, embedder, SQLite), as bench/retrieval.ts does over HTTP; each
 * query's candidates are then fetched once from the store, as the retrieval service fetches them
 * for topK 30, and fused again for every parameter setting. The paraphrase set is also run with
 * `--distractors N` synthetic sections beside its 50 passages (0 skips it): a larger collection
 * raises BM25's IDF, so the keyword evidence of paraphrase questions grows and the fusion has to
 * stay dense-weighted anyway. Progress goes to stderr, the table (markdown) to stdout.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { createContext } from '../src/context.js';
import { DEFAULT_FUSION, fuse, type FusionOptions } from '../src/knowledge/fusion.js';
import type { Candidate, ChunkStore, Evidence } from '../src/knowledge/search/chunk-store.js';
import { DEFAULT_EMBEDDING_CACHE } from './retrieval/harness.js';
import { meanMetrics, rankMetrics, type QueryMetrics } from './retrieval/metrics.js';
import {
  CONTROL_GROUP,
  paraphraseSet,
  SCIFACT_DIR,
  scifactSet,
  type EvalSet,
} from './retrieval/sets.js';
import { rng, SentenceGenerator, syntheticFiles } from './retrieval/synthetic.js';

const { values } = parseArgs({
  options: {
    limit: { type: 'string' },
    distractors: { type: 'string', default: '1000' },
    seed: { type: 'string', default: '42' },
    dataset: { type: 'string', default: SCIFACT_DIR },
  },
});
const limit = values.limit === undefined ? undefined : Number(values.limit);
const distractors = Number(values.distractors);
const log = (line: string) => process.stderr.write(line + '\n');

/** Candidates per index, as RetrievalService fetches them for topK 30 (max(100, 4 × topK)). */
const TOP_K = 30;
const CANDIDATES = Math.max(100, TOP_K * 4);

interface Prepared {
  group: string;
  relevant: Set<string>;
  keyword: Candidate[];
  semantic: Candidate[];
  cosine: Map<string, number>;
}

/** Ingests the set in a fresh context and fetches every query's candidates once. */
async function prepare(set: EvalSet): Promise<{ queries: Prepared[]; keyOf: Map<string, string> }> {
  const dir = mkdtempSync(join(tmpdir(), `aps-sweep-${set.name}-`));
  const config = loadConfig(
    {
      DATA_DIR: dir,
      LOG_LEVEL: 'warn',
      EMBEDDING_CACHE_DIR: DEFAULT_EMBEDDING_CACHE,
      UPLOAD_MAX_BYTES: String(1 << 30),
    },
    dir,
  );
  const ctx = await createContext(config);
  try {
    // RetrievalService.store is private; the benchmark reads it directly (as harness.ts does).
    const store = (ctx.knowledge.retrieval as unknown as { store: ChunkStore }).store;
    const keyOf = new Map<string, string>();
    const t = performance.now();
    for (const f of set.files) {
      const file = await ctx.knowledge.storage.receive(
        Readable.from([Buffer.from(f.markdown)]),
        1 << 30,
        () => new Error('too big'),
      );
      const { document } = await ctx.knowledge.documents.create({
        file,
        fileName: f.name,
        projectId: undefined,
        source: undefined,
      });
      await ctx.knowledge.indexing.index(document.id, set.index);
      for (const c of await store.listChunks(document.id))
        keyOf.set(
          c.id,
          set.keyOf({
            id: c.id,
            documentId: document.id,
            sectionPath: c.section_path,
            content: c.content,
            score: 0,
          }),
        );
    }
    log(`${set.name}: ${keyOf.size} chunks in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    const embedder = ctx.knowledge.embedder;
    const queries: Prepared[] = [];
    for (const q of set.queries) {
      const text = q.text.trim();
      const vector = await embedder.embedQuery(text);
      // The store's evidence for the query, captured by a ranking that loads nothing.
      let evidence: Evidence | undefined;
      await store.search(
        { text, vector, model: embedder.model, filter: {}, limit: CANDIDATES },
        (e) => {
          evidence = e;
          return [];
        },
      );
      if (evidence === undefined) throw new Error('the store did not rank');
      queries.push({ group: q.group, relevant: q.relevant, ...evidence });
    }
    return { queries, keyOf };
  } finally {
    await ctx.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const byScore = (a: Candidate, b: Candidate) =>
  b.score - a.score || (a.chunkId < b.chunkId ? -1 : a.chunkId > b.chunkId ? 1 : 0);

/** The fusion before this sweep, for comparison: every keyword match above every meaning-only one. */
function twoTiers(keyword: Candidate[], semantic: Candidate[], cosine: Map<string, number>) {
  const scores = new Map<string, number>();
  for (const k of keyword) {
    const kw = k.score / (k.score + 16);
    scores.set(k.chunkId, 0.1 + 0.9 * (0.9 * kw + 0.1 * Math.max(0, cosine.get(k.chunkId) ?? 0)));
  }
  for (const s of semantic)
    if (!scores.has(s.chunkId)) scores.set(s.chunkId, 0.099 * Math.max(0, s.score));
  return [...scores].map(([chunkId, score]) => ({ chunkId, score })).sort(byScore);
}

type Ranker = (p: Prepared) => Candidate[];

const sets: { label: string; data: Awaited<ReturnType<typeof prepare>> }[] = [];
sets.push({ label: 'scifact', data: await prepare(scifactSet(values.dataset, limit)) });
sets.push({ label: 'paraphrase', data: await prepare(paraphraseSet(undefined, limit)) });
if (distractors > 0) {
  const set = paraphraseSet(undefined, limit);
  const generator = new SentenceGenerator(
    set.files.map((f) => f.markdown),
    rng(Number(values.seed)),
  );
  set.files = [...set.files, ...syntheticFiles(generator, distractors)];
  set.name = `paraphrase-${distractors}`;
  sets.push({ label: 'distractors', data: await prepare(set) });
}

/** Mean metrics per set label and query group. */
function evaluate(rank: Ranker): Map<string, QueryMetrics> {
  const out = new Map<string, QueryMetrics>();
  for (const { label, data } of sets) {
    const perGroup = new Map<string, QueryMetrics[]>();
    for (const p of data.queries) {
      const ranked = [
        ...new Set(
          rank(p)
            .slice(0, TOP_K)
            .map((c) => data.keyOf.get(c.chunkId) ?? `chunk:${c.chunkId}`),
        ),
      ];
      const list = perGroup.get(p.group) ?? [];
      list.push(rankMetrics(ranked, p.relevant));
      perGroup.set(p.group, list);
    }
    for (const [group, metrics] of perGroup) {
      const kind = group.startsWith(CONTROL_GROUP) ? 'controls' : 'questions';
      out.set(label === 'scifact' ? 'scifact' : `${label} ${kind}`, meanMetrics(metrics));
    }
  }
  return out;
}

const COLUMNS: [string, string, keyof QueryMetrics][] = [
  ['SciFact nDCG@10', 'scifact', 'ndcg10'],
  ['para R@5', 'paraphrase questions', 'recall5'],
  ['para R@10', 'paraphrase questions', 'recall10'],
  ['para nDCG@10', 'paraphrase questions', 'ndcg10'],
  ['para MRR@10', 'paraphrase questions', 'mrr10'],
  ['controls R@5', 'paraphrase controls', 'recall5'],
  ...(distractors > 0
    ? ([
        [`+${distractors} R@5`, 'distractors questions', 'recall5'],
        [`+${distractors} nDCG@10`, 'distractors questions', 'ndcg10'],
        [`+${distractors} controls R@5`, 'distractors controls', 'recall5'],
      ] as [string, string, keyof QueryMetrics][])
    : []),
];
type Column = (typeof COLUMNS)[number];
const cell = (m: Map<string, QueryMetrics>, [, key, metric]: Column) => m.get(key)?.[metric] ?? NaN;
/** SciFact nDCG@10 with 4 digits (its differences are small), the rest with 3. */
const show = (m: Map<string, QueryMetrics>, c: Column) =>
  cell(m, c).toFixed(c === COLUMNS[0] ? 4 : 3);

interface Row {
  label: string;
  options?: FusionOptions;
  metrics: Map<string, QueryMetrics>;
}
const rows: Row[] = [
  { label: 'BM25 alone', metrics: evaluate((p) => [...p.keyword].sort(byScore)) },
  { label: 'cosine alone', metrics: evaluate((p) => [...p.semantic].sort(byScore)) },
  {
    label: 'two tiers (before)',
    metrics: evaluate((p) => twoTiers(p.keyword, p.semantic, p.cosine)),
  },
];
const grid: FusionOptions[] = [];
for (const bm25Half of [8, 12, 16, 20, 24])
  for (const bm25Steepness of [1, 2, 3, 4, 5, 6, 8])
    for (const denseWeight of [0.5, 0.75, 0.9, 1])
      grid.push({ bm25Half, bm25Steepness, denseWeight });
for (const options of grid) {
  rows.push({
    label: `half ${options.bm25Half}, p ${options.bm25Steepness}, w ${options.denseWeight}`,
    options,
    metrics: evaluate((p) => fuse(p.keyword, p.semantic, p.cosine, options)),
  });
}
log(`${grid.length} settings evaluated`);

const isDefault = (o?: FusionOptions) =>
  o !== undefined &&
  o.bm25Half === DEFAULT_FUSION.bm25Half &&
  o.bm25Steepness === DEFAULT_FUSION.bm25Steepness &&
  o.denseWeight === DEFAULT_FUSION.denseWeight;
console.log(`| fusion | ${COLUMNS.map((c) => c[0]).join(' | ')} |`);
console.log(`|---|${COLUMNS.map(() => '---').join('|')}|`);
for (const r of rows) {
  const label = isDefault(r.options) ? `**${r.label} (default)**` : r.label;
  console.log(`| ${label} | ${COLUMNS.map((c) => show(r.metrics, c)).join(' | ')} |`);
}

// The best settings by the rule: never below BM25 alone on SciFact, then the most
// paraphrase Recall@5 (with and without distractors), then the best nDCG@10 summed over the sets.
const bm25 = cell(rows[0]!.metrics, COLUMNS[0]!);
const sum = (r: Row, metric: keyof QueryMetrics, keys: string[]) =>
  keys.reduce((total, key) => total + (r.metrics.get(key)?.[metric] ?? 0), 0);
const questions = ['paraphrase questions', 'distractors questions'];
const eligible = rows.filter(
  (r) => r.options !== undefined && cell(r.metrics, COLUMNS[0]!) >= bm25,
);
eligible.sort(
  (a, b) =>
    sum(b, 'recall5', questions) - sum(a, 'recall5', questions) ||
    sum(b, 'ndcg10', ['scifact', ...questions]) - sum(a, 'ndcg10', ['scifact', ...questions]),
);
console.log(
  `\nBest by the rule (SciFact ≥ BM25 alone ${bm25.toFixed(4)}, then paraphrase Recall@5, ` +
    'then nDCG@10):',
);
for (const r of eligible.slice(0, 10)) {
  const values = COLUMNS.map((c) => `${c[0]} ${show(r.metrics, c)}`).join(', ');
  console.log(`- ${r.label}${isDefault(r.options) ? ' (default)' : ''}: ${values}`);
}
