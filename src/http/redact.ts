/**
 * Credentials out of anything a log line may hold: a request URL (query parameters named like
 * a credential, user:password in an absolute URL, anything shaped like one of our API keys or a
 * JWT, wherever it sits) and free text (an error's message or stack, which may quote a URL).
 * Pure functions: a property test runs them over random URLs (test/unit/http/redact.test.ts).
 */

/** What a secret is replaced by. */
export const REDACTED = '[redacted]';

/**
 * A query parameter holds a credential when its name, lower-cased with everything but letters and
 * digits dropped (`api_key`, `API-Key`, `apiKey[]` and `auth[token]` alike), is one of these or
 * ends with one (`access_token`, `client_secret`, `db_password`, `x-api-key`).
 */
const SECRET_NAME_ENDINGS = [
  'key',
  'token',
  'jwt',
  'password',
  'passwd',
  'pwd',
  'secret',
  'signature',
  'auth',
  'authorization',
  'credential',
  'credentials',
  'cookie',
  'session',
  'sessionid',
];

/** Our API keys (`aps_` + 43 base64url characters; a shorter run still counts) and JWTs. */
const API_KEY_SHAPE = /aps_[A-Za-z0-9_-]{16,}/g;
const JWT_SHAPE = /eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;
/** `scheme://user:password@` at the start of an absolute URL. */
const USERINFO = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#@]*)@/i;
/** An absolute URL inside free text (up to white space or a quote). */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;

/** Whether a query parameter of this (raw, possibly percent-encoded) name holds a credential. */
export function isSecretName(rawName: string): boolean {
  let name = rawName.replace(/\+/g, ' ');
  try {
    name = decodeURIComponent(name);
  } catch {
    // A malformed escape: judge the raw name.
  }
  const normalised = name.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (normalised === '') return false;
  return SECRET_NAME_ENDINGS.some((ending) => normalised.endsWith(ending));
}

/** Whether `url` could hold a secret at all (the common case, a plain path, returns at once). */
function mayHoldSecret(url: string): boolean {
  return (
    url.includes('?') ||
    url.includes('@') ||
    url.includes('aps_') ||
    url.includes('eyJ') ||
    url.includes(';')
  );
}

/** A query string (after `?`, before `#`) with the values of credential parameters replaced. */
function redactQuery(query: string): string {
  return query
    .split(/([&;])/)
    .map((part) => {
      if (part === '&' || part === ';' || part === '') return part;
      const equals = part.indexOf('=');
      const name = equals === -1 ? part : part.slice(0, equals);
      if (!isSecretName(name)) return part;
      return `${name}=${REDACTED}`;
    })
    .join('');
}

/** Key- and JWT-shaped runs replaced, wherever they are. */
function redactShapes(text: string): string {
  if (!text.includes('aps_') && !text.includes('eyJ')) return text;
  return text.replace(API_KEY_SHAPE, `aps_${REDACTED}`).replace(JWT_SHAPE, REDACTED);
}

/**
 * A URL (a request's path and query, or an absolute URL) as it may be logged: credential query
 * parameters, the password of `user:password@`, and key- or JWT-shaped text replaced by
 * `[redacted]`. A URL with nothing to hide is returned as it is (the same string).
 */
export function redactUrl(url: string): string {
  if (!mayHoldSecret(url)) return url;
  let out = url.replace(USERINFO, (_all, scheme: string, info: string) => {
    const colon = info.indexOf(':');
    return colon === -1 ? `${scheme}${info}@` : `${scheme}${info.slice(0, colon)}:${REDACTED}@`;
  });
  const question = out.indexOf('?');
  if (question !== -1) {
    const hash = out.indexOf('#', question);
    const end = hash === -1 ? out.length : hash;
    out = out.slice(0, question + 1) + redactQuery(out.slice(question + 1, end)) + out.slice(end);
  }
  // Matrix parameters (`/path;token=…`) before any query.
  const semicolon = out.indexOf(';');
  if (semicolon !== -1 && (question === -1 || semicolon < question)) {
    const stop = out.indexOf('?', semicolon);
    const end = stop === -1 ? out.length : stop;
    out = out.slice(0, semicolon) + redactQuery(out.slice(semicolon, end)) + out.slice(end);
  }
  return redactShapes(out);
}

/**
 * Free text (an error message or stack) with every absolute URL in it redacted as `redactUrl`
 * does, and key- or JWT-shaped runs replaced wherever they are.
 */
export function redactText(text: string): string {
  if (!text.includes('://') && !text.includes('aps_') && !text.includes('eyJ')) return text;
  return redactShapes(text.replace(URL_IN_TEXT, (url) => redactUrl(url)));
}
