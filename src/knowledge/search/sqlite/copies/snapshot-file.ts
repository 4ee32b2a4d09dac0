/**
 * The file format of an in-process copy's snapshot (snapshots.ts): named typed arrays and string
 * lists after a JSON header, each 8-byte aligned, then a CRC-32 of everything before it.
 *
 *   "APSSNAP1" · u32 header bytes · header JSON (padded) · sections (each padded) · u32 CRC-32
 *
 * Written from views of the live index arrays without copying them, in batches with the event
 * loop free in between; the write is abandoned (the file never renamed into place) when the
 * index changed meanwhile. Read in one sequential pass, each section into an array of its own.
 */
import { open, rename, rm } from 'node:fs/promises';
import { crc32 } from 'node:zlib';

const MAGIC = Buffer.from('APSSNAP1');
/** Bytes written per batch (one writev; the CRC of a batch is computed just before). */
const BATCH_BYTES = 8 << 20;

const ARRAYS = {
  f64: Float64Array,
  f32: Float32Array,
  i32: Int32Array,
  u16: Uint16Array,
  u8: Uint8Array,
  i8: Int8Array,
} as const;
export type ArrayType = keyof typeof ARRAYS;
export type Typed = Float64Array | Float32Array | Int32Array | Uint16Array | Uint8Array | Int8Array;

/** A section: a typed array given as parts (concatenated), or a list of strings. */
export type Section =
  { type: ArrayType; parts: readonly Typed[] } | { type: 'strings'; list: readonly string[] };

interface SectionHeader {
  name: string;
  type: ArrayType | 'strings';
  bytes: number;
}
interface Header {
  meta: Record<string, unknown>;
  sections: SectionHeader[];
}

const pad8 = (n: number) => (8 - (n % 8)) % 8;
const PADDING = new Uint8Array(8);
const bytesOf = (a: Typed) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** Temporary files made by this process (their names must differ). */
let written = 0;

/** Why a snapshot cannot be used (corrupt, truncated, another format). */
export class SnapshotError extends Error {}

/**
 * Writes the sections to `path` (through a temporary file renamed into place). Resolves false,
 * leaving nothing behind, when `unchanged()` turned false between two batches.
 */
export async function writeSnapshot(
  path: string,
  meta: Record<string, unknown>,
  sections: ReadonlyMap<string, Section>,
  unchanged: () => boolean,
): Promise<boolean> {
  const bodies: { header: SectionHeader; chunks: Uint8Array[] }[] = [];
  for (const [name, section] of sections) {
    const chunks =
      section.type === 'strings'
        ? [Buffer.from(JSON.stringify(section.list))]
        : section.parts.map(bytesOf);
    const bytes = chunks.reduce((sum, c) => sum + c.byteLength, 0);
    bodies.push({ header: { name, type: section.type, bytes }, chunks });
  }
  const header = Buffer.from(JSON.stringify({ meta, sections: bodies.map((b) => b.header) }));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(header.byteLength);
  const parts: Uint8Array[] = [
    MAGIC,
    length,
    header,
    PADDING.subarray(0, pad8(12 + header.length)),
  ];
  for (const body of bodies) {
    // One push per part: a section may have many (too many for a spread).
    for (const chunk of body.chunks) parts.push(chunk);
    parts.push(PADDING.subarray(0, pad8(body.header.bytes)));
  }
  // Empty ones left out: zlib's crc32 of a view of an empty ArrayBuffer does not return the
  // running value it was given.
  const all = parts.filter((part) => part.byteLength > 0);
  const temporary = `${path}.${process.pid}.${++written}.tmp`;
  const file = await open(temporary, 'w');
  let crc = 0;
  let complete = false;
  try {
    for (let i = 0; i < all.length;) {
      const batch: Uint8Array[] = [];
      let size = 0;
      while (i < all.length && (size === 0 || size + (all[i]?.byteLength ?? 0) <= BATCH_BYTES)) {
        const chunk = all[i++] as Uint8Array;
        crc = crc32(chunk, crc);
        batch.push(chunk);
        size += chunk.byteLength;
      }
      if (!unchanged()) return false;
      await file.writev(batch);
      if (!unchanged()) return false;
    }
    const trailer = Buffer.alloc(4);
    trailer.writeUInt32LE(crc >>> 0);
    await file.write(trailer);
    await file.sync();
    complete = true;
  } finally {
    await file.close();
    if (!complete) await rm(temporary, { force: true });
  }
  await rename(temporary, path);
  return true;
}

/** Whether a parsed header has the shape written (a changed byte can keep it valid JSON). */
function isHeader(value: unknown): value is Header {
  const object = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
  return (
    object(value) &&
    object(value.meta) &&
    Array.isArray(value.sections) &&
    value.sections.every(
      (section: unknown) =>
        object(section) &&
        typeof section.name === 'string' &&
        typeof section.type === 'string' &&
        Number.isSafeInteger(section.bytes) &&
        (section.bytes as number) >= 0,
    )
  );
}

/** A snapshot read back: its meta and its sections (each an array of its own). */
export interface Snapshot {
  meta: Record<string, unknown>;
  arrays: Map<string, Typed>;
  strings: Map<string, string[]>;
}

/**
 * Reads and checks a snapshot; throws SnapshotError when it is corrupt or of another format.
 * Sections named in `skip` are checked but not kept.
 * One sequential pass: each array section is read straight into an array of its own (which an
 * index may keep as it is: no whole-file buffer, no copy), the CRC computed as the bytes come;
 * nothing is returned unless the CRC matches.
 */
export async function readSnapshot(
  path: string,
  options: { skip?: readonly string[] } = {},
): Promise<Snapshot> {
  const file = await open(path, 'r');
  try {
    const end = (await file.stat()).size - 4;
    if (end < 16) throw new SnapshotError('not a snapshot');
    let at = 0;
    let crc = 0;
    /** Fills `bytes` from the file at `at` on (at most a batch per read) and CRCs them. */
    const read = async (bytes: Uint8Array): Promise<void> => {
      if (at + bytes.byteLength > end) throw new SnapshotError('truncated');
      for (let done = 0; done < bytes.byteLength;) {
        const length = Math.min(bytes.byteLength - done, BATCH_BYTES);
        const { bytesRead } = await file.read(bytes, done, length, at + done);
        if (bytesRead === 0) throw new SnapshotError('truncated');
        crc = crc32(bytes.subarray(done, done + bytesRead), crc);
        done += bytesRead;
      }
      at += bytes.byteLength;
    };
    const head = Buffer.alloc(12);
    await read(head);
    if (!head.subarray(0, 8).equals(MAGIC)) throw new SnapshotError('not a snapshot');
    const headerBytes = head.readUInt32LE(8);
    if (12 + headerBytes > end) throw new SnapshotError('truncated');
    const headerPart = Buffer.alloc(headerBytes + pad8(12 + headerBytes));
    await read(headerPart);
    let header: unknown;
    try {
      header = JSON.parse(headerPart.subarray(0, headerBytes).toString('utf8'));
    } catch {
      throw new SnapshotError('unreadable header');
    }
    if (!isHeader(header)) throw new SnapshotError('unreadable header');
    const snapshot: Snapshot = { meta: header.meta, arrays: new Map(), strings: new Map() };
    for (const section of header.sections) {
      if (at + section.bytes > end) throw new SnapshotError('truncated');
      if (section.type === 'strings') {
        const bytes = Buffer.alloc(section.bytes);
        await read(bytes);
        let list: unknown;
        try {
          list = JSON.parse(bytes.toString('utf8'));
        } catch {
          throw new SnapshotError(`section ${section.name}`);
        }
        if (!Array.isArray(list)) throw new SnapshotError(`section ${section.name}`);
        snapshot.strings.set(section.name, list as string[]);
      } else if (options.skip?.includes(section.name) === true) {
        // Read (for the CRC) through one batch-sized buffer, not kept.
        const buffer = new Uint8Array(Math.min(section.bytes, BATCH_BYTES));
        for (let left = section.bytes; left > 0; left -= buffer.byteLength) {
          await read(buffer.subarray(0, Math.min(left, buffer.byteLength)));
        }
      } else {
        const Type = (ARRAYS as Partial<typeof ARRAYS>)[section.type];
        if (Type === undefined || section.bytes % Type.BYTES_PER_ELEMENT !== 0) {
          throw new SnapshotError(`section ${section.name}`);
        }
        const array = new Type(section.bytes / Type.BYTES_PER_ELEMENT);
        await read(bytesOf(array));
        snapshot.arrays.set(section.name, array);
      }
      const padding = pad8(section.bytes);
      if (padding > 0) await read(new Uint8Array(padding));
    }
    if (at !== end) throw new SnapshotError('bytes after the sections');
    const trailer = Buffer.alloc(4);
    const { bytesRead } = await file.read(trailer, 0, 4, end);
    if (bytesRead !== 4 || crc >>> 0 !== trailer.readUInt32LE(0)) {
      throw new SnapshotError('checksum mismatch');
    }
    return snapshot;
  } finally {
    await file.close();
  }
}

/** The size and CRC-32 of a file (a graph saved beside a snapshot), read in batches. */
export async function fileChecksum(path: string): Promise<{ bytes: number; crc: number }> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(BATCH_BYTES);
    let crc = 0;
    let bytes = 0;
    for (;;) {
      const { bytesRead } = await file.read(buffer, 0, BATCH_BYTES, bytes);
      if (bytesRead === 0) break;
      crc = crc32(buffer.subarray(0, bytesRead), crc);
      bytes += bytesRead;
    }
    return { bytes, crc: crc >>> 0 };
  } finally {
    await file.close();
  }
}

/**
 * The meta of the snapshot at `path` once its whole content passed the CRC-32 (a backup takes
 * only snapshots it can vouch for); throws SnapshotError otherwise. Reads in batches.
 */
export async function checkedSnapshotMeta(path: string): Promise<Record<string, unknown>> {
  const { header } = await headerOf(path);
  const file = await open(path, 'r');
  try {
    const end = (await file.stat()).size - 4;
    const buffer = Buffer.alloc(BATCH_BYTES);
    let crc = 0;
    for (let at = 0; at < end;) {
      const { bytesRead } = await file.read(buffer, 0, Math.min(BATCH_BYTES, end - at), at);
      if (bytesRead === 0) throw new SnapshotError('truncated');
      crc = crc32(buffer.subarray(0, bytesRead), crc);
      at += bytesRead;
    }
    const trailer = Buffer.alloc(4);
    const { bytesRead } = await file.read(trailer, 0, 4, end);
    if (bytesRead !== 4 || crc >>> 0 !== trailer.readUInt32LE(0)) {
      throw new SnapshotError('checksum mismatch');
    }
    return header.meta;
  } finally {
    await file.close();
  }
}

/** The parsed header of a snapshot file and where its sections start. */
async function headerOf(path: string): Promise<{ header: Header; sectionsAt: number }> {
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(12);
    const { bytesRead } = await file.read(head, 0, 12, 0);
    if (bytesRead !== 12 || !head.subarray(0, 8).equals(MAGIC)) {
      throw new SnapshotError('not a snapshot');
    }
    const headerBytes = head.readUInt32LE(8);
    const size = (await file.stat()).size;
    if (12 + headerBytes + 4 > size) throw new SnapshotError('truncated');
    const text = Buffer.alloc(headerBytes);
    await file.read(text, 0, headerBytes, 12);
    let header: unknown;
    try {
      header = JSON.parse(text.toString('utf8'));
    } catch {
      throw new SnapshotError('unreadable header');
    }
    if (!isHeader(header)) throw new SnapshotError('unreadable header');
    return { header, sectionsAt: 12 + headerBytes + pad8(12 + headerBytes) };
  } finally {
    await file.close();
  }
}

/**
 * Rewrites the snapshot at `path` with `patch` merged into its meta (a restore gives a snapshot
 * the identity of the database file it was restored with), sections unchanged, a new CRC-32;
 * through a temporary file renamed into place. The file is assumed checked (CRC) beforehand.
 */
export async function patchSnapshotMeta(
  path: string,
  patch: Record<string, unknown>,
): Promise<void> {
  const { header, sectionsAt } = await headerOf(path);
  const json = Buffer.from(JSON.stringify({ ...header, meta: { ...header.meta, ...patch } }));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(json.byteLength);
  const first = [MAGIC, length, json, PADDING.subarray(0, pad8(12 + json.byteLength))];
  const temporary = `${path}.${process.pid}.${++written}.tmp`;
  const source = await open(path, 'r');
  const target = await open(temporary, 'w');
  let complete = false;
  try {
    let crc = 0;
    for (const part of first) if (part.byteLength > 0) crc = crc32(part, crc);
    await target.writev(first);
    const end = (await source.stat()).size - 4;
    const buffer = Buffer.alloc(BATCH_BYTES);
    for (let at = sectionsAt; at < end;) {
      const { bytesRead } = await source.read(buffer, 0, Math.min(BATCH_BYTES, end - at), at);
      if (bytesRead === 0) throw new SnapshotError('truncated');
      const chunk = buffer.subarray(0, bytesRead);
      crc = crc32(chunk, crc);
      await target.write(chunk);
      at += bytesRead;
    }
    const trailer = Buffer.alloc(4);
    trailer.writeUInt32LE(crc >>> 0);
    await target.write(trailer);
    await target.sync();
    complete = true;
  } finally {
    await source.close();
    await target.close();
    if (!complete) await rm(temporary, { force: true });
  }
  await rename(temporary, path);
}
