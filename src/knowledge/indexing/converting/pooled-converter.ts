/**
 * The convert function indexing uses: the bundled converter's commands run on the worker pool
 * (worker-pool.ts) — small plain text and markdown in this process (in-process.ts) —, every other
 * command (KNOWLEDGE_COMMANDS_FILE, a KNOWLEDGE_CONVERTER_PATH binary) as one process per run
 * (runner.ts).
 */
import { resolve } from 'node:path';
import type { Config } from '../../../config.js';
import type { ConverterCommand } from './commands.js';
import { bundledConverterPath } from './commands.js';
import { AppError } from '../../../errors.js';
import { convertInProcess } from './in-process.js';
import { ConverterPool, WorkerStartError, type PoolOutcome } from './worker-pool.js';
import {
  checkScript,
  childEnv,
  collectOutput,
  inlineResult,
  runConverter,
  type ConverterResult,
  type RunConverterOptions,
} from './runner.js';

/**
 * Output up to this size travels back in the worker's IPC message instead of two files written,
 * read and removed; the message is parsed on the server's event loop, so it stays small.
 */
const INLINE_MAX_BYTES = 1024 * 1024;

export type ConvertFunction = (
  command: ConverterCommand,
  input: string,
  outputDir: string,
  opts: RunConverterOptions,
) => Promise<ConverterResult>;

/**
 * The argv of the built-in commands:
 * `[…invocation, {input}, --output-dir, {outputDir}, --command, <name>]`.
 */
function pooledCommandName(command: ConverterCommand, invocation: string[]): string | null {
  if (command.builtin !== true) return null;
  const { argv } = command;
  if (invocation.some((part, i) => argv[i] !== part)) return null;
  const name = argv[argv.length - 1];
  return argv[argv.length - 2] === '--command' && name !== undefined ? name : null;
}

export interface PooledConverter {
  convert: ConvertFunction;
  /** Null when the bundled converter is not in use (KNOWLEDGE_CONVERTER_PATH is set). */
  pool: ConverterPool | null;
  close(): Promise<void>;
}

/**
 * The pool serves the bundled converter only: a replacement binary (KNOWLEDGE_CONVERTER_PATH)
 * need not speak the worker protocol, so its commands keep a process per run.
 */
export function createPooledConverter(config: Config['knowledge']): PooledConverter {
  if (config.converterPath !== null) {
    return { convert: runConverter, pool: null, close: async () => {} };
  }
  const invocation = [process.execPath, bundledConverterPath()];
  const pool = new ConverterPool({
    argv: invocation,
    size: config.converterWorkers,
    maxJobs: config.converterWorkerMaxJobs,
    maxRssBytes: config.converterWorkerMaxMemoryMb * 1024 * 1024,
    env: childEnv(),
  });
  let scriptFound = false;
  const convert: ConvertFunction = async (command, input, outputDir, opts) => {
    const name = pooledCommandName(command, invocation);
    if (name === null) return runConverter(command, input, outputDir, opts);
    opts.signal?.throwIfAborted();
    if (!scriptFound) {
      await checkScript(command); // a missing dist/ is reported as such
      scriptFound = true;
    }
    const small = await convertInProcess(input, name, {
      maxOutputBytes: opts.maxOutputBytes,
      maxInputBytes: config.converterMaxInputBytes,
    });
    if (small !== null) return small;
    // The worker creates the output directory only for output too large to send back.
    const values = { input: resolve(input), outputDir: resolve(outputDir) };
    const inlineMaxBytes = Math.min(INLINE_MAX_BYTES, opts.maxOutputBytes);
    let outcome: PoolOutcome;
    try {
      outcome = await pool.run(
        {
          file: values.input,
          outputDir: values.outputDir,
          command: name,
          lang: 'eng',
          inlineMaxBytes,
        },
        opts,
      );
    } catch (error) {
      if (!(error instanceof WorkerStartError)) throw error;
      throw new AppError('KNOWLEDGE_CONVERTER_FAILED', 'The converter could not be started.', {
        cause: error,
      });
    }
    const limits = { ...opts, maxRssBytes: config.converterWorkerMaxMemoryMb * 1024 * 1024 };
    const { output } = outcome;
    return output === undefined
      ? collectOutput(command, values.outputDir, outcome, limits)
      : inlineResult(command, { ...outcome, output }, limits);
  };
  return { convert, pool, close: () => pool.close() };
}
