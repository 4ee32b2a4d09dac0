/**
 * What a key may do (`access`) and which projects it reaches (`projects`): its restrictions, set
 * at creation, carried by every JWT made from it. Pure, so it is property-tested.
 *
 * - `read`: retrieve, list, get, chunks, markdown, projects, events, the MCP read tools;
 * - `write`: also upload, ingest, index, patch and delete;
 * - `admin`: also API keys and the audit trail.
 *
 * A route needs `admin` when it says so (`config.admin`), `write` when it changes state, else
 * `read`. A key without restrictions has `projects: null` and `access: admin`: as before scopes.
 */
import type { KeyAccess } from '../db/schema.js';

export type { KeyAccess };

export const ACCESS: readonly KeyAccess[] = ['read', 'write', 'admin'];

const RANK: Record<KeyAccess, number> = { read: 0, write: 1, admin: 2 };

export function isKeyAccess(value: unknown): value is KeyAccess {
  return value === 'read' || value === 'write' || value === 'admin';
}

/** Whether a key with `actual` access may call a route that needs `required`. */
export function accessSatisfies(actual: KeyAccess, required: KeyAccess): boolean {
  return RANK[actual] >= RANK[required];
}

/** What a route needs, from its declarations. */
export function routeNeeds(config: { admin?: boolean; mutates?: boolean }): KeyAccess {
  return config.admin === true ? 'admin' : config.mutates === true ? 'write' : 'read';
}

/** The projects of a key row's `projects` column (JSON), frozen; null: every project. */
export function parseProjects(column: string | null | undefined): readonly string[] | null {
  if (column == null) return null;
  const value: unknown = JSON.parse(column);
  if (!Array.isArray(value) || !value.every((p) => typeof p === 'string')) {
    throw new Error('api_keys.projects must be a JSON array of strings');
  }
  return Object.freeze([...value] as string[]);
}

/**
 * Whether a key restricted to `projects` reaches a document of `projectId` (null: a document
 * without a project, which only an unrestricted key reaches).
 */
export function reaches(projects: readonly string[] | null, projectId: string | null): boolean {
  return projects === null || (projectId !== null && projects.includes(projectId));
}
