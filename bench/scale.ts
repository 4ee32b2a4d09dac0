/**
 * The embedded default (SQLite) at scale, through real server processes:
 *
 *   npm run bench:scale -- [--chunks 100000] [--per-document 1000] [--queries 200]
 *                          [--recall-queries 50] [--cli dist/cli.js] [--before-cli PATH]
 *                          [--dir DIR] [--keep] [--seed 42] [--server-env NAME=VALUE …]
 *                          [--restarts N]
 *
 * 1. Fill: `--chunks` synthetic ~1,000-character chunks (bench/retrieval/synthetic.ts) in
 *    documents of `--per-document`, through the store's own commit (bench/scale/fill.ts), in a
 *    temporary data directory (or `--dir`, reused as it is when it already holds a database).
 * 2. For each build (`--before-cli`, e.g. an older build's dist/cli.js, then `--cli`), on the same
 *    data: a first start (no snapshot of the search indexes; a build that writes one does so in
 *    the background), then `--queries` queries per mode (keyword, semantic, hybrid; topK 10; each
 *    mode its own questions, so none finds what another read in the page cache) over HTTP, and a
 *    restart. Reported: spawn → listening (GET /health), spawn → ready (GET
 *    /health/ready: the search indexes loaded, full speed), RSS at rest and after the queries
 *    (of the first start, and of the restarted server, whose indexes come from the snapshots),
 *    p50 / p95 per mode, recall@10 of the semantic mode against an exact float32 scan.
 *    Hybrid answers (its first `--recall-queries` queries, and the paraphrase set's questions)
 *    are compared with a server of this build whose vector graph is off (the exact scan,
 *    SEARCH_ANN_MIN_VECTORS=-1), started once at the end: hybrid agreement@10 vs exact. Each
 *    restart also reports how much of the database file was in the page cache (`fincore`): the
 *    searches read vectors and rows from it, from memory or from disk.
 * 3. Bytes per chunk of each in-process structure, from this build's indexes loaded in this
 *    process (`SqliteChunkStore.memoryReport`).
 *
 * `--restarts N` (with a `--dir` whose snapshots and graph a run left): no first start; each build
 * restarts N times on them, the builds alternating (the first one first in odd rounds, last in
 * even ones), and each restart is measured (listening, ready, RSS when ready and after the
 * queries, p50 / p95 per mode, recall): the same figures in minutes instead of a first start and
 * a graph build per build (~25 min each at 1M chunks).
 *
 * `--cold` (with `--restarts`): before each restart the database file is dropped from the page
 * cache (GNU dd's `iflag=nocache`), as after a reboot; after the first query, the queries wait
 * until the file's cached bytes stop growing (2 s, 120 s at most: a build that pre-reads the
 * file, file-preread.ts, fills the cache meanwhile), so each build is measured from the same
 * state, seconds after its restart.
 *
 * `--server-env` sets a variable of the measured servers (e.g. SEARCH_ANN_MIN_VECTORS=50000 to
 * measure the approximate vector graph below its default threshold).
 *
 * Progress goes to stderr; the results to stdout.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import { createEmbeddingProvider } from '../src/knowledge/embeddings/index.js';
import { SqliteChunkStore } from '../src/knowledge/search/sqlite/sqlite-chunk-store.js';
import { latencySummary } from './retrieval/metrics.js';
import { loadParaphrase } from './retrieval/paraphrase.js';
import { MODES, type Mode } from './retrieval/harness.js';
import { rng, SentenceGenerator } from './retrieval/synthetic.js';
import { benchEnv, fill } from './scale/fill.js';
import { ExactVectors, rssOf, startTimed, stop } from './scale/probe.js';

const { values } = parseArgs({
  options: {
    chunks: { type: 'string', default: '100000' },
    'per-document': { type: 'string', default: '1000' },
    queries: { type: 'string', default: '200' },
    'recall-queries': { type: 'string', default: '50' },
    cli: { type: 'string', default: resolve(import.meta.dirname, '../dist/cli.js') },
    'before-cli': { type: 'string' },
    dir: { type: 'string' },
    keep: { type: 'boolean', default: false },
    seed: { type: 'string', default: '42' },
    'server-env': { type: 'string', multiple: true, default: [] },
    restarts: { type: 'string' },
    cold: { type: 'boolean', default: false },
  },
});

const KEY = 'aps_bench_scale_0123456789abcdefghijklmnop';
const log = (line: string) => process.stderr.write(line + '\n');
const count = (s: string) => Number(s.replace(/k$/i, '000').replace(/m$/i, '000000'));
const chunks = count(values.chunks);
const perDocument = count(values['per-document']);
const queryCount = count(values.queries);
const recallCount = count(values['recall-queries']);
const mb = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MB`;
const ms = (x: number) => x.toFixed(1);
const s = (x: number) => `${x.toFixed(2)} s`;

const dir = values.dir ?? mkdtempSync(join(tmpdir(), 'aps-bench-scale-'));
const dbPath = join(dir, 'aps.sqlite');
const generator = new SentenceGenerator(
  loadParaphrase().docs.map((d) => d.markdown),
  rng(Number(values.seed)),
);
const notes: string[] = [];

/** The database's files (with its WAL) and the rest of the data directory, in bytes. */
function sizes(): { database: number; other: number } {
  let database = 0;
  let other = 0;
  const walk = (path: string) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.startsWith('aps.sqlite')) database += statSync(full).size;
      else other += statSync(full).size;
    }
  };
  walk(dir);
  return { database, other };
}

if (existsSync(dbPath)) {
  log(`reusing ${dir}`);
} else {
  log(`filling ${dir} with ${chunks} chunks`);
  const filled = await fill(dir, KEY, generator, chunks, perDocument, log);
  notes.push(
    `fill: ${filled.chunks} chunks in ${filled.documents} documents in ${filled.seconds.toFixed(1)} s ` +
      `(${Math.round(filled.chunks / filled.seconds)} chunks/s through ChunkStore.commitIndex, embedding included)`,
  );
}
const size = sizes();
const total = new Database(dbPath, { readonly: true })
  .prepare('select count(*) from knowledge_chunks')
  .pluck()
  .get() as number;
notes.push(
  `data: ${total} chunks; database ${mb(size.database)} (${Math.round(size.database / total)} bytes per chunk)`,
);

const queries = Array.from({ length: queryCount }, () => generator.query());
const firstQuery = queries[0] ?? 'first query';
/**
 * The questions of each mode: its own, so that no mode finds in the page cache the vectors and
 * rows another mode read for the same questions (the semantic mode's are `queries`, whose exact
 * nearest chunks give its recall).
 */
const ownQueries = () => Array.from({ length: queryCount }, () => generator.query());
const queriesOf: Record<Mode, string[]> = {
  semantic: queries,
  keyword: ownQueries(),
  hybrid: ownQueries(),
};
const env: Record<string, string> = { ...benchEnv(dir, KEY) };
for (const pair of values['server-env']) {
  const at = pair.indexOf('=');
  if (at > 0) env[pair.slice(0, at)] = pair.slice(at + 1);
}
/** The servers' threshold of the approximate vector graph (SEARCH_ANN_MIN_VECTORS). */
const annMin = loadConfig({ ...env, PORT: '0' }, dir).knowledge.searchAnnMinVectors ?? Infinity;
const config = loadConfig({ ...env, PORT: '0' }, dir);
const embedder = createEmbeddingProvider(config.embedding);
await embedder.ready();
const queryVectors: Float32Array[] = [];
for (const q of queries.slice(0, recallCount)) queryVectors.push(await embedder.embedQuery(q));
await embedder.close();
log(`exact search: loading the vectors`);
const exact = ExactVectors.load(dbPath, embedder.model);
const exactTop = queryVectors.map((v) => exact.nearest(v, 10));

interface Hit {
  id: string;
}
async function retrieve(base: string, query: string, mode: Mode): Promise<[Hit[], number]> {
  const t0 = performance.now();
  const res = await fetch(`${base}/api/v1/knowledge/retrieve`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, topK: 10, mode, minScore: -1 }),
  });
  const body = (await res.json()) as { items?: Hit[] };
  if (!res.ok || body.items === undefined) throw new Error(`retrieve: ${res.status}`);
  return [body.items, performance.now() - t0];
}

interface Run {
  label: string;
  cold: { listenS: number; readyS: number; graphS: number };
  /** `cachedBytes`: the database file's bytes in the page cache at the restart (fincore). */
  restart: {
    listenS: number;
    readyS: number;
    firstQueryMs: number;
    cachedBytes: number;
    /** `--cold`: the wait for the page cache to settle before the queries, and its bytes then. */
    settled: { s: number; bytes: number };
  };
  rssRest: number;
  rssQueries: number;
  /** The restarted server (indexes from the snapshots): when ready, after its queries. */
  rssRestart: number;
  rssRestartQueries: number;
  latency: Map<Mode, { p50: number; p95: number }>;
  snapshotBytes: number;
  recall: number;
  /** Hybrid top 10 of the recall queries and of the paraphrase questions, per query. */
  hybrid: { text: string[][]; paraphrase: string[][] };
}
const runs: Run[] = [];
/** The paraphrase set's questions: worded unlike the passages, the vector side counts more. */
const questions = loadParaphrase()
  .queries.filter((q) => q.kind === 'paraphrase')
  .map((q) => q.query);

/** `--queries` queries per mode: p50 / p95, and the semantic mode's recall against the exact scan. */
async function queryAll(
  label: string,
  base: string,
): Promise<{
  latency: Map<Mode, { p50: number; p95: number }>;
  recall: number;
  hybrid: Run['hybrid'];
}> {
  const latency = new Map<Mode, { p50: number; p95: number }>();
  let recalled = 0;
  const hybrid: Run['hybrid'] = { text: [], paraphrase: [] };
  for (const mode of MODES) {
    for (const q of queriesOf[mode].slice(0, 5)) await retrieve(base, q, mode); // warm-up
    const times: number[] = [];
    for (const [i, q] of queriesOf[mode].entries()) {
      const [items, elapsed] = await retrieve(base, q, mode);
      times.push(elapsed);
      const want = mode === 'semantic' ? exactTop[i] : undefined;
      if (want !== undefined) recalled += items.filter((h) => want.includes(h.id)).length;
      if (mode === 'hybrid' && i < recallCount) hybrid.text.push(items.map((h) => h.id));
    }
    const l = latencySummary(times);
    latency.set(mode, { p50: l.p50, p95: l.p95 });
    log(`${label}: ${mode} p50 ${ms(l.p50)} / p95 ${ms(l.p95)} ms`);
  }
  hybrid.paraphrase = await hybridAnswers(base, questions);
  return { latency, recall: recalled / (10 * Math.max(1, exactTop.length)), hybrid };
}

async function hybridAnswers(base: string, list: string[]): Promise<string[][]> {
  const answers: string[][] = [];
  for (const q of list) answers.push((await retrieve(base, q, 'hybrid'))[0].map((h) => h.id));
  return answers;
}

/** Share of the reference's top-10 ids each answer holds (agreement@10). */
function agreement(answers: string[][], reference: string[][]): number {
  let found = 0;
  let wanted = 0;
  reference.forEach((want, i) => {
    wanted += want.length;
    found += want.filter((id) => answers[i]?.includes(id) === true).length;
  });
  return wanted === 0 ? Number.NaN : found / wanted;
}

const NOT_MEASURED = { listenS: Number.NaN, readyS: Number.NaN, graphS: Number.NaN };

/**
 * Bytes of `file` in the operating system's page cache (util-linux `fincore`; NaN without it): a
 * search reads vectors and rows from the database file, from memory or from disk.
 */
function pageCached(file: string): number {
  try {
    const out = execFileSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', file], {
      encoding: 'utf8',
    });
    return Number(out.trim());
  } catch {
    return Number.NaN;
  }
}

/** Drops the database file's pages from the page cache (`--cold`). */
function dropFromPageCache(file: string): void {
  execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
}

/**
 * Waits until the database file's bytes in the page cache stop growing (by 1 % of the file over
 * 2 s; 120 s at most): seconds waited, and the bytes cached then.
 */
async function cacheSettled(file: string): Promise<{ s: number; bytes: number }> {
  const t0 = performance.now();
  const size = statSync(file).size;
  const seen = [pageCached(file)];
  while (performance.now() - t0 < 120_000) {
    await new Promise((r) => setTimeout(r, 500));
    seen.push(pageCached(file));
    const last = seen.at(-1) ?? 0;
    if (seen.length > 4 && last - (seen.at(-5) ?? 0) < size / 100) break;
  }
  return { s: (performance.now() - t0) / 1000, bytes: seen.at(-1) ?? Number.NaN };
}

/**
 * A restart on the snapshots there are: listening, ready, the first hybrid query, RSS when ready
 * and after `load(base)` (what it returns is passed on).
 */
async function restart<T>(label: string, cli: string, load: (base: string) => Promise<T>) {
  log(`${label}: restart`);
  if (values.cold) dropFromPageCache(dbPath);
  const cachedBytes = pageCached(dbPath);
  const again = await startTimed(cli, env, 1800);
  const rssRestart = rssOf(again.child.pid!);
  const [, firstQueryMs] = await retrieve(again.base, firstQuery, 'hybrid');
  const settled = values.cold ? await cacheSettled(dbPath) : { s: Number.NaN, bytes: Number.NaN };
  const result = await load(again.base);
  const rssRestartQueries = rssOf(again.child.pid!);
  await stop(again.child);
  log(`${label}: listening after ${s(again.listenS)}, ready after ${s(again.readyS)}`);
  const times = {
    listenS: again.listenS,
    readyS: again.readyS,
    firstQueryMs,
    cachedBytes,
    settled,
  };
  return { restart: times, rssRestart, rssRestartQueries, result };
}

/** A restart measured with its queries (`--restarts`). */
async function measureRestart(label: string, cli: string): Promise<void> {
  const { result, ...restarted } = await restart(label, cli, (base) => queryAll(label, base));
  runs.push({
    label,
    cold: NOT_MEASURED,
    ...restarted,
    rssRest: Number.NaN,
    rssQueries: Number.NaN,
    snapshotBytes: snapshotsBytes(),
    ...result,
  });
}

/** Bytes of the snapshot files (and graph) in the data directory. */
function snapshotsBytes(): number {
  const snapshots = join(dir, 'search-snapshots');
  if (!existsSync(snapshots)) return 0;
  return readdirSync(snapshots).reduce((sum, n) => sum + statSync(join(snapshots, n)).size, 0);
}

async function measure(label: string, cli: string): Promise<void> {
  rmSync(join(dir, 'search-snapshots'), { recursive: true, force: true });
  log(`${label}: first start`);
  const first = await startTimed(cli, env, 1800);
  log(`${label}: listening after ${s(first.listenS)}, ready after ${s(first.readyS)}`);
  // A build with an approximate vector graph builds it after the load, then saves it: measured
  // once it is there (a build without one, or below its threshold, has none to wait for).
  const snapshots = join(dir, 'search-snapshots');
  const graphSaved = () =>
    existsSync(snapshots) && readdirSync(snapshots).some((n) => n.endsWith('.graph'));
  const t0 = performance.now();
  for (let i = 0; i < 7200 && label !== 'before' && total >= annMin && !graphSaved(); i++) {
    await new Promise((r) => setTimeout(r, 500));
  }
  const graphS = first.readyS + (performance.now() - t0) / 1000;
  if (graphSaved()) log(`${label}: graph saved after ${s(graphS)}`);
  await new Promise((r) => setTimeout(r, 2000));
  const rssRest = rssOf(first.child.pid!);
  const { latency, recall, hybrid } = await queryAll(label, first.base);
  const rssQueries = rssOf(first.child.pid!);
  // A build that keeps snapshots writes them after a build from the tables: wait for them.
  const saved = () =>
    existsSync(snapshots) &&
    readdirSync(snapshots).filter((n) => n.endsWith('.snapshot')).length >= 2;
  for (let i = 0; i < 600 && label !== 'before' && !saved(); i++) {
    await new Promise((r) => setTimeout(r, 500));
  }
  const snapshotBytes = saved() ? snapshotsBytes() : 0;
  await stop(first.child);
  const restarted = await restart(label, cli, async (base) => {
    for (const mode of MODES) for (const q of queriesOf[mode]) await retrieve(base, q, mode);
  });
  runs.push({
    label,
    cold: { ...first, graphS },
    restart: restarted.restart,
    rssRest,
    rssQueries,
    rssRestart: restarted.rssRestart,
    rssRestartQueries: restarted.rssRestartQueries,
    latency,
    snapshotBytes,
    recall,
    hybrid,
  });
}

let exactHybrid: Run['hybrid'] | null = null;
try {
  const builds: [string, string][] = [];
  if (values['before-cli'] !== undefined) builds.push(['before', values['before-cli']]);
  builds.push([values['before-cli'] === undefined ? 'this build' : 'after', values.cli]);
  const restarts = values.restarts === undefined ? 0 : Number(values.restarts);
  for (let round = 1; round <= restarts; round++) {
    // The order turns each round: a build asks the same questions as the one before it, and what
    // that one read may still be in the page cache.
    const order = round % 2 === 1 ? builds : [...builds].reverse();
    for (const [label, cli] of order) await measureRestart(`${label} (${round})`, cli);
  }
  if (restarts === 0) for (const [label, cli] of builds) await measure(label, cli);

  // The hybrid answers with the exact scan instead of the graph (this build, graph off).
  if (total >= annMin) {
    log('hybrid with the vector graph off (the exact scan): the reference');
    const reference = await startTimed(values.cli, { ...env, SEARCH_ANN_MIN_VECTORS: '-1' }, 1800);
    exactHybrid = {
      text: await hybridAnswers(reference.base, queriesOf.hybrid.slice(0, recallCount)),
      paraphrase: await hybridAnswers(reference.base, questions),
    };
    await stop(reference.child);
  }

  // Bytes per chunk of each structure: this build's indexes, loaded in this process as its
  // server loads them (from the snapshots it left, with its vector graph when it has one).
  const db = new Database(dbPath, { readonly: true });
  const store = new SqliteChunkStore(db, {
    snapshots: { databaseFile: dbPath, delayMs: 3_600_000 },
    vectors: { annMin },
  });
  const t0 = performance.now();
  await store.warm(embedder.model);
  const loadS = (performance.now() - t0) / 1000;
  const report = store.memoryReport();
  await store.close();
  db.close();
  const structures = Object.entries(report)
    .map(([name, bytes]) => `${name} ${(bytes / total).toFixed(1)}`)
    .join(', ');
  const sum = Object.values(report).reduce((a, b) => a + b, 0);
  notes.push(
    `in-process indexes of this build: ${mb(sum)} (${(sum / total).toFixed(0)} bytes per chunk), loaded in ${s(loadS)} in this process; bytes per chunk: ${structures}`,
  );
} finally {
  if (!values.keep && values.dir === undefined) rmSync(dir, { recursive: true, force: true });
}

console.log(`\nbench:scale, ${total} chunks (${exact.size} vectors)\n`);
for (const note of notes) console.log(`- ${note}`);
const header = ['', ...runs.map((r) => r.label)];
console.log(`\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`);
const row = (name: string, f: (r: Run) => string) => {
  console.log(`| ${name} | ${runs.map(f).join(' | ')} |`);
};
const time = (x: number) => (Number.isNaN(x) ? '–' : s(x));
const megabytes = (x: number) => (Number.isNaN(x) ? '–' : mb(x));
row('first start → listening', (r) => time(r.cold.listenS));
row('first start → ready (indexes loaded)', (r) => time(r.cold.readyS));
row('first start → vector graph built and saved', (r) =>
  r.label === 'before' ? '–' : time(r.cold.graphS),
);
row('restart: database file in the page cache', (r) => megabytes(r.restart.cachedBytes));
row('restart → listening', (r) => s(r.restart.listenS));
row('restart → ready', (r) => s(r.restart.readyS));
row('first hybrid query after ready', (r) => `${ms(r.restart.firstQueryMs)} ms`);
if (values.cold) {
  row(
    'restart: database file in the page cache when the queries began',
    (r) =>
      `${megabytes(r.restart.settled.bytes)} (${time(r.restart.settled.s)} after the first query)`,
  );
}
row('RSS at rest', (r) => megabytes(r.rssRest));
row(`RSS after ${3 * queryCount} queries`, (r) => megabytes(r.rssQueries));
row('restart: RSS when ready (indexes from the snapshots)', (r) => mb(r.rssRestart));
row(`restart: RSS after ${3 * queryCount} queries`, (r) => mb(r.rssRestartQueries));
for (const mode of MODES) {
  row(`${mode} p50 / p95`, (r) => {
    const l = r.latency.get(mode)!;
    return `${ms(l.p50)} / ${ms(l.p95)} ms`;
  });
}
row('search index snapshots on disk', (r) => mb(r.snapshotBytes));
row(`semantic recall@10 vs exact (${exactTop.length} queries)`, (r) => r.recall.toFixed(3));
const agreed = (set: keyof Run['hybrid']) => (r: Run) =>
  exactHybrid === null ? '–' : agreement(r.hybrid[set], exactHybrid[set]).toFixed(3);
row(`hybrid agreement@10 vs the exact scan (${recallCount} queries)`, agreed('text'));
row(
  `hybrid agreement@10 vs the exact scan (${questions.length} paraphrase questions)`,
  agreed('paraphrase'),
);
