import type { ExitCode } from '../contract.js';

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
