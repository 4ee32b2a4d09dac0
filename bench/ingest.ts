/**
 * `npm run bench:ingest [-- --docs 5183 --concurrency 8 --overhead-docs 200 --before-docs 100
 *  --index-concurrency N]` (default: the server's own QUEUE_KNOWLEDGE_INDEX_CONCURRENCY):
 * ingestion throughput.
 *
 * (a) Per-document overhead of the bundled converter on a small markdown file, three ways in one
 *     run: one `aps-convert` process per run (the path of external commands), the worker pool
 *     (knowledge/indexing/converting/worker-pool.ts), and the server's own process, where indexing
 *     converts small plain text and markdown (in-process.ts). Sequential, wall-clock per document.
 * (b) SciFact's abstracts (../shared/datasets/scifact/corpus.jsonl, read in place; one document
 *     per abstract, `# title` + text) through HTTP against a real server process (SQLite, static
 *     embeddings) with `--concurrency` clients: first every abstract uploaded alone (uploads-alone
 *     rate), then every abstract uploaded again (a variant, so not a duplicate) and indexed with
 *     `POST …/documents/{id}/index` (upload + index rate). `--before-docs N` repeats the upload +
 *     index phase for N documents on a server forced onto a process per run
 *     (KNOWLEDGE_CONVERTER_PATH pointing at the bundled CLI: one process per run). Reports the
 *     pool's resident memory at rest (Linux /proc). Run `npm run build` first (the script does).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import {
  bundledConverterPath,
  loadCommands,
} from '../src/knowledge/indexing/converting/commands.js';
import { createPooledConverter } from '../src/knowledge/indexing/converting/pooled-converter.js';
import { runConverter } from '../src/knowledge/indexing/converting/runner.js';
import { BENCH_KEY as KEY, index, indexingDone, pooledRun, upload } from './ingest-client.js';
import { DEFAULT_EMBEDDING_CACHE } from './retrieval/harness.js';
import { scifactAbstracts, type ScifactAbstract as Abstract } from './retrieval/sets.js';
import {
  processCpu,
  startBenchServer,
  stopServerProcess,
  type ServerProcess,
} from './server-process.js';

const { values } = parseArgs({
  options: {
    docs: { type: 'string', default: '5183' },
    concurrency: { type: 'string', default: '8' },
    'index-concurrency': { type: 'string' },
    'overhead-docs': { type: 'string', default: '200' },
    'before-docs': { type: 'string', default: '100' },
    'cpu-prof': { type: 'string' },
  },
});
const CLI = resolve(import.meta.dirname, '../dist/cli.js');
const log = (line: string) => process.stderr.write(`${line}\n`);
const round = (n: number, d = 1) => Number(n.toFixed(d));

/** The server's knowledge settings (defaults), with the converter limits this bench needs. */
function knowledgeConfig(indexConcurrency: number) {
  const dir = mkdtempSync(join(tmpdir(), 'aps-bench-config-'));
  return {
    ...loadConfig({ DATA_DIR: dir }, dir).knowledge,
    uploadMaxBytes: 1 << 30,
    indexConcurrency,
    converterTimeoutMs: 60_000,
    converterWorkerMaxJobs: 1_000_000,
  };
}

/** (a) ms per document, process per run vs pool, on one small markdown file. */
async function overhead(n: number) {
  const dir = mkdtempSync(join(tmpdir(), 'aps-bench-ingest-'));
  try {
    const input = join(dir, 'small.md');
    writeFileSync(
      input,
      `# A small note\n\n${'Some words about owls and their night hunts. '.repeat(20)}\n`,
    );
    const config = knowledgeConfig(1);
    const [auto] = loadCommands(config);
    if (auto === undefined) throw new Error('no auto command');
    const opts = { timeoutMs: 60_000, maxOutputBytes: 64 * 1024 * 1024 };
    const perRunN = Math.max(5, Math.round(n / 10));
    let start = performance.now();
    for (let i = 0; i < perRunN; i++) await runConverter(auto, input, join(dir, `p${i}`), opts);
    const perRun = (performance.now() - start) / perRunN;

    const pooled = createPooledConverter(config);
    try {
      const pool = pooled.pool;
      if (pool === null) throw new Error('no converter pool');
      // The pool itself, on the markdown file (the convert function would keep it in process).
      const job = (i: number) => ({
        file: input,
        outputDir: join(dir, `w${i}`),
        command: 'auto',
        lang: 'eng',
        inlineMaxBytes: 1024 * 1024,
      });
      await pool.run(job(-1), opts); // starts the worker
      start = performance.now();
      for (let i = 0; i < n; i++) {
        const outcome = await pool.run(job(i), opts);
        if (outcome.output === undefined) throw new Error('the worker sent no output');
      }
      const poolMs = (performance.now() - start) / n;
      const rss = await pool.residentBytes();
      // What indexing does with a small markdown file: convert it in the server process.
      start = performance.now();
      for (let i = 0; i < n; i++) await pooled.convert(auto, input, join(dir, `i${i}`), opts);
      const inProcess = (performance.now() - start) / n;
      if (pool.workers().reduce((jobs, w) => jobs + w.jobs, 0) !== n + 1) {
        throw new Error('the small markdown file went to the pool');
      }
      return { perRunN, perRun, n, pool: poolMs, inProcess, rss };
    } finally {
      await pooled.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A script that profiles `dist/cli.js` (NODE_OPTIONS may not carry --cpu-prof). */
function profilingCli(dir: string, out: string): string {
  const path = join(dir, 'profiled-cli.mjs');
  writeFileSync(
    path,
    `import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
const session = new Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.start');
process.once('exit', () => {
  session.post('Profiler.stop', (error, result) => {
    if (!error) writeFileSync(${JSON.stringify(out)}, JSON.stringify(result.profile));
  });
});
process.argv.splice(1, 1, ${JSON.stringify(CLI)});
await import(${JSON.stringify(CLI)});
`,
  );
  return path;
}

function startServer(
  dataDir: string,
  env: Record<string, string>,
  cli = CLI,
): Promise<ServerProcess> {
  // The server's defaults unless --index-concurrency says otherwise.
  const concurrency = values['index-concurrency'];
  return startBenchServer(cli, dataDir, KEY, DEFAULT_EMBEDDING_CACHE, {
    ...(concurrency === undefined ? {} : { QUEUE_KNOWLEDGE_INDEX_CONCURRENCY: concurrency }),
    ...env,
  });
}

interface CpuSplit {
  server: number;
  converters: number;
  client: number;
}

/** CPU ms used since the last call: the server's own, its converter workers', this client's. */
function cpuMeter(serverPid: number): () => CpuSplit {
  let last = { ...processCpu(serverPid), client: process.cpuUsage() };
  return () => {
    const now = { ...processCpu(serverPid), client: process.cpuUsage() };
    const client = process.cpuUsage(last.client);
    const split = {
      server: now.selfMs - last.selfMs,
      converters: now.childrenMs - last.childrenMs,
      client: (client.user + client.system) / 1000,
    };
    last = now;
    return split;
  };
}

const perDoc = (c: CpuSplit, n: number) =>
  `server ${round(c.server / n, 2)}, converters ${round(c.converters / n, 2)}, client ${round(c.client / n, 2)} ms CPU per document`;

/** Resident bytes of the converter workers under `serverPid` (Linux). */
function workerRss(serverPid: number): { workers: number; bytes: number } {
  try {
    const out = execFileSync('ps', ['-eo', 'pid,ppid,rss,args'], { encoding: 'utf8' });
    const rows = out
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((c) => Number(c[1]) === serverPid && c.join(' ').includes('--worker'));
    return { workers: rows.length, bytes: rows.reduce((s, c) => s + Number(c[2]) * 1024, 0) };
  } catch {
    return { workers: 0, bytes: 0 };
  }
}

async function http(docs: Abstract[], concurrency: number, env: Record<string, string>) {
  const dataDir = mkdtempSync(join(tmpdir(), 'aps-bench-ingest-data-'));
  const profile = values['cpu-prof'];
  const pooled = Object.keys(env).length === 0;
  const cli = profile !== undefined && pooled ? profilingCli(dataDir, resolve(profile)) : CLI;
  const server = await startServer(dataDir, env, cli);
  try {
    // The embedding model loads in the background at start: wait until it indexes a document.
    const warm = await upload(server.base, { name: 'warm.md', text: '# Warm\n\nwarm up.\n' });
    await index(server.base, warm.id);
    let indexedOnUpload = 0;
    const pid = server.child.pid ?? -1;
    const cpu = cpuMeter(pid);
    const uploadsS = await pooledRun(docs, concurrency, async (doc) => {
      await upload(server.base, { name: doc.name, text: `${doc.text}\n(upload only)\n` });
    });
    const uploadsCpu = cpu();
    const bothS = await pooledRun(docs, concurrency, async (doc) => {
      const created = await upload(server.base, doc);
      if (created.status === 'indexing') indexedOnUpload++;
      else await index(server.base, created.id);
    });
    const bothCpu = cpu();
    // The one-step way: each upload carries `index=true` (one request per document), then the
    // clock stops when every run has committed.
    const start = performance.now();
    await pooledRun(docs, concurrency, async (doc) => {
      const created = await upload(
        server.base,
        { name: doc.name, text: `${doc.text}\n(one step)\n` },
        true,
      );
      if (created.status !== 'indexing') throw new Error(`not queued: ${created.status}`);
    });
    await indexingDone(server.base);
    const oneStepS = (performance.now() - start) / 1000;
    const oneStepCpu = cpu();
    const rss = workerRss(pid);
    return { uploadsS, bothS, oneStepS, indexedOnUpload, rss, uploadsCpu, bothCpu, oneStepCpu };
  } finally {
    await stopServerProcess(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const n = Number(values['overhead-docs']);
  log(
    `(a) per-document overhead: ${n} conversions on the pool, ${Math.round(n / 10)} as processes`,
  );
  const a = await overhead(n);
  console.log('\n(a) bundled converter, small markdown file, per document (wall clock)');
  console.log(`  process per run: ${round(a.perRun)} ms (${a.perRunN} runs)`);
  console.log(`  worker pool:     ${round(a.pool, 2)} ms (${a.n} runs)`);
  console.log(`  ratio:           ${round(a.perRun / a.pool)}× faster`);
  console.log(`  in the server:   ${round(a.inProcess, 3)} ms (${a.n} runs; what indexing does)`);
  console.log(`  one idle worker: ${round(a.rss / 1024 / 1024)} MiB resident`);

  const concurrency = Number(values.concurrency);
  const docs = scifactAbstracts(Number(values.docs));
  log(`(b) ${docs.length} SciFact abstracts, concurrency ${concurrency}, pooled converter`);
  const b = await http(docs, concurrency, {});
  const rate = (s: number, count = docs.length) => round(count / s);
  console.log(`\n(b) ${docs.length} SciFact abstracts over HTTP, concurrency ${concurrency}`);
  console.log(`  uploads alone:      ${round(b.uploadsS)} s, ${rate(b.uploadsS)} docs/s`);
  console.log(`  upload + index:     ${round(b.bothS)} s, ${rate(b.bothS)} docs/s`);
  console.log(
    `  indexing added:     ${round(b.bothS - b.uploadsS)} s (${round((b.bothS - b.uploadsS) / b.uploadsS, 2)}× the uploads alone)`,
  );
  console.log(`  CPU, uploads alone: ${perDoc(b.uploadsCpu, docs.length)}`);
  console.log(`  CPU, upload + index: ${perDoc(b.bothCpu, docs.length)}`);
  console.log(
    `  one step (upload with index=true, until all indexed): ${round(b.oneStepS)} s, ${rate(b.oneStepS)} docs/s, indexing added ${round((b.oneStepS - b.uploadsS) / b.uploadsS, 2)}× the uploads alone`,
  );
  console.log(`  CPU, one step: ${perDoc(b.oneStepCpu, docs.length)}`);
  if (b.indexedOnUpload > 0)
    console.log(`  (indexed by the upload's index field: ${b.indexedOnUpload})`);
  console.log(
    `  converter workers at rest: ${b.rss.workers}, ${round(b.rss.bytes / 1024 / 1024)} MiB resident in all`,
  );

  const beforeN = Math.min(Number(values['before-docs']), docs.length);
  if (beforeN > 0) {
    log(`(b, before) ${beforeN} abstracts with one converter process per run`);
    const before = await http(docs.slice(0, beforeN), concurrency, {
      KNOWLEDGE_CONVERTER_PATH: bundledConverterPath(),
    });
    console.log(`\n(b, before) first ${beforeN} abstracts, one converter process per run`);
    console.log(`  uploads alone:      ${rate(before.uploadsS, beforeN)} docs/s`);
    console.log(`  upload + index:     ${rate(before.bothS, beforeN)} docs/s`);
    console.log(
      `  after/before (upload + index): ${round(rate(b.bothS) / rate(before.bothS, beforeN))}×`,
    );
  }
}

await main();
