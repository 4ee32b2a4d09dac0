/**
 * `npm run bench:auth`: the cost of authenticating one request, against the reference server's
 * approach (scrypt of the raw key on every request) measured in the same run.
 */
import { CLI } from '../src/audit/actor.js';
import { scryptSync } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, bench, describe } from 'vitest';
import { createTestApp } from '../test/helpers.js';

const t = await createTestApp({ env: { LOG_LEVEL: 'silent' } });
// Realistic table: many keys, lookups by hash stay indexed.
for (let i = 0; i < 500; i++) {
  await t.ctx.apiKeys.create({ name: `k${i}`, level: 'L2', actor: CLI, origin: 'cli' });
}
const jwt = (await t.ctx.tokens.issue(t.key)).token;
const salt = 'reference-global-salt';

afterAll(async () => {
  await t.close();
  rmSync(t.dir, { recursive: true, force: true });
});

describe('authenticate one request', () => {
  bench('raw API key: HMAC-SHA256 + indexed lookup (ours)', async () => {
    await t.ctx.apiKeys.verify(t.key);
  });
  bench('JWT: HS256 verify + revocation lookup (ours)', async () => {
    await t.ctx.tokens.verify(jwt);
  });
  bench('baseline: scrypt of the raw key (reference server)', () => {
    scryptSync(t.key, salt, 64);
  });
});
