/**
 * Where source files and converted markdown live. Keys are storage-relative paths chosen by the
 * server (never by a client), e.g. `documents/<id>/source.html` (documents/storage-keys.ts).
 */
import type { Readable } from 'node:stream';

interface StoredFile {
  key: string;
  size: number;
  /** sha256, hex. */
  checksum: string;
}

export interface FileStorage {
  /**
   * Streams `input` to a temporary file, hashing it on the way, and fails with `tooLarge()` as
   * soon as more than `maxBytes` arrive. Nothing is visible under a key until `commit`.
   */
  receive(input: Readable, maxBytes: number, tooLarge: () => Error): Promise<PendingFile>;
  /** Writes a whole file under `key` atomically. */
  writeFile(key: string, data: string | Uint8Array): Promise<void>;
  /**
   * Runs `fn` with a local filesystem path holding the file of `key` (a converter process reads
   * it): the file itself on local storage, a temporary copy otherwise (removed afterwards).
   */
  withLocalFile<T>(key: string, fn: (path: string) => Promise<T>): Promise<T>;
  readText(key: string): Promise<string>;
  /** Removes `key`; a missing file is not an error. */
  remove(key: string): Promise<void>;
  /** Removes every key under `prefix/`. */
  removePrefix(prefix: string): Promise<void>;
  /** Names directly under `prefix/` (empty when it does not exist). */
  list(prefix: string): Promise<string[]>;
}

/**
 * Files being received or converted live in a scratch directory on local disk, whatever the
 * storage driver.
 */
export interface PendingFile {
  size: number;
  checksum: string;
  /** The first bytes, for content sniffing. */
  head: Uint8Array;
  /** A local path of the temporary file, for content sniffing. */
  tempPath: string;
  /** Moves the file to `key`. */
  commit(key: string): Promise<StoredFile>;
  /** Deletes the temporary file. Idempotent. */
  discard(): Promise<void>;
}
