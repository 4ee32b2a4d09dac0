/**
 * `npx tsx bench/health-under-load.ts [--chunks N]`: /health latency while one document of N
 * chunks (default 10,000) is indexed, against /health on the idle server in the same run.
 *
 * `--text-mb M` (large-document mode): a text file of about M MB (30 MB ≈ 26k chunks) uploaded,
 * indexed, then deleted (until its rows are purged), while /health is polled and a retrieval
 * keeps being asked: /health p50/p99/max and the retrievals answered, per phase.
 * `--database-url postgres://…` runs either mode on PostgreSQL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';

const { values } = parseArgs({
  options: {
    chunks: { type: 'string', default: '10000' },
    'text-mb': { type: 'string' },
    'database-url': { type: 'string' },
  },
});
const n = Number(values.chunks);
const textMb = values['text-mb'] === undefined ? null : Number(values['text-mb']);
const words =
  'alpha beta gamma delta river mountain engine signal harbor lantern quartz meadow circuit orbit'.split(
    ' ',
  );
let seed = 7;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const sentence = () =>
  Array.from({ length: 12 }, () => words[Math.floor(rand() * words.length)]).join(' ') + '.';

/** N sections of markdown, or M MB of plain-text paragraphs. */
function document(): { name: string; body: string } {
  if (textMb === null) {
    const body = Array.from(
      { length: n },
      (_, i) => `## Section ${i}\n\n${Array.from({ length: 10 }, sentence).join(' ')}\n`,
    ).join('\n');
    return { name: 'big.md', body };
  }
  const paragraphs: string[] = [];
  let size = 0;
  while (size < textMb * 1024 * 1024) {
    const paragraph = Array.from({ length: 4 + Math.floor(rand() * 8) }, sentence).join(' ');
    paragraphs.push(paragraph);
    size += paragraph.length + 2;
  }
  return { name: 'big.txt', body: paragraphs.join('\n\n') };
}

const dir = mkdtempSync(join(tmpdir(), 'aps-health-'));
const config = loadConfig(
  {
    DATA_DIR: dir,
    PORT: '0',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'test',
    EMBEDDING_CACHE_DIR: resolve(import.meta.dirname, '../node_modules/.cache/aps-test-embeddings'),
    UPLOAD_MAX_BYTES: String(1 << 30),
    ...(values['database-url'] === undefined ? {} : { DATABASE_URL: values['database-url'] }),
  },
  dir,
);
const lines: string[] = [];
const server = await startServer(config, { print: (l) => lines.push(l) });
const key = /^\s+(aps_\S+)$/m.exec(lines.join('\n'))?.[1] ?? '';
const headers = { authorization: `Bearer ${key}` };
const json = { ...headers, 'content-type': 'application/json' };
const api = `${server.address}${config.apiPrefix}/knowledge`;
await server.ctx.knowledge.embedder.ready();

/**
 * Polls /health from a worker thread (its own event loop: a stall of the server's loop shows as
 * latency, where a probe on the same loop would just wake up late) until stopped, with at least
 * `min` samples; the latencies sorted.
 */
function probe(min: number): { stop(): Promise<number[]> } {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
    let stop = false;
    parentPort.on('message', () => { stop = true; });
    (async () => {
      const times = [];
      while (!stop || times.length < workerData.min) {
        const t = performance.now();
        await (await fetch(workerData.url)).json();
        times.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 10));
      }
      parentPort.postMessage(times);
    })();`,
    { eval: true, workerData: { url: `${server.address}/health`, min } },
  );
  const result = new Promise<number[]>((resolve) => worker.once('message', resolve));
  return {
    async stop() {
      worker.postMessage('stop');
      const times = await result;
      await worker.terminate();
      return times.sort((a, b) => a - b);
    },
  };
}

/** Retrievals asked one after another until `until`: latencies of the answered ones, failures. */
async function retrieve(until: () => boolean): Promise<{ times: number[]; failed: number }> {
  const times: number[] = [];
  let failed = 0;
  while (!until()) {
    const t = performance.now();
    const res = await fetch(`${api}/retrieve`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ query: 'penguins huddle', mode: 'hybrid', topK: 5 }),
    });
    const body = (await res.json()) as { items?: unknown[] };
    if (res.status === 200 && (body.items?.length ?? 0) > 0) times.push(performance.now() - t);
    else failed += 1;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { times: times.sort((a, b) => a - b), failed };
}

const pct = (xs: number[], p: number) =>
  (xs[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? 0).toFixed(1);
const row = (label: string, xs: number[]) =>
  `| ${label} | ${xs.length} | ${pct(xs, 0.5)} | ${pct(xs, 0.99)} | ${pct(xs, 1)} |`;

async function upload(name: string, body: string): Promise<{ id: string }> {
  const form = new FormData();
  form.append('file', new Blob([body]), name);
  const res = await fetch(`${api}/documents/upload`, { method: 'POST', headers, body: form });
  return (await res.json()) as { id: string };
}

const idle = await probe(200).stop();
// A small document the retrievals find throughout.
const small = await upload('penguins.md', '# Penguins\n\nPenguins huddle together in winter.');
await fetch(`${api}/documents/${small.id}/index`, { method: 'POST', headers: json, body: '{}' });

const big = document();
const doc = await upload(big.name, big.body);
let done = false;
const start = performance.now();
const indexing = fetch(`${api}/documents/${doc.id}/index`, {
  method: 'POST',
  headers: json,
  body: JSON.stringify(textMb === null ? { maxChars: 1400 } : {}),
}).then(async (r) => {
  done = true;
  return (await r.json()) as {
    chunkCount: number;
    document: { converterMeta: { timings: Record<string, number> } };
  };
});
const answering = retrieve(() => done);
const busyProbe = probe(20);
const result = await indexing;
const busy = await busyProbe.stop();
const answered = await answering;
console.log(
  `indexed ${result.chunkCount} chunks (${(big.body.length / 1048576).toFixed(1)} MB) in ${((performance.now() - start) / 1000).toFixed(1)} s; stages ms ${JSON.stringify(result.document.converterMeta.timings)}`,
);
console.log('| /health | samples | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|');
console.log(row('idle', idle));
console.log(row('while indexing', busy));
const answers = (label: string, r: { times: number[]; failed: number }) =>
  `${label}: ${r.times.length} answered (p50 ${pct(r.times, 0.5)} ms, max ${pct(r.times, 1)} ms), ${r.failed} failed`;
const retrievals = [answers('indexing', answered)];

if (textMb !== null) {
  let purged = false;
  const deleteStart = performance.now();
  const deleting = (async () => {
    await fetch(`${api}/documents/${doc.id}`, { method: 'DELETE', headers });
    const documents = server.ctx.knowledge.documents as { settled?: () => Promise<void> };
    await documents.settled?.(); // the background purge (absent before it existed)
    purged = true;
  })();
  const deleteAnswering = retrieve(() => purged);
  const deleteProbe = probe(20);
  await deleting;
  const deleteBusy = await deleteProbe.stop();
  const deleteAnswered = await deleteAnswering;
  console.log(row('while deleting', deleteBusy));
  retrievals.push(
    `${answers('deleting', deleteAnswered)}, purged in ${((performance.now() - deleteStart) / 1000).toFixed(1)} s`,
  );
}
console.log(`retrievals: ${retrievals.join('; ')}`);
await server.close();
rmSync(dir, { recursive: true, force: true });
