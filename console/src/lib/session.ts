/**
 * The signed-in session: the JWT from `POST /auth/token`, kept in sessionStorage (this tab only,
 * gone when it closes) and never the API key. Before the token expires it is exchanged for a new
 * one (`POST /auth/token/refresh`, which needs only the token; see refreshDelay); if that fails the
 * console signs out when the token expires, with a message. Any 401 from the API signs out with
 * the server's message (a revoked key, for one).
 */
import { reactive } from 'vue';
import { refreshDelay } from './refresh.js';
import type { Level, TokenResponse } from './types.js';

const STORAGE_KEY = 'aps.console.session';

export interface Session {
  token: string;
  expiresAt: string;
  apiKeyId: string;
  level: Level;
}

export const session = reactive<{ current: Session | null; notice: string | null }>({
  current: null,
  notice: null,
});

let expiryTimer: ReturnType<typeof setTimeout> | undefined;

/** How the session gets a new token (set by main.ts: the refresh route, through api.ts). */
let refresher: (() => Promise<TokenResponse>) | undefined;

export function setRefresher(refresh: () => Promise<TokenResponse>): void {
  refresher = refresh;
}

/** Retry after a failed refresh (a network error): every 10 s until the token expires. */
const RETRY_MS = 10_000;

function isSession(value: unknown): value is Session {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.token === 'string' &&
    typeof v.expiresAt === 'string' &&
    typeof v.apiKeyId === 'string' &&
    (v.level === 'L0' || v.level === 'L1' || v.level === 'L2')
  );
}

function schedule(current: Session, delay?: number): void {
  clearTimeout(expiryTimer);
  const left = Date.parse(current.expiresAt) - Date.now();
  // setTimeout holds at most ~24.8 days; a longer token is checked again then.
  expiryTimer = setTimeout(
    () => void renew(current),
    Math.min(Math.max(delay ?? refreshDelay(left), 0), 2 ** 31 - 1),
  );
}

/** Whether `current` is still the tab's session (by token: session.current is a reactive proxy). */
function isCurrent(current: Session): boolean {
  return session.current !== null && session.current.token === current.token;
}

async function renew(current: Session): Promise<void> {
  if (!isCurrent(current)) return; // signed out or replaced meanwhile
  const left = Date.parse(current.expiresAt) - Date.now();
  if (left <= 0) {
    signOut('Your session expired: sign in again with your API key.');
    return;
  }
  if (refresher === undefined || left > 2 * 60_000 + RETRY_MS) {
    schedule(current, refresher === undefined ? left : undefined);
    return;
  }
  try {
    const issued = await refresher();
    if (isCurrent(current)) startSession(issued);
  } catch {
    // A 401 has signed out already (api.ts); otherwise try again, until the token expires.
    if (isCurrent(current)) schedule(current, Math.min(RETRY_MS, left));
  }
}

/** Restores the tab's session, unless it has expired. */
export function restoreSession(): void {
  let stored: unknown;
  try {
    stored = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? 'null');
  } catch {
    stored = null;
  }
  if (isSession(stored) && Date.parse(stored.expiresAt) > Date.now()) {
    session.current = stored;
    schedule(stored);
  } else sessionStorage.removeItem(STORAGE_KEY);
}

/** Keeps a token just issued. */
export function startSession(issued: TokenResponse): void {
  const current: Session = {
    token: issued.token,
    expiresAt: issued.expiresAt,
    apiKeyId: issued.apiKeyId,
    level: issued.level,
  };
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(current));
  session.current = current;
  session.notice = null;
  schedule(current);
}

/** Forgets the token; `notice` is shown on the sign-in page (why the session ended). */
export function signOut(notice: string | null = null): void {
  clearTimeout(expiryTimer);
  sessionStorage.removeItem(STORAGE_KEY);
  session.current = null;
  session.notice = notice;
}
