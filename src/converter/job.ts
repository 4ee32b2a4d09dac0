/**
 * One conversion job into an output directory: what `aps-convert <file>` does after parsing its
 * arguments, shared with the worker mode (worker.ts), which runs job after job in one process.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  EXIT_CODES,
  EXIT_LABELS,
  MARKDOWN_FILE,
  META_FILE,
  type ConverterMeta,
  type ExitCode,
} from './contract.js';
import { convertFile, DEFAULT_MAX_INPUT_BYTES, type CommandName } from './convert-file.js';
import { DEFAULT_LIMITS, type ConvertLimits } from './formats/binary-types.js';
import { ConvertError } from './formats/convert-error.js';

export interface JobArgs {
  /** Absolute paths. */
  file: string;
  outputDir: string;
  command: CommandName;
  lang: string;
}

export interface JobHooks {
  /** One stderr line: `label` is `warning` or an EXIT_LABELS entry. */
  report: (label: string, message: string) => void;
  onProgress?: (done: number, total: number) => void;
}

/** A positive integer from the environment, else `fallback`; anything else is a usage error. */
export function envInteger(name: string, fallback: number): number {
  const raw = process.env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new ConvertError(EXIT_CODES.USAGE, `${name} must be a positive integer (got "${raw}")`);
  }
  return value;
}

function limits(): ConvertLimits {
  return {
    ...DEFAULT_LIMITS,
    maxPages: envInteger('APS_CONVERT_MAX_PAGES', DEFAULT_LIMITS.maxPages),
    maxPixels: envInteger('APS_CONVERT_MAX_PIXELS', DEFAULT_LIMITS.maxPixels),
  };
}

/** Write to a temporary name, then rename: a reader never sees a half-written file. */
async function writeAtomic(path: string, data: string): Promise<void> {
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, data, 'utf8');
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** Converts `args.file`: the markdown and its meta, warnings reported. */
export async function convertInput(
  args: Omit<JobArgs, 'outputDir'>,
  hooks: JobHooks,
): Promise<{ markdown: string; meta: ConverterMeta }> {
  const converted = await convertFile(args.file, {
    command: args.command,
    maxInputBytes: envInteger('APS_CONVERT_MAX_INPUT_BYTES', DEFAULT_MAX_INPUT_BYTES),
    lang: args.lang,
    limits: limits(),
    onProgress: hooks.onProgress,
  });
  for (const warning of converted.meta.warnings) hooks.report('warning', warning);
  return converted;
}

const elapsed = (since: number) => Math.round((performance.now() - since) * 10) / 10;

/** Writes a conversion into `outputDir` (document.md, then meta.json). */
export async function writeOutput(
  outputDir: string,
  { markdown, meta }: { markdown: string; meta: ConverterMeta },
  started: number,
): Promise<void> {
  const writeStart = performance.now();
  await mkdir(outputDir, { recursive: true });
  // document.md first: once it exists the conversion is complete; meta.json is optional extra.
  await writeAtomic(join(outputDir, MARKDOWN_FILE), markdown);
  meta.timings.write = elapsed(writeStart);
  meta.timings.total = elapsed(started);
  await writeAtomic(join(outputDir, META_FILE), `${JSON.stringify(meta, null, 2)}\n`);
}

/** The result of a conversion kept in memory (the worker's inline output): only the total. */
export function finishInline(meta: ConverterMeta, started: number): ConverterMeta {
  meta.timings.total = elapsed(started);
  return meta;
}

/** Converts `args.file` into `args.outputDir` (document.md, then meta.json). */
export async function convertToDir(
  args: JobArgs,
  hooks: JobHooks,
  started = performance.now(),
): Promise<void> {
  await writeOutput(args.outputDir, await convertInput(args, hooks), started);
}

/** The exit code for an error thrown by a job, reported on the way (unless it was already). */
export function exitCodeOf(error: unknown, report: JobHooks['report']): ExitCode {
  if (error instanceof ConvertError) {
    if (!error.reported) report(EXIT_LABELS[error.exitCode], error.message);
    return error.exitCode;
  }
  report(EXIT_LABELS[EXIT_CODES.FAILED], error instanceof Error ? error.message : String(error));
  return EXIT_CODES.FAILED;
}
