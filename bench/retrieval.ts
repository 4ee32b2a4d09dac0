/**
 * Retrieval quality and speed through the product's own path:
 *
 *   npx tsx bench/retrieval.ts [--sets scifact,paraphrase,realdocs,identifiers] [--limit N]
 *                              [--modes keyword,semantic,hybrid] [--misses hybrid]
 *                              [--scale 10000,100000] [--scale-queries 200] [--files-per 5000]
 *                              [--seed 42] [--distractors N] [--overlap] [--dataset DIR]
 *                              [--db sqlite|postgres] [--pg-database NAME]
 *
 * `--sets none` skips the quality sets (e.g. with --scale only).
 *
 * For each set a real server starts on port 0 over a temporary data directory; the documents are
 * uploaded as multipart over HTTP, indexed (converter → chunker → embedder → SQLite) and every
 * query is sent to POST /knowledge/retrieve in each mode (topK 30, minScore -1; a unit's rank is
 * that of its best chunk). Latency is the client-side HTTP round trip, query embedding included.
 *
 * - scifact: SciFact train (../shared/datasets/scifact, not shipped), as one markdown file of `# <doc id>` sections.
 * - identifiers (not in the default sets: it downloads Debian packages with apt-get on its first
 *   run, into bench/.cache/identifiers): test-data/identifiers, identifier queries
 *   (`asn1_der_decoding`, `XML_SetDefaultHandlerExpand`, `valgrind --num-callers`, `os.path.join`,
 *   `std::vector::emplace_back`, `CVE-2022-40674`…) over real API references (libtasn1, expat,
 *   valgrind, Python, cppreference), one row per kind of identifier and `identifiers all`; hit@1
 *   is "the identifier's own section first". The queries whose first hit is not the answer are
 *   listed on stderr for the modes of `--misses` (default hybrid; `none` lists none).
 * - paraphrase: test-data/paraphrase (CC0): questions that share few content words with their
 *   passage, plus keyword "controls"; a hit is relevant when its sectionPath holds the passage id.
 *   The content-word overlap of the questions is checked and reported (`--overlap`: per query).
 *   `--distractors N` indexes N synthetic sections (same vocabulary) beside the 50 passages, a
 *   harder variant: with 50 candidates only, even a weak dense model finds most passages.
 * - --scale N,…: synthetic corpora of N ~1,000-character chunks (files of ≤ 5,000 sections),
 *   random queries per mode through HTTP, and beside them the floor: query embedding and the
 *   bare store searches (the server's ChunkStore called directly), plus the process RSS.
 *
 * `--db postgres` runs the same on PostgreSQL (BENCH_DATABASE_URL, or a throwaway cluster started
 * by scripts/postgres/cluster.sh), files kept in the database, and adds the recall@10 of the
 * HNSW vector search against exact search at each scale. `--pg-database NAME` (one scale) keeps
 * the filled database under that name: a later run with the same --scale and --seed finds it
 * filled and measures it again without ingesting (e.g. two builds on the same data).
 *
 * Progress goes to stderr; the results (one table) to stdout.
 */
import { parseArgs } from 'node:util';
import { BenchServer, MODES, type Hit, type Mode } from './retrieval/harness.js';
import {
  latencySummary,
  meanMetrics,
  rankMetrics,
  type QueryMetrics,
} from './retrieval/metrics.js';
import {
  loadParaphrase,
  overlapReport,
  validateParaphrase,
  type OverlapSummary,
} from './retrieval/paraphrase.js';
import {
  CONTROL_GROUP,
  PARAPHRASE_GROUP,
  paraphraseSet,
  SCIFACT_DIR,
  scifactSet,
  type EvalSet,
} from './retrieval/sets.js';
import { buildFtsQuery, FTS5_BM25 } from '../src/knowledge/search/sqlite/keyword/fts-query.js';
import type { Ranking } from '../src/knowledge/search/chunk-store.js';
import { SqliteChunkStore } from '../src/knowledge/search/sqlite/sqlite-chunk-store.js';
import { hnswCurve, hnswRecall, startPostgres, storeGraph } from './retrieval/postgres.js';
import { rng, SentenceGenerator, syntheticFiles } from './retrieval/synthetic.js';
import { QueryReport } from './retrieval/query-report.js';
import { realdocsSet } from './retrieval/realdocs.js';
import { identifiersSet } from './retrieval/identifiers.js';
import { calibrationTable } from './retrieval/calibration.js';
import { MODEL_OPTIONS, modelEnv } from './retrieval/model-env.js';

const { values } = parseArgs({
  options: {
    sets: { type: 'string', default: 'scifact,paraphrase,realdocs' },
    limit: { type: 'string' },
    modes: { type: 'string', default: MODES.join(',') },
    misses: { type: 'string', default: 'hybrid' },
    scale: { type: 'string', default: '' },
    'scale-queries': { type: 'string', default: '200' },
    'files-per': { type: 'string', default: '5000' },
    seed: { type: 'string', default: '42' },
    dataset: { type: 'string', default: SCIFACT_DIR },
    overlap: { type: 'boolean', default: false },
    distractors: { type: 'string', default: '0' },
    db: { type: 'string', default: 'sqlite' },
    'pg-database': { type: 'string' },
    ...MODEL_OPTIONS,
  },
});
const embeddingEnv = modelEnv(values);

const log = (line: string) => process.stderr.write(line + '\n');
const list = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '' && x !== 'none');
const limit = values.limit === undefined ? undefined : Number(values.limit);
const modeList = (s: string) =>
  list(s).map((m) => {
    if (!(MODES as readonly string[]).includes(m)) throw new Error(`unknown mode ${m}`);
    return m as Mode;
  });
const modes = modeList(values.modes);
const missModes = new Set(modeList(values.misses));
const sets = list(values.sets);
for (const s of sets)
  if (!['scifact', 'paraphrase', 'realdocs', 'identifiers'].includes(s))
    throw new Error(`unknown set ${s}`);
const scales = list(values.scale).map((n) => {
  const v = Number(n.replace(/k$/i, '000'));
  if (!Number.isInteger(v) || v < 1) throw new Error(`bad --scale value ${n}`);
  return v;
});
const seed = Number(values.seed);
if (values.db !== 'sqlite' && values.db !== 'postgres')
  throw new Error(`unknown --db ${values.db}`);
const postgres = values.db === 'postgres' ? startPostgres(log) : undefined;
process.on('exit', () => postgres?.stop());

/** The key of a kept database's server (--pg-database), the same in every run. */
const KEPT_KEY = 'aps_bench_kept_0123456789abcdefghijklmnopq';

/** The kept database of --pg-database (created on first use), if any. */
async function keptDatabase(): Promise<{ url: string; created: boolean } | undefined> {
  const name = values['pg-database'];
  if (name === undefined) return undefined;
  if (postgres === undefined) throw new Error('--pg-database needs --db postgres');
  if (scales.length !== 1) throw new Error('--pg-database measures one --scale');
  const kept = await postgres.keptDatabase(name);
  log(`PostgreSQL: database ${name} ${kept.created ? 'created (kept after the run)' : 'reused'}`);
  return kept;
}

/** A bench server on the chosen database. */
async function startBench(label: string): Promise<BenchServer> {
  if (postgres === undefined) return BenchServer.start(label, undefined, embeddingEnv);
  const database = await postgres.createDatabase(label);
  return BenchServer.start(
    label,
    undefined,
    { ...embeddingEnv, DATABASE_URL: database.url, STORAGE_DRIVER: 'postgres' },
    database.drop,
  );
}

const fmt = (x: number, digits = 3) => x.toFixed(digits);
const ms = (x: number) => x.toFixed(1);
const ms2 = (x: number) => x.toFixed(2);
const mb = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MB`;
/** Peak resident set size of the process so far (bytes). */
const maxRss = () => process.resourceUsage().maxRSS * 1024;

interface Row {
  set: string;
  mode: Mode;
  queries: number;
  quality?: QueryMetrics;
  p50: number;
  p95: number;
  p99: number;
}
const rows: Row[] = [];
const notes: string[] = [];
/** Per mode: the top score of each answerable question, of each unanswerable one, and the score of
 * the answering hit when it is in the top 10 (else null). */
const calibration = new Map<
  Mode,
  { answerableTop: number[]; unanswerableTop: number[]; answerScore: (number | null)[] }
>();

// --- the paraphrase set's own check -------------------------------------------------------------

function overlapLine(s: OverlapSummary): string {
  const pct = (x: number) => `${Math.round(x * 100)} %`;
  return (
    `${s.kind} questions (${s.queries}): mean Jaccard of stemmed content words ${fmt(s.meanJaccard)}, ` +
    `mean shared ${s.meanShared.toFixed(2)} (≤ 1 shared: ${pct(s.atMostOneShared)}); ` +
    `FTS5 porter terms shared: mean ${s.meanPorterShared.toFixed(2)}, none ${pct(s.noPorterShared)}, ≤ 1 ${pct(s.atMostOnePorterShared)}`
  );
}

const paraphrase = sets.includes('paraphrase') || values.overlap ? loadParaphrase() : undefined;
if (paraphrase !== undefined) {
  const problems = validateParaphrase(paraphrase);
  if (problems.length > 0) throw new Error(`test-data/paraphrase:\n${problems.join('\n')}`);
  const report = overlapReport(paraphrase);
  if (values.overlap) {
    console.log('| query | kind | passage | Jaccard | shared stems | shared FTS5 terms |');
    console.log('|---|---|---|---|---|---|');
    for (const r of report.perQuery)
      console.log(
        `| ${r.id} | ${r.kind} | ${r.passage} | ${fmt(r.jaccard)} | ${r.shared.join(' ')} | ${r.porterShared.join(' ')} |`,
      );
    console.log('');
    for (const s of report.summary) console.log(overlapLine(s));
    process.exit(0);
  }
  const lengths = [...paraphrase.passages.values()].map((p) => p.body.length);
  notes.push(
    `paraphrase set: ${paraphrase.passages.size} passages (${Math.min(...lengths)}–${Math.max(...lengths)} chars) in ${paraphrase.docs.length} documents, ${paraphrase.queries.length} questions`,
  );
  for (const s of report.summary) notes.push(overlapLine(s));
}

// --- quality sets -------------------------------------------------------------------------------

async function runSet(set: EvalSet): Promise<void> {
  const bench = await startBench(set.name);
  try {
    let chunks = 0;
    /** Document id → file name (for the list of misses). */
    const docNames = new Map<string, string>();
    const t = performance.now();
    for (const file of set.files) {
      const doc = await bench.ingest(file.name, file.markdown, set.index);
      docNames.set(doc.id, file.name);
      chunks += doc.chunkCount;
    }
    for (const file of set.uploads ?? []) {
      const doc = await bench.ingest(file.name, file.data, set.index);
      docNames.set(doc.id, file.name);
      set.onUploaded?.(file.name, doc.id);
      chunks += doc.chunkCount;
      log(`${set.name}: ${file.name} → ${doc.chunkCount} chunks`);
    }
    const ingestMs = performance.now() - t;
    const fileCount = set.files.length + (set.uploads?.length ?? 0);
    notes.push(
      `${set.name}: ${fileCount} file(s) → ${chunks} chunks indexed in ${(ingestMs / 1000).toFixed(1)} s over HTTP`,
    );
    log(`${set.name}: ${chunks} chunks in ${(ingestMs / 1000).toFixed(1)} s`);
    const groups = set.groups ?? [
      ...new Set(
        set.queries.flatMap((q) => (q.alsoIn === undefined ? [q.group] : [q.group, q.alsoIn])),
      ),
    ];
    for (const mode of modes) {
      for (const q of set.queries.slice(0, 3)) await bench.retrieve(q.text, mode, 30); // warm-up
      const perGroup = new Map<string, { metrics: QueryMetrics[]; latencies: number[] }>(
        groups.map((g) => [g, { metrics: [], latencies: [] }]),
      );
      let cal = calibration.get(mode);
      if (cal === undefined) {
        cal = { answerableTop: [], unanswerableTop: [], answerScore: [] };
        calibration.set(mode, cal);
      }
      const report = new QueryReport(`${set.name} ${mode}`, docNames);
      for (const q of set.queries) {
        const { items, ms: elapsed } = await bench.retrieve(q.text, mode, 30);
        const keyOf = (hit: Hit) => (q.keyOf === undefined ? set.keyOf(hit) : q.keyOf(hit));
        const top = items[0]?.score ?? Number.NEGATIVE_INFINITY;
        const ranked = [...new Set(items.map((hit) => keyOf(hit)))];
        for (const group of q.alsoIn === undefined ? [q.group] : [q.group, q.alsoIn]) {
          const g = perGroup.get(group);
          if (g === undefined)
            throw new Error(`${set.name}: query ${q.id} in unknown row ${group}`);
          g.latencies.push(elapsed);
          if (q.relevant.size > 0) g.metrics.push(rankMetrics(ranked, q.relevant));
        }
        if (set.reportPadding === true) {
          const plain = (await bench.retrieve(q.text, mode, 10, true)).items;
          report.padding(q, items, plain, keyOf);
        }
        if (set.reportMisses === true && missModes.has(mode) && q.relevant.size > 0)
          report.rankOne(q, items, keyOf);
        if (set.name !== 'realdocs') continue;
        if (q.relevant.size === 0) cal.unanswerableTop.push(top);
        else {
          cal.answerableTop.push(top);
          const answer = items.slice(0, 10).find((hit) => q.relevant.has(keyOf(hit)));
          cal.answerScore.push(answer?.score ?? null);
        }
      }
      for (const line of report.lines()) log(line);
      for (const [group, g] of perGroup) {
        const lat = latencySummary(g.latencies);
        const quality = g.metrics.length > 0 ? meanMetrics(g.metrics) : undefined;
        rows.push({ set: group, mode, queries: g.latencies.length, quality, ...lat });
        log(`  ${group} ${mode}: nDCG@10 ${quality === undefined ? '–' : fmt(quality.ndcg10)}`);
      }
    }
  } finally {
    await bench.close();
  }
}

for (const name of sets) {
  if (name === 'scifact') await runSet(scifactSet(values.dataset, limit));
  else if (name === 'realdocs') await runSet(realdocsSet(undefined, limit));
  else if (name === 'identifiers') {
    const { set, corpus } = identifiersSet(limit, log);
    const versions = [...corpus.versions].map(([pkg, v]) => `${pkg} ${v}`).join(', ');
    notes.push(`identifiers: packages ${versions === '' ? 'none' : versions}`);
    for (const line of corpus.skipped) notes.push(line);
    if (set.queries.length > 0) await runSet(set);
  } else {
    const distractors = Number(values.distractors);
    const set = paraphraseSet(paraphrase, limit);
    if (distractors > 0) {
      const generator = new SentenceGenerator(
        set.files.map((f) => f.markdown),
        rng(seed),
      );
      set.files = [...set.files, ...syntheticFiles(generator, distractors)];
      for (const q of set.queries) q.group += ` + ${distractors} distractors`;
    }
    await runSet(set);
  }
}

// --- scale --------------------------------------------------------------------------------------

async function runScale(n: number): Promise<void> {
  const random = rng(seed + n);
  const generator = new SentenceGenerator(
    (paraphrase ?? loadParaphrase()).docs.map((d) => d.markdown),
    random,
  );
  const label = n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n);
  const kept = await keptDatabase();
  const bench =
    kept === undefined
      ? await startBench(`scale-${label}`)
      : await BenchServer.start(`scale-${label}`, undefined, {
          ...embeddingEnv,
          DATABASE_URL: kept.url,
          STORAGE_DRIVER: 'postgres',
          BOOTSTRAP_API_KEY: KEPT_KEY,
        });
  try {
    let chunks = 0;
    let files = 0;
    const t = performance.now();
    for (const file of syntheticFiles(generator, n, Number(values['files-per']))) {
      // A kept database is filled already: the files are still drawn, so the queries are the same.
      if (kept?.created === false) continue;
      const doc = await bench.ingest(file.name, file.markdown);
      chunks += doc.chunkCount;
      files++;
      log(
        `scale ${label}: ${file.name} (${file.sections} sections, ${mb(file.markdown.length)}) → ${doc.chunkCount} chunks in ${(doc.ms / 1000).toFixed(1)} s; RSS ${mb(process.memoryUsage().rss)}`,
      );
    }
    const ingestS = (performance.now() - t) / 1000;
    const rssIndexed = process.memoryUsage().rss;
    const queries = Array.from({ length: Number(values['scale-queries']) }, () =>
      generator.query(),
    );
    for (const mode of modes) {
      for (const q of queries.slice(0, 5)) await bench.retrieve(q, mode, 10); // warm-up
      const latencies: number[] = [];
      for (const q of queries) latencies.push((await bench.retrieve(q, mode, 10)).ms);
      rows.push({
        set: `synthetic ${label} chunks`,
        mode,
        queries: queries.length,
        ...latencySummary(latencies),
      });
      log(`  scale ${label} ${mode}: p50 ${ms(latencySummary(latencies).p50)} ms`);
    }

    // The floor: the same work without HTTP, routing, fusion or row fetching.
    const embedder = bench.server.ctx.knowledge.embedder;
    const store = bench.store();
    const embedMs: number[] = [];
    const vectors: Float32Array[] = [];
    for (const q of queries) {
      const t0 = performance.now();
      vectors.push(await embedder.embedQuery(q));
      embedMs.push(performance.now() - t0);
    }
    let floor = `query embedding p50 ${ms2(latencySummary(embedMs).p50)} / p95 ${ms2(latencySummary(embedMs).p95)} ms`;
    if (store === undefined) {
      floor += '; bare store searches unavailable (RetrievalService.store not found)';
    } else {
      const vectorMs: number[] = [];
      const keywordMs: number[] = [];
      // One index each, nothing ranked or loaded: `rank` returns no hits.
      const none: Ranking = { rank: () => [] };
      for (const [i, q] of queries.entries()) {
        const request = { model: embedder.model, filter: {}, limit: 100 };
        const t0 = performance.now();
        await store.search({ ...request, text: null, vector: vectors[i]! }, none);
        vectorMs.push(performance.now() - t0);
        const t1 = performance.now();
        await store.search({ ...request, text: q, vector: null }, none);
        keywordMs.push(performance.now() - t1);
      }
      const v = latencySummary(vectorMs);
      const k = latencySummary(keywordMs);
      floor +=
        `; bare vector search (k=100) p50 ${ms2(v.p50)} / p95 ${ms2(v.p95)} ms` +
        `; bare keyword search (100) p50 ${ms2(k.p50)} / p95 ${ms2(k.p95)} ms`;
      const database = bench.server.ctx.database;
      if (database.driver === 'sqlite') {
        // The baseline: FTS5 ranking the same queries by its own bm25() (rowids only).
        const fts5 = database.native.prepare(
          `select rowid, ${FTS5_BM25} as s
           from knowledge_chunks_fts where knowledge_chunks_fts match ? order by s limit 100`,
        );
        const fts5Ms: number[] = [];
        for (const q of queries) {
          const t0 = performance.now();
          fts5.all(buildFtsQuery(q));
          fts5Ms.push(performance.now() - t0);
        }
        const f = latencySummary(fts5Ms);
        floor += `; FTS5 bm25() ranking alone (100) p50 ${ms2(f.p50)} / p95 ${ms2(f.p95)} ms`;
        // What a restart costs: a fresh store loading the in-process indexes from the tables, the
        // vectors first, then the keyword index (each loaded by its first search), with the memory
        // each holds (measured when the bench runs with --expose-gc, as npm run does).
        const gc = (globalThis as { gc?: () => void }).gc;
        const held = () => {
          gc?.();
          const m = process.memoryUsage();
          return m.heapUsed + m.arrayBuffers;
        };
        const fresh = new SqliteChunkStore(database.native);
        const request = { model: embedder.model, filter: {}, limit: 1 };
        const load = async (search: () => Promise<unknown>) => {
          const before = held();
          const t0 = performance.now();
          await search();
          return { s: (performance.now() - t0) / 1000, bytes: held() - before };
        };
        const vectorLoad = await load(() =>
          fresh.search({ ...request, text: null, vector: vectors[0]! }, none),
        );
        const keywordLoad = await load(() =>
          fresh.search({ ...request, text: queries[0]!, vector: null }, none),
        );
        const part = (name: string, l: { s: number; bytes: number }) =>
          `${name} ${l.s.toFixed(2)} s` + (gc === undefined ? '' : ` holding ${mb(l.bytes)}`);
        floor +=
          `; loading the in-process indexes (start-up) ${(vectorLoad.s + keywordLoad.s).toFixed(2)} s: ` +
          `${part('vectors', vectorLoad)}, ${part('keywords', keywordLoad)}`;
      }
      if (database.driver === 'postgres') {
        await storeGraph(database.pool, embedder.model, vectors[0]?.length ?? 0);
        const recall = await hnswRecall(database, store, embedder.model, vectors);
        floor += `; HNSW recall@10 vs exact search ${fmt(recall)}`;
        const curve = await hnswCurve(
          database,
          embedder.model,
          vectors.slice(0, 100),
          [40, 100, 200, 400, 800],
        );
        if (curve.length > 0) floor += `; HNSW curve (100 queries): ${curve.join('; ')}`;
      }
    }
    notes.push(
      `synthetic ${label}: ${files} files → ${chunks} chunks indexed in ${ingestS.toFixed(1)} s over HTTP (vocabulary ${generator.vocabulary} words + 20,000 pseudo-words); ${floor}; RSS ${mb(rssIndexed)} after indexing, ${mb(process.memoryUsage().rss)} after queries, peak ${mb(maxRss())}`,
    );
  } finally {
    await bench.close();
  }
}

for (const n of scales) await runScale(n);

// --- results ------------------------------------------------------------------------------------

const dash = '–';
console.log('');
for (const note of notes) console.log(`- ${note}`);
console.log('');
console.log(
  `database: ${values.db}\n\n| set | mode | queries | hit@1 | hit@3 | nDCG@10 | Recall@5 | Recall@10 | MRR@10 | p50 ms | p95 ms | p99 ms |`,
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const q = r.quality;
  const f = (x: number | undefined) => (x === undefined ? dash : fmt(x));
  console.log(
    `| ${r.set} | ${r.mode} | ${r.queries} | ${f(q?.hit1)} | ${f(q?.hit3)} | ${f(q?.ndcg10)} | ${f(q?.recall5)} | ${f(q?.recall10)} | ${f(q?.mrr10)} | ${ms(r.p50)} | ${ms(r.p95)} | ${ms(r.p99)} |`,
  );
}
for (const [mode, cal] of calibration) {
  if (cal.unanswerableTop.length === 0) continue;
  console.log(`\nminScore calibration, realdocs, ${mode}:\n`);
  for (const line of calibrationTable(cal)) console.log(line);
}
const recall5 = (set: string, mode: Mode) =>
  rows.find((r) => r.set === set && r.mode === mode)?.quality?.recall5;
const paraphraseGroups = [...new Set(rows.map((r) => r.set))].filter(
  (g) => g.startsWith(PARAPHRASE_GROUP) || g.startsWith(CONTROL_GROUP),
);
for (const group of paraphraseGroups) {
  const hybrid = recall5(group, 'hybrid');
  const keyword = recall5(group, 'keyword');
  if (hybrid !== undefined && keyword !== undefined) {
    const diff = (hybrid - keyword) * 100;
    console.log(
      `\n${group}: Recall@5 hybrid − keyword = ${diff >= 0 ? '+' : ''}${diff.toFixed(1)} points (${fmt(hybrid)} vs ${fmt(keyword)})`,
    );
  }
}
console.log(`\nPeak RSS of the benchmark process (server in process): ${mb(maxRss())}`);
