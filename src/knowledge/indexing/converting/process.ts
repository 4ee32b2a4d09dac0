/**
 * Runs one child process in its own process group and guarantees it is gone afterwards: on
 * timeout, abort or runaway output the whole group (the child and anything it started) gets
 * SIGKILL, and after a normal exit the group is killed too, so no helper it left behind lingers.
 */
import { spawn } from 'node:child_process';

/** How much of stdout / stderr is kept (the tail: the last lines say what went wrong). */
const CAPTURE_BYTES = 64 * 1024;
/** After the child exits, how long its pipes may stay open (held by an escaped grandchild). */
const PIPE_GRACE_MS = 2000;

/** `memory`: a pooled worker outgrew its memory limit (worker-pool.ts). */
export type StopReason = 'timeout' | 'aborted' | 'overflow' | 'memory';

/** How a run ended, with the tail of what it printed. */
export interface ProcessOutcome {
  /** Exit code, or null when killed by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when this module stopped the child. */
  stopped: StopReason | null;
  stdout: string;
  stderr: string;
  /** Bytes written to stdout + stderr in total (not only the kept tail). */
  outputBytes: number;
  durationMs: number;
}

interface ProcessOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** Combined stdout + stderr bytes above which the child is stopped. */
  maxOutputBytes: number;
  signal?: AbortSignal;
}

/** A spawn failure (the program is missing or not executable): nothing ran. */
export class SpawnError extends Error {
  constructor(
    readonly program: string,
    readonly code: string,
  ) {
    super(`cannot start ${program}: ${code}`);
    this.name = 'SpawnError';
  }
}

/** Keeps the last `limit` bytes of a stream without ever holding much more than that. */
export class Tail {
  private chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.size > 2 * this.limit) {
      const all = Buffer.concat(this.chunks);
      this.chunks = [all.subarray(all.length - this.limit)];
      this.size = this.limit;
    }
  }

  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.limit)).toString('utf8');
  }
}

/** Process groups still running; killed if this process exits first (they are detached). */
const running = new Set<number>();
let exitHookInstalled = false;

/** Kills the process group led by `pid` (the child and anything it started). */
export function killGroup(pid: number): void {
  try {
    // Windows has no process groups; there only the child itself can be killed.
    if (process.platform === 'win32') process.kill(pid, 'SIGKILL');
    else process.kill(-pid, 'SIGKILL');
  } catch {
    // ESRCH: the group is gone already.
  }
}

/** Marks a detached child (a pooled worker) to be killed if this process exits first. */
export function trackGroup(pid: number): void {
  installExitHook();
  running.add(pid);
}

export function untrackGroup(pid: number): void {
  running.delete(pid);
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const pid of running) killGroup(pid);
  });
}

/**
 * Spawns `argv` (no shell: every element reaches the program verbatim) and resolves once it and
 * its pipes are closed. Rejects only with SpawnError; every other outcome is described.
 */
export function runProcess(
  argv: readonly string[],
  options: ProcessOptions,
): Promise<ProcessOutcome> {
  const [program, ...args] = argv;
  if (program === undefined || program === '') return Promise.reject(new SpawnError('', 'ENOENT'));
  installExitHook();
  const started = performance.now();

  return new Promise((resolve, reject) => {
    // detached: the child leads a new process group, so -pid reaches its whole tree.
    const child = spawn(program, args, {
      cwd: options.cwd,
      env: options.env,
      detached: process.platform !== 'win32',
      shell: false,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const stdout = new Tail(CAPTURE_BYTES);
    const stderr = new Tail(CAPTURE_BYTES);
    let outputBytes = 0;
    let stopped: StopReason | null = null;
    let exited = false;
    let graceTimer: NodeJS.Timeout | undefined;

    const stop = (reason: StopReason) => {
      if (exited || stopped !== null) return;
      stopped = reason;
      if (child.pid !== undefined) killGroup(child.pid);
    };
    const timer = setTimeout(() => {
      stop('timeout');
    }, options.timeoutMs);
    const onAbort = () => {
      stop('aborted');
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (child.pid !== undefined) running.add(child.pid);

    const collect = (tail: Tail) => (chunk: Buffer) => {
      outputBytes += chunk.length;
      tail.push(chunk);
      if (outputBytes > options.maxOutputBytes) stop('overflow');
    };
    child.stdout.on('data', collect(stdout));
    child.stderr.on('data', collect(stderr));

    const cleanup = () => {
      clearTimeout(timer);
      clearTimeout(graceTimer);
      options.signal?.removeEventListener('abort', onAbort);
      if (child.pid !== undefined) running.delete(child.pid);
    };

    child.once('error', (error: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return; // errors after a successful spawn end in 'close'
      cleanup();
      reject(new SpawnError(program, error.code ?? 'error'));
    });
    child.once('exit', () => {
      exited = true;
      // Grandchildren may still hold the pipes (and would keep 'close' from firing): kill them.
      if (child.pid !== undefined) killGroup(child.pid);
      graceTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, PIPE_GRACE_MS);
    });
    child.once('close', (code, signal) => {
      cleanup();
      resolve({
        code,
        signal,
        stopped,
        stdout: stdout.text(),
        stderr: stderr.text(),
        outputBytes,
        durationMs: Math.round(performance.now() - started),
      });
    });
    // An abort that happened before the listener was added would otherwise go unnoticed.
    if (options.signal?.aborted === true) stop('aborted');
  });
}
