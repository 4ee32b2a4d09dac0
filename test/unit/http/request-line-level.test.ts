/** Which finished requests are logged at `info` (LOG_REQUESTS), the others at `debug`. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestLineLevel, SLOW_REQUEST_MS } from '../../../src/http/request-log.js';

const method = fc.constantFrom('GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE');
const status = fc.integer({ min: 100, max: 599 });
const ms = fc.double({ min: 0, max: 10 * SLOW_REQUEST_MS, noNaN: true });
const rank = { debug: 0, info: 1 } as const;

describe('requestLineLevel', () => {
  it('`all` logs every request at info', () => {
    fc.assert(
      fc.property(method, status, ms, (m, s, t) => {
        expect(requestLineLevel('all', m, s, t)).toBe('info');
      }),
    );
  });

  it('`notable` puts only quick successful reads at debug', () => {
    expect(requestLineLevel('notable', 'GET', 200, 0.4)).toBe('debug');
    expect(requestLineLevel('notable', 'HEAD', 304, 12)).toBe('debug');
    expect(requestLineLevel('notable', 'POST', 200, 0.4)).toBe('info');
    expect(requestLineLevel('notable', 'DELETE', 204, 0.4)).toBe('info');
    expect(requestLineLevel('notable', 'GET', 401, 0.4)).toBe('info');
    expect(requestLineLevel('notable', 'GET', 503, 0.4)).toBe('info');
    expect(requestLineLevel('notable', 'GET', 200, SLOW_REQUEST_MS)).toBe('info');
    fc.assert(
      fc.property(method, status, ms, (m, s, t) => {
        const routine = ['GET', 'HEAD', 'OPTIONS'].includes(m) && s < 400 && t < SLOW_REQUEST_MS;
        expect(requestLineLevel('notable', m, s, t)).toBe(routine ? 'debug' : 'info');
      }),
    );
  });

  it('a slower or failing request is never logged at a lower level', () => {
    fc.assert(
      fc.property(method, status, status, ms, ms, (m, s1, s2, t1, t2) => {
        const [sLow, sHigh] = s1 <= s2 ? [s1, s2] : [s2, s1];
        const [tLow, tHigh] = t1 <= t2 ? [t1, t2] : [t2, t1];
        const low = requestLineLevel('notable', m, sLow, tLow);
        const high = requestLineLevel('notable', m, sHigh, tHigh);
        expect(rank[high]).toBeGreaterThanOrEqual(rank[low]);
      }),
    );
  });
});
