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

/** The code of the lower-cased letter or digit at `i` of `name`, or -1 for anything else. */
function alnumAt(name: string, i: number): number {
  const code = name.charCodeAt(i);
  const lower = code | 0x20; // ASCII letters to lower case
  if (lower >= 0x61 && lower <= 0x7a) return lower;
  return code >= 0x30 && code <= 0x39 ? code : -1;
}

/** Whether `name`, its other characters skipped and its case ignored, ends with `ending`. */
function endsLike(name: string, ending: string): boolean {
  let k = ending.length - 1;
  for (let i = name.length - 1; i >= 0 && k >= 0; i--) {
    const c = alnumAt(name, i);
    if (c === -1) continue;
    if (c !== ending.charCodeAt(k)) return false;
    k--;
  }
  return k < 0;
}

/** Whether a query parameter of this (raw, possibly percent-encoded) name holds a credential. */
export function isSecretName(rawName: string): boolean {
  let name = rawName;
  if (name.includes('%') || name.includes('+')) {
    name = name.replace(/\+/g, ' ');
    try {
      name = decodeURIComponent(name);
    } catch {
      // A malformed escape: judge the raw name.
    }
  }
  return SECRET_NAME_ENDINGS.some((ending) => endsLike(name, ending));
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

/**
 * A query string (after `?`, before `#`) with the values of credential parameters replaced; the
 * same string when none is one.
 */
function redactQuery(query: string): string {
  let out = '';
  let changed = false;
  let start = 0;
  while (start <= query.length) {
    let end = start;
    while (end < query.length && query[end] !== '&' && query[end] !== ';') end++;
    const part = query.slice(start, end);
    const equals = part.indexOf('=');
    const name = equals === -1 ? part : part.slice(0, equals);
    if (name !== '' && isSecretName(name)) {
      out += `${name}=${REDACTED}`;
      changed = true;
    } else out += part;
    if (end < query.length) out += query.charAt(end);
    start = end + 1;
  }
  return changed ? out : query;
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
