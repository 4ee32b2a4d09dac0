/** Rules of API keys: creation, verification, revocation, rotation, bootstrap — all audited. */
import { hash, randomUUID } from 'node:crypto';
import type { AgentLevel, ApiKeyRow } from '../db/schema.js';
import { AppError } from '../errors.js';
import { displayHints, generateApiKey, hashApiKey, hashesEqual } from './api-key.js';
import type { ApiKeyRepository } from './api-key.repository.js';
import { SYSTEM, type Actor } from '../audit/actor.js';
import { NO_CACHE, type RevocationGeneration } from './revocations.js';
import { parseProjects, type KeyAccess } from './scope.js';

/** An API key as clients may see it: never the raw key nor its hash. */
interface ApiKeyRecord {
  id: string;
  name: string;
  level: AgentLevel;
  prefix: string;
  lastFour: string;
  origin: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  replacedBy: string | null;
  /** The projects the key reaches; null: every project. */
  projects: string[] | null;
  access: KeyAccess;
}

/** Who is calling, once authenticated. */
export interface Principal {
  apiKeyId: string;
  /** The key's name (audit entries show it). */
  keyName: string;
  level: AgentLevel;
  /** What the key may do (auth/scope.ts). */
  access: KeyAccess;
  /** The projects the key reaches; null: every project. */
  projects: readonly string[] | null;
  /** The JWT subject (agent id or key id); the key id for raw keys. */
  subject: string;
  method: 'api_key' | 'jwt';
  /** JWTs: when the key was exchanged (`auth_time`, seconds), kept across refreshes. */
  authTime?: number;
}

/** The principal a verified key row authenticates (frozen: cached entries share it). */
export function principalOf(
  row: ApiKeyRow,
  subject: string,
  method: Principal['method'],
  authTime?: number,
): Principal {
  return Object.freeze({
    apiKeyId: row.id,
    keyName: row.name,
    level: row.level,
    access: row.access,
    projects: parseProjects(row.projects),
    subject,
    method,
    ...(authTime === undefined ? {} : { authTime }),
  });
}

function toRecord(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    level: row.level,
    prefix: row.prefix,
    lastFour: row.last_four,
    origin: row.origin,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
    replacedBy: row.replaced_by,
    projects: parseProjects(row.projects)?.slice() ?? null,
    access: row.access,
  };
}

/** A key's restrictions as given at creation: none means every project and admin access. */
export interface KeyRestrictions {
  projects?: string[] | null;
  access?: KeyAccess;
}

/** The projects of the caller managing keys; null: every project. */
type CallerScope = readonly string[] | null;

/** Whether a caller of `scope` may see and manage this key: its projects are all the caller's. */
function within(scope: CallerScope, row: ApiKeyRow): boolean {
  if (scope === null) return true;
  const projects = parseProjects(row.projects);
  return projects !== null && projects.every((p) => scope.includes(p));
}

/** Whether a key may manage every key: L0, admin access, every project. */
const unrestrictedAdmin = (row: ApiKeyRow) =>
  row.level === 'L0' && row.access === 'admin' && row.projects === null;

/** `last_used_at` is written at most this often per key, so authentication stays read-mostly. */
const TOUCH_INTERVAL_MS = 60_000;

const sha256 = (text: string): string => hash('sha256', text, 'base64url');

/** Verified keys kept in memory at most (then the cache starts over). */
const CACHE_MAX = 10_000;

/** A verified key row and the revocation generation read before it was looked up. */
interface CachedKey {
  row: ApiKeyRow;
  generation: number;
}

/** A raw key verified before: its row, generation, and the principal it authenticates. */
interface CachedRawKey extends CachedKey {
  principal: Principal;
}

export class ApiKeyService {
  /** Active keys by hash and by id, valid while the revocation generation is unchanged. */
  private readonly byHash = new Map<string, CachedKey>();
  private readonly byId = new Map<string, CachedKey>();
  /**
   * Raw keys verified before, by their SHA-256: a one-shot digest costs a fraction of the keyed
   * hash, which is then computed only on a miss (the raw key itself is never kept).
   */
  private readonly byDigest = new Map<string, CachedRawKey>();

  constructor(
    private readonly repo: ApiKeyRepository,
    private readonly salt: string,
    private readonly isReadOnly: () => boolean = () => false,
    /** When cached keys are still valid (revocations.ts); by default nothing is cached. */
    private readonly revocations: RevocationGeneration = NO_CACHE,
  ) {}

  private clearCache(): void {
    this.byHash.clear();
    this.byId.clear();
    this.byDigest.clear();
  }

  /** A revocation or rotation committed here: no cached key is used before the generation is read again. */
  private revoked(): void {
    this.clearCache();
    this.revocations.refresh();
  }

  /**
   * The active key row of a hash or id: from the cache while the revocation generation is the
   * one it was read at, else from the database (and cached under the generation read before the
   * lookup, so that a revocation committed meanwhile invalidates it).
   */
  private async activeRow(
    cache: Map<string, CachedKey>,
    key: string,
    find: () => Promise<ApiKeyRow | undefined>,
  ): Promise<ApiKeyRow | undefined> {
    const generation = this.revocations.current();
    if (generation !== null) {
      const hit = cache.get(key);
      if (hit !== undefined && hit.generation === generation) return hit.row;
    }
    const row = await find();
    if (row === undefined || row.revoked_at !== null) return undefined;
    if (generation !== null) {
      if (this.byHash.size >= CACHE_MAX || this.byDigest.size >= CACHE_MAX) this.clearCache();
      const entry = { row, generation };
      this.byHash.set(row.key_hash, entry);
      this.byId.set(row.id, entry);
    }
    return row;
  }

  /** Creates a key and returns its raw value, which is never retrievable again. */
  async create(
    input: {
      name: string;
      level: AgentLevel;
      actor: Actor;
      origin: string;
      rawKey?: string;
      /** The creating key's projects: the new key may reach no other (no escalation). */
      scope?: CallerScope;
    } & KeyRestrictions,
  ): Promise<{ record: ApiKeyRecord; rawKey: string }> {
    const scope = input.scope ?? null;
    if (scope !== null) {
      const outside =
        (input.projects ?? null) === null
          ? ['every project']
          : (input.projects ?? []).filter((p) => !scope.includes(p));
      if (outside.length > 0) {
        throw new AppError(
          'AUTH_PROJECT_FORBIDDEN',
          `Your key may only create keys for its own projects (${scope.join(', ')}); not ${outside.join(', ')}.`,
        );
      }
    }
    if (input.projects?.length === 0) {
      throw new AppError(
        'VALIDATION_ERROR',
        'projects must name at least one project (or be null)',
      );
    }
    return this.repo.transaction(async (db) => {
      const { record, rawKey } = await this.insertKey(db, input);
      await this.repo.audit(
        {
          actor: input.actor,
          action: 'api_key.create',
          target: record.id,
          details: {
            name: record.name,
            level: record.level,
            origin: record.origin,
            projects: record.projects,
            access: record.access,
          },
        },
        db,
      );
      return { record, rawKey };
    });
  }

  private async insertKey(
    db: Parameters<ApiKeyRepository['insert']>[1],
    input: { name: string; level: AgentLevel; origin: string; rawKey?: string } & KeyRestrictions,
  ): Promise<{ record: ApiKeyRecord; rawKey: string }> {
    const rawKey = input.rawKey ?? generateApiKey();
    const hints = displayHints(rawKey);
    const projects = input.projects ?? null;
    const row = {
      id: randomUUID(),
      name: input.name,
      level: input.level,
      key_hash: hashApiKey(rawKey, this.salt),
      prefix: hints.prefix,
      last_four: hints.lastFour,
      origin: input.origin,
      created_at: new Date().toISOString(),
      projects: projects === null ? null : JSON.stringify([...new Set(projects)].sort()),
      access: input.access ?? 'admin',
    };
    await this.repo.insert(row, db);
    return {
      record: toRecord({ ...row, last_used_at: null, revoked_at: null, replaced_by: null }),
      rawKey,
    };
  }

  /** Every key, or for a caller restricted to projects, the keys within them. */
  async list(scope: CallerScope = null): Promise<ApiKeyRecord[]> {
    return (await this.repo.list()).filter((row) => within(scope, row)).map(toRecord);
  }

  async get(id: string): Promise<ApiKeyRecord> {
    const row = await this.repo.findById(id);
    if (row === undefined) throw new AppError('AUTH_API_KEY_NOT_FOUND');
    return toRecord(row);
  }

  /** Revokes a key (idempotent). The last active L0 key cannot be revoked: nobody could manage keys. */
  async revoke(id: string, actor: Actor, scope: CallerScope = null): Promise<ApiKeyRecord> {
    const record = await this.repo.transaction(async (db) => {
      const row = await this.repo.findById(id, db);
      if (row === undefined) throw new AppError('AUTH_API_KEY_NOT_FOUND');
      if (row.revoked_at !== null) return toRecord(row);
      if (!within(scope, row)) throw new AppError('AUTH_API_KEY_NOT_FOUND');
      if (unrestrictedAdmin(row) && (await this.repo.countActiveAdmins(db)) <= 1) {
        throw new AppError(
          'CONFLICT',
          'Cannot revoke the last active unrestricted L0 key; create another L0 key first',
        );
      }
      const at = new Date().toISOString();
      await this.repo.revoke(id, at, null, db);
      await this.repo.bumpGeneration(db);
      await this.repo.audit({ actor, action: 'api_key.revoke', target: id }, db);
      return toRecord({ ...row, revoked_at: at });
    });
    this.revoked();
    return record;
  }

  /** Replaces a key by a new one with the same name and level; the old one is revoked at once. */
  async rotate(
    id: string,
    actor: Actor,
    scope: CallerScope = null,
  ): Promise<{ record: ApiKeyRecord; rawKey: string; rotatedFrom: string }> {
    const rotated = await this.repo.transaction(async (db) => {
      const row = await this.repo.findById(id, db);
      if (row === undefined || !within(scope, row)) throw new AppError('AUTH_API_KEY_NOT_FOUND');
      if (row.revoked_at !== null) throw new AppError('AUTH_API_KEY_REVOKED');
      const { record, rawKey } = await this.insertKey(db, {
        name: row.name,
        level: row.level,
        origin: 'rotation',
        projects: parseProjects(row.projects)?.slice() ?? null,
        access: row.access,
      });
      await this.repo.revoke(id, record.createdAt, record.id, db);
      await this.repo.bumpGeneration(db);
      await this.repo.audit(
        { actor, action: 'api_key.rotate', target: id, details: { newKeyId: record.id } },
        db,
      );
      return { record, rawKey, rotatedFrom: id };
    });
    this.revoked();
    return rotated;
  }

  /**
   * The principal of a raw key verified before, found synchronously by its SHA-256 while the
   * revocation generation is the one it was verified under and no `last_used_at` write is due;
   * undefined otherwise (then `verify()` decides). The guard's path for a known key: no promise.
   */
  verifyCached(rawKey: string): Principal | undefined {
    if (rawKey.length === 0 || rawKey.length > 512) return undefined;
    const generation = this.revocations.current();
    if (generation === null) return undefined;
    const hit = this.byDigest.get(sha256(rawKey));
    if (hit === undefined || hit.generation !== generation || this.touchDue(hit.row))
      return undefined;
    return hit.principal;
  }

  /** Checks a raw key in constant time against its stored keyed hash; null if unknown or revoked. */
  async verify(rawKey: string): Promise<Principal | null> {
    if (rawKey.length === 0 || rawKey.length > 512) return null;
    const digest = sha256(rawKey);
    const generation = this.revocations.current();
    const hit = generation === null ? undefined : this.byDigest.get(digest);
    if (hit !== undefined && hit.generation === generation) {
      await this.touch(hit.row);
      return hit.principal;
    }
    const hash = hashApiKey(rawKey, this.salt);
    const row = await this.activeRow(this.byHash, hash, () => this.repo.findByHash(hash));
    if (row === undefined || !hashesEqual(row.key_hash, hash)) return null;
    const principal = principalOf(row, row.id, 'api_key');
    if (generation !== null) this.byDigest.set(digest, { row, generation, principal });
    await this.touch(row);
    return principal;
  }

  /** The revocation generation now (null: nothing cached may be trusted); see revocations.ts. */
  generation(): number | null {
    return this.revocations.current();
  }

  /** The key behind a JWT, if it still exists and is not revoked. */
  async activeKey(id: string): Promise<ApiKeyRow | null> {
    const row = await this.activeRow(this.byId, id, () => this.repo.findById(id));
    if (row === undefined) return null;
    await this.touch(row);
    return row;
  }

  /** Whether using this key now must write its `last_used_at` (at most once a minute). */
  touchDue(row: ApiKeyRow): boolean {
    if (this.isReadOnly()) return false;
    return (
      row.last_used_at === null || Date.now() - Date.parse(row.last_used_at) >= TOUCH_INTERVAL_MS
    );
  }

  private async touch(row: ApiKeyRow): Promise<void> {
    if (!this.touchDue(row)) return;
    const at = new Date().toISOString();
    await this.repo.touch(row.id, at);
    // The cached row too (the same object): the next minute's requests write nothing.
    row.last_used_at = at;
  }

  /**
   * Ensures an L0 key with exactly this raw value exists. A bootstrap key that was revoked stays
   * revoked: it is found by its hash and left alone.
   */
  async ensureBootstrapKey(rawKey: string): Promise<'created' | 'exists' | 'revoked'> {
    return this.repo.transaction(async (db) => {
      const existing = await this.repo.findByHash(hashApiKey(rawKey, this.salt), db);
      if (existing !== undefined) return existing.revoked_at === null ? 'exists' : 'revoked';
      const { record } = await this.insertKey(db, {
        name: 'bootstrap',
        level: 'L0',
        origin: 'bootstrap',
        rawKey,
      });
      await this.repo.audit({ actor: SYSTEM, action: 'api_key.bootstrap', target: record.id }, db);
      return 'created';
    });
  }

  /** On the very first start (no key at all), creates an L0 key and returns its raw value. */
  async createFirstKeyIfNone(): Promise<{ record: ApiKeyRecord; rawKey: string } | null> {
    if ((await this.repo.count()) > 0) return null;
    return this.create({
      name: 'first-start',
      level: 'L0',
      actor: SYSTEM,
      origin: 'first-start',
    });
  }
}
