/** SQL for API keys (and their audit entries); no rules here (those live in the service). */
import { AuditRepository, type AuditEntry } from '../audit/audit.repository.js';
import type { ApiKeyRow, Db } from '../db/schema.js';

type NewApiKey = Omit<ApiKeyRow, 'last_used_at' | 'revoked_at' | 'replaced_by'>;

export class ApiKeyRepository {
  private readonly audits: AuditRepository;

  constructor(private readonly db: Db) {
    this.audits = new AuditRepository(db);
  }

  findByHash(keyHash: string, db: Db = this.db): Promise<ApiKeyRow | undefined> {
    return db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
  }

  findById(id: string, db: Db = this.db): Promise<ApiKeyRow | undefined> {
    return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
  }

  list(): Promise<ApiKeyRow[]> {
    return this.db
      .selectFrom('api_keys')
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .execute();
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Active L0 keys without restrictions (every project, admin access): who can manage all keys. */
  async countActiveAdmins(db: Db = this.db): Promise<number> {
    const row = await db
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .where('level', '=', 'L0')
      .where('access', '=', 'admin')
      .where('projects', 'is', null)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Inserts a key; an unrestricted one leaves `projects` and `access` to their column defaults. */
  async insert(key: NewApiKey, db: Db = this.db): Promise<void> {
    const { projects, access, ...rest } = key;
    await db
      .insertInto('api_keys')
      .values({
        ...rest,
        last_used_at: null,
        revoked_at: null,
        replaced_by: null,
        ...(projects === null ? {} : { projects }),
        ...(access === 'admin' ? {} : { access }),
      })
      .execute();
  }

  async revoke(id: string, at: string, replacedBy: string | null, db: Db = this.db): Promise<void> {
    await db
      .updateTable('api_keys')
      .set({ revoked_at: at, replaced_by: replacedBy })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .execute();
  }

  /** Bumps the revocation generation (auth/revocations.ts), in the caller's transaction. */
  async bumpGeneration(db: Db = this.db): Promise<void> {
    await db
      .updateTable('api_key_generation')
      .set((eb) => ({ generation: eb('generation', '+', 1) }))
      .where('id', '=', 1)
      .execute();
  }

  async touch(id: string, at: string): Promise<void> {
    await this.db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute();
  }

  /** An audit entry written in the key change's own transaction. */
  async audit(entry: AuditEntry, db: Db = this.db): Promise<void> {
    await this.audits.insert([entry], db);
  }

  transaction<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(fn);
  }
}
