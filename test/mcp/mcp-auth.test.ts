/**
 * The MCP endpoint's HTTP edge: credentials (401 with the catalogue body, for the SDK client too),
 * the stateless transport's 405s, and read-only mode (reads work, adding is a tool error) over
 * both transports.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/db/migrations/index.js';
import type { Migration } from '../../src/db/migrator.js';
import { createTestApp, type TestApp } from '../helpers.js';
import { addCorpus, connect, textOf, type TransportKind } from './helpers.js';

async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'raw', version: '1' },
  },
};

describe('MCP over HTTP: credentials and methods', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp();
    base = await listen(t);
  });
  afterAll(() => t.close());

  async function post(headers: Record<string, string>) {
    return fetch(`${base}${t.prefix}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: JSON.stringify(INITIALIZE),
    });
  }

  it('answers 401 with the catalogue body without a key or with a wrong one', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer aps_not-a-key' },
      { 'x-api-key': 'nope' },
    ];
    for (const headers of attempts) {
      const res = await post(headers);
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ statusCode: 401, code: 'AUTH_UNAUTHORIZED' });
    }
    await expect(connect('http', base, t.prefix, undefined)).rejects.toThrow(
      /401|AUTH_UNAUTHORIZED/,
    );
    await expect(connect('http', base, t.prefix, 'aps_wrong')).rejects.toThrow(
      /401|AUTH_UNAUTHORIZED/,
    );
  });

  it('initializes statelessly with a key (x-api-key too), no session id', async () => {
    const res = await post({ 'x-api-key': t.key });
    expect(res.status).toBe(200);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    expect(res.headers.get('x-request-id')).toBeTruthy();
    const body = (await res.json()) as { result: { serverInfo: { name: string } } };
    expect(body.result.serverInfo.name).toBe('aps-knowledge');
  });

  it('answers GET and DELETE with 405 (no SSE stream, no sessions)', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${base}${t.prefix}/mcp`, {
        method,
        headers: { authorization: `Bearer ${t.key}`, accept: 'text/event-stream' },
      });
      expect(res.status).toBe(405);
      expect(await res.json()).toMatchObject({ code: 'METHOD_NOT_ALLOWED' });
    }
  });
});

const failing: Migration = {
  name: '9999_broken',
  up: () => Promise.reject(new Error('disk full while adding a column')),
};

describe('MCP in read-only mode', () => {
  let t: TestApp;
  let key: string;
  let base: string;
  let gardenId: string;
  beforeAll(async () => {
    const first = await createTestApp();
    key = first.key;
    gardenId = (await addCorpus(first))['garden.md'] ?? '';
    await first.close(true);
    t = await createTestApp({ dir: first.dir, migrations: [...MIGRATIONS, failing] });
    base = await listen(t);
  }, 90_000);
  afterAll(() => t.close());

  it.each<TransportKind>(['http', 'stdio'])(
    'keeps reads working and answers adding with READ_ONLY_MODE (%s)',
    async (kind) => {
      expect(t.ctx.readOnly).toBe(true);
      const client = await connect(kind, base, t.prefix, key);
      try {
        const found = await client.callTool({
          name: 'search_knowledge',
          arguments: { query: 'how should I water tomatoes' },
        });
        expect(found.isError).toBeFalsy();
        expect(
          (found.structuredContent as { items: { documentId: string }[] }).items[0],
        ).toMatchObject({
          documentId: gardenId,
        });
        const read = await client.callTool({ name: 'read_document', arguments: { id: gardenId } });
        expect(textOf(read)).toContain('Water tomato plants');
        const added = await client.callTool({
          name: 'add_text_document',
          arguments: { name: 'x.md', text: 'anything' },
        });
        expect(added.isError).toBe(true);
        expect(textOf(added)).toBe(
          'READ_ONLY_MODE (503): Application is in read-only mode because database migration failed',
        );
      } finally {
        await client.close();
      }
    },
    40_000,
  );
});
