/**
 * The CLI's stderr, shared by log lines and the progress bar. While the bar is shown, a log line
 * erases it, prints, and the bar is drawn again below: the two never mix on one line.
 */
import type { DestinationStream } from 'pino';

/** What the status line writes to: process.stderr, or a test's stream. */
export interface TerminalStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

const ERASE_LINE = '\r\u001b[2K';

export class StatusLine implements DestinationStream {
  private shown: string | null = null;

  constructor(readonly out: TerminalStream) {}

  /** True when the bar may be drawn (a terminal, not a pipe or a file). */
  get isTTY(): boolean {
    return this.out.isTTY === true;
  }

  /** Writes whole lines above the bar (pino calls this for each log line). */
  write(text: string): void {
    if (this.shown === null) {
      this.out.write(text);
      return;
    }
    this.out.write(`${ERASE_LINE}${text}${this.shown}`);
  }

  /** Shows (or replaces) the one status line, cut to the terminal's width so it never wraps. */
  show(line: string): void {
    const columns = this.out.columns ?? 0; // 0: a terminal that does not say (e.g. under `script`)
    const width = Math.max(20, (columns > 0 ? columns : 80) - 1);
    const fitted = line.length > width ? `${line.slice(0, width - 1)}…` : line;
    this.shown = fitted;
    this.out.write(`${ERASE_LINE}${fitted}`);
  }

  /** Erases the status line, leaving the cursor at the start of an empty line. */
  clear(): void {
    if (this.shown === null) return;
    this.shown = null;
    this.out.write(ERASE_LINE);
  }
}
