/** A real `aps serve` process for the HTTP benchmarks: started on a free port, stopped with SIGTERM. */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export interface ServerProcess {
  /** e.g. `http://127.0.0.1:40123` */
  base: string;
  port: number;
  child: ChildProcess;
}

/** A TCP port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const probe = createServer();
    probe.once('error', fail);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => {
        ok(typeof address === 'object' && address !== null ? address.port : 0);
      });
    });
  });
}

/** Starts `cli serve` with `env` on 127.0.0.1 and resolves once `/health` answers (60 s at most). */
export async function startServerProcess(
  cli: string,
  env: Record<string, string>,
  stdio: StdioOptions = 'ignore',
): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [cli, 'serve'], {
    env: { PATH: process.env.PATH, ...env, HOST: '127.0.0.1', PORT: String(port) },
    stdio,
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/health`)).ok) return { base, port, child };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('server did not start within 60 s');
}

/**
 * A benchmark's server: `cli serve` on `dataDir` with the benchmark's bootstrap `key`, the static
 * model's shared cache, quiet logs (server logs on stderr with BENCH_SERVER_LOGS=1), no
 * per-client connection cap (every benchmark client comes from 127.0.0.1), plus `env`.
 */
export function startBenchServer(
  cli: string,
  dataDir: string,
  key: string,
  embeddingCache: string,
  env: Record<string, string>,
): Promise<ServerProcess> {
  return startServerProcess(
    cli,
    {
      DATA_DIR: dataDir,
      LOG_LEVEL: 'error',
      NODE_ENV: 'test',
      BOOTSTRAP_API_KEY: key,
      EMBEDDING_CACHE_DIR: embeddingCache,
      MAX_CONNECTIONS_PER_CLIENT: '0',
      ...env,
    },
    ['ignore', process.env.BENCH_SERVER_LOGS === '1' ? 'inherit' : 'ignore', 'inherit'],
  );
}

export async function stopServerProcess(server: ServerProcess): Promise<void> {
  const exited = new Promise((r) => server.child.once('exit', r));
  server.child.kill('SIGTERM');
  await exited;
}

/** CPU milliseconds a process has used, from /proc (Linux; zeros elsewhere). */
export interface ProcessCpu {
  /** The process itself, every thread. */
  selfMs: number;
  /** Its children: those that exited (reaped) and those still running. */
  childrenMs: number;
}

const TICK_MS = 10; // USER_HZ is 100 on Linux

function statFields(pid: number | string): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), numbered from 3 (`state`).
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

export function processCpu(pid: number): ProcessCpu {
  const own = statFields(pid);
  if (own === null) return { selfMs: 0, childrenMs: 0 };
  const field = (f: string[], n: number) => Number(f[n - 3] ?? 0) * TICK_MS;
  let childrenMs = field(own, 16) + field(own, 17);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(entry);
    if (f === null || Number(f[1]) !== pid) continue;
    childrenMs += field(f, 14) + field(f, 15) + field(f, 16) + field(f, 17);
  }
  return { selfMs: field(own, 14) + field(own, 15), childrenMs };
}

/** CPU milliseconds of a process's main thread alone (its other threads left out). */
export function mainThreadCpuMs(pid: number): number {
  const f = statFields(`${pid}/task/${pid}`);
  return f === null ? 0 : (Number(f[11] ?? 0) + Number(f[12] ?? 0)) * TICK_MS;
}
