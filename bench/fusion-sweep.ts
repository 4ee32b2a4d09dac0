/**
 * Tunes the hybrid fusion (src/knowledge/retrieval/ranking.ts) on the realdocs set, SciFact train
 * and the paraphrase set:
 *
 *   npx tsx bench/fusion-sweep.ts [--limit N] [--distractors 0] [--seed 42] [--dataset DIR]
 *     [--sets realdocs,scifact,paraphrase] [--dump] [--grid-h 0.1,0.2] [--grid-p 2,4]
 *     [--grid-w 0.9] [--grid-t 1,4] [--grid-sw 0,0.15] [--grid-sg 0.1] [--save FILE] [--load FILE]
 *     [--model static|NAME --models-dir models --quantized]
 *
 * In process, for speed: each set is ingested through the product's path (storage → documents →
 * indexing: converter, chunker, embedder, SQLite), as bench/retrieval.ts does over HTTP; each
 * query's evidence (candidates, cosines, the query's largest attainable BM25) and its embedding
 * coverage are fetched once, as the retrieval service fetches them for topK 30, and fused again
 * for every parameter setting. `--distractors N` adds the paraphrase set with N synthetic sections
 * beside its 50 passages. Progress goes to stderr, the table (markdown) to stdout.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { createContext } from '../src/context.js';
import {
  calibrateBm25,
  fuse,
  fusionFor,
  type FusionOptions,
} from '../src/knowledge/retrieval/ranking.js';
import { MODEL_NAME as STATIC_MODEL } from '../src/knowledge/embeddings/static/cache.js';
import type { Candidate, ChunkStore, Evidence } from '../src/knowledge/search/chunk-store.js';
import { DEFAULT_EMBEDDING_CACHE, type Hit } from './retrieval/harness.js';
import { meanMetrics, percentile, rankMetrics, type QueryMetrics } from './retrieval/metrics.js';
import { MODEL_OPTIONS, modelEnv } from './retrieval/model-env.js';
import { realdocsSet } from './retrieval/realdocs.js';
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
    distractors: { type: 'string', default: '0' },
    seed: { type: 'string', default: '42' },
    dataset: { type: 'string', default: SCIFACT_DIR },
    sets: { type: 'string', default: 'realdocs,scifact,paraphrase' },
    /** Per-query lines (realdocs, paraphrase): r*, coverage, the answer's rank by BM25 and by cosine. */
    dump: { type: 'boolean', default: false },
    /** Writes each query's evidence (candidates, cosines, judged keys) as JSON lines to this file. */
    save: { type: 'string' },
    /** Reads the evidence a `--save` run wrote instead of ingesting the sets again. */
    load: { type: 'string' },
    /** Comma-separated values of each FusionOptions axis (keywordHalf, steepness, denseWeight, trustScale). */
    'grid-h': { type: 'string' },
    'grid-p': { type: 'string' },
    'grid-w': { type: 'string' },
    'grid-t': { type: 'string' },
    'grid-sw': { type: 'string' },
    'grid-sg': { type: 'string' },
    'grid-floor': { type: 'string' },
    'grid-ceiling': { type: 'string' },
    'grid-shrink': { type: 'string' },
    ...MODEL_OPTIONS,
  },
});
const chosen = values.sets.split(',');
const limit = values.limit === undefined ? undefined : Number(values.limit);
const distractors = Number(values.distractors);
const log = (line: string) => process.stderr.write(line + '\n');

/** Candidates per index, as RetrievalService fetches them for topK 30 (max(100, 4 × topK)). */
const TOP_K = 30;
const CANDIDATES = Math.max(100, TOP_K * 4);

interface Prepared extends Evidence {
  id: string;
  text: string;
  group: string;
  relevant: Set<string>;
  coverage: number;
  /** The unit a chunk counts as for this query. */
  keyOf: (chunkId: string) => string;
}

/** Ingests the set in a fresh context and fetches every query's evidence once. */
async function prepare(set: EvalSet): Promise<Prepared[]> {
  const dir = mkdtempSync(join(tmpdir(), `aps-sweep-${set.name}-`));
  const config = loadConfig(
    {
      DATA_DIR: dir,
      LOG_LEVEL: 'warn',
      EMBEDDING_CACHE_DIR: DEFAULT_EMBEDDING_CACHE,
      UPLOAD_MAX_BYTES: String(1 << 30),
      ...modelEnv(values),
    },
    dir,
  );
  const ctx = await createContext(config);
  try {
    // RetrievalService.store is private; the benchmark reads it directly (as harness.ts does).
    const store = (ctx.knowledge.retrieval as unknown as { store: ChunkStore }).store;
    const hits = new Map<string, Hit>();
    const t = performance.now();
    const files = [
      ...set.files.map((f) => ({ name: f.name, data: Buffer.from(f.markdown) })),
      ...(set.uploads ?? []),
    ];
    for (const f of files) {
      const file = await ctx.knowledge.storage.receive(
        Readable.from([f.data]),
        1 << 30,
        () => new Error('too big'),
      );
      const { document } = await ctx.knowledge.documents.create({
        file,
        fileName: f.name,
        projectId: undefined,
        source: undefined,
      });
      set.onUploaded?.(f.name, document.id);
      await ctx.knowledge.indexing.index(document.id, set.index);
      for (const c of await store.listChunks(document.id)) {
        hits.set(c.id, {
          id: c.id,
          documentId: document.id,
          sectionPath: c.section_path,
          content: c.content,
          score: 0,
        });
      }
    }
    log(`${set.name}: ${hits.size} chunks in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    const embedder = ctx.knowledge.embedder;
    const queries: Prepared[] = [];
    for (const q of set.queries) {
      const text = q.text.trim();
      const { vector, coverage } = await embedder.embedSearchQuery(text);
      // The store's evidence for the query, captured by a ranking that loads nothing.
      let evidence: Evidence | undefined;
      await store.search(
        { text, vector, model: embedder.model, filter: {}, limit: CANDIDATES },
        {
          rank: (e) => {
            evidence = e;
            return [];
          },
        },
      );
      if (evidence === undefined) throw new Error('the store did not rank');
      const judge = (hit: Hit) => (q.keyOf === undefined ? set.keyOf(hit) : q.keyOf(hit));
      const memo = new Map<string, string>();
      const keyOf = (chunkId: string) => {
        let key = memo.get(chunkId);
        if (key === undefined) {
          const hit = hits.get(chunkId);
          memo.set(chunkId, (key = hit === undefined ? `chunk:${chunkId}` : judge(hit)));
        }
        return key;
      };
      queries.push({
        id: q.id,
        text,
        group: q.group,
        relevant: q.relevant,
        coverage,
        keyOf,
        ...evidence,
      });
    }
    return queries;
  } finally {
    await ctx.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const byScore = (a: Candidate, b: Candidate) =>
  b.score - a.score || (a.chunkId < b.chunkId ? -1 : a.chunkId > b.chunkId ? 1 : 0);

/**
 * The baseline: the absolute fusion that the relative one replaced (BM25 half 16, steepness 5,
 * w 0.9, no coverage).
 */
function before(p: Prepared): Candidate[] {
  let best = 0;
  const K = new Map<string, number>();
  for (const k of p.keyword) {
    const v = calibrateBm25(k.score, 16, 5);
    K.set(k.chunkId, v);
    best = Math.max(best, v);
  }
  const room = 0.9 * (1 - best);
  const dense = (id: string) => Math.min(1, Math.max(0, p.cosine.get(id) ?? 0));
  const scores = new Map<string, number>();
  for (const [id, v] of K) scores.set(id, v + room * dense(id));
  for (const s of p.semantic)
    if (!scores.has(s.chunkId)) scores.set(s.chunkId, room * dense(s.chunkId));
  return [...scores].map(([chunkId, score]) => ({ chunkId, score })).sort(byScore);
}

type Ranker = (p: Prepared) => Candidate[];

/** The evidence a `--save` run wrote, by set label (sweeps again without ingesting). */
function loadEvidence(file: string): Map<string, Prepared[]> {
  const bySet = new Map<string, Prepared[]>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const row = JSON.parse(line) as {
      set: string;
      id: string;
      text: string;
      group: string;
      relevant: string[];
      keywordMax: number;
      coverage: number;
      keyword: Candidate[];
      semantic: Candidate[];
      cosine: Record<string, number | null>;
      keys: Record<string, string>;
    };
    const cosine = new Map<string, number>();
    for (const [id, c] of Object.entries(row.cosine)) if (c !== null) cosine.set(id, c);
    const list = bySet.get(row.set) ?? [];
    list.push({
      id: row.id,
      text: row.text,
      group: row.group,
      relevant: new Set(row.relevant),
      keywordMax: row.keywordMax,
      coverage: row.coverage,
      keyword: row.keyword,
      semantic: row.semantic,
      cosine,
      keyOf: (chunkId) => row.keys[chunkId] ?? `chunk:${chunkId}`,
    });
    bySet.set(row.set, list);
  }
  return bySet;
}

const sets: { label: string; queries: Prepared[] }[] = [];
const loaded = values.load === undefined ? undefined : loadEvidence(values.load);
for (const [label, make] of [
  ['realdocs', () => realdocsSet(undefined, limit)],
  ['scifact', () => scifactSet(values.dataset, limit)],
  ['paraphrase', () => paraphraseSet(undefined, limit)],
] as const) {
  if (!chosen.includes(label)) continue;
  const queries = loaded === undefined ? await prepare(make()) : loaded.get(label);
  if (queries !== undefined) sets.push({ label, queries });
}
if (values.save !== undefined) {
  const lines: string[] = [];
  for (const { label, queries } of sets) {
    for (const p of queries) {
      const ids = new Set([...p.keyword, ...p.semantic].map((c) => c.chunkId));
      lines.push(
        JSON.stringify({
          set: label,
          id: p.id,
          text: p.text,
          group: p.group,
          relevant: [...p.relevant],
          keywordMax: p.keywordMax,
          coverage: p.coverage,
          keyword: p.keyword,
          semantic: p.semantic,
          cosine: Object.fromEntries([...ids].map((id) => [id, p.cosine.get(id) ?? null])),
          keys: Object.fromEntries([...ids].map((id) => [id, p.keyOf(id)])),
        }),
      );
    }
  }
  writeFileSync(values.save, lines.join('\n') + '\n');
  log(`evidence of ${lines.length} queries written to ${values.save}`);
  process.exit(0);
}
if (values.dump) {
  for (const { label, queries } of sets) {
    if (label === 'scifact') continue;
    for (const p of queries) {
      const top = fuse(p.keyword, p.semantic, p.cosine, p)[0]?.score ?? 0;
      console.log(`${p.id}\ttop ${top.toFixed(3)}\t${p.text}`);
    }
  }
}
if (values.dump) {
  for (const { label, queries } of sets) {
    if (label === 'scifact') continue;
    for (const p of queries) {
      const rankBy = (list: Candidate[]) =>
        [...list].sort(byScore).findIndex((c) => p.relevant.has(p.keyOf(c.chunkId)));
      const best = Math.max(0, ...p.keyword.map((k) => k.score));
      console.log(
        [
          label,
          p.group,
          `max ${p.keywordMax.toFixed(1)}`,
          `bm25* ${best.toFixed(1)}`,
          `r* ${(best / (p.keywordMax || 1)).toFixed(3)}`,
          `cov ${p.coverage.toFixed(2)}`,
          `cos* ${Math.max(0, ...p.semantic.map((s) => s.score)).toFixed(2)}`,
          `kwRank ${rankBy(p.keyword)}`,
          `cosRank ${rankBy(p.semantic)}`,
        ].join('\t'),
      );
    }
  }
  process.exit(0);
}
if (distractors > 0) {
  const set = paraphraseSet(undefined, limit);
  const generator = new SentenceGenerator(
    set.files.map((f) => f.markdown),
    rng(Number(values.seed)),
  );
  set.files = [...set.files, ...syntheticFiles(generator, distractors)];
  set.name = `paraphrase-${distractors}`;
  sets.push({ label: 'distractors', queries: await prepare(set) });
}

interface Evaluation {
  metrics: Map<string, QueryMetrics>;
  /** realdocs: the share of answerable questions whose top score is ≥ the threshold that drops
   * 50 % of the unanswerable ones (their median top score). */
  keptAtHalf: number;
  /** realdocs: top score p10 of answerable questions, median of unanswerable ones. */
  answerableP10: number;
  unanswerableMedian: number;
  /** realdocs: the chance that an answerable question's top score beats an unanswerable one's. */
  separation: number;
}

/** Mean metrics per set label and query group. */
function evaluate(rank: Ranker): Evaluation {
  const metrics = new Map<string, QueryMetrics>();
  const answerable: number[] = [];
  const unanswerable: number[] = [];
  for (const { label, queries } of sets) {
    const perGroup = new Map<string, QueryMetrics[]>();
    for (const p of queries) {
      const fused = rank(p);
      if (label === 'realdocs') {
        (p.relevant.size === 0 ? unanswerable : answerable).push(fused[0]?.score ?? 0);
      }
      if (p.relevant.size === 0) continue;
      const ranked = [...new Set(fused.slice(0, TOP_K).map((c) => p.keyOf(c.chunkId)))];
      const m = rankMetrics(ranked, p.relevant);
      const group =
        label === 'realdocs'
          ? p.group
          : label === 'scifact'
            ? 'scifact'
            : `${label} ${p.group.startsWith(CONTROL_GROUP) ? 'controls' : 'questions'}`;
      for (const g of label === 'realdocs' ? [group, 'realdocs all'] : [group]) {
        const list = perGroup.get(g) ?? [];
        list.push(m);
        perGroup.set(g, list);
      }
    }
    for (const [group, list] of perGroup) metrics.set(group, meanMetrics(list));
  }
  const a = [...answerable].sort((x, y) => x - y);
  const u = [...unanswerable].sort((x, y) => x - y);
  const median = percentile(u, 0.5);
  return {
    metrics,
    keptAtHalf: a.filter((x) => x > median).length / Math.max(1, a.length),
    answerableP10: percentile(a, 0.1),
    unanswerableMedian: median,
    separation:
      a.reduce((sum, x) => sum + u.reduce((n, y) => n + (x > y ? 1 : x === y ? 0.5 : 0), 0), 0) /
      Math.max(1, a.length * u.length),
  };
}

const COLUMNS: [string, string, keyof QueryMetrics][] = [
  ['rd MRR all', 'realdocs all', 'mrr10'],
  ['rd MRR kw', 'realdocs keyword', 'mrr10'],
  ['rd MRR para', 'realdocs paraphrase', 'mrr10'],
  ['rd MRR fact', 'realdocs fact', 'mrr10'],
  ['SciFact nDCG@10', 'scifact', 'ndcg10'],
  ['para R@5', 'paraphrase questions', 'recall5'],
  ['controls R@5', 'paraphrase controls', 'recall5'],
  ...(distractors > 0
    ? ([[`+${distractors} R@5`, 'distractors questions', 'recall5']] as [
        string,
        string,
        keyof QueryMetrics,
      ][])
    : []),
];
const cell = (e: Evaluation, [, key, metric]: (typeof COLUMNS)[number]) =>
  e.metrics.get(key)?.[metric] ?? NaN;

interface Row {
  label: string;
  options?: FusionOptions;
  e: Evaluation;
}
const rows: Row[] = [
  { label: 'BM25 alone', e: evaluate((p) => [...p.keyword].sort(byScore)) },
  { label: 'cosine alone', e: evaluate((p) => [...p.semantic].sort(byScore)) },
  { label: 'before (absolute half 16, p 5)', e: evaluate(before) },
];
const grid: FusionOptions[] = [];
// The model's own fusion (ranking.ts fusionFor) is the base every axis varies.
const base = fusionFor(values.model === 'static' ? STATIC_MODEL : `transformers:${values.model}`);
const axis = (name: string, fallback: number) =>
  (values[name as 'grid-h'] ?? '') === ''
    ? [fallback]
    : (values[name as 'grid-h'] as string).split(',').map(Number);
for (const keywordHalf of axis('grid-h', base.keywordHalf))
  for (const steepness of axis('grid-p', base.steepness))
    for (const denseWeight of axis('grid-w', base.denseWeight))
      for (const trustScale of axis('grid-t', base.trustScale))
        for (const standOutWeight of axis('grid-sw', base.standOutWeight))
          for (const standOutGap of axis('grid-sg', base.standOutGap))
            for (const cosineFloor of axis('grid-floor', base.cosineFloor))
              for (const cosineCeiling of axis('grid-ceiling', base.cosineCeiling))
                for (const roomShrink of axis('grid-shrink', base.roomShrink))
                  grid.push({
                    ...base,
                    keywordHalf,
                    steepness,
                    denseWeight,
                    trustScale,
                    standOutWeight,
                    standOutGap,
                    cosineFloor,
                    cosineCeiling,
                    roomShrink,
                  });
for (const options of grid) {
  rows.push({
    label: `h ${options.keywordHalf}, p ${options.steepness}, w ${options.denseWeight}, t ${options.trustScale}, S ${options.standOutWeight}/${options.standOutGap}, cos ${options.cosineFloor}–${options.cosineCeiling}, shrink ${options.roomShrink}`,
    options,
    e: evaluate((p) => fuse(p.keyword, p.semantic, p.cosine, p, options)),
  });
}
log(`${grid.length} settings evaluated`);

const isDefault = (o?: FusionOptions) =>
  o !== undefined && (Object.keys(base) as (keyof FusionOptions)[]).every((k) => o[k] === base[k]);
const show = (r: Row) =>
  [
    ...COLUMNS.map((c) => cell(r.e, c).toFixed(3)),
    r.e.answerableP10.toFixed(2),
    r.e.unanswerableMedian.toFixed(2),
    r.e.keptAtHalf.toFixed(2),
    r.e.separation.toFixed(3),
  ].join(' | ');
const header = [
  ...COLUMNS.map((c) => c[0]),
  'ans p10',
  'unans median',
  'kept @ unans median',
  'separation',
];
console.log(`| fusion | ${header.join(' | ')} |`);
console.log(`|---|${header.map(() => '---').join('|')}|`);
for (const r of rows) {
  console.log(`| ${isDefault(r.options) ? `**${r.label} (default)**` : r.label} | ${show(r)} |`);
}

// The target: hybrid at least as good as keywords alone and as the cosine alone on every set and
// realdocs question type; then the best realdocs MRR@10 overall.
const [bm25, cosineAlone] = [rows[0]!.e, rows[1]!.e];
const m = (e: Evaluation, key: string, metric: keyof QueryMetrics) =>
  e.metrics.get(key)?.[metric] ?? 0;
const atLeastBoth = (e: Evaluation, key: string, metric: keyof QueryMetrics) =>
  m(e, key, metric) >= Math.max(m(bm25, key, metric), m(cosineAlone, key, metric));
const eligible = rows.filter(
  (r) =>
    r.options !== undefined &&
    ['realdocs keyword', 'realdocs paraphrase', 'realdocs fact'].every((g) =>
      atLeastBoth(r.e, g, 'mrr10'),
    ) &&
    atLeastBoth(r.e, 'scifact', 'ndcg10') &&
    atLeastBoth(r.e, 'paraphrase questions', 'recall5'),
);
eligible.sort((a, b) => m(b.e, 'realdocs all', 'mrr10') - m(a.e, 'realdocs all', 'mrr10'));
console.log(`\n${eligible.length} settings meet the targets; the best by realdocs MRR@10:`);
for (const r of eligible.slice(0, 12)) {
  console.log(`- ${r.label}${isDefault(r.options) ? ' (default)' : ''}: ${show(r)}`);
}
