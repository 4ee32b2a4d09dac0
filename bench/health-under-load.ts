/**
 * `npx tsx bench/health-under-load.ts [--chunks N]`: /health latency while one document of N
 * chunks (default 10,000) is indexed, against /health on the idle server in the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';

const { values } = parseArgs({ options: { chunks: { type: 'string', default: '10000' } } });
const n = Number(values.chunks);
const words =
  'alpha beta gamma delta river mountain engine signal harbor lantern quartz meadow circuit orbit'.split(
    ' ',
  );
let seed = 7;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const sentence = () =>
  Array.from({ length: 12 }, () => words[Math.floor(rand() * words.length)]).join(' ') + '.';
const markdown = Array.from(
  { length: n },
  (_, i) => `## Section ${i}\n\n${Array.from({ length: 10 }, sentence).join(' ')}\n`,
).join('\n');

const dir = mkdtempSync(join(tmpdir(), 'aps-health-'));
const config = loadConfig(
  {
    DATA_DIR: dir,
    PORT: '0',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'test',
    EMBEDDING_CACHE_DIR: resolve(import.meta.dirname, '../node_modules/.cache/aps-test-embeddings'),
    UPLOAD_MAX_BYTES: String(1 << 30),
  },
  dir,
);
const lines: string[] = [];
const server = await startServer(config, { print: (l) => lines.push(l) });
const key = /^\s+(aps_\S+)$/m.exec(lines.join('\n'))?.[1] ?? '';
const headers = { authorization: `Bearer ${key}` };
await server.ctx.knowledge.embedder.ready();

async function probe(until: () => boolean, min: number): Promise<number[]> {
  const times: number[] = [];
  while (!until() || times.length < min) {
    const t = performance.now();
    await (await fetch(`${server.address}/health`)).json();
    times.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 10));
  }
  return times.sort((a, b) => a - b);
}
const pct = (xs: number[], p: number) =>
  (xs[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? 0).toFixed(1);

const idle = await probe(() => true, 200);
const form = new FormData();
form.append('file', new Blob([markdown]), 'big.md');
const api = `${server.address}${config.apiPrefix}/knowledge`;
const doc = (await (
  await fetch(`${api}/documents/upload`, { method: 'POST', headers, body: form })
).json()) as { id: string };
let done = false;
const start = performance.now();
const indexing = fetch(`${api}/documents/${doc.id}/index`, {
  method: 'POST',
  headers: { ...headers, 'content-type': 'application/json' },
  body: JSON.stringify({ maxChars: 1400 }),
}).then(async (r) => {
  done = true;
  return (await r.json()) as {
    chunkCount: number;
    document: { converterMeta: { timings: Record<string, number> } };
  };
});
const busy = await probe(() => done, 20);
const result = await indexing;
console.log(
  `indexed ${result.chunkCount} chunks in ${((performance.now() - start) / 1000).toFixed(1)} s; stages ms ${JSON.stringify(result.document.converterMeta.timings)}`,
);
console.log('| /health | samples | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|');
console.log(`| idle | ${idle.length} | ${pct(idle, 0.5)} | ${pct(idle, 0.99)} | ${pct(idle, 1)} |`);
console.log(
  `| while indexing | ${busy.length} | ${pct(busy, 0.5)} | ${pct(busy, 0.99)} | ${pct(busy, 1)} |`,
);
await server.close();
rmSync(dir, { recursive: true, force: true });
