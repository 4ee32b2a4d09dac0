/**
 * The download bar of `aps models pull`: bytes rather than items (progress.ts counts items), on
 * the same StatusLine so notes print above it. On a terminal one line redrawn at most ten times a
 * second; elsewhere (a pipe, CI logs) one plain line per request and none per chunk.
 */
import { formatBytes } from '../knowledge/embeddings/model-files.js';
import { formatDuration } from './progress.js';
import type { StatusLine } from './terminal.js';

/** `45.2/127.0 MB`: both amounts in the total's unit, so the pair reads at a glance. */
export function bytePair(done: number, total: number): string {
  const [unit, scale] =
    total >= 1e9 ? ['GB', 1e9] : total >= 1e6 ? ['MB', 1e6] : total >= 1e3 ? ['kB', 1e3] : ['B', 1];
  const digits = scale === 1 ? 0 : 1;
  return `${(done / scale).toFixed(digits)}/${(total / scale).toFixed(digits)} ${unit}`;
}

/**
 * `[######----------]  45.2/127.0 MB  35%  12.1 MB/s  ETA 0:07  onnx/model.onnx`: what matters
 * first, so that the file name is what a narrow terminal cuts. `fresh`: the bytes fetched in this
 * run (resumed ones are not part of the rate).
 */
export function byteBarLine(
  done: number,
  total: number,
  elapsedMs: number,
  fresh: number,
  label: string,
  width = 16,
): string {
  const ratio = total === 0 ? 1 : Math.min(1, done / total);
  const filled = Math.round(ratio * width);
  const rate = elapsedMs > 0 ? fresh / (elapsedMs / 1000) : 0;
  const eta = rate > 0 ? formatDuration(((total - done) / rate) * 1000) : '--:--';
  const percent = `${Math.floor(ratio * 100)}%`.padStart(4);
  return (
    `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${bytePair(done, total)} ${percent}` +
    `  ${formatBytes(Math.round(rate))}/s  ETA ${eta}  ${label}`
  );
}

export class ByteProgress {
  private total = 0;
  /** Bytes of the files finished in this run. */
  private finished = 0;
  private current = 0;
  /** Bytes that were on disk before this run (resumed `.part` files): not counted in the rate. */
  private resumed = 0;
  private label = '';
  private started = 0;
  private lastDraw = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly status: StatusLine,
    private readonly now: () => number = () => performance.now(),
  ) {}

  start(total: number): void {
    this.total = total;
    this.started = this.now();
    if (this.status.isTTY && total > 0) {
      this.timer = setInterval(() => {
        this.draw(true);
      }, 1000);
      this.timer.unref();
    }
  }

  /** A request for `path` starts `from` bytes in; `attempt` > 1 after a dropped connection. */
  begin(path: string, from: number, attempt: number): void {
    this.label = path;
    if (attempt === 1) this.resumed += from;
    this.current = from;
    const again = attempt > 1 ? ` (attempt ${attempt})` : '';
    if (from > 0) this.status.write(`resuming ${path} at ${formatBytes(from)}${again}\n`);
    else if (attempt > 1) this.status.write(`retrying ${path}${again}\n`);
    else if (!this.status.isTTY) this.status.write(`downloading ${path}\n`);
    this.draw(true);
  }

  update(bytes: number): void {
    this.current = bytes;
    this.draw(false);
  }

  done(bytes: number): void {
    this.finished += bytes;
    this.current = 0;
    this.draw(true);
  }

  end(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.status.clear();
  }

  private draw(force: boolean): void {
    if (!this.status.isTTY) return;
    const now = this.now();
    if (!force && now - this.lastDraw < 100) return;
    this.lastDraw = now;
    const done = this.finished + this.current;
    const line = byteBarLine(done, this.total, now - this.started, done - this.resumed, this.label);
    this.status.show(line);
  }
}
