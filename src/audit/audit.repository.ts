/** SQL of the audit trail: entries written, read newest first with filters, pruned. */
import { randomUUID } from 'node:crypto';
import type { Insertable, Selectable } from 'kysely';
import type { AuditLogTable, Db } from '../db/schema.js';
import type { Actor } from './actor.js';

/** An entry to write. */
export interface AuditEntry {
  actor: Actor;
  action: string;
  target: string;
  details?: Record<string, unknown>;
}

/** What GET /audit asks for. */
export interface AuditQuery {
  action?: string;
  keyId?: string;
  target?: string;
  /** ISO times, inclusive `from`, exclusive `to`. */
  from?: string;
  to?: string;
  /** Keyset: entries strictly older than this (at, id). */
  before?: { at: string; id: string };
  limit: number;
}

export type AuditRow = Selectable<AuditLogTable>;

/** The entry's details with the client's address, as JSON (null: neither). */
function detailsJson(entry: AuditEntry): string | null {
  const address = entry.actor.address;
  const details = address === undefined ? entry.details : { ...entry.details, address };
  return details === undefined ? null : JSON.stringify(details);
}

/**
 * The row of an entry; `at` now unless given (entries written in a batch keep their own time).
 * Who and which request only when known (the columns default to null).
 */
function rowOf(entry: AuditEntry, at = new Date().toISOString()): Insertable<AuditLogTable> {
  const { keyId, keyName, requestId } = entry.actor;
  return {
    id: randomUUID(),
    at,
    actor: entry.actor.label,
    action: entry.action,
    target: entry.target,
    details: detailsJson(entry),
    ...(keyId === null ? {} : { key_id: keyId }),
    ...(keyName === null ? {} : { key_name: keyName }),
    ...(requestId === null ? {} : { request_id: requestId }),
  };
}

export class AuditRepository {
  constructor(private readonly db: Db) {}

  /** Writes entries (in the caller's transaction when given one). */
  async insert(
    entries: readonly (AuditEntry & { at?: string })[],
    db: Db = this.db,
  ): Promise<void> {
    if (entries.length === 0) return;
    await db
      .insertInto('audit_log')
      .values(entries.map((e) => rowOf(e, e.at)))
      .execute();
  }

  list(query: AuditQuery): Promise<AuditRow[]> {
    let q = this.db.selectFrom('audit_log').selectAll();
    if (query.action !== undefined) q = q.where('action', '=', query.action);
    if (query.keyId !== undefined) q = q.where('key_id', '=', query.keyId);
    if (query.target !== undefined) q = q.where('target', '=', query.target);
    if (query.from !== undefined) q = q.where('at', '>=', query.from);
    if (query.to !== undefined) q = q.where('at', '<', query.to);
    const before = query.before;
    if (before !== undefined) {
      q = q.where((eb) =>
        eb.or([
          eb('at', '<', before.at),
          eb.and([eb('at', '=', before.at), eb('id', '<', before.id)]),
        ]),
      );
    }
    return q.orderBy('at', 'desc').orderBy('id', 'desc').limit(query.limit).execute();
  }

  /** Deletes entries older than `cutoff` (ISO); how many. */
  async pruneBefore(cutoff: string): Promise<number> {
    const result = await this.db
      .deleteFrom('audit_log')
      .where('at', '<', cutoff)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
