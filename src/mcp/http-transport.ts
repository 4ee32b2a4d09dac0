/**
 * The transport of `aps mcp`: real HTTP to a running server (local, remote or one instance of
 * many), with its API key. Failures to reach it become tool errors, never crashes.
 */
import type { ApiTransport } from './knowledge-api.js';

export interface HttpTarget {
  /** The server's base URL, e.g. `http://127.0.0.1:4000`. */
  url: string;
  /** The server's API_PREFIX, e.g. `/api/v1`. */
  prefix: string;
  apiKey?: string | undefined;
  /** Per request; a tool that waits (add_text_document) polls with short requests. */
  timeoutMs?: number;
}

export function httpTransport(target: HttpTarget): ApiTransport {
  const base = `${target.url.replace(/\/+$/, '')}${target.prefix}/knowledge`;
  const auth: Record<string, string> =
    target.apiKey === undefined || target.apiKey === ''
      ? {}
      : { authorization: `Bearer ${target.apiKey}` };
  return async ({ method, path, query, body }) => {
    const url = new URL(`${base}${path}`);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(target.timeoutMs ?? 120_000),
      });
    } catch (error) {
      const cause = error instanceof Error ? (error.cause ?? error) : error;
      const reason = cause instanceof Error ? cause.message : String(cause);
      return {
        status: 503,
        body: {
          statusCode: 503,
          code: 'SERVICE_UNAVAILABLE',
          message: `Cannot reach the server at ${target.url}: ${reason}`,
        },
      };
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? null : (JSON.parse(text) as unknown);
    } catch {
      parsed = {
        code: 'INTERNAL_ERROR',
        message: `The server answered ${res.status} without JSON.`,
      };
    }
    return { status: res.status, body: parsed };
  };
}
