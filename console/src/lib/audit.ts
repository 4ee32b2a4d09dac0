/** GET /audit as the Audit page uses it. */
import { api } from './api.js';
import type { AuditItem, AuditPage } from './types.js';

export interface AuditFilters {
  action: string;
  keyId: string;
  target: string;
  /** `YYYY-MM-DD` (a date input's value), inclusive; '' for none. */
  from: string;
  to: string;
}

/** The actions the trail records, for the filter's choices. */
export const AUDIT_ACTIONS = [
  'document.create',
  'document.update',
  'document.index',
  'document.delete',
  'documents.reindex',
  'api_key.create',
  'api_key.revoke',
  'api_key.rotate',
  'api_key.bootstrap',
  'access.refused',
];

/** A date input's day as an ISO instant: its start (`from`) or the next day's start (`to`). */
function dayBound(day: string, next: boolean): string | undefined {
  if (day === '') return undefined;
  const date = new Date(`${day}T00:00:00`);
  if (next) date.setDate(date.getDate() + 1);
  return date.toISOString();
}

/** One page of entries, newest first, and the cursor of the next. */
export function listAudit(filters: AuditFilters, cursor: string | null): Promise<AuditPage> {
  return api<AuditPage>('GET', '/audit', {
    query: {
      action: filters.action,
      keyId: filters.keyId,
      target: filters.target.trim(),
      from: dayBound(filters.from, false),
      to: dayBound(filters.to, true),
      limit: '50',
      cursor: cursor ?? undefined,
    },
  });
}

/** Who did it: the key's name (and id), or the CLI / the server. */
export function actorLabel(item: AuditItem): string {
  if (item.keyName !== null) return item.keyName;
  return item.actor === 'cli' ? 'command line' : item.actor;
}

/** The detail as short `name: value` pairs. */
export function detailLabel(item: AuditItem): string {
  if (item.detail === null) return '';
  return Object.entries(item.detail)
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([name, value]) => `${name}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' · ');
}
