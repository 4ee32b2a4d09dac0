/**
 * Calls to the API: same origin, under the prefix the server announces in `config.json`, with the
 * session's JWT as `Authorization: Bearer`. A failed call throws an ApiError carrying the server's
 * `{statusCode, code, message}`; a 401 ends the session with the server's message.
 */
import { session, signOut } from './session.js';
import type { ErrorBody } from './types.js';

export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

let apiPrefix = '/api/v1';

/** Reads the API prefix from the server (`/console/config.json`). */
export async function loadConfig(): Promise<void> {
  const response = await fetch('./config.json', { headers: { accept: 'application/json' } });
  if (!response.ok) throw new Error(`config.json answered ${response.status}`);
  const config = (await response.json()) as { apiPrefix?: unknown };
  if (typeof config.apiPrefix === 'string') apiPrefix = config.apiPrefix;
}

/** The URL of an API path (`/knowledge/documents` → `/api/v1/knowledge/documents`). */
export function apiUrl(path: string, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') params.set(name, value);
  }
  const search = params.toString();
  return `${apiPrefix}${path}${search === '' ? '' : `?${search}`}`;
}

/** The message of any error, for showing it. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.code === 'string' && typeof v.message === 'string';
}

/** The ApiError of a failed response (its error body, or its status line). */
export async function errorOf(response: Response): Promise<ApiError> {
  const body: unknown = await response.json().catch(() => null);
  return isErrorBody(body)
    ? new ApiError(response.status, body.code, body.message)
    : new ApiError(response.status, 'HTTP_ERROR', `The server answered ${response.status}.`);
}

export function authHeaders(): Record<string, string> {
  const token = session.current?.token;
  return token === undefined ? {} : { authorization: `Bearer ${token}` };
}

interface RequestOptions {
  query?: Record<string, string | undefined>;
  json?: unknown;
  form?: FormData;
  /** false: a 401 is an answer to show, not the end of the session (signing in). */
  authenticated?: boolean;
}

/** One API call; the parsed JSON answer. */
export async function api<T>(
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.authenticated !== false) Object.assign(headers, authHeaders());
  if (options.form === undefined && options.json !== undefined) {
    headers['content-type'] = 'application/json';
  }
  const body: BodyInit | undefined =
    options.form ?? (options.json === undefined ? undefined : JSON.stringify(options.json));
  const response = await fetch(apiUrl(path, options.query), { method, headers, body });
  if (!response.ok) {
    const error = await errorOf(response);
    if (response.status === 401 && options.authenticated !== false) signOut(error.message);
    throw error;
  }
  return (await response.json()) as T;
}
