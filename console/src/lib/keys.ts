/** The API-key routes as the API keys page uses them. */
import { api } from './api.js';
import type { ApiKeyRecord, CreatedApiKey, KeyAccess, Level } from './types.js';

export async function listKeys(): Promise<ApiKeyRecord[]> {
  const { items } = await api<{ items: ApiKeyRecord[] }>('GET', '/auth/api-keys');
  return items;
}

/** `projects` null: every project; `access` what the key may do. */
export function createKey(
  name: string,
  level: Level,
  access: KeyAccess = 'admin',
  projects: string[] | null = null,
): Promise<CreatedApiKey> {
  return api<CreatedApiKey>('POST', '/auth/api-keys/create', {
    json: { name, level, access, projects },
  });
}

/** `admin · every project`, `read · ops, support`. */
export function scopeLabel(key: Pick<ApiKeyRecord, 'access' | 'projects'>): string {
  return `${key.access} · ${key.projects === null ? 'every project' : key.projects.join(', ')}`;
}

/** Projects typed as `a, b c` (commas or spaces); none: null (every project). */
export function parseProjectList(text: string): string[] | null {
  const projects = [...new Set(text.split(/[\s,]+/).filter((p) => p !== ''))];
  return projects.length === 0 ? null : projects;
}

export function revokeKey(id: string): Promise<ApiKeyRecord> {
  return api<ApiKeyRecord>('POST', '/auth/api-keys/revoke', { json: { id } });
}

export function rotateKey(id: string): Promise<CreatedApiKey> {
  return api<CreatedApiKey>('POST', '/auth/api-keys/rotate', { json: { id } });
}
