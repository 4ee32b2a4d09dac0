/**
 * The ISO 8601 dates a filter compares: `YYYY-MM-DD` (midnight UTC), or a date and time with a
 * zone, `YYYY-MM-DDTHH:MM[:SS[.fff]](Z|±HH:MM)`; years 1000–9999, real calendar days. A time
 * without a zone is refused rather than read in some server's local time. The same rule is the
 * PostgreSQL function `aps_iso_ms` (migration 0014), so both engines read the same values as
 * dates and the same instants from them.
 */

/** The accepted form, in a syntax both JavaScript and PostgreSQL regular expressions read. */
export const ISO_DATE_PATTERN =
  '^[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}(T([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,3})?)?(Z|[+-](0[0-9]|1[0-4]):[0-5][0-9]))?$';

const PATTERN = new RegExp(ISO_DATE_PATTERN);
const PARTS =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(?:Z|([+-])(\d{2}):(\d{2})))?$/;

/** Milliseconds since the epoch of an ISO date of the accepted form, else null. */
export function isoMillis(text: string): number | null {
  if (!PATTERN.test(text)) return null;
  const m = PARTS.exec(text);
  if (m === null) return null;
  const n = (i: number) => Number(m[i] ?? '0');
  const [year, month, day] = [n(1), n(2), n(3)];
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  // Day 30 of February rolls over into March: not a date.
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1) return null;
  if (date.getUTCDate() !== day) return null;
  const fraction = Number((m[7] ?? '').padEnd(3, '0'));
  const offset = (m[8] === '-' ? -1 : 1) * (n(9) * 60 + n(10));
  return date.getTime() + ((n(4) * 60 + n(5) - offset) * 60 + n(6)) * 1000 + fraction;
}
