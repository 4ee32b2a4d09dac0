/**
 * A pool of long-lived `aps-convert --worker` processes for the bundled converter: a small file
 * no longer pays for starting Node and loading the converter (see converter/worker.ts for the
 * protocol). Isolation stays that of a process per run: a worker that crashes, hangs past the
 * timeout, is aborted, prints too much or outgrows its memory limit (`--max-old-space-size` plus
 * an RSS check) is killed with its process group and a fresh one takes its place; the run fails
 * with the same error codes (failures.ts). A worker is recycled after `maxJobs` jobs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { InlineOutput, WorkerJob, WorkerMessage } from '../../../converter/contract.js';
import {
  killGroup,
  Tail,
  trackGroup,
  untrackGroup,
  type ProcessOutcome,
  type StopReason,
} from './process.js';

export interface PoolOptions {
  /** How the worker is started, e.g. `[node, dist/converter/cli.js]`; `--worker` is added. */
  argv: readonly string[];
  /** Workers at most (the indexing concurrency). */
  size: number;
  /** Jobs after which a worker is replaced. */
  maxJobs: number;
  /** Resident memory above which a worker is killed (mid-job: the run fails). */
  maxRssBytes: number;
  env: NodeJS.ProcessEnv;
  /** How often the RSS of a busy worker is checked (default 250 ms). */
  rssCheckMs?: number;
}

export interface PoolJob {
  file: string;
  outputDir: string;
  command: string;
  lang: string;
  /** Markdown up to this size comes back in the outcome (`output`) instead of files. */
  inlineMaxBytes: number;
}

export interface PoolRunOptions {
  timeoutMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal;
  onProgress?: (progress: { done: number; total: number | null }) => void;
}

/** A run's outcome, as process.ts describes one, plus which worker ran it. */
export interface PoolOutcome extends ProcessOutcome {
  pid: number;
  /** Binary formats whose converters the worker had loaded after the job. */
  loaded: string[];
  /** The markdown and meta of a successful small conversion (nothing was written). */
  output?: InlineOutput;
}

/** A worker exited before it was ready, twice in a row: the converter cannot start. */
export class WorkerStartError extends Error {
  constructor() {
    super('the converter worker could not be started');
    this.name = 'WorkerStartError';
  }
}

const CAPTURE_BYTES = 64 * 1024;
const PAGE_BYTES = 4096;

/** Resident bytes of `pid` (Linux /proc), or null where that cannot be read. */
async function residentBytes(pid: number): Promise<number | null> {
  try {
    const statm = await readFile(`/proc/${pid}/statm`, 'utf8');
    const pages = Number(statm.split(' ')[1]);
    return Number.isFinite(pages) ? pages * PAGE_BYTES : null;
  } catch {
    return null;
  }
}

/** One worker process; it runs one job at a time. */
class Worker {
  readonly child: ChildProcess;
  readonly pid: number;
  jobs = 0;
  lastRss = 0;
  readonly ready: Promise<boolean>;
  readonly exited: Promise<void>;
  private isExited = false;
  private onMessage: ((m: WorkerMessage) => void) | null = null;
  private onOutput: ((bytes: number, chunk: Buffer | null) => void) | null = null;
  private onExit: ((code: number | null, signal: NodeJS.Signals | null) => void) | null = null;

  constructor(options: PoolOptions) {
    const [program, ...args] = options.argv;
    const heapMb = Math.max(64, Math.floor(options.maxRssBytes / (1024 * 1024)));
    this.child = spawn(
      program ?? process.execPath,
      [`--max-old-space-size=${heapMb}`, ...args, '--worker'],
      {
        env: options.env,
        detached: process.platform !== 'win32',
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
        windowsHide: true,
      },
    );
    this.pid = this.child.pid ?? -1;
    if (this.pid > 0) trackGroup(this.pid);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.isExited = true;
        untrackGroup(this.pid);
        killGroup(this.pid); // helpers it left behind go with it
        this.onExit?.(code, signal);
        resolve();
      });
    });
    this.ready = new Promise((resolve) => {
      const onReady = (m: WorkerMessage) => {
        if (m.type === 'ready') resolve(true);
      };
      this.child.once('message', onReady);
      void this.exited.then(() => {
        resolve(false);
      });
    });
    this.child.on('message', (m: WorkerMessage) => this.onMessage?.(m));
    this.child.once('error', () => {
      // Spawn failures end in 'exit' (or never spawn: pid -1, handled by `ready` via kill).
    });
    const output = (chunk: Buffer) => this.onOutput?.(chunk.length, chunk);
    this.child.stdout?.on('data', (chunk: Buffer) => this.onOutput?.(chunk.length, null));
    this.child.stderr?.on('data', output);
    this.release();
  }

  /** While it runs a job (or starts), the worker keeps this process's event loop alive. */
  hold(): void {
    this.child.ref();
    this.child.channel?.ref();
  }

  /** An idle worker does not keep this process alive (the exit hook of process.ts kills it). */
  release(): void {
    this.child.unref();
    this.child.channel?.unref();
  }

  get alive(): boolean {
    return !this.isExited && this.child.connected;
  }

  kill(): Promise<void> {
    if (!this.isExited) this.hold(); // so a caller awaiting the exit is not left behind
    if (this.pid > 0) killGroup(this.pid);
    else this.child.kill('SIGKILL');
    return this.exited;
  }

  /** Runs one job; resolves with its outcome (the worker may be dead afterwards). */
  async run(job: PoolJob, id: number, opts: PoolRunOptions, pool: PoolOptions) {
    const started = performance.now();
    const stderr = new Tail(CAPTURE_BYTES);
    let outputBytes = 0;
    // An object: set by callbacks, which flow analysis does not follow.
    const state: { stopped: StopReason | null } = { stopped: null };
    const stop = (reason: StopReason) => {
      if (state.stopped !== null || this.isExited) return;
      state.stopped = reason;
      void this.kill();
    };
    const timer = setTimeout(() => {
      stop('timeout');
    }, opts.timeoutMs);
    const onAbort = () => {
      stop('aborted');
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const rssTimer = setInterval(() => {
      void residentBytes(this.pid).then((rss) => {
        if (rss !== null && rss > pool.maxRssBytes) stop('memory');
      });
    }, pool.rssCheckMs ?? 250);
    this.onOutput = (bytes, chunk) => {
      outputBytes += bytes;
      if (chunk !== null) stderr.push(chunk);
      if (outputBytes > opts.maxOutputBytes) stop('overflow');
    };

    const result = await new Promise<{
      code: number | null;
      signal: NodeJS.Signals | null;
      stderr: string;
      loaded: string[];
      output?: InlineOutput;
    }>((resolve) => {
      this.onExit = (code, signal) => {
        resolve({ code, signal, stderr: '', loaded: [] });
      };
      this.onMessage = (m) => {
        if (m.type === 'progress' && m.id === id)
          opts.onProgress?.({ done: m.done, total: m.total });
        if (m.type === 'done' && m.id === id) {
          this.lastRss = m.rss;
          resolve({
            code: m.code,
            signal: null,
            stderr: m.stderr,
            loaded: m.loaded,
            output: m.output,
          });
        }
      };
      if (opts.signal?.aborted === true) stop('aborted');
      else if (!this.alive) resolve({ code: null, signal: 'SIGKILL', stderr: '', loaded: [] });
      else this.child.send({ type: 'job', id, ...job } satisfies WorkerJob);
    });
    clearTimeout(timer);
    clearInterval(rssTimer);
    opts.signal?.removeEventListener('abort', onAbort);
    this.onMessage = null;
    this.onOutput = null;
    this.onExit = null;
    this.jobs += 1;
    let { stopped } = state;
    if (stopped !== null) await this.exited;
    const text = stderr.text() + result.stderr;
    outputBytes += Buffer.byteLength(result.stderr);
    if (stopped === null && outputBytes > opts.maxOutputBytes) stopped = 'overflow';
    return {
      code: stopped === null ? result.code : null,
      signal: stopped === null ? result.signal : 'SIGKILL',
      stopped,
      stdout: '',
      stderr: text,
      outputBytes,
      durationMs: Math.round(performance.now() - started),
      pid: this.pid,
      loaded: result.loaded,
      ...(stopped === null && result.output !== undefined ? { output: result.output } : {}),
    } satisfies PoolOutcome;
  }
}

/** The pool's state and counts since it started (the metrics read them when scraped). */
export interface PoolStats {
  /** Workers allowed at once. */
  size: number;
  /** Runs holding a worker now. */
  busy: number;
  /** Runs waiting for a worker. */
  queued: number;
  /** Worker processes started (the first ones and every replacement). */
  started: number;
  /** Workers killed during a job, by reason (memory: also found above the limit after one). */
  killed: Record<StopReason, number>;
}

export class ConverterPool {
  private readonly idle: Worker[] = [];
  private readonly all = new Set<Worker>();
  private readonly waiting: ((worker: Worker | null) => void)[] = [];
  private busy = 0;
  private nextId = 1;
  private closed = false;
  private started = 0;
  private readonly killed: Record<StopReason, number> = {
    timeout: 0,
    aborted: 0,
    overflow: 0,
    memory: 0,
  };

  constructor(private readonly options: PoolOptions) {}

  /** Runs `job` on a worker; rejects only when the pool is closed. */
  async run(job: PoolJob, opts: PoolRunOptions): Promise<PoolOutcome> {
    opts.signal?.throwIfAborted();
    const worker = await this.acquire();
    worker.hold();
    try {
      if (!(await worker.ready)) {
        // It died on start (e.g. killed from outside): one fresh attempt with another.
        this.discard(worker);
        const fresh = this.spawn();
        return await this.runOn(fresh, job, opts);
      }
      return await this.runOn(worker, job, opts);
    } finally {
      this.busy -= 1;
      this.dispatch();
    }
  }

  private async runOn(worker: Worker, job: PoolJob, opts: PoolRunOptions): Promise<PoolOutcome> {
    worker.hold();
    try {
      return await this.runHeld(worker, job, opts);
    } finally {
      worker.release();
    }
  }

  private async runHeld(worker: Worker, job: PoolJob, opts: PoolRunOptions): Promise<PoolOutcome> {
    if (!(await worker.ready)) {
      this.discard(worker);
      throw new WorkerStartError();
    }
    const outcome = await worker.run(job, this.nextId++, opts, this.options);
    if (outcome.stopped !== null) this.killed[outcome.stopped] += 1;
    else if (worker.lastRss > this.options.maxRssBytes) this.killed.memory += 1;
    const spent =
      outcome.stopped !== null ||
      !worker.alive ||
      worker.jobs >= this.options.maxJobs ||
      worker.lastRss > this.options.maxRssBytes;
    if (spent || this.closed) {
      this.discard(worker);
      void worker.kill();
    } else {
      this.idle.push(worker);
    }
    return outcome;
  }

  /** Busy and queued runs, workers started and killed (metrics). */
  stats(): PoolStats {
    return {
      size: this.options.size,
      busy: this.busy,
      queued: this.waiting.length,
      started: this.started,
      killed: { ...this.killed },
    };
  }

  /** The pids and job counts of the live workers (tests, the benchmark). */
  workers(): { pid: number; jobs: number }[] {
    return [...this.all].map((w) => ({ pid: w.pid, jobs: w.jobs }));
  }

  /** Resident memory of all live workers, in bytes (Linux; 0 elsewhere). */
  async residentBytes(): Promise<number> {
    const sizes = await Promise.all([...this.all].map((w) => residentBytes(w.pid)));
    return sizes.reduce<number>((sum, s) => sum + (s ?? 0), 0);
  }

  /** Kills every worker and waits until they are gone; later runs are refused. */
  async close(): Promise<void> {
    this.closed = true;
    for (const resolve of this.waiting.splice(0)) resolve(null);
    await Promise.all([...this.all].map((w) => w.kill()));
    this.all.clear();
    this.idle.length = 0;
  }

  private spawn(): Worker {
    const worker = new Worker(this.options);
    this.started += 1;
    this.all.add(worker);
    void worker.exited.then(() => {
      this.discard(worker);
    });
    return worker;
  }

  private discard(worker: Worker): void {
    this.all.delete(worker);
    const i = this.idle.indexOf(worker);
    if (i >= 0) this.idle.splice(i, 1);
  }

  private async acquire(): Promise<Worker> {
    if (this.closed) throw new Error('the converter pool is closed');
    if (this.busy < this.options.size) {
      this.busy += 1;
      return this.take();
    }
    const worker = await new Promise<Worker | null>((resolve) => this.waiting.push(resolve));
    if (worker === null) throw new Error('the converter pool is closed');
    return worker;
  }

  /** An idle live worker, else a new one. The caller holds a slot. */
  private take(): Worker {
    while (this.idle.length > 0) {
      const worker = this.idle.pop();
      if (worker?.alive === true) return worker;
      if (worker !== undefined) this.discard(worker);
    }
    return this.spawn();
  }

  /** Hands a freed slot to the next waiter. */
  private dispatch(): void {
    const next = this.waiting.shift();
    if (next === undefined) return;
    this.busy += 1;
    next(this.take());
  }
}
