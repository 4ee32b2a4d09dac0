/**
 * The signed-in session: the JWT from `POST /auth/token`, kept in sessionStorage (this tab only,
 * gone when it closes) and never the API key. The server has no refresh route and a new token
 * needs the key, which the console does not keep: when the token expires the console signs out
 * with a message, and any 401 from the API does the same with the server's message.
 */
import { reactive } from 'vue';
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

function schedule(current: Session): void {
  clearTimeout(expiryTimer);
  const left = Date.parse(current.expiresAt) - Date.now();
  // setTimeout holds at most ~24.8 days; a longer token is checked again then.
  expiryTimer = setTimeout(
    () => {
      if (Date.parse(current.expiresAt) <= Date.now()) {
        signOut('Your session expired: sign in again with your API key.');
      } else schedule(current);
    },
    Math.min(Math.max(left, 0), 2 ** 31 - 1),
  );
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
