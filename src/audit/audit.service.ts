/**
 * The audit trail: entries recorded (key lifecycle in the key's own transaction, elsewhere in
 * batches written right after the request), read newest first with filters and keyset paging,
 * and pruned after AUDIT_RETENTION_DAYS in the background.
 */
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../errors.js';
import type { AuditEntry, AuditQuery, AuditRepository, AuditRow } from './audit.repository.js';

/** How often old entries are pruned. */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;
/** Entries kept waiting for the database at most (beyond them, new ones are dropped and logged). */
const PENDING_MAX = 10_000;

export interface AuditItem {
  at: string;
  action: string;
  keyId: string | null;
  keyName: string | null;
  /** `api_key:<id>`, `cli`, `system` or `anonymous`. */
  actor: string;
  target: string;
  requestId: string | null;
  detail: Record<string, unknown> | null;
}

export interface AuditPage {
  items: AuditItem[];
  nextCursor: string | null;
}

function toItem(row: AuditRow): AuditItem {
  return {
    at: row.at,
    action: row.action,
    keyId: row.key_id,
    keyName: row.key_name,
    actor: row.actor,
    target: row.target,
    requestId: row.request_id,
    detail: row.details === null ? null : (JSON.parse(row.details) as Record<string, unknown>),
  };
}

const encodeCursor = (row: AuditRow) =>
  Buffer.from(JSON.stringify([row.at, row.id])).toString('base64url');

function decodeCursor(cursor: string): { at: string; id: string } {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'string' &&
      typeof value[1] === 'string'
    ) {
      return { at: value[0], id: value[1] };
    }
  } catch {
    // Falls through to the 400.
  }
  throw new AppError('VALIDATION_ERROR', 'cursor is not a cursor this list returned');
}

export class AuditService {
  private pending: (AuditEntry & { at: string })[] = [];
  private flushing: Promise<void> | null = null;
  private pruner: NodeJS.Timeout | undefined;

  constructor(
    private readonly repo: AuditRepository,
    private readonly log: FastifyBaseLogger,
    private readonly isReadOnly: () => boolean = () => false,
  ) {}

  /**
   * Records an entry soon (entries of one turn are written together, after the response): the
   * time is now. Never throws; a failed write is logged.
   */
  record(entry: AuditEntry): void {
    if (this.isReadOnly()) return;
    if (this.pending.length >= PENDING_MAX) {
      this.log.warn({ action: entry.action }, 'audit entries pile up: entry dropped');
      return;
    }
    this.pending.push({ ...entry, at: new Date().toISOString() });
    this.flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
      this.flush(),
    );
  }

  /** Writes what is pending, including entries recorded while it writes. */
  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const entries = this.pending;
      this.pending = [];
      try {
        await this.repo.insert(entries);
      } catch (error) {
        this.log.warn({ err: error, entries: entries.length }, 'could not write audit entries');
      }
    }
    this.flushing = null;
  }

  async list(
    query: Omit<AuditQuery, 'before' | 'limit'> & { cursor?: string; limit: number },
  ): Promise<AuditPage> {
    const { cursor, limit, ...filters } = query;
    await this.flushing;
    const rows = await this.repo.list({
      ...filters,
      ...(cursor === undefined ? {} : { before: decodeCursor(cursor) }),
      limit: limit + 1,
    });
    const more = rows.length > limit;
    const page = more ? rows.slice(0, limit) : rows;
    const last = page.at(-1);
    return {
      items: page.map(toItem),
      nextCursor: more && last !== undefined ? encodeCursor(last) : null,
    };
  }

  /** Deletes entries older than `days`; how many. */
  prune(days: number, now = Date.now()): Promise<number> {
    return this.repo.pruneBefore(new Date(now - days * 86_400_000).toISOString());
  }

  /** Prunes now and every hour (not in read-only mode). */
  startPruning(days: number): void {
    const run = () => {
      if (this.isReadOnly()) return;
      this.prune(days).then(
        (n) => {
          if (n > 0) this.log.info({ pruned: n, days }, 'old audit entries pruned');
        },
        (error: unknown) => {
          this.log.warn({ err: error }, 'pruning the audit trail failed');
        },
      );
    };
    run();
    this.pruner = setInterval(run, PRUNE_INTERVAL_MS);
    this.pruner.unref();
  }

  /** Resolves once what was recorded so far is written. */
  async written(): Promise<void> {
    await this.flushing;
  }

  /** Stops pruning and writes what is pending. */
  async close(): Promise<void> {
    clearInterval(this.pruner);
    await this.flushing;
  }
}
