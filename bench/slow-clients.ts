/**
 * Slow clients against a real server process, before and after in one run: N connections from one
 * address that announce `content-length: 100`, send 10 bytes and stall (no key), plus N that
 * connect and send nothing. Reports how many each server refused at once and how many were still
 * open after 5 s, 35 s and 65 s, and whether `/health` kept answering meanwhile.
 *
 *   npm run bench:slow-clients -- [--before-cli /path/to/old/dist/cli.js] [--clients 200]
 */
import { get } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_EMBEDDING_CACHE } from './retrieval/harness.js';
import { startServerProcess, stopServerProcess } from './server-process.js';

const { values } = parseArgs({
  options: {
    'before-cli': { type: 'string' },
    clients: { type: 'string', default: '200' },
  },
});
const clients = Number(values.clients);
const afterCli = resolve(import.meta.dirname, '../dist/cli.js');
const CHECKPOINTS_S = [5, 35, 65];

/** `/health` from another loopback address: the stalled clients' cap is per address. */
function probe(port: number): Promise<void> {
  return new Promise((done) => {
    const req = get(
      { host: '127.0.0.1', port, path: '/health', localAddress: '127.0.0.2', timeout: 5000 },
      (res) => {
        res.resume();
        res.on('end', done);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => {
      done();
    });
  });
}

async function run(cli: string) {
  const dataDir = mkdtempSync(join(tmpdir(), 'aps-bench-slow-'));
  const server = await startServerProcess(cli, {
    DATA_DIR: dataDir,
    LOG_LEVEL: 'error',
    EMBEDDING_CACHE_DIR: DEFAULT_EMBEDDING_CACHE,
  });
  const port = server.port;
  const sockets: Socket[] = [];
  let refused = 0;
  let open = 0;
  const opened = (stall: string) =>
    new Promise<void>((done) => {
      const socket = connect(port, '127.0.0.1', () => {
        open++;
        socket.write(stall);
        done();
      });
      let first = true;
      socket.on('data', (data) => {
        if (first && / 429 /.test(data.toString('latin1').split('\r\n')[0] ?? '')) refused++;
        first = false;
      });
      socket.on('error', () => undefined);
      socket.on('close', () => {
        open--;
      });
      sockets.push(socket);
    });
  const body =
    'POST /api/v1/knowledge/retrieve HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"query":"';
  await Promise.all([
    ...Array.from({ length: clients }, () => opened(body)),
    ...Array.from({ length: clients }, () => opened('')),
  ]);
  const started = Date.now();
  const stillOpen: number[] = [];
  const healthMs: number[] = [];
  for (const at of CHECKPOINTS_S) {
    while (Date.now() - started < at * 1000) {
      const t0 = performance.now();
      await probe(port);
      healthMs.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 250));
    }
    stillOpen.push(open);
  }
  for (const s of sockets) s.destroy();
  await stopServerProcess(server);
  rmSync(dataDir, { recursive: true, force: true });
  healthMs.sort((a, b) => a - b);
  return { refused, stillOpen, healthMaxMs: healthMs.at(-1) ?? 0 };
}

const rows: [string, Awaited<ReturnType<typeof run>>][] = [];
if (values['before-cli'] !== undefined) rows.push(['before', await run(values['before-cli'])]);
rows.push(['after', await run(afterCli)]);
console.log(
  `${2 * clients} connections from one address (${clients} stalled bodies, ${clients} silent)`,
);
console.log(
  `| build | refused at once (429) | ${CHECKPOINTS_S.map((s) => `open after ${s} s`).join(' | ')} | /health max |`,
);
console.log(`|---|---|${CHECKPOINTS_S.map(() => '---').join('|')}|---|`);
for (const [name, r] of rows) {
  console.log(
    `| ${name} | ${r.refused} | ${r.stillOpen.join(' | ')} | ${r.healthMaxMs.toFixed(1)} ms |`,
  );
}
