/**
 * `npm run bench:overload [-- --concurrency 500 --seconds 20 --docs 3000]`: fair service under
 * overload. A real server process (`dist/cli.js serve`, SQLite) over a SciFact corpus
 * (the first `--docs` abstracts, uploaded and indexed over HTTP, ~1,000-character chunks; synthetic
 * text when the dataset is absent) is driven for `--seconds` by `--concurrency` clients, each
 * sending hybrid retrievals (SciFact claims) one after the other on its own keep-alive connection,
 * as a load generator such as autocannon does; a client refused with 503 waits `Retry-After`.
 * Meanwhile a worker thread polls `/health` every 10 ms.
 *
 * The same run measures two servers on the same data directory, one after the other:
 * - before: `--before-cli` (default: this build) with `--before-env` (default
 *   `MAX_REQUESTS_IN_FLIGHT=0`, shedding off); point `--before-cli` at an older build's
 *   `dist/cli.js` to measure old code;
 * - after: this build with its default limit (or `--limit N`).
 *
 * Reported per server: p50/p95/p99/max of the served retrievals (client-side round trip), the
 * number of 503 `OVERLOADED` answers and of other failures, /health p50/p99/max, and after/before
 * ratios. Progress goes to stderr, the table to stdout. `--keep-data DIR` indexes into DIR once
 * and reuses it on later runs; `BENCH_SERVER_LOGS=1` shows the servers' logs.
 */
import { Agent, request } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { seededRandom } from '../src/knowledge/embeddings/static/sif.js';
import { DEFAULT_EMBEDDING_CACHE } from './retrieval/harness.js';
import { SCIFACT_DIR } from './retrieval/sets.js';
import { startBenchServer, stopServerProcess } from './server-process.js';

const { values } = parseArgs({
  options: {
    concurrency: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '20' },
    docs: { type: 'string', default: '3000' },
    'max-chars': { type: 'string', default: '1000' },
    'before-cli': { type: 'string', default: resolve(import.meta.dirname, '../dist/cli.js') },
    'before-env': { type: 'string', default: 'MAX_REQUESTS_IN_FLIGHT=0' },
    limit: { type: 'string' },
    'keep-data': { type: 'string' },
  },
});
const concurrency = Number(values.concurrency);
const seconds = Number(values.seconds);
const afterCli = resolve(import.meta.dirname, '../dist/cli.js');
const log = (line: string) => process.stderr.write(line + '\n');
const KEY = 'aps_bench_overload_key_0123456789abcdef';
const PREFIX = '/api/v1';

function envPairs(text: string): Record<string, string> {
  const pairs = text.split(',').filter((p) => p.includes('='));
  return Object.fromEntries(
    pairs.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]),
  );
}

function corpus(): { markdown: string; queries: string[] } {
  const n = Number(values.docs);
  if (existsSync(join(SCIFACT_DIR, 'corpus.jsonl'))) {
    const rows = (file: string) =>
      readFileSync(join(SCIFACT_DIR, file), 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { _id: string; title?: string; text: string });
    const docs = rows('corpus.jsonl').slice(0, n);
    return {
      markdown: docs.map((d) => `# ${d._id}\n\n${d.title ?? ''}\n\n${d.text}\n`).join('\n'),
      queries: rows('queries-train.jsonl').map((q) => q.text),
    };
  }
  log(`(no SciFact at ${SCIFACT_DIR}: synthetic text)`);
  const words = 'cell protein gene tumour immune signal dose trial risk brain blood virus'.split(
    ' ',
  );
  const rand = seededRandom(11);
  const sentence = (k: number) =>
    Array.from({ length: k }, () => words[Math.floor(rand() * words.length)]).join(' ');
  return {
    markdown: Array.from({ length: n }, (_, i) => `# ${i}\n\n${sentence(180)}.\n`).join('\n'),
    queries: Array.from({ length: 800 }, () => sentence(8)),
  };
}

/** A server on `dataDir`, with the benchmark's key and the static model's shared cache. */
function startServer(cli: string, dataDir: string, env: Record<string, string>) {
  return startBenchServer(cli, dataDir, KEY, DEFAULT_EMBEDDING_CACHE, {
    UPLOAD_MAX_BYTES: String(1 << 30),
    ...env,
  });
}

const auth = { authorization: `Bearer ${KEY}` };

async function post(base: string, path: string, body: unknown): Promise<Response> {
  return fetch(`${base}${PREFIX}/knowledge${path}`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** Polls /health every 10 ms from a worker thread, so the client's own load does not delay it. */
function healthProbe(base: string): { stop: () => Promise<number[]> } {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const http = require('node:http');
     const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
     const times = [];
     let running = true;
     parentPort.on('message', () => { running = false; });
     const once = () => new Promise((ok, fail) => {
       const t = performance.now();
       http.get(workerData + '/health', { agent }, (res) => {
         res.resume();
         res.on('end', () => { times.push(performance.now() - t); ok(); });
       }).on('error', fail);
     });
     (async () => {
       while (running) { await once(); await new Promise((r) => setTimeout(r, 10)); }
       parentPort.postMessage(times);
     })();`,
    { eval: true, workerData: base },
  );
  return {
    stop: () =>
      new Promise((ok) => {
        worker.once('message', (times: number[]) => {
          void worker.terminate();
          ok(times);
        });
        worker.postMessage('stop');
      }),
  };
}

interface Outcome {
  served: number[];
  overloaded: number;
  failed: Map<string, number>;
  health: number[];
  retryAfter: Set<string>;
}

/** One retrieval over a keep-alive connection of `agent`: status, Retry-After and error code. */
function retrieve(base: string, agent: Agent, query: string) {
  const body = JSON.stringify({ query, mode: 'hybrid', topK: 10 });
  const url = new URL(`${base}${PREFIX}/knowledge/retrieve`);
  return new Promise<{ status: number; retryAfter: string | undefined; code: string | undefined }>(
    (ok, fail) => {
      const req = request(
        url,
        {
          method: 'POST',
          agent,
          headers: {
            ...auth,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            const header = res.headers['retry-after'];
            const code = status === 200 ? undefined : (JSON.parse(text) as { code?: string }).code;
            ok({ status, retryAfter: header, code });
          });
        },
      );
      req.on('error', fail);
      req.end(body);
    },
  );
}

/** `concurrency` clients in a closed loop for `seconds`. */
async function drive(base: string, queries: string[], out: Outcome) {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const end = performance.now() + seconds * 1000;
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const query = queries[next++ % queries.length] ?? 'cell';
        const t = performance.now();
        try {
          const res = await retrieve(base, agent, query);
          const ms = performance.now() - t;
          if (res.status === 200) out.served.push(ms);
          else if (res.status === 503 && res.code === 'OVERLOADED') {
            out.overloaded++;
            out.retryAfter.add(res.retryAfter ?? '(none)');
            await new Promise((r) => setTimeout(r, Number(res.retryAfter ?? 1) * 1000));
          } else {
            const key = `${res.status} ${res.code}`;
            out.failed.set(key, (out.failed.get(key) ?? 0) + 1);
          }
        } catch (error) {
          const key = error instanceof Error ? error.message : String(error);
          out.failed.set(key, (out.failed.get(key) ?? 0) + 1);
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }),
  );
  agent.destroy();
}

async function measure(
  label: string,
  cli: string,
  dataDir: string,
  env: Record<string, string>,
  queries: string[],
) {
  const server = await startServer(cli, dataDir, env);
  try {
    for (let i = 0; i < 50; i++) {
      const res = await post(server.base, '/retrieve', {
        query: queries[i] ?? 'cell',
        mode: 'hybrid',
        topK: 10,
      });
      if (!res.ok) throw new Error(`warm-up retrieval: ${res.status} ${await res.text()}`);
    }
    const out: Outcome = {
      served: [],
      overloaded: 0,
      failed: new Map(),
      health: [],
      retryAfter: new Set(),
    };
    const probe = healthProbe(server.base);
    await drive(server.base, queries, out);
    out.health.push(...(await probe.stop()));
    log(`${label}: ${out.served.length} served, ${out.overloaded} refused`);
    return out;
  } finally {
    await stopServerProcess(server);
  }
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN;
};

const kept = values['keep-data'];
const dataDir = kept ?? mkdtempSync(join(tmpdir(), 'aps-bench-overload-'));
try {
  const { markdown, queries } = corpus();
  if (kept === undefined || !existsSync(join(kept, 'aps.sqlite'))) {
    const server = await startServer(afterCli, dataDir, {});
    try {
      const t = performance.now();
      const form = new FormData();
      form.append('file', new Blob([markdown], { type: 'text/markdown' }), 'corpus.md');
      const up = await fetch(`${server.base}${PREFIX}/knowledge/documents/upload`, {
        method: 'POST',
        headers: auth,
        body: form,
      });
      const { id } = (await up.json()) as { id: string };
      const indexed = (await (
        await post(server.base, `/documents/${id}/index`, { maxChars: Number(values['max-chars']) })
      ).json()) as { chunkCount: number };
      log(
        `indexed ${indexed.chunkCount} chunks in ${((performance.now() - t) / 1000).toFixed(1)} s`,
      );
    } finally {
      await stopServerProcess(server);
    }
  }
  const before = await measure(
    'before',
    values['before-cli'],
    dataDir,
    envPairs(values['before-env']),
    queries,
  );
  const afterEnv: Record<string, string> =
    values.limit === undefined ? {} : { MAX_REQUESTS_IN_FLIGHT: values.limit };
  const after = await measure('after', afterCli, dataDir, afterEnv, queries);

  const f = (x: number) => (Number.isNaN(x) ? '–' : x >= 100 ? x.toFixed(0) : x.toFixed(1));
  const row = (label: string, o: Outcome) => {
    const fails = [...o.failed].map(([k, v]) => `${v}× ${k}`).join(', ') || '0';
    return `| ${label} | ${o.served.length} | ${f(pct(o.served, 0.5))} | ${f(pct(o.served, 0.95))} | ${f(pct(o.served, 0.99))} | ${f(pct(o.served, 1))} | ${f(pct(o.served, 0.99) / pct(o.served, 0.5))} | ${o.overloaded} (Retry-After ${[...o.retryAfter].join('/') || '–'}) | ${fails} | ${f(pct(o.health, 0.5))} | ${f(pct(o.health, 0.99))} | ${f(pct(o.health, 1))} |`;
  };
  console.log(
    `${concurrency} clients sending hybrid retrievals for ${seconds} s; before: ${values['before-cli']} ${values['before-env']}; after: ${afterCli} ${values.limit === undefined ? '(default limit)' : `MAX_REQUESTS_IN_FLIGHT=${values.limit}`}\n`,
  );
  console.log(
    '| server | served | p50 ms | p95 ms | p99 ms | max ms | p99/p50 | 503 OVERLOADED | other failures | /health p50 ms | /health p99 ms | /health max ms |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
  console.log(row('before', before));
  console.log(row('after', after));
  const ratio = (p: number, key: 'served' | 'health') =>
    f(pct(after[key], p) / pct(before[key], p));
  console.log(
    `\nafter/before: served p50 ×${ratio(0.5, 'served')}, p99 ×${ratio(0.99, 'served')}, max ×${ratio(1, 'served')}; /health p50 ×${ratio(0.5, 'health')}, p99 ×${ratio(0.99, 'health')}`,
  );
} finally {
  if (kept === undefined) rmSync(dataDir, { recursive: true, force: true });
}
