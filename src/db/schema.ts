/** The typed database schema Kysely checks every query against. Timestamps are ISO-8601 UTC text. */
import type { Kysely, Selectable } from 'kysely';

export type AgentLevel = 'L0' | 'L1' | 'L2';

export interface MigrationsTable {
  name: string;
  applied_at: string;
}

export interface MigrationLockTable {
  id: number;
  locked_at: string | null;
}

export interface ApiKeysTable {
  id: string;
  name: string;
  level: AgentLevel;
  /** HMAC-SHA256 of the raw key under API_KEY_SALT, hex. The raw key is never stored. */
  key_hash: string;
  /** Display hints only. */
  prefix: string;
  last_four: string;
  /** How the key came to be: `api`, `cli`, `bootstrap`, `first-start`, `rotation`. */
  origin: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** Set on a key revoked by rotation: the id of its successor. */
  replaced_by: string | null;
}

export interface AuditLogTable {
  id: string;
  at: string;
  /** `api_key:<id>`, `cli` or `system`. */
  actor: string;
  action: string;
  target: string;
  /** JSON text. */
  details: string | null;
}

export interface DB {
  aps_migrations: MigrationsTable;
  aps_migration_lock: MigrationLockTable;
  api_keys: ApiKeysTable;
  audit_log: AuditLogTable;
}

export type ApiKeyRow = Selectable<ApiKeysTable>;
export type AuditRow = Selectable<AuditLogTable>;
export type Db = Kysely<DB>;
