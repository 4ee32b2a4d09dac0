/** The API-key routes as the API keys page uses them. */
import { api } from './api.js';
import type { ApiKeyRecord, CreatedApiKey, Level } from './types.js';

export async function listKeys(): Promise<ApiKeyRecord[]> {
  const { items } = await api<{ items: ApiKeyRecord[] }>('GET', '/auth/api-keys');
  return items;
}

export function createKey(name: string, level: Level): Promise<CreatedApiKey> {
  return api<CreatedApiKey>('POST', '/auth/api-keys/create', { json: { name, level } });
}

export function revokeKey(id: string): Promise<ApiKeyRecord> {
  return api<ApiKeyRecord>('POST', '/auth/api-keys/revoke', { json: { id } });
}

export function rotateKey(id: string): Promise<CreatedApiKey> {
  return api<CreatedApiKey>('POST', '/auth/api-keys/rotate', { json: { id } });
}
