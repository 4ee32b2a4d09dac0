/** When the console exchanges its token for a new one (pure; session.ts schedules it). */

/**
 * When to refresh a token that has `left` ms to live: a minute before it expires, or halfway
 * there for a shorter one (never less than 1 s, so a nearly spent token is not hammered).
 */
export function refreshDelay(left: number): number {
  return Math.max(1000, left - Math.min(60_000, left / 2));
}
