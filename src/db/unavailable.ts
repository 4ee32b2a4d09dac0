/**
 * Recognises the errors of a database that is unreachable, restarting, overloaded or too slow,
 * whichever layer (pg, pg-pool, Kysely, better-sqlite3, the socket) raised them: they answer 503
 * DATABASE_UNAVAILABLE and are worth retrying, unlike errors in the data or the SQL.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** Socket-level failures to reach the database server. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * pg and pg-pool raise these without a code: a connection lost mid-query, a pool that found no
 * free connection within `connectionTimeoutMillis`, a client used after its connection broke.
 */
const MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable)/;

/**
 * PostgreSQL statement timeout and cancellation (57014), shutdown and restart (57P*), connection
 * failures (08*), the errors above; SQLite's lock wait running out (SQLITE_BUSY); any part of an
 * AggregateError (a host with several addresses). `cause` is not followed: other parts (the
 * OpenAI embedder) wrap their own network errors, which say nothing about the database.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false;
  const e = error as { code?: unknown; message?: unknown; errors?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  return (
    code === '57014' ||
    code.startsWith('57P') ||
    code.startsWith('08') ||
    code === 'SQLITE_BUSY' ||
    NETWORK_CODES.has(code) ||
    (typeof e.message === 'string' && MESSAGES.test(e.message)) ||
    (Array.isArray(e.errors) && e.errors.some((x) => isDatabaseUnavailable(x, depth + 1)))
  );
}

/** Pauses between attempts of `retryWhileUnavailable`: about 15 s in all, a restart's length. */
export const OUTAGE_RETRY_DELAYS_MS: readonly number[] = [1000, 2000, 4000, 8000];

/**
 * Runs `fn`; while it fails because the database is unavailable, runs it again after each pause
 * of `delaysMs` (then gives up with the last error). Other errors, and an aborted `signal`, end
 * it at once.
 */
export async function retryWhileUnavailable<T>(
  fn: () => Promise<T>,
  options: {
    delaysMs?: readonly number[];
    signal?: AbortSignal;
    onRetry?: (error: unknown, delayMs: number) => void;
  } = {},
): Promise<T> {
  const delays = options.delaysMs ?? OUTAGE_RETRY_DELAYS_MS;
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await fn();
    } catch (error) {
      const delay = delays[attempt];
      if (delay === undefined || !isDatabaseUnavailable(error) || options.signal?.aborted) {
        throw error;
      }
      options.onRetry?.(error, delay);
      // An abort ends the pause early (the rejection is the abort's; the error is ours).
      await sleep(delay, undefined, { signal: options.signal }).catch(() => undefined);
      if (options.signal?.aborted) throw error;
    }
  }
}
