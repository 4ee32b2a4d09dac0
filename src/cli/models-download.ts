/**
 * One file over HTTPS into `<dest>.part`, resumed with a Range request after a dropped
 * connection (in the same run, and in the next one: the `.part` file stays), checked against the
 * size and digests the caller knows, then renamed to `<dest>`. Shared by `aps models pull` and
 * `npm run models:install`.
 *
 * Node's own fetch (undici) rather than a download library: it follows redirects and, as the
 * Fetch standard says, drops the Authorization header when a redirect leaves the origin (a hub's
 * token never reaches its CDN); what is left here (Range, idle timeout, digests) is ~100 lines.
 */
import { open, rename, rm, stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { digestFile, type FileDigests } from '../knowledge/embeddings/model-files.js';

/** What the file must be; every given field is checked. */
export interface Expected {
  bytes?: number;
  sha256?: string;
  sha1?: string;
  gitBlob?: string;
}

export interface DownloadOptions {
  url: string;
  dest: string;
  headers?: Record<string, string>;
  expected?: Expected;
  /** The bytes of this file on disk so far (called often while data arrives). */
  onProgress?: (bytes: number) => void;
  /** A new request starts `from` bytes in (0: from the start); `attempt` counts from 1. */
  onRequest?: (from: number, attempt: number) => void;
  /** Requests for one file before giving up (a dropped connection, a 5xx, a 429). */
  attempts?: number;
  /** No data for this long: the request is dropped (and retried). */
  idleTimeoutMs?: number;
  /** Wait before retry `n` (1-based); tests make it 0. */
  backoffMs?: (n: number) => number;
}

export interface Downloaded extends FileDigests {
  /** Where the first request started (>0: a `.part` file from an earlier run was resumed). */
  resumedFrom: number;
  requests: number;
}

/** The server answered with an error status, or the file is not what it should be. */
export class DownloadError extends Error {
  constructor(
    message: string,
    readonly status: number | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DownloadError';
  }
}

const sizeOf = (path: string) =>
  stat(path).then(
    (s) => s.size,
    () => 0,
  );

/** undici's "fetch failed" with the reason that matters (`getaddrinfo ENOTFOUND host`, `ECONNREFUSED`). */
export function fetchFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error && cause.message !== message
    ? `${message}: ${cause.message}`
    : message;
}

/** Server errors and rate limits are worth another try; other statuses are not. */
const retryable = (status: number) => status >= 500 || status === 429 || status === 408;

/** Only the origin and path, for messages: a presigned URL's query carries credentials. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return url;
  }
}

export async function download(options: DownloadOptions): Promise<Downloaded> {
  const { url, dest, expected = {}, attempts = 4, idleTimeoutMs = 60_000 } = options;
  const backoff = options.backoffMs ?? ((n: number) => 1000 * 2 ** (n - 1));
  const part = `${dest}.part`;
  let resumedFrom = -1;
  let requests = 0;
  for (;;) {
    let offset = await sizeOf(part);
    if (expected.bytes !== undefined && offset > expected.bytes) {
      await rm(part, { force: true }); // longer than the file can be: not a prefix of it
      offset = 0;
    }
    if (resumedFrom < 0) resumedFrom = offset;
    if (expected.bytes !== undefined && offset === expected.bytes) break; // already whole
    requests += 1;
    options.onRequest?.(offset, requests);
    try {
      await fetchInto(url, part, offset, options.headers ?? {}, idleTimeoutMs, options.onProgress);
      if (expected.bytes === undefined || (await sizeOf(part)) === expected.bytes) break;
      throw new DownloadError(`the connection closed early (${await sizeOf(part)} bytes)`);
    } catch (error) {
      // null: no answer (a dropped connection, a timeout), worth another try like a 5xx.
      const status = error instanceof DownloadError ? error.status : null;
      if (status !== null && !retryable(status)) throw error;
      if (requests >= attempts)
        throw new DownloadError(
          `${shownUrl(url)}: gave up after ${requests} attempts: ${fetchFailure(error)}`,
          status,
          { cause: error },
        );
      await sleep(backoff(requests));
    }
  }
  const digests = await digestFile(part, {
    sha1: expected.sha1 !== undefined,
    gitBlob: expected.gitBlob !== undefined,
  });
  const wrong = (['bytes', 'sha256', 'sha1', 'gitBlob'] as const).filter(
    (k) => expected[k] !== undefined && expected[k] !== digests[k],
  );
  if (wrong.length > 0) {
    // A corrupt file is never resumed from: the next run starts over.
    await rm(part, { force: true });
    const what = wrong.map((k) => `${k} ${String(digests[k])}, expected ${String(expected[k])}`);
    throw new DownloadError(`${shownUrl(url)}: checksum mismatch (${what.join('; ')})`);
  }
  await rename(part, dest);
  return { ...digests, resumedFrom, requests };
}

/** One request, appending to `part` from `offset` (or rewriting it when the server sends all). */
async function fetchInto(
  url: string,
  part: string,
  offset: number,
  headers: Record<string, string>,
  idleTimeoutMs: number,
  onProgress: ((bytes: number) => void) | undefined,
): Promise<void> {
  const abort = new AbortController();
  const idle = setTimeout(() => {
    abort.abort(new DownloadError(`no data for ${idleTimeoutMs / 1000} s`));
  }, idleTimeoutMs);
  try {
    const response = await fetch(url, {
      headers: offset > 0 ? { ...headers, Range: `bytes=${offset}-` } : headers,
      signal: abort.signal,
    });
    if (response.status === 416 && offset > 0) {
      // The server has no bytes past ours: the `.part` is not a prefix of this file. Start over.
      await response.body?.cancel();
      await rm(part, { force: true });
      throw new DownloadError('the partial download does not fit the file; starting over');
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new DownloadError(
        `${shownUrl(url)}: HTTP ${response.status} ${response.statusText}`,
        response.status,
      );
    }
    let written = offset;
    if (response.status === 206) {
      const start = /^bytes (\d+)-/.exec(response.headers.get('content-range') ?? '')?.[1];
      if (Number(start) !== offset)
        throw new DownloadError(`the server resumed at byte ${start ?? '?'}, not ${offset}`);
    } else written = 0; // a 200: the whole file again
    const file = await open(part, written === 0 ? 'w' : 'a');
    try {
      if (response.body === null) return;
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        idle.refresh();
        await file.write(chunk);
        written += chunk.length;
        onProgress?.(written);
      }
    } finally {
      await file.close();
    }
  } catch (error) {
    // An abort surfaces as the signal's reason, or as undici's AbortError wrapping it.
    if (abort.signal.aborted && abort.signal.reason instanceof Error) throw abort.signal.reason;
    throw error;
  } finally {
    clearTimeout(idle);
  }
}
