/**
 * Progress of a run over a known number of items. On a terminal: one bar line redrawn in place
 * with the count, percentage, elapsed time and ETA, erased when the run ends. Otherwise (a pipe, a
 * log file): one plain line per item, no control characters.
 *
 * Hand-written rather than cli-progress: what we need is one line plus the rule that log lines go
 * above it, which cli-progress offers only through its multi-bar mode and its own stream handling;
 * this is ~60 lines over `StatusLine`, which the logger already writes through.
 */
import type { StatusLine } from './terminal.js';

/** `1:05`, `12:00:03`. */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

/** The bar line: `[########------------] 3/10  30%  0:12 elapsed  ETA 0:28  name`. */
export function barLine(
  done: number,
  total: number,
  elapsedMs: number,
  label: string,
  width = 20,
): string {
  const ratio = total === 0 ? 1 : Math.min(1, done / total);
  const filled = Math.round(ratio * width);
  const eta = done === 0 ? '--:--' : formatDuration((elapsedMs / done) * (total - done));
  const percent = `${Math.floor(ratio * 100)}%`.padStart(4);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} ${percent}  ${formatDuration(elapsedMs)} elapsed  ETA ${eta}  ${label}`;
}

export class Progress {
  private done = 0;
  private label = '';
  private readonly started: number;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly status: StatusLine,
    private readonly total: number,
    private readonly now: () => number = () => performance.now(),
    /** The plain line's verb (not on a terminal): `reindexing 3/10 name`. */
    private readonly verb = 'reindexing',
  ) {
    this.started = now();
    if (status.isTTY) {
      // Keeps the elapsed time and ETA moving while one long item runs.
      this.timer = setInterval(() => {
        this.draw();
      }, 1000);
      this.timer.unref();
    }
  }

  /** An item starts: the bar names it, or a plain line says so. */
  begin(label: string): void {
    this.label = label;
    if (this.status.isTTY) this.draw();
    else this.status.write(`${this.verb} ${this.done + 1}/${this.total} ${label}\n`);
  }

  /** An item finished (well or not). */
  step(): void {
    this.done += 1;
    if (this.status.isTTY) this.draw();
  }

  /** Erases the bar; the caller prints the summary. */
  end(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.status.clear();
  }

  private draw(): void {
    this.status.show(barLine(this.done, this.total, this.now() - this.started, this.label));
  }
}
