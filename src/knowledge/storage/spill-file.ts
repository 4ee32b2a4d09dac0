/**
 * A file sink for uploads that holds a small upload in memory and writes it in one call when it
 * ends, and streams a larger one to the file from the moment it outgrows `memoryBytes`. Most
 * documents are small: a write stream costs them a thread-pool round trip per chunk on top of the
 * open and the close.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Writable } from 'node:stream';

export class SpillFile extends Writable {
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private file: WriteStream | null = null;
  /** The one write of a small upload, while it runs. */
  private writing: Promise<void> | null = null;

  constructor(
    private readonly path: string,
    private readonly memoryBytes: number,
    private readonly mode = 0o600,
  ) {
    super();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error) => void): void {
    if (this.file === null && this.bufferedBytes + chunk.length <= this.memoryBytes) {
      this.buffered.push(chunk);
      this.bufferedBytes += chunk.length;
      done();
      return;
    }
    const file = this.file ?? this.open();
    if (file.write(chunk)) done();
    else file.once('drain', done);
  }

  override _final(done: (error?: Error) => void): void {
    const file = this.file;
    if (file === null) {
      const data = Buffer.concat(this.buffered);
      this.buffered = [];
      this.writing = writeFile(this.path, data, { mode: this.mode });
      this.writing.then(
        () => {
          done();
        },
        (error: unknown) => {
          done(error as Error);
        },
      );
      return;
    }
    file.end();
    // Done once the file is closed: a reader then sees all of it.
    file.once('close', () => {
      done(file.errored ?? undefined);
    });
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.buffered = [];
    const file = this.file;
    if (this.writing !== null) {
      // Reported closed only once the write is over: removing the file then cannot race it.
      const settled = () => {
        done(error);
      };
      this.writing.then(settled, settled);
      return;
    }
    if (file === null || file.closed) {
      done(error);
      return;
    }
    // Closed before this sink reports itself closed: removing the file after that cannot race
    // the open.
    file.once('close', () => {
      done(error);
    });
    file.destroy();
  }

  /** The file, opened when the upload outgrows memory, with what was buffered so far. */
  private open(): WriteStream {
    const file = createWriteStream(this.path, { mode: this.mode });
    file.on('error', (error) => {
      this.destroy(error);
    });
    for (const chunk of this.buffered) file.write(chunk);
    this.buffered = [];
    this.file = file;
    return file;
  }
}
