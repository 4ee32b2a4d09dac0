import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';

/**
 * (PostgreSQL) `aps_iso_ms(text)`: milliseconds since the epoch of an ISO date of the form
 * document filters compare (the same pattern as knowledge/filter/iso-date.ts, real calendar
 * days), else null, never an error, so a filter over free-form metadata strings cannot fail a
 * query. SQLite evaluates filters in JavaScript (knowledge/filter/sql.ts): nothing to create there.
 */
export async function up(db: Kysely<unknown>, driver: Database['driver']): Promise<void> {
  if (driver !== 'postgres') return;
  const pattern = ISO_DATE_PATTERN.replaceAll("'", "''");
  await sql
    .raw(
      `create or replace function aps_iso_ms(t text) returns double precision
       language plpgsql immutable strict parallel safe as $$
       begin
         if t !~ '${pattern}' then return null; end if;
         if length(t) = 10 then t := t || 'T00:00:00Z'; end if;
         return (extract(epoch from t::timestamptz) * 1000)::float8;
       exception when others then
         return null; -- e.g. 2023-02-29: the pattern admits it, the calendar does not
       end $$`,
    )
    .execute(db);
}

// ---------------------------------------------------------------------------------------------
// Frozen copy as of this migration: ISO_DATE_PATTERN of knowledge/filter/iso-date.ts. A migration
// never imports from knowledge/, so that editing the live code cannot change what this migration
// creates; a later change of the accepted dates is a new migration.
// ---------------------------------------------------------------------------------------------

/**
 * The accepted form, in a syntax both JavaScript and PostgreSQL regular expressions read:
 * `YYYY-MM-DD`, or a date and time with a zone, `YYYY-MM-DDTHH:MM[:SS[.fff]](Z|±HH:MM)`.
 */
const ISO_DATE_PATTERN =
  '^[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}(T([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,3})?)?(Z|[+-](0[0-9]|1[0-4]):[0-5][0-9]))?$';
