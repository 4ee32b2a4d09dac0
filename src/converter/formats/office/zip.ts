/**
 * A guarded reader for the zip containers of office formats (DOCX, XLSX, PPTX, ODT, ODS). Every
 * limit is enforced before or while inflating, never after: the entry count comes from the central
 * directory, declared sizes and ratios are checked before an entry is opened, and the inflated
 * bytes are counted as they stream, so a header that lies cannot make the reader buffer a bomb.
 * Only the entries a converter asks for are inflated.
 */
import { open as openFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { EXIT_CODES } from '../../contract.js';
import type { ConvertLimits } from '../binary-types.js';
import { ConvertError } from '../convert-error.js';

const MiB = 1024 * 1024;

/** Inflated : compressed above this, on an entry past RATIO_MIN_BYTES, is treated as a bomb. */
const MAX_COMPRESSION_RATIO = 200;
/** Small entries may compress extremely well (a blank sheet); only big ones are ratio-checked. */
const RATIO_MIN_BYTES = MiB;
/**
 * Parts that are parsed into a whole tree (DOCX/ODT body, slides, styles) at most: a DOM costs
 * many times the XML's size, so this keeps memory bounded well below maxUncompressedBytes.
 * Spreadsheet rows are streamed and bounded by maxUncompressedBytes and maxCells instead.
 */
const MAX_TREE_PART_BYTES = 32 * MiB;

const OLE_SIGNATURE = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
/** Stream names an encrypted OOXML package has inside its OLE wrapper (UTF-16LE directory). */
const OLE_ENCRYPTION_MARKERS = ['EncryptionInfo', 'EncryptedPackage'].map((name) =>
  Buffer.from(name, 'utf16le'),
);

function mib(bytes: number): string {
  return `${(bytes / MiB).toFixed(1)} MiB`;
}

function tooLarge(message: string): ConvertError {
  return new ConvertError(EXIT_CODES.TOO_LARGE, message);
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] ?? message;
}

/**
 * Office files saved with a password are not zips but OLE compound files holding the encrypted
 * package. The directory may sit anywhere in the file, so the whole file is scanned in chunks for
 * the stream names (with an overlap so a name split across chunks is still found).
 */
async function oleKind(path: string): Promise<'encrypted' | 'legacy' | null> {
  const handle = await openFile(path, 'r');
  try {
    const head = Buffer.alloc(OLE_SIGNATURE.length);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    if (bytesRead < head.length || !head.equals(OLE_SIGNATURE)) return null;
    const chunk = Buffer.alloc(MiB);
    const overlap = 64;
    let position = 0;
    for (;;) {
      const { bytesRead: n } = await handle.read(chunk, 0, chunk.length, position);
      const view = chunk.subarray(0, n);
      if (OLE_ENCRYPTION_MARKERS.some((marker) => view.includes(marker))) return 'encrypted';
      if (n < chunk.length) return 'legacy';
      position += n - overlap;
    }
  } finally {
    await handle.close();
  }
}

/** Part names are case-insensitive in OOXML and may be written with a leading slash. */
function partKey(name: string): string {
  return name.replace(/^\/+/, '').toLowerCase();
}

export class ZipArchive {
  /** Inflated bytes handed out so far, across all entries. */
  private total = 0;
  private inflateMs = 0;

  private constructor(
    private readonly zip: ZipFile,
    private readonly entries: Map<string, Entry>,
    private readonly limits: ConvertLimits,
  ) {}

  /**
   * Opens `path`. `what` names the format in messages ("DOCX"). Throws ENCRYPTED for a
   * password-protected OLE wrapper, CORRUPT for anything that is not a readable zip, TOO_LARGE
   * for too many entries — all before a single entry is inflated.
   */
  static async open(path: string, limits: ConvertLimits, what: string): Promise<ZipArchive> {
    const ole = await oleKind(path);
    if (ole === 'encrypted') {
      throw new ConvertError(EXIT_CODES.ENCRYPTED, `the ${what} file is password-protected`);
    }
    if (ole === 'legacy') {
      throw new ConvertError(
        EXIT_CODES.CORRUPT,
        `the file is a legacy binary Office document (97–2003 format), not a ${what} (zip) file`,
      );
    }
    let zip: ZipFile;
    try {
      // Sizes are validated here, not by yauzl, so that a lying header is reported as TOO_LARGE.
      zip = await yauzl.openPromise(path, {
        lazyEntries: true,
        autoClose: false,
        validateEntrySizes: false,
      });
    } catch (error) {
      throw new ConvertError(
        EXIT_CODES.CORRUPT,
        `the ${what} file is not a readable zip archive (${firstLine(error)})`,
      );
    }
    if (zip.entryCount > limits.maxZipEntries) {
      zip.close();
      throw tooLarge(
        `the ${what} archive has ${zip.entryCount} entries; at most ${limits.maxZipEntries} are accepted`,
      );
    }
    const entries = new Map<string, Entry>();
    try {
      for await (const entry of zip.eachEntry()) {
        if (!entry.fileName.endsWith('/')) entries.set(partKey(entry.fileName), entry);
      }
    } catch (error) {
      zip.close();
      throw new ConvertError(
        EXIT_CODES.CORRUPT,
        `the ${what} archive is damaged (${firstLine(error)})`,
      );
    }
    return new ZipArchive(zip, entries, limits);
  }

  has(name: string): boolean {
    return this.entries.has(partKey(name));
  }

  /** Milliseconds spent inflating entries so far. */
  get inflateTime(): number {
    return Math.round(this.inflateMs * 10) / 10;
  }

  close(): void {
    if (this.zip.isOpen) this.zip.close();
  }

  /** Refuses an entry from its central-directory header alone, before opening it. */
  private precheck(name: string, entry: Entry): void {
    if (entry.isEncrypted()) {
      throw new ConvertError(EXIT_CODES.ENCRYPTED, `the part ${name} is encrypted`);
    }
    if (!entry.canDecodeFileData()) {
      throw new ConvertError(
        EXIT_CODES.CORRUPT,
        `the part ${name} uses an unsupported compression method (${entry.compressionMethod})`,
      );
    }
    const declared = entry.uncompressedSize;
    this.checkInflated(name, entry, declared, this.total + declared);
  }

  /**
   * Refuses an entry of `entryBytes` inflated bytes when the document would then hold
   * `documentBytes` (past maxUncompressedBytes) or the entry compresses too well to be genuine.
   * The same check runs on the sizes a header declares and on the bytes actually inflated.
   */
  private checkInflated(
    name: string,
    entry: Entry,
    entryBytes: number,
    documentBytes: number,
  ): void {
    if (documentBytes > this.limits.maxUncompressedBytes) {
      throw tooLarge(
        `the document's content exceeds ${mib(this.limits.maxUncompressedBytes)} when uncompressed`,
      );
    }
    if (
      entryBytes > RATIO_MIN_BYTES &&
      entryBytes / Math.max(1, entry.compressedSize) > MAX_COMPRESSION_RATIO
    ) {
      throw tooLarge(
        `the part ${name} is a decompression bomb (compressed more than ${MAX_COMPRESSION_RATIO}:1)`,
      );
    }
  }

  /**
   * The inflated bytes of one entry, chunk by chunk. Counting happens on the actual output: more
   * bytes than the header declared, a total past maxUncompressedBytes or a ratio past the cap
   * stops the inflation at once.
   */
  async *chunks(name: string): AsyncGenerator<Buffer> {
    const entry = this.entries.get(partKey(name));
    if (entry === undefined) {
      throw new ConvertError(EXIT_CODES.CORRUPT, `the part ${name} is missing`);
    }
    this.precheck(name, entry);
    let stream: Readable;
    try {
      stream = await this.zip.openReadStreamPromise(entry);
    } catch (error) {
      throw new ConvertError(EXIT_CODES.CORRUPT, `cannot read ${name} (${firstLine(error)})`);
    }
    let actual = 0;
    let started = performance.now();
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        actual += chunk.length;
        this.total += chunk.length;
        if (actual > entry.uncompressedSize) {
          throw tooLarge(
            `the part ${name} inflates beyond its declared size (a decompression bomb)`,
          );
        }
        this.checkInflated(name, entry, actual, this.total);
        this.inflateMs += performance.now() - started;
        yield chunk;
        started = performance.now();
      }
      this.inflateMs += performance.now() - started;
    } catch (error) {
      if (error instanceof ConvertError) throw error;
      throw new ConvertError(
        EXIT_CODES.CORRUPT,
        `the part ${name} is damaged (${firstLine(error)})`,
      );
    } finally {
      // Stops zlib at once when the consumer or a check gave up early.
      stream.destroy();
    }
  }

  /** A whole entry, refused above `maxBytes` (MAX_TREE_PART_BYTES) before it is inflated. */
  async read(name: string, maxBytes = MAX_TREE_PART_BYTES): Promise<Buffer> {
    const entry = this.entries.get(partKey(name));
    if (entry !== undefined) this.precheck(name, entry); // a bomb is named as such first
    if (entry !== undefined && entry.uncompressedSize > maxBytes) {
      throw tooLarge(
        `the part ${name} is ${mib(entry.uncompressedSize)} uncompressed; at most ${mib(maxBytes)} is converted`,
      );
    }
    const parts: Buffer[] = [];
    for await (const chunk of this.chunks(name)) parts.push(chunk);
    return Buffer.concat(parts);
  }

  /** A whole entry as UTF-8 text (BOM removed). */
  async text(name: string, maxBytes = MAX_TREE_PART_BYTES): Promise<string> {
    return (await this.read(name, maxBytes)).toString('utf8').replace(/^\uFEFF/, '');
  }

  /** An entry as UTF-8 text pieces, split safely between multi-byte characters. */
  async *textChunks(name: string): AsyncGenerator<string> {
    const decoder = new StringDecoder('utf8');
    let first = true;
    for await (const chunk of this.chunks(name)) {
      let text = decoder.write(chunk);
      if (first && text !== '') {
        text = text.replace(/^\uFEFF/, '');
        first = false;
      }
      yield text;
    }
    const rest = decoder.end();
    if (rest !== '') yield rest;
  }
}
