/**
 * The cost of the request path (issue 13): requests per second of an authenticated GET on a real
 * `aps serve` process, beside a bare Fastify 5 server answering a JSON body of the same size
 * (bench/bare-fastify.ts), with autocannon, in the same run:
 *
 *   npm run bench:request -- [--before-cli /path/to/old/dist/cli.js …] [--duration 8]
 *                            [--connections 10] [--rounds 2] [--db sqlite|postgres] [--log-level info]
 *
 * The route is GET {API_PREFIX}/knowledge/commands (level L2, no database work of its own): what
 * is measured is the server's own path — hooks, the guard, serialisation, logging. Credentials:
 * the raw key as `Authorization: Bearer`, and a JWT minted from it. `--before-cli` may be given
 * more than once (builds labelled `before 1`, `before 2`, … in that order). Each round measures the bare
 * server, then each build's key and JWT runs; the ratios are against the bare server of the same
 * round (the machine's load changes between rounds), and so is each server's CPU time per
 * request (from /proc: the figure a loaded machine distorts least). `--db postgres` runs the servers on
 * PostgreSQL (BENCH_DATABASE_URL, or a throwaway cluster), a fresh database per server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { DEFAULT_EMBEDDING_CACHE } from './retrieval/harness.js';
import { startPostgres } from './retrieval/postgres.js';
import {
  freePort,
  processCpu,
  startBenchServer,
  stopServerProcess,
  type ServerProcess,
} from './server-process.js';

const { values } = parseArgs({
  options: {
    'before-cli': { type: 'string', multiple: true },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '2' },
    db: { type: 'string', default: 'sqlite' },
    'log-level': { type: 'string', default: 'info' },
  },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const rounds = Number(values.rounds);
const log = (line: string) => process.stderr.write(line + '\n');
const PREFIX = '/api/v1';
const ROUTE = `${PREFIX}/knowledge/commands`;
const KEY = `aps_${'b'.repeat(43)}`;

const postgres = values.db === 'postgres' ? startPostgres(log) : undefined;
if (values.db !== 'sqlite' && postgres === undefined) throw new Error(`unknown --db ${values.db}`);

interface Build {
  label: string;
  server: ServerProcess;
  jwt: string;
  bodyBytes: number;
  cleanup: () => Promise<void>;
}

async function startBuild(label: string, cli: string): Promise<Build> {
  const dir = mkdtempSync(join(tmpdir(), 'aps-bench-request-'));
  const database = await postgres?.createDatabase(`request_${label}`);
  const env: Record<string, string> = { LOG_LEVEL: values['log-level'] };
  if (database !== undefined) env.DATABASE_URL = database.url;
  const server = await startBenchServer(cli, dir, KEY, DEFAULT_EMBEDDING_CACHE, env);
  const token = await fetch(`${server.base}${PREFIX}/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiKey: KEY }),
  });
  if (!token.ok) throw new Error(`${label}: POST /auth/token answered ${token.status}`);
  const { token: jwt } = (await token.json()) as { token: string };
  const probe = await fetch(`${server.base}${ROUTE}`, {
    headers: { authorization: `Bearer ${KEY}` },
  });
  if (!probe.ok) throw new Error(`${label}: GET ${ROUTE} answered ${probe.status}`);
  const bodyBytes = (await probe.arrayBuffer()).byteLength;
  return {
    label,
    server,
    jwt,
    bodyBytes,
    cleanup: async () => {
      await stopServerProcess(server);
      rmSync(dir, { recursive: true, force: true });
      await database?.drop();
    },
  };
}

async function startBare(bodyBytes: number): Promise<{ base: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', resolve(import.meta.dirname, 'bare-fastify.ts')],
    {
      env: { PATH: process.env.PATH, PORT: String(port), BODY_BYTES: String(bodyBytes) },
      stdio: 'ignore',
    },
  );
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${base}/health`)).ok) return { base, child };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('the bare Fastify server did not start');
}

interface Result {
  rps: number;
  /** The server process's CPU per request (µs): robust to the machine's load, unlike req/s. */
  cpuUs: number;
  p50: number;
  p99: number;
  errors: number;
}

async function measure(url: string, headers: Record<string, string>, pid: number): Promise<Result> {
  const cpuBefore = processCpu(pid).selfMs;
  const result = await autocannon({ url, connections, duration, headers });
  const cpuMs = processCpu(pid).selfMs - cpuBefore;
  const errors = result.errors + result.non2xx + result.timeouts;
  return {
    rps: result.requests.average,
    cpuUs: result.requests.total === 0 ? 0 : (cpuMs * 1000) / result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors,
  };
}

const builds: Build[] = [];
let bare: { base: string; child: ChildProcess } | undefined;
try {
  const before = values['before-cli'] ?? [];
  for (const [i, cli] of before.entries()) {
    builds.push(await startBuild(before.length === 1 ? 'before' : `before ${i + 1}`, resolve(cli)));
  }
  builds.push(await startBuild('after', resolve(import.meta.dirname, '../dist/cli.js')));
  const bodyBytes = builds[builds.length - 1]?.bodyBytes ?? 0;
  bare = await startBare(bodyBytes);
  log(`GET ${ROUTE}: ${bodyBytes} bytes of JSON; bare Fastify answers as many`);
  const rows: {
    round: number;
    target: string;
    result: Result;
    ratio: number;
    cpuRatio: number;
  }[] = [];
  for (let round = 1; round <= rounds; round++) {
    // Warm-up of every target (JIT, caches), then the measured runs.
    const bareUrl = `${bare.base}/hello`;
    const targets: { name: string; url: string; headers: Record<string, string>; pid: number }[] = [
      { name: 'bare Fastify 5', url: bareUrl, headers: {}, pid: bare.child.pid ?? -1 },
    ];
    for (const b of builds) {
      const url = `${b.server.base}${ROUTE}`;
      const pid = b.server.child.pid ?? -1;
      targets.push({
        name: `${b.label}: raw key`,
        url,
        headers: { authorization: `Bearer ${KEY}` },
        pid,
      });
      targets.push({
        name: `${b.label}: JWT`,
        url,
        headers: { authorization: `Bearer ${b.jwt}` },
        pid,
      });
    }
    let bareRps = 0;
    let bareCpu = 0;
    for (const t of targets) {
      if (round === 1) {
        await autocannon({ url: t.url, connections, duration: 1, headers: t.headers });
      }
      const result = await measure(t.url, t.headers, t.pid);
      if (t.url === bareUrl) {
        bareRps = result.rps;
        bareCpu = result.cpuUs;
      }
      const ratio = bareRps === 0 ? 0 : result.rps / bareRps;
      const cpuRatio = result.cpuUs === 0 ? 0 : bareCpu / result.cpuUs;
      rows.push({ round, target: t.name, result, ratio, cpuRatio });
      log(
        `round ${round} ${t.name}: ${Math.round(result.rps)} req/s, ratio ${ratio.toFixed(2)}, ${Math.round(result.cpuUs)} µs CPU/req (bare/this ${cpuRatio.toFixed(2)}), errors ${result.errors}`,
      );
    }
  }
  console.log(
    `\nGET ${ROUTE} (${bodyBytes} bytes), ${connections} connections, ${duration} s per run, database ${values.db}, LOG_LEVEL ${values['log-level']}\n`,
  );
  console.log(
    '| round | target | req/s | p50 ms | p99 ms | errors | × bare | server CPU µs/req | bare CPU / this |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.round} | ${r.target} | ${Math.round(r.result.rps)} | ${r.result.p50} | ${r.result.p99} | ${r.result.errors} | ${r.ratio.toFixed(2)} | ${Math.round(r.result.cpuUs)} | ${r.cpuRatio.toFixed(2)} |`,
    );
  }
} finally {
  bare?.child.kill('SIGTERM');
  for (const b of builds) await b.cleanup();
  postgres?.stop();
}
