/** Credentials out of logged URLs and texts (src/http/redact.ts), with a property test. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isSecretName, redactText, redactUrl, REDACTED } from '../../../src/http/redact.js';

const KEY = 'aps_Zr4nd0mK3yZr4nd0mK3yZr4nd0mK3yZr4nd0mK3yZ';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXNpZ25hdHVyZQ';

describe('redactUrl', () => {
  it('replaces the values of credential parameters, whatever their case or spelling', () => {
    for (const name of [
      'apiKey',
      'api_key',
      'APIKEY',
      'key',
      'token',
      'access_token',
      'jwt',
      'password',
      'secret',
      'Api-Key',
      'client_secret',
      'auth%5Btoken%5D',
    ]) {
      const out = redactUrl(`/api/v1/events?page=2&${name}=s3cr3t-value&sort=asc`);
      expect(out).toBe(`/api/v1/events?page=2&${name}=${REDACTED}&sort=asc`);
    }
  });

  it('keeps a URL with nothing to hide as it is (the same string)', () => {
    const url = '/api/v1/knowledge/documents?projectId=p1&limit=20';
    expect(redactUrl(url)).toBe(url);
    expect(redactUrl('/health')).toBe('/health');
  });

  it('hides the password of user:password@ and key- or JWT-shaped text anywhere', () => {
    expect(redactUrl('postgres://aps:hunter2@db:5432/aps')).toBe(
      `postgres://aps:${REDACTED}@db:5432/aps`,
    );
    expect(redactUrl(`/api/v1/knowledge/documents/${KEY}`)).not.toContain(KEY);
    expect(redactUrl(`/x/${JWT}/y`)).not.toContain(JWT);
    expect(redactUrl('/x;jsessionid=abc123?q=1')).toBe(`/x;jsessionid=${REDACTED}?q=1`);
  });

  it('names: credentials by their ending, not other words', () => {
    expect(isSecretName('x-api-key')).toBe(true);
    expect(isSecretName('refresh_token')).toBe(true);
    expect(isSecretName('db_password')).toBe(true);
    expect(isSecretName('projectId')).toBe(false);
    expect(isSecretName('query')).toBe(false);
    expect(isSecretName('')).toBe(false);
  });
});

describe('redactText', () => {
  it('redacts the URLs inside a message and shaped secrets', () => {
    const text = `fetch https://u:pw@example.com/a?token=${KEY} failed; header Bearer ${JWT}`;
    const out = redactText(text);
    expect(out).not.toContain(KEY);
    expect(out).not.toContain(JWT);
    expect(out).not.toContain(':pw@');
    expect(out).toContain('https://u:[redacted]@example.com/a?token=[redacted]');
  });
});

/** A random case and separator spelling of a credential name (`apiKey` → `API-key`, `api_KEY`…). */
const secretName = fc
  .tuple(
    fc.constantFrom(
      ['api', 'key'],
      ['key'],
      ['token'],
      ['access', 'token'],
      ['jwt'],
      ['password'],
      ['secret'],
    ),
    fc.constantFrom('', '_', '-', '.'),
    fc.array(fc.boolean(), { minLength: 16, maxLength: 16 }),
  )
  .map(([words, separator, upper]) =>
    Array.from(words.join(separator), (c, i) => (upper[i] ? c.toUpperCase() : c)).join(''),
  );
const plainName = fc.constantFrom('page', 'limit', 'projectId', 'q', 'sort', 'cursor', 'mode');
/** A value unlikely to occur by chance elsewhere in the URL. */
const value = fc
  .stringMatching(/^[A-Za-z0-9~!*()'-]{12,40}$/)
  .map((v) => `V${v}Z`)
  .map(encodeURIComponent);
const segment = fc.stringMatching(/^[a-z0-9._~-]{1,12}$/);

describe('redactUrl: property', () => {
  it('never keeps a credential value, and keeps every other parameter as it was', () => {
    fc.assert(
      fc.property(
        fc.array(segment, { minLength: 1, maxLength: 5 }),
        fc.array(fc.record({ secret: fc.boolean(), secretName, plainName, value }), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.option(fc.tuple(fc.constantFrom('http', 'https', 'postgres'), value), {
          nil: undefined,
        }),
        (path, params, absolute) => {
          const query = params
            .map((p) => `${p.secret ? p.secretName : p.plainName}=${p.value}`)
            .join('&');
          const origin = absolute === undefined ? '' : `${absolute[0]}://user:${absolute[1]}@host`;
          const url = `${origin}/${path.join('/')}?${query}`;
          const out = redactUrl(url);
          for (const p of params) {
            if (p.secret) expect(out).not.toContain(`=${p.value}`);
            else expect(out).toContain(`${p.plainName}=${p.value}`);
          }
          if (absolute !== undefined) expect(out).not.toContain(`:${absolute[1]}@`);
          expect(
            out.startsWith(`${origin.replace(/:[^:@/]*@/, `:${REDACTED}@`)}/${path.join('/')}?`),
          ).toBe(true);
          if (!params.some((p) => p.secret) && absolute === undefined) expect(out).toBe(url);
        },
      ),
      { numRuns: 500 },
    );
  });
});
