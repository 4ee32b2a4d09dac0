/** Shared by the converter tests: the built CLI, fake converter scripts, process liveness. */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Config } from '../../src/config.js';
import type { ConverterCommand } from '../../src/knowledge/indexing/converting/commands.js';
import { AppError } from '../../src/errors.js';

export const ROOT = resolve(import.meta.dirname, '../..');
export const CLI = join(ROOT, 'dist', 'converter', 'cli.js');

/** A fresh directory (not test/helpers.ts's: that one pulls in the whole app). */
export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'aps-convert-test-'));
}

/** Newest modification time of the files under `dir` whose names pass `keep`. */
function newestMtime(dir: string, keep: (name: string) => boolean): number {
  let newest = 0;
  if (!existsSync(dir)) return newest;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && keep(entry.name)) {
      newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
    }
  }
  return newest;
}

/**
 * `npm test` builds dist first (pretest); a direct `vitest run test/converter` may find it
 * missing or older than the sources, so it is rebuilt then. Compared per directory, not against
 * cli.js alone: an incremental build re-emits only the modules that changed. tsc still emits when
 * files elsewhere in the project do not type-check, so only a missing output counts as a failure.
 */
export function ensureConverterBuilt(): void {
  const fresh = () =>
    existsSync(CLI) &&
    newestMtime(join(ROOT, 'dist', 'converter'), (n) => n.endsWith('.js')) >=
      newestMtime(join(ROOT, 'src', 'converter'), (n) => n.endsWith('.ts') && !n.endsWith('.d.ts'));
  if (fresh()) return;
  try {
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'pipe' });
  } catch (error) {
    if (!existsSync(CLI)) throw error;
  }
}

export function knowledgeConfig(overrides: Partial<Config['knowledge']> = {}): Config['knowledge'] {
  return {
    uploadMaxBytes: 100 * 1024 * 1024,
    indexConcurrency: 1,
    converterTimeoutMs: 30_000,
    converterMaxOutputBytes: 64 * 1024 * 1024,
    converterMaxInputBytes: null,
    converterWorkers: 1,
    converterWorkerMaxJobs: 500,
    converterWorkerMaxMemoryMb: 2048,
    converterPath: null,
    commandsFile: null,
    batchMaxFiles: 100,
    urlTimeoutMs: 30_000,
    urlAllowPrivate: false,
    eventsHeartbeatMs: 15_000,
    eventsMaxStreams: 1000,
    searchSnapshotDelayMs: null,
    searchAnnMinVectors: null,
    hybridCandidates: 40,
    sqlitePreread: false,
    ...overrides,
  };
}

/** Writes a Node ES module to `dir/name` and returns a command running it on {input} {outputDir}. */
export function fakeConverter(
  dir: string,
  name: string,
  source: string,
  extra: Partial<ConverterCommand> = {},
): ConverterCommand {
  const path = join(dir, name);
  writeFileSync(path, source);
  chmodSync(path, 0o755);
  return {
    id: 'fake',
    description: 'a test converter',
    argv: [process.execPath, path, '{input}', '{outputDir}'],
    ...extra,
  };
}

/**
 * Whether `pid` is a live process. `kill(pid, 0)` throwing ESRCH is the answer; a zombie (killed
 * but not yet reaped, which happens when a container's init does not reap orphans) counts as dead.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return process.platform !== 'linux';
  }
}

/** Polls until every pid is gone (SIGKILL delivery is asynchronous); false after `ms`. */
export async function allGone(pids: number[], ms = 3000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (pids.every((pid) => !isAlive(pid))) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return pids.every((pid) => !isAlive(pid));
}

/** Waits for a file another process writes. */
export async function waitForFile(path: string, ms = 5000): Promise<string> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (existsSync(path)) {
      const text = readFileSync(path, 'utf8');
      if (text !== '') return text;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${path}`);
}

/** Minimal but real-looking starts of binary files, enough for file-type's signatures. */
export const SAMPLES = {
  png: new Uint8Array([
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0,
    1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89,
  ]),
  pdf: new TextEncoder().encode('%PDF-1.7\n%\u00e2\u00e3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n'),
  zip: new Uint8Array([
    0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5,
    0, 0, 0, 0x61, 0x2e, 0x74, 0x78, 0x74,
  ]),
};

/** A fresh input file and (not yet existing) output dir for a runner test. */
export function runnerSetup(name = 'input.txt', content = 'hello') {
  const dir = tempDir();
  const input = join(dir, name);
  writeFileSync(input, content);
  return { dir, input, out: join(dir, 'out') };
}

/** The AppError a promise rejects with (anything else fails the test). */
export async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => new Error('expected a rejection'),
    (e: unknown) => e,
  );
  if (!(error instanceof AppError)) throw error;
  return error;
}

/** Start of a fake converter script: `input` and `out` from argv, writeFileSync imported. */
export const WRITE_MD = `import { writeFileSync } from 'node:fs';
const [input, out] = process.argv.slice(2);`;

/** Spawns a grandchild that sleeps forever and records both pids in outputDir/pids.json. */
export const SPAWN_GRANDCHILD = `import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
const out = process.argv[3];
const grandchild = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
writeFileSync(out + '/pids.json', JSON.stringify([process.pid, grandchild.pid]));`;
