/**
 * The cost of the request path: requests per second of an authenticated GET on a real
 * `aps serve` process, beside a bare Fastify 5 server answering a JSON body of the same size
 * (bench/bare-fastify.ts), with autocannon, in the same run:
 *
 *   npm run bench:request -- [--before-cli /path/to/old/dist/cli.js …] [--duration 8]
 *                            [--connections 10] [--rounds 2] [--db sqlite|postgres] [--log-level info]
 *                            [--metrics on|off|both] [--credentials both|key|jwt]
 *
 * The route is GET {API_PREFIX}/knowledge/commands (level L2, no database work of its own): what
 * is measured is the server's own path — hooks, the guard, serialisation, logging. Credentials:
 * the raw key as `Authorization: Bearer`, and a JWT minted from it. `--before-cli` may be given
 * more than once (builds labelled `before 1`, `before 2`, … in that order).
 *
 * Every run has a fresh server, started for it, warmed up, measured and stopped: two servers of one
 * build started together can differ by 20 µs a request for their whole life (docs/performance.md),
 * so servers kept across a run compare their start-up luck as much as their builds. A round
 * runs each build's raw key and JWT and the bare server, each round starting one target later.
 * The ratios are against the bare server of the same round (the machine's load changes between
 * rounds), and so is each server's CPU time per request (from /proc: the figure a loaded machine
 * distorts least). The last table gives each target's median over the rounds. `--db postgres`
 * runs the servers on PostgreSQL (BENCH_DATABASE_URL, or a throwaway cluster), a fresh database
 * per server. `--metrics on` (the default) sets METRICS_TOKEN, so every request is counted in the
 * metrics (src/metrics/); builds from before the metrics ignore it. `--metrics both` runs this
 * build twice, with metrics and without (`after, metrics off`). `--credentials key` measures the
 * raw key only (shorter rounds).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { DEFAULT_EMBEDDING_CACHE } from './retrieval/harness.js';
import { percentile } from './retrieval/metrics.js';
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
    metrics: { type: 'string', default: 'on' },
    credentials: { type: 'string', default: 'both' },
  },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const rounds = Number(values.rounds);
const log = (line: string) => process.stderr.write(line + '\n');
const PREFIX = '/api/v1';
const ROUTE = `${PREFIX}/knowledge/commands`;
const KEY = `aps_${'b'.repeat(43)}`;
const WARM_UP_SECONDS = 2;
const METRICS_TOKEN = 'm'.repeat(40);
/** The measured route's answer, in bytes: the bare server answers as many. */
let bodyBytes = 0;

const postgres = values.db === 'postgres' ? startPostgres(log) : undefined;
if (values.db !== 'sqlite' && postgres === undefined) throw new Error(`unknown --db ${values.db}`);

interface Build {
  label: string;
  server: ServerProcess;
  jwt: string;
  bodyBytes: number;
  cleanup: () => Promise<void>;
}

async function startBuild(label: string, cli: string, metrics: boolean): Promise<Build> {
  const dir = mkdtempSync(join(tmpdir(), 'aps-bench-request-'));
  const database = await postgres?.createDatabase(`request_${label}`);
  const env: Record<string, string> = { LOG_LEVEL: values['log-level'] };
  // Metrics on: every request is counted (builds without metrics ignore the variable).
  if (metrics) env.METRICS_TOKEN = METRICS_TOKEN;
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

async function startBare(bodyBytes: number): Promise<ServerProcess> {
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
      if ((await fetch(`${base}/health`)).ok) return { base, port, child };
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
  // Warm-up (JIT, caches) of this fresh server, then the measured run.
  await autocannon({ url, connections, duration: WARM_UP_SECONDS, headers });
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

/** One measurement: a fresh server (and credential), its URL, and how to stop it. */
interface Running {
  url: string;
  headers: Record<string, string>;
  pid: number;
  stop: () => Promise<void>;
}

async function running(
  build: { cli: string; label: string; metrics: boolean },
  credential: 'key' | 'jwt',
): Promise<Running> {
  const b = await startBuild(build.label.replace(/\W+/g, '_'), build.cli, build.metrics);
  bodyBytes = b.bodyBytes;
  return {
    url: `${b.server.base}${ROUTE}`,
    headers: { authorization: `Bearer ${credential === 'key' ? KEY : b.jwt}` },
    pid: b.server.child.pid ?? -1,
    stop: b.cleanup,
  };
}

async function runningBare(): Promise<Running> {
  const bare = await startBare(bodyBytes);
  return {
    url: `${bare.base}/hello`,
    headers: {},
    pid: bare.child.pid ?? -1,
    stop: () => stopServerProcess(bare),
  };
}

const metricsOn = values.metrics !== 'off';
const before = (values['before-cli'] ?? []).map((cli, i, all) => ({
  label: all.length === 1 ? 'before' : `before ${i + 1}`,
  cli: resolve(cli),
  metrics: metricsOn,
}));
const current = resolve(import.meta.dirname, '../dist/cli.js');
const builds = [
  ...before,
  { label: 'after', cli: current, metrics: metricsOn },
  ...(values.metrics === 'both'
    ? [{ label: 'after, metrics off', cli: current, metrics: false }]
    : []),
];
const targets: { name: string; start: () => Promise<Running> }[] = [];
for (const b of builds) {
  if (values.credentials !== 'jwt')
    targets.push({ name: `${b.label}: raw key`, start: () => running(b, 'key') });
  if (values.credentials !== 'key')
    targets.push({ name: `${b.label}: JWT`, start: () => running(b, 'jwt') });
}
const BARE = 'bare Fastify 5';
targets.push({ name: BARE, start: runningBare });

const rows: { round: number; target: string; result: Result; ratio: number; cpuRatio: number }[] =
  [];
try {
  for (let round = 1; round <= rounds; round++) {
    const results: { target: string; result: Result }[] = [];
    // Each round starts one target later, so no target is always measured first, or always after
    // the same one. The bare server answers as many bytes as the builds' route, measured at the
    // first start (before any bare run).
    const shift = (round - 1) % targets.length;
    for (const t of [...targets.slice(shift), ...targets.slice(0, shift)]) {
      const server = await t.start();
      try {
        const result = await measure(server.url, server.headers, server.pid);
        results.push({ target: t.name, result });
        log(
          `round ${round} ${t.name}: ${Math.round(result.rps)} req/s, ${Math.round(result.cpuUs)} µs CPU/req, errors ${result.errors}`,
        );
      } finally {
        await server.stop();
      }
    }
    // Ratios against this round's bare server (the machine's load changes between rounds).
    const bare = results.find((r) => r.target === BARE)?.result;
    for (const { target, result } of results) {
      const ratio = bare === undefined || bare.rps === 0 ? 0 : result.rps / bare.rps;
      const cpuRatio = bare === undefined || result.cpuUs === 0 ? 0 : bare.cpuUs / result.cpuUs;
      rows.push({ round, target, result, ratio, cpuRatio });
    }
  }
  console.log(
    `\nGET ${ROUTE} (${bodyBytes} bytes), ${connections} connections, ${duration} s per run, a fresh server per run, database ${values.db}, LOG_LEVEL ${values['log-level']}, metrics ${values.metrics}\n`,
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
  if (rounds > 1) {
    const median = (xs: number[]) =>
      percentile(
        [...xs].sort((x, y) => x - y),
        0.5,
      );
    console.log(`\nMedians over the ${rounds} rounds:\n`);
    console.log('| target | × bare (lowest–highest) | server CPU µs/req |');
    console.log('|---|---|---|');
    for (const t of targets) {
      const mine = rows.filter((r) => r.target === t.name);
      const ratios = mine.map((r) => r.ratio);
      console.log(
        `| ${t.name} | ${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) | ${Math.round(median(mine.map((r) => r.result.cpuUs)))} |`,
      );
    }
  }
} finally {
  postgres?.stop();
}
