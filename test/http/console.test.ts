/**
 * The web console's routes (src/http/console.ts) on the real app: `/` and `/console` redirect,
 * the built assets are served with a strict CSP and cache headers, `config.json` tells the API
 * prefix, and nothing of it needs credentials or leaks into the OpenAPI document. Needs the build
 * (`npm test` builds first; the console is built into dist/console/).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP, consoleRoot } from '../../src/http/console.js';
import { createTestApp, type TestApp } from '../helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { API_PREFIX: '/api/v9' } });
});
afterAll(() => t.close());

const root = consoleRoot();

describe('console routes', () => {
  it('the console is built', () => {
    expect(root).not.toBeNull();
  });

  it('/ and /console redirect to /console/', async () => {
    for (const url of ['/', '/console']) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode).toBeGreaterThanOrEqual(301);
      expect(res.statusCode).toBeLessThanOrEqual(302);
      expect(res.headers.location).toBe('/console/');
    }
  });

  it('serves index.html without credentials, with the CSP and no caching', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/console/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('<div id="app"></div>');
    expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-cache');
  });

  it('the CSP allows nothing inline, nothing foreign, no eval, no framing', () => {
    const directives = new Map(
      CONSOLE_CSP.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1)]),
    );
    expect(directives.get('default-src')).toEqual(["'self'"]);
    expect(directives.get('script-src')).toEqual(["'self'"]);
    expect(directives.get('style-src')).toEqual(["'self'"]);
    expect(directives.get('connect-src')).toEqual(["'self'"]);
    expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
    expect(CONSOLE_CSP).not.toMatch(/unsafe|\*|http/);
  });

  it('index.html has no inline script or style: only files of this origin', async () => {
    const html = (await t.app.inject({ method: 'GET', url: '/console/' })).body;
    for (const match of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)) {
      expect(match[1]).toMatch(/src="\/console\/assets\//);
      expect(match[2]!.trim()).toBe('');
    }
    expect(html).not.toMatch(/<style|\sstyle="|\son[a-z]+="/i);
  });

  it('hashed assets are served, cached for good, under the same CSP', async () => {
    const assets = readdirSync(join(root!, 'assets'));
    const script = assets.find((name) => name.endsWith('.js'));
    const style = assets.find((name) => name.endsWith('.css'));
    for (const [name, type] of [
      [script, /javascript/],
      [style, /text\/css/],
    ] as const) {
      const res = await t.app.inject({ method: 'GET', url: `/console/assets/${name}` });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(type);
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
    }
  });

  it('config.json gives the API prefix the console calls', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/console/config.json' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ apiPrefix: '/api/v9' });
  });

  it('a missing file or a path outside the folder is 404 from the catalogue', async () => {
    for (const url of [
      '/console/nope.js',
      '/console/../package.json',
      '/console/%2e%2e/package.json',
    ]) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ statusCode: 404, code: 'ROUTE_NOT_FOUND' });
    }
  });

  it('the console routes stay out of the OpenAPI document; the API keeps its auth', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: `${t.prefix}/openapi.json` })).json<{
      paths: Record<string, unknown>;
    }>();
    expect(Object.keys(doc.paths).filter((p) => p === '/' || p.startsWith('/console'))).toEqual([]);
    const api = await t.app.inject({ method: 'GET', url: `${t.prefix}/knowledge/documents` });
    expect(api.statusCode).toBe(401);
    expect(api.headers['content-security-policy']).toBeUndefined();
  });
});
