/**
 * What bench:scale reads from outside a server process: its resident memory (/proc), the time
 * it takes to listen and to be ready, and the exact nearest chunks of a query (a float32 scan of
 * the whole vector table in this process) to measure the served vector search's recall against.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { freePort } from '../server-process.js';

/** Resident set size of a process (bytes), from /proc; 0 where there is none. */
export function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m === null ? 0 : Number(m[1]) * 1024;
  } catch {
    return 0;
  }
}

export interface Started {
  base: string;
  child: ChildProcess;
  /** Spawn → the first answered GET /health (seconds). */
  listenS: number;
  /** Spawn → the first 200 of GET /health/ready (seconds): the search indexes loaded. */
  readyS: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function status(url: string): Promise<number> {
  try {
    const res = await fetch(url);
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** Starts `cli serve` with `env`; resolves when it is ready (`timeoutS` at most). */
export async function startTimed(
  cli: string,
  env: Record<string, string>,
  timeoutS: number,
): Promise<Started> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [cli, 'serve'], {
    env: { PATH: process.env.PATH, ...env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', process.env.BENCH_SERVER_LOGS === '1' ? 'inherit' : 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  const elapsed = () => (performance.now() - t0) / 1000;
  let listenS = 0;
  while (elapsed() < timeoutS) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    if (listenS === 0 && (await status(`${base}/health`)) === 200) listenS = elapsed();
    if (listenS > 0 && (await status(`${base}/health/ready`)) === 200) {
      return { base, child, listenS, readyS: elapsed() };
    }
    await sleep(20);
  }
  child.kill('SIGKILL');
  throw new Error(`server not ready within ${timeoutS} s`);
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** All vectors of the model's table, normalised, with their chunk ids (for exact search). */
export class ExactVectors {
  private constructor(
    private readonly ids: string[],
    private readonly matrix: Float32Array,
    private readonly dims: number,
  ) {}

  static load(dbPath: string, model: string): ExactVectors {
    const db = new Database(dbPath, { readonly: true });
    try {
      const table = db
        .prepare('select table_name, dimensions from knowledge_vector_tables where model = ?')
        .raw()
        .get(model) as [string, number] | undefined;
      if (table === undefined) throw new Error(`no vector table of ${model}`);
      const [name, dims] = table;
      const count = db.prepare(`select count(*) from ${name}`).pluck().get() as number;
      const matrix = new Float32Array(count * dims);
      const ids: string[] = [];
      const rows = db
        .prepare(`select chunk_id, embedding from ${name}`)
        .raw()
        .iterate() as IterableIterator<[string, Buffer]>;
      for (const [id, blob] of rows) {
        const v = new Float32Array(new Uint8Array(blob).buffer);
        let norm = 0;
        for (const x of v) norm += x * x;
        const inv = norm > 0 ? 1 / Math.sqrt(norm) : 0;
        const offset = ids.length * dims;
        for (let j = 0; j < dims; j++) matrix[offset + j] = (v[j] ?? 0) * inv;
        ids.push(id);
      }
      return new ExactVectors(ids, matrix, dims);
    } finally {
      db.close();
    }
  }

  get size(): number {
    return this.ids.length;
  }

  /** The ids of the `k` chunks of largest cosine with `query`. */
  nearest(query: Float32Array, k: number): string[] {
    const best: { score: number; row: number }[] = [];
    const { matrix, dims } = this;
    let floor = Number.NEGATIVE_INFINITY;
    for (let r = 0; r < this.ids.length; r++) {
      let dot = 0;
      const offset = r * dims;
      for (let j = 0; j < dims; j++) dot += (query[j] ?? 0) * (matrix[offset + j] ?? 0);
      if (dot <= floor) continue;
      best.push({ score: dot, row: r });
      best.sort((a, b) => b.score - a.score);
      if (best.length > k) best.length = k;
      if (best.length === k) floor = best[k - 1]!.score;
    }
    return best.map((b) => this.ids[b.row]!);
  }
}
