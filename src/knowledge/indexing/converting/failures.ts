/**
 * A failed converter run → the AppError users see: an error code for the UI and one plain
 * sentence, ending with the converter's own last word on stderr (which names the actual problem).
 */
import { EXIT_CODES, EXIT_LABELS, type ExitCode } from '../../../converter/contract.js';
import { AppError, type ErrorCode } from '../../../errors.js';
import type { ConverterCommand } from './commands.js';
import type { ProcessOutcome } from './process.js';

const DETAIL_MAX_CHARS = 300;

/** aps-convert exit codes (other than OK and FAILED) → error code and sentence. */
const BY_EXIT_CODE: Partial<Record<ExitCode, [ErrorCode, string]>> = {
  [EXIT_CODES.UNSUPPORTED_FORMAT]: [
    'KNOWLEDGE_UNSUPPORTED_FORMAT',
    'The converter does not support this file format',
  ],
  [EXIT_CODES.ENCRYPTED]: [
    'KNOWLEDGE_DOCUMENT_UNREADABLE',
    'The file is encrypted or password-protected',
  ],
  [EXIT_CODES.CORRUPT]: ['KNOWLEDGE_DOCUMENT_UNREADABLE', 'The file is corrupt'],
  [EXIT_CODES.NOTHING_EXTRACTABLE]: [
    'KNOWLEDGE_CONVERTER_NO_MARKDOWN',
    'The converter found no text to extract from this file',
  ],
  // The catalogue has no "file too large" code for indexing; the sentence says what happened.
  [EXIT_CODES.TOO_LARGE]: ['KNOWLEDGE_CONVERTER_FAILED', 'The file is too large for the converter'],
  [EXIT_CODES.USAGE]: [
    'KNOWLEDGE_CONVERTER_FAILED',
    'The converter was started with invalid arguments',
  ],
};

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

/**
 * The last stderr line that is not a warning; for aps-convert without its `aps-convert: <label>: `
 * prefix, since the sentence it is appended to already says what the label says.
 */
function stderrDetail(stderr: string, builtin: boolean): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  let line = lines.reverse().find((l) => !/^[\w.-]+: warning: /i.test(l)) ?? '';
  if (builtin) {
    line = line.replace(/^aps-convert: /, '');
    const label = Object.values(EXIT_LABELS).find((l) => line.startsWith(`${l}: `));
    if (label !== undefined) line = line.slice(label.length + 2);
  }
  line = line.replace(/[.\s]+$/, '');
  return line.length > DETAIL_MAX_CHARS ? `${line.slice(0, DETAIL_MAX_CHARS)}…` : line;
}

/**
 * Maps a run that did not exit 0 to an AppError. Exit codes are only interpreted for commands
 * that speak the aps-convert contract; another tool's exit code 3 means something else.
 */
export function failure(
  outcome: ProcessOutcome,
  command: ConverterCommand,
  limits: { timeoutMs: number; maxOutputBytes: number; maxRssBytes?: number },
): AppError {
  const builtin = command.builtin === true;
  const detail = stderrDetail(outcome.stderr, builtin);
  const error = (code: ErrorCode, sentence: string) =>
    new AppError(code, `${sentence}${detail === '' ? '' : `: ${detail}`}.`);

  if (outcome.stopped === 'timeout') {
    return new AppError(
      'KNOWLEDGE_CONVERTER_TIMEOUT',
      `The converter did not finish within ${seconds(limits.timeoutMs)} and was stopped.`,
    );
  }
  if (outcome.stopped === 'overflow') {
    return new AppError(
      'KNOWLEDGE_CONVERTER_FAILED',
      `The converter printed more than ${mib(limits.maxOutputBytes)} of output and was stopped.`,
    );
  }
  if (outcome.stopped === 'memory') {
    return new AppError(
      'KNOWLEDGE_CONVERTER_FAILED',
      `The converter used more than ${mib(limits.maxRssBytes ?? 0)} of memory and was stopped.`,
    );
  }
  if (outcome.signal !== null) {
    return error(
      'KNOWLEDGE_CONVERTER_FAILED',
      `The converter crashed (killed by ${outcome.signal})`,
    );
  }
  const code = outcome.code ?? -1;
  if (!builtin) {
    return error(
      'KNOWLEDGE_CONVERTER_FAILED',
      `The converter command "${command.id}" failed (exit code ${code})`,
    );
  }
  const mapped = BY_EXIT_CODE[code as ExitCode];
  if (mapped !== undefined) return error(...mapped);
  // Shells report death by signal N as 128 + N; a converter wrapper script may do the same.
  const what = code > 128 ? 'crashed' : 'failed';
  return error('KNOWLEDGE_CONVERTER_FAILED', `The converter ${what} (exit code ${code})`);
}
