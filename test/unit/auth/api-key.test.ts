import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  API_KEY_PREFIX,
  displayHints,
  generateApiKey,
  hashApiKey,
  hashesEqual,
  looksLikeJwt,
} from '../../../src/auth/api-key.js';

describe('API key material', () => {
  it('generates distinct, recognisable, 256-bit keys that never look like a JWT', () => {
    const keys = new Set(Array.from({ length: 1000 }, generateApiKey));
    expect(keys.size).toBe(1000);
    for (const key of keys) {
      expect(key.startsWith(API_KEY_PREFIX)).toBe(true);
      expect(Buffer.from(key.slice(API_KEY_PREFIX.length), 'base64url')).toHaveLength(32);
      expect(looksLikeJwt(key)).toBe(false);
    }
  });

  it('hashes with the salt as HMAC key: same input same hash, other salt other hash', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.string({ minLength: 1 }),
        fc.string({ minLength: 1 }),
        (key, salt1, salt2) => {
          expect(hashApiKey(key, salt1)).toBe(hashApiKey(key, salt1));
          expect(hashApiKey(key, salt1)).toMatch(/^[0-9a-f]{64}$/);
          if (salt1 !== salt2) expect(hashApiKey(key, salt1)).not.toBe(hashApiKey(key, salt2));
        },
      ),
    );
  });

  it('compares hashes exactly, including different lengths', () => {
    const a = hashApiKey('a', 's');
    expect(hashesEqual(a, a)).toBe(true);
    expect(hashesEqual(a, hashApiKey('b', 's'))).toBe(false);
    expect(hashesEqual(a, a.slice(0, 62))).toBe(false);
  });

  it('display hints reveal 8 leading and 4 trailing characters only', () => {
    const key = generateApiKey();
    expect(displayHints(key)).toEqual({ prefix: key.slice(0, 8), lastFour: key.slice(-4) });
  });

  it('recognises JWT-shaped tokens', () => {
    expect(looksLikeJwt('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc')).toBe(true);
    expect(looksLikeJwt('eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.')).toBe(true);
    expect(looksLikeJwt('not.a.jwt')).toBe(false);
    expect(looksLikeJwt('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0')).toBe(false);
    expect(looksLikeJwt('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc.def')).toBe(false);
  });

  it('calls a token JWT-shaped exactly when it starts with eyJ and has two dots', () => {
    fc.assert(
      fc.property(fc.string(), (token) => {
        const dots = token.split('.').length - 1;
        expect(looksLikeJwt(token)).toBe(token.startsWith('eyJ') && dots === 2);
      }),
    );
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('.', 'a', '_', '-', 'Z'), { maxLength: 12 }),
        (chars) => {
          const token = 'eyJ' + chars.join('');
          expect(looksLikeJwt(token)).toBe(chars.filter((c) => c === '.').length === 2);
        },
      ),
    );
  });
});
