import { sql, type Kysely } from 'kysely';
import type { Database } from '../database.js';
import { ISO_DATE_PATTERN } from '../../knowledge/filter/iso-date.js';

/**
 * (PostgreSQL) `aps_iso_ms(text)`: milliseconds since the epoch of an ISO date of the form
 * document filters compare (knowledge/filter/iso-date.ts: the same pattern, real calendar days),
 * else null, never an error, so a filter over free-form metadata strings cannot fail a query.
 * SQLite evaluates filters in JavaScript (knowledge/filter/sql.ts): nothing to create there.
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
