import { EXIT_CODES, type ExitCode } from '../contract.js';

/**
 * A failure the converter reports through its exit code. `message` is one plain line for stderr;
 * the server shows its text to users, so it names the problem, not the code path.
 */
export class ConvertError extends Error {
  /** True when the line is on stderr already (commander prints its own usage errors). */
  readonly reported: boolean;

  constructor(
    readonly exitCode: ExitCode,
    message: string,
    options: { reported?: boolean } = {},
  ) {
    super(message);
    this.name = 'ConvertError';
    this.reported = options.reported ?? false;
  }
}

/**
 * The label the CLI puts before the message on stderr (`aps-convert: <label>: <message>`). The
 * runner strips it again, so the labels live here, next to the codes they describe.
 */
export const EXIT_LABELS: Record<ExitCode, string> = {
  [EXIT_CODES.OK]: 'ok',
  [EXIT_CODES.FAILED]: 'error',
  [EXIT_CODES.USAGE]: 'usage',
  [EXIT_CODES.UNSUPPORTED_FORMAT]: 'unsupported file format',
  [EXIT_CODES.ENCRYPTED]: 'encrypted',
  [EXIT_CODES.CORRUPT]: 'corrupt file',
  [EXIT_CODES.NOTHING_EXTRACTABLE]: 'nothing to extract',
  [EXIT_CODES.TOO_LARGE]: 'file too large',
};
