/**
 * URL ingest against a real local HTTP server: with KNOWLEDGE_URL_ALLOW_PRIVATE=true it is
 * fetched (formats, redirects, limits, failures); with the switch off every private address is
 * refused before a connection is made, also behind a redirect and behind a hostname.
 */
import { existsSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPublicAddress, fetchUrl } from '../../../src/knowledge/ingest/url-fetch.js';
import { bearer, type TestApp } from '../../helpers.js';
import { knowledgeApp, type DocumentBody, type KnowledgeClient } from '../helpers.js';

let server: Server;
let base: string;
const hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.push(path);
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    const hop = /^\/hop\/(\d+)$/.exec(path);
    if (hop !== null) {
      const n = Number(hop[1]);
      res.writeHead(302, { location: n === 0 ? '/docs/page.html' : `/hop/${n - 1}` });
      res.end();
    } else if (path === '/docs/page.html')
      send(
        200,
        'text/html; charset=utf-8',
        '<html><body><h1>Hello</h1><p>Page about otters.</p></body></html>',
      );
    else if (path === '/notes')
      send(200, 'text/markdown', '# Notes\n\nMarkdown served about beavers.');
    else if (path === '/plain-html')
      send(200, 'text/plain', '<html><body>Served as plain text</body></html>');
    else if (path === '/missing') send(404, 'text/plain', 'not here');
    else if (path === '/big') send(200, 'text/plain', 'y'.repeat(5000));
    else if (path === '/big-chunked') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      for (let i = 0; i < 10; i += 1) res.write('z'.repeat(1000));
      res.end();
    } else if (path === '/slow') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('starts but never ends');
    } else if (path === '/to-private') {
      res.writeHead(301, { location: `http://127.0.0.2:${port()}/notes` });
      res.end();
    } else send(404, 'text/plain', 'unknown');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${port()}`;
});
afterAll(
  () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => {
        r();
      });
    }),
);

const port = () => (server.address() as { port: number }).port;

function ingest(t: TestApp, k: KnowledgeClient, payload: Record<string, unknown>) {
  return t.app.inject({
    method: 'POST',
    url: k.url('/documents/url'),
    headers: bearer(t.key),
    payload,
  });
}

describe('URL ingest, private addresses allowed', () => {
  let t: TestApp;
  let k: KnowledgeClient;
  beforeAll(async () => {
    ({ t, k } = await knowledgeApp({
      KNOWLEDGE_URL_ALLOW_PRIVATE: 'true',
      KNOWLEDGE_URL_TIMEOUT_MS: '1000',
      UPLOAD_MAX_BYTES: '4096',
    }));
  });
  afterAll(() => t.close());
  const scratch = () => (existsSync(join(t.dir, 'tmp')) ? readdirSync(join(t.dir, 'tmp')) : []);

  it('fetches: the content type decides the format, source defaults to the URL, the name to the path', async () => {
    const html = await ingest(t, k, { url: `${base}/docs/page.html`, projectId: 'web' });
    expect(html.statusCode, html.body).toBe(201);
    expect(html.json()).toMatchObject({
      name: 'page.html',
      fileType: 'html',
      source: `${base}/docs/page.html`,
      projectId: 'web',
      status: 'uploaded',
    });
    const md = await ingest(t, k, {
      url: `${base}/notes`,
      name: 'Beavers',
      source: 'wiki',
      metadata: { tags: ['rodents'] },
      index: true,
    });
    expect(md.json()).toMatchObject({
      name: 'Beavers',
      fileType: 'md',
      source: 'wiki',
      status: 'indexing',
      metadata: { tags: ['rodents'] },
    });
    const plain = await ingest(t, k, { url: `${base}/plain-html` });
    expect(plain.json()).toMatchObject({ fileType: 'txt', name: 'plain-html' });
    const again = await ingest(t, k, { url: `${base}/docs/page.html`, projectId: 'web' });
    expect(again.statusCode).toBe(200);
    expect(again.json<DocumentBody>().id).toBe(html.json<DocumentBody>().id);
    const indexed = await k.waitFor(md.json<DocumentBody>().id, ['indexed', 'failed']);
    expect(indexed.status, indexed.errorMessage ?? '').toBe('indexed');
  });

  it('follows up to 5 redirects; a sixth is a 502', async () => {
    const five = await ingest(t, k, { url: `${base}/hop/4` });
    expect(five.statusCode, five.body).toBe(201);
    expect(five.json()).toMatchObject({ name: 'page.html', source: `${base}/hop/4` });
    const six = await ingest(t, k, { url: `${base}/hop/5` });
    expect(six.json()).toMatchObject({ statusCode: 502, code: 'KNOWLEDGE_URL_FETCH_FAILED' });
    expect(six.json<{ message: string }>().message).toMatch(/redirects/);
  });

  it('fails: upstream status (502), over the limit (413, with or without Content-Length), timeout (502), bad URLs (400); nothing kept', async () => {
    const before = (await k.get('/documents')).json<{ items: unknown[] }>().items.length;
    const missing = await ingest(t, k, { url: `${base}/missing` });
    expect(missing.json()).toMatchObject({ statusCode: 502, code: 'KNOWLEDGE_URL_FETCH_FAILED' });
    expect(missing.json<{ message: string }>().message).toContain('404');
    for (const path of ['/big', '/big-chunked']) {
      expect((await ingest(t, k, { url: `${base}${path}` })).json()).toMatchObject({
        statusCode: 413,
        code: 'PAYLOAD_TOO_LARGE',
      });
    }
    const started = Date.now();
    const slow = await ingest(t, k, { url: `${base}/slow` });
    expect(slow.json()).toMatchObject({ statusCode: 502, code: 'KNOWLEDGE_URL_FETCH_FAILED' });
    expect(slow.json<{ message: string }>().message).toMatch(/1000 ms/);
    expect(Date.now() - started).toBeLessThan(5000);
    const refused = await ingest(t, k, { url: 'http://127.0.0.1:1/' });
    expect(refused.json()).toMatchObject({ statusCode: 502, code: 'KNOWLEDGE_URL_FETCH_FAILED' });
    for (const url of [
      'not a url',
      'ftp://example.com/x',
      'file:///etc/passwd',
      'http://u:p@example.com/',
    ]) {
      expect((await ingest(t, k, { url })).json(), url).toMatchObject({
        statusCode: 400,
        code: 'VALIDATION_ERROR',
      });
    }
    expect(scratch()).toEqual([]);
    expect((await k.get('/documents')).json<{ items: unknown[] }>().items).toHaveLength(before);
  });
});

describe('URL ingest, private addresses refused (the default)', () => {
  let t: TestApp;
  let k: KnowledgeClient;
  beforeAll(async () => {
    ({ t, k } = await knowledgeApp());
  });
  afterAll(() => t.close());

  it('refuses loopback, private, link-local, unique-local, CGNAT and mapped addresses, and hostnames resolving to them, before connecting', async () => {
    const before = hits.length;
    for (const url of [
      `${base}/notes`,
      `http://localhost:${port()}/notes`,
      `http://[::1]:${port()}/notes`,
      `http://[::ffff:127.0.0.1]:${port()}/notes`,
      'http://10.1.2.3/',
      'http://192.168.0.1/',
      'http://172.16.5.4/',
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
      'http://0.0.0.0/',
      'http://224.0.0.1/',
    ]) {
      const res = await ingest(t, k, { url });
      expect(res.json(), url).toMatchObject({ statusCode: 403, code: 'KNOWLEDGE_URL_FORBIDDEN' });
    }
    expect(hits.length).toBe(before);
  });

  it('checks every redirect: a public-looking first hop redirecting to a private address is refused', async () => {
    // Only the test server's own address counts as allowed here: the redirect target is not.
    const before = hits.length;
    await expect(
      fetchUrl(`${base}/to-private`, {
        timeoutMs: 2000,
        maxBytes: 4096,
        allowAddress: (address) => address === '127.0.0.1',
      }),
    ).rejects.toMatchObject({ code: 'KNOWLEDGE_URL_FORBIDDEN', statusCode: 403 });
    expect(hits.slice(before)).toEqual(['/to-private']);
  });
});

describe('isPublicAddress', () => {
  it('admits public unicast only', () => {
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8']) {
      expect(isPublicAddress(a), a).toBe(true);
    }
    for (const a of [
      '127.0.0.1',
      '10.0.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.1.1',
      '100.100.100.100',
      '0.0.0.0',
      '255.255.255.255',
      '239.1.1.1',
      '::',
      '::1',
      'fe80::1',
      'fc00::1',
      'ff02::1',
      '::ffff:10.0.0.1',
      'not-an-ip',
    ]) {
      expect(isPublicAddress(a), a).toBe(false);
    }
  });
});
