/**
 * Runs a converter command as a separate process and turns whatever happened into markdown or an
 * AppError with a plain-words message. A converter crash or hang can never take the server down:
 * the process tree is killed on timeout, abort or runaway output, and never outlives this call.
 */
import { lstat, mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  MARKDOWN_FILE,
  META_FILE,
  type ConverterMeta,
  type InlineOutput,
} from '../../../converter/contract.js';
import { AppError } from '../../../errors.js';
import type { ConverterCommand } from './commands.js';
import { failure } from './failures.js';
import { parseMeta } from './meta.js';
import { runProcess, SpawnError, type ProcessOutcome } from './process.js';

export interface RunConverterOptions {
  timeoutMs: number;
  /** Largest markdown file, and largest stdout + stderr, accepted from the converter. */
  maxOutputBytes: number;
  /** Aborting kills the process tree; the call then rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * Pages converted so far while a paged format (PDF, OCR'd images) is converted; `total` null
   * when unknown. Only the pooled bundled converter reports it (worker-pool.ts); a process per run
   * has no channel for it.
   */
  onProgress?: (progress: { done: number; total: number | null }) => void;
}

export interface ConverterResult {
  markdown: string;
  meta: ConverterMeta | null;
  /** The tail of the converter's stderr (warnings, diagnostics). */
  stderr: string;
  durationMs: number;
}

const META_MAX_BYTES = 1024 * 1024;
/** Variables a converter never needs and should never see: the server's secrets. */
const SECRET_ENV = /SECRET|SALT|PASSWORD|TOKEN|API_KEY|DATABASE_URL/i;

/**
 * Replaces `{input}` and `{outputDir}` inside each element, in one pass (so a file name that
 * contains `{outputDir}` or `$&` stays literal). The result goes to spawn as argv: no shell.
 */
export function substituteArgv(
  argv: readonly string[],
  values: { input: string; outputDir: string },
): string[] {
  return argv.map((arg) =>
    arg.replace(/\{input\}|\{outputDir\}/g, (m) =>
      m === '{input}' ? values.input : values.outputDir,
    ),
  );
}

export function childEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !SECRET_ENV.test(k)));
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/**
 * Whether `path` is a regular file — not a symlink (which could point a converter's output at any
 * file the server can read), FIFO (which would block the read) or directory.
 */
async function isRegularFile(path: string): Promise<boolean> {
  return lstat(path).then(
    (s) => s.isFile(),
    () => false,
  );
}

/** `document.md`, or for other tools the largest `*.md` they wrote; null if there is none. */
async function findMarkdown(outputDir: string, builtin: boolean): Promise<string | null> {
  const main = join(outputDir, MARKDOWN_FILE);
  if (await isRegularFile(main)) return main;
  if (builtin) return null;
  let best: { path: string; size: number } | null = null;
  for (const entry of await readdir(outputDir, { withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.toLowerCase().endsWith('.md')) continue;
    const path = join(outputDir, entry.name);
    const { size } = await lstat(path);
    if (best === null || size > best.size) best = { path, size };
  }
  return best?.path ?? null;
}

/** Reads a regular file of at most `limit` bytes; null if it is larger. */
async function readCapped(path: string, limit: number): Promise<string | null> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    if (size > limit) return null;
    // One byte more than stat said, so a file still growing (a stray writer) is noticed.
    const buffer = Buffer.alloc(size + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return bytesRead > size ? null : buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

async function readMeta(outputDir: string): Promise<ConverterMeta | null> {
  try {
    const path = join(outputDir, META_FILE);
    if (!(await isRegularFile(path))) return null;
    const text = await readCapped(path, META_MAX_BYTES);
    return text === null ? null : parseMeta(JSON.parse(text));
  } catch {
    return null; // meta.json is optional; a broken one is ignored rather than failing the run
  }
}

/**
 * A JavaScript converter runs as `node <script>`: spawning Node succeeds even when the script is
 * missing (e.g. `dist/` was never built), so its absence is checked here to report it as such.
 */
export async function checkScript(command: ConverterCommand): Promise<void> {
  const [program, script] = command.argv;
  if (program !== process.execPath || script === undefined || !/\.(?:c|m)?js$/i.test(script))
    return;
  const exists = await stat(script).then(
    (s) => s.isFile(),
    () => false,
  );
  if (!exists) {
    throw new AppError(
      'KNOWLEDGE_CONVERTER_BINARY_MISSING',
      `The converter program ${script} was not found.`,
    );
  }
}

/** Absolute paths, and an output directory without a previous run's files. */
export async function prepareRun(
  input: string,
  outputDir: string,
): Promise<{ input: string; outputDir: string }> {
  // Absolute paths: the child runs in outputDir, and a name starting with `-` stays a file name.
  const values = { input: resolve(input), outputDir: resolve(outputDir) };
  await mkdir(values.outputDir, { recursive: true });
  await Promise.all(
    [MARKDOWN_FILE, META_FILE].map((f) => rm(join(values.outputDir, f), { force: true })),
  );
  return values;
}

/**
 * Runs `command` on `input`, writing into `outputDir` (created if missing). Resolves with the
 * markdown; rejects with an AppError (or `signal.reason` when aborted). Never leaves a process.
 */
export async function runConverter(
  command: ConverterCommand,
  input: string,
  outputDir: string,
  opts: RunConverterOptions,
): Promise<ConverterResult> {
  opts.signal?.throwIfAborted();
  const values = await prepareRun(input, outputDir);
  await checkScript(command);
  let outcome: ProcessOutcome;
  try {
    outcome = await runProcess(substituteArgv(command.argv, values), {
      cwd: values.outputDir,
      env: childEnv(),
      timeoutMs: opts.timeoutMs,
      maxOutputBytes: opts.maxOutputBytes,
      signal: opts.signal,
    });
  } catch (error) {
    if (!(error instanceof SpawnError)) throw error;
    const why = error.code === 'ENOENT' ? 'was not found' : `cannot be started (${error.code})`;
    throw new AppError(
      'KNOWLEDGE_CONVERTER_BINARY_MISSING',
      `The converter program ${error.program || '(empty)'} ${why}.`,
      { cause: error },
    );
  }
  return collectOutput(command, values.outputDir, outcome, opts);
}

/** Throws the AppError of a run that did not succeed (or `signal.reason` when aborted). */
function checkOutcome(
  command: ConverterCommand,
  outcome: ProcessOutcome,
  opts: RunConverterOptions & { maxRssBytes?: number },
): void {
  if (outcome.stopped === 'aborted') opts.signal?.throwIfAborted();
  if (outcome.stopped !== null || outcome.signal !== null || outcome.code !== 0) {
    throw failure(outcome, command, opts);
  }
}

/** The result of a run's markdown; a blank one is an error. */
function result(
  markdown: string,
  meta: ConverterMeta | null,
  outcome: ProcessOutcome,
): ConverterResult {
  if (markdown.trim() === '') {
    throw new AppError(
      'KNOWLEDGE_CONVERTER_NO_MARKDOWN',
      'The converter found no text to extract from this file.',
    );
  }
  return {
    markdown: markdown.replace(/^\uFEFF/, ''),
    meta,
    stderr: outcome.stderr,
    durationMs: outcome.durationMs,
  };
}

/**
 * What a finished run left: the markdown (and meta) of `outputDir`, or the AppError for its
 * outcome. Shared by a process per run (above) and the worker pool (worker-pool.ts).
 */
export async function collectOutput(
  command: ConverterCommand,
  outputDir: string,
  outcome: ProcessOutcome,
  opts: RunConverterOptions & { maxRssBytes?: number },
): Promise<ConverterResult> {
  checkOutcome(command, outcome, opts);
  const path = await findMarkdown(outputDir, command.builtin === true);
  if (path === null) {
    throw new AppError(
      'KNOWLEDGE_CONVERTER_NO_MARKDOWN',
      'The converter finished but wrote no markdown.',
    );
  }
  const markdown = await readCapped(path, opts.maxOutputBytes);
  if (markdown === null) {
    const { size } = await stat(path);
    throw new AppError(
      'KNOWLEDGE_CONVERTER_FAILED',
      `The converter output is too large (${mib(size)}; the limit is ${mib(opts.maxOutputBytes)}).`,
    );
  }
  return result(markdown, await readMeta(outputDir), outcome);
}

/**
 * The same for a pooled run that sent its (small) output back in its last message instead of
 * writing files (converter/worker.ts); the meta is validated as a file's would be.
 */
export function inlineResult(
  command: ConverterCommand,
  outcome: ProcessOutcome & { output: InlineOutput },
  opts: RunConverterOptions & { maxRssBytes?: number },
): ConverterResult {
  checkOutcome(command, outcome, opts);
  const { markdown, meta } = outcome.output;
  const bytes = Buffer.byteLength(markdown);
  if (bytes > opts.maxOutputBytes) {
    throw new AppError(
      'KNOWLEDGE_CONVERTER_FAILED',
      `The converter output is too large (${mib(bytes)}; the limit is ${mib(opts.maxOutputBytes)}).`,
    );
  }
  return result(markdown, parseMeta(meta), outcome);
}
