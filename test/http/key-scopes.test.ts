/**
 * Scoped keys (issue 42): access (read < write < admin) and projects, for keys and the JWTs made
 * from them. The matrix is generated: every route the guard protects (guardedRoutes) × every
 * kind of key × raw key or JWT, with the answer the rules give; then what narrows itself to a
 * key's projects (lists, projects, retrieval, events, MCP), creation, and no escalation.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedRoutes } from '../../src/auth/auth.guard.js';
import { bearer, createTestApp, type TestApp } from '../helpers.js';
import { KnowledgeClient } from '../knowledge/helpers.js';

type Access = 'read' | 'write' | 'admin';
const RANK: Record<Access, number> = { read: 0, write: 1, admin: 2 };

interface Key {
  access: Access;
  projects: string[] | null;
  raw: string;
  jwt: string;
  id: string;
}

let t: TestApp;
let k: KnowledgeClient;
const docs: Record<string, string> = {};
const keys: Key[] = [];

async function createKey(access: Access, projects: string[] | null, as = t.key): Promise<Key> {
  const res = await t.app.inject({
    method: 'POST',
    url: `${t.prefix}/auth/api-keys/create`,
    headers: bearer(as),
    payload: { name: `${access}-${projects?.join('+') ?? 'all'}`, level: 'L0', access, projects },
  });
  expect(res.statusCode, res.body).toBe(201);
  const created = res.json<{ id: string; apiKey: string; access: Access; projects: unknown }>();
  expect(created.access).toBe(access);
  expect(created.projects).toEqual(projects === null ? null : [...projects].sort());
  const token = await t.app.inject({
    method: 'POST',
    url: `${t.prefix}/auth/token`,
    payload: { apiKey: created.apiKey },
  });
  return {
    access,
    projects,
    raw: created.apiKey,
    jwt: token.json<{ token: string }>().token,
    id: created.id,
  };
}

beforeAll(async () => {
  t = await createTestApp();
  k = new KnowledgeClient(t);
  const corpus: [string, string | undefined, string][] = [
    ['pump.md', 'ops', '# Pump\n\nReplace the impeller every 2,000 operating hours.'],
    ['valve.md', 'ops', '# Valve\n\nThe relief valve opens at 6 bar of impeller pressure.'],
    ['finance.md', 'money', '# Revenue\n\nThe impeller business grew eight percent.'],
    ['loose.md', undefined, '# Loose\n\nA note about the impeller without a project.'],
  ];
  for (const [name, projectId, text] of corpus) {
    const res = await t.app.inject({
      method: 'POST',
      url: k.url('/documents/text'),
      headers: bearer(t.key),
      payload: { name, text, index: true, ...(projectId === undefined ? {} : { projectId }) },
    });
    expect(res.statusCode, res.body).toBe(201);
    docs[name] = res.json<{ id: string }>().id;
  }
  for (const id of Object.values(docs)) await k.waitFor(id, ['indexed'], 60_000);
  for (const access of ['read', 'write', 'admin'] as const) {
    for (const projects of [null, ['ops']]) keys.push(await createKey(access, projects));
  }
}, 120_000);

afterAll(async () => {
  await t.close();
});

/** The path of a route with its `:id` filled in. */
const pathOf = (url: string, id: string) => url.replace(':id', id);

describe('the scope matrix: every guarded route × key × credential', () => {
  it('declarations follow the policy: keys and audit admin, changes write, the rest read', () => {
    const routes = guardedRoutes(t.app).filter((r) => r.level !== 'public');
    expect(routes.length).toBeGreaterThan(20);
    for (const r of routes) {
      const admin = r.url.includes('/auth/api-keys') || r.url.endsWith('/audit');
      expect(r.needs, `${r.method} ${r.url}`).toBe(admin ? 'admin' : r.mutates ? 'write' : 'read');
    }
    const byUrl = (method: string, url: string) =>
      routes.find((r) => r.method === method && r.url === `${t.prefix}${url}`);
    expect(byUrl('DELETE', '/knowledge/documents/:id')).toMatchObject({ document: true });
    expect(byUrl('GET', '/knowledge/documents/:id/markdown')).toMatchObject({ document: true });
    expect(byUrl('POST', '/knowledge/retrieve')).toMatchObject({ namesProject: true });
  });

  it('answers what the rules say, for raw keys and their JWTs', async () => {
    const routes = guardedRoutes(t.app).filter((r) => r.level !== 'public' && !r.stream);
    let checked = 0;
    for (const key of keys) {
      for (const credential of [key.raw, key.jwt]) {
        for (const route of routes) {
          const restricted = key.projects !== null;
          // A restricted key is sent to another project's document or project; an unrestricted
          // one to a document that does not exist (so nothing is changed by an allowed request).
          const id = restricted ? docs['finance.md']! : randomUUID();
          const named = route.namesProject && restricted ? { projectId: 'money' } : {};
          const hasBody = !['GET', 'HEAD', 'DELETE'].includes(route.method);
          const res = await t.app.inject({
            method: route.method as 'GET',
            url: pathOf(route.url, id) + (!hasBody && named.projectId ? '?projectId=money' : ''),
            headers: bearer(credential),
            ...(hasBody ? { payload: named } : {}),
          });
          const where = `${key.access}/${key.projects?.join() ?? 'all'} ${route.method} ${route.url}: ${res.statusCode} ${res.body.slice(0, 200)}`;
          const code = route.method === 'HEAD' ? undefined : res.json<{ code?: string }>().code;
          if (RANK[key.access] < RANK[route.needs]) {
            expect(res.statusCode, where).toBe(403);
            if (code !== undefined) expect(code, where).toBe('AUTH_ACCESS_FORBIDDEN');
          } else if (restricted && route.document) {
            expect(res.statusCode, where).toBe(404);
            if (code !== undefined) expect(code, where).toBe('KNOWLEDGE_DOCUMENT_NOT_FOUND');
          } else if (restricted && (route.namesProject || route.everyProject)) {
            expect(res.statusCode, where).toBe(403);
            if (code !== undefined) expect(code, where).toBe('AUTH_PROJECT_FORBIDDEN');
          } else {
            expect([401, 403], where).not.toContain(res.statusCode);
          }
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(200);
    // Nothing another project's keys were refused on was changed: every document is still there.
    const list = await k.get('/documents?limit=50');
    expect(
      list
        .json<{ items: { id: string }[] }>()
        .items.map((d) => d.id)
        .sort(),
    ).toEqual(Object.values(docs).sort());
  }, 120_000);
});

describe('a key restricted to projects', () => {
  const ops = () => keys.find((key) => key.access === 'write' && key.projects !== null)!;

  it('sees only its projects’ documents, projects, chunks and markdown', async () => {
    const as = bearer(ops().raw);
    const list = await t.app.inject({ method: 'GET', url: k.url('/documents'), headers: as });
    expect(
      list
        .json<{ items: { name: string }[] }>()
        .items.map((d) => d.name)
        .sort(),
    ).toEqual(['pump.md', 'valve.md']);
    const projects = await t.app.inject({ method: 'GET', url: k.url('/projects'), headers: as });
    expect(
      projects.json<{ items: { projectId: string }[] }>().items.map((p) => p.projectId),
    ).toEqual(['ops']);
    for (const path of ['', '/chunks', '/markdown']) {
      const own = await t.app.inject({
        method: 'GET',
        url: k.url(`/documents/${docs['pump.md']!}${path}`),
        headers: as,
      });
      expect(own.statusCode, own.body).toBe(200);
      const loose = await t.app.inject({
        method: 'GET',
        url: k.url(`/documents/${docs['loose.md']!}${path}`),
        headers: as,
      });
      expect(loose.statusCode).toBe(404);
    }
  });

  it('retrieves only from its projects, with one project or several', async () => {
    const two = await createKey('read', ['ops', 'money']);
    for (const [key, names] of [
      [ops(), ['pump.md', 'valve.md']],
      [two, ['finance.md', 'pump.md', 'valve.md']],
    ] as const) {
      for (const mode of ['keyword', 'semantic', 'hybrid']) {
        const res = await t.app.inject({
          method: 'POST',
          url: k.url('/retrieve'),
          headers: bearer(key.jwt),
          payload: { query: 'impeller', mode, topK: 10, minScore: -1 },
        });
        expect(res.statusCode, res.body).toBe(200);
        const found = new Set(
          res.json<{ items: { documentName: string }[] }>().items.map((h) => h.documentName),
        );
        expect([...found].sort(), mode).toEqual([...names]);
      }
    }
    // A document id outside its projects finds nothing; inside, its own chunks.
    const outside = await t.app.inject({
      method: 'POST',
      url: k.url('/retrieve'),
      headers: bearer(two.raw),
      payload: { query: 'impeller', documentId: [docs['loose.md']!, docs['finance.md']!] },
    });
    expect(
      outside.json<{ items: { documentName: string }[] }>().items.map((h) => h.documentName),
    ).toEqual(['finance.md']);
  });

  it('adds documents to its only project by default, refuses others, and leaves nothing behind', async () => {
    const as = bearer(ops().raw);
    const added = await t.app.inject({
      method: 'POST',
      url: k.url('/documents/text'),
      headers: as,
      payload: { name: 'added.md', text: '# Added\n\nBy a scoped key.' },
    });
    expect(added.statusCode, added.body).toBe(201);
    expect(added.json<{ projectId: string }>().projectId).toBe('ops');
    const upload = await k.upload('refused.md', '# Refused', { projectId: 'money' });
    expect(upload.statusCode).toBe(201); // the unrestricted key may
    const refused = await t.app.inject({
      method: 'POST',
      url: k.url('/documents/text'),
      headers: as,
      payload: { name: 'nope.md', text: 'x', projectId: 'money' },
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'AUTH_PROJECT_FORBIDDEN' });
    const two = await createKey('write', ['ops', 'money']);
    const ambiguous = await t.app.inject({
      method: 'POST',
      url: k.url('/documents/text'),
      headers: bearer(two.raw),
      payload: { name: 'which.md', text: 'which project?' },
    });
    expect(ambiguous.statusCode).toBe(403);
    const all = await k.get('/documents?limit=50');
    const names = all.json<{ items: { name: string }[] }>().items.map((d) => d.name);
    expect(names).not.toContain('nope.md');
    expect(names).not.toContain('which.md');
  });

  it('hears only its projects’ events', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const controller = new AbortController();
    const res = await fetch(`${address}${k.url('/events')}`, {
      headers: bearer(ops().raw),
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    const reading = (async () => {
      for (;;) {
        const { value, done } = (await reader.read()) as { value?: Uint8Array; done: boolean };
        if (done) return;
        text += new TextDecoder().decode(value);
      }
    })().catch(() => undefined);
    for (const [name, projectId] of [
      ['event-money.md', 'money'],
      ['event-ops.md', 'ops'],
    ]) {
      const res = await t.app.inject({
        method: 'POST',
        url: k.url('/documents/text'),
        headers: bearer(t.key),
        payload: { name, text: `# ${name}`, projectId },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    const deadline = Date.now() + 5000;
    while (!text.includes('event-ops.md') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    controller.abort();
    await reading;
    expect(text).toContain('event-ops.md');
    expect(text).not.toContain('event-money.md');
  });

  it('MCP: a read key is offered the read tools only; list_projects shows its projects', async () => {
    const address = t.app.server.listening
      ? `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`
      : await t.app.listen({ port: 0, host: '127.0.0.1' });
    const read = keys.find((key) => key.access === 'read' && key.projects !== null)!;
    const tools = async (key: Key) => {
      const client = new Client({ name: 'scope-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${address}${t.prefix}/mcp`), {
          requestInit: { headers: bearer(key.raw) },
        }),
      );
      try {
        const names = (await client.listTools()).tools.map((tool) => tool.name);
        const projects = await client.callTool({ name: 'list_projects', arguments: {} });
        return { names, projects: JSON.stringify(projects) };
      } finally {
        await client.close();
      }
    };
    const reader = await tools(read);
    expect(reader.names).toContain('search_knowledge');
    expect(reader.names).not.toContain('add_text_document');
    expect(reader.projects).toContain('ops');
    expect(reader.projects).not.toContain('money');
    expect((await tools(ops())).names).toContain('add_text_document');
  });

  it('cannot mint a broader key, nor see or revoke keys beyond its projects', async () => {
    const admin = keys.find((key) => key.access === 'admin' && key.projects !== null)!;
    const create = (payload: object) =>
      t.app.inject({
        method: 'POST',
        url: `${t.prefix}/auth/api-keys/create`,
        headers: bearer(admin.raw),
        payload: { name: 'x', level: 'L0', ...payload },
      });
    expect((await create({})).statusCode).toBe(403); // every project
    expect((await create({ projects: ['ops', 'money'] })).statusCode).toBe(403);
    const narrow = await create({ projects: ['ops'], access: 'read' });
    expect(narrow.statusCode, narrow.body).toBe(201);
    const listed = await t.app.inject({
      method: 'GET',
      url: `${t.prefix}/auth/api-keys`,
      headers: bearer(admin.raw),
    });
    const visible = listed.json<{ items: { projects: string[] | null }[] }>().items;
    expect(visible.length).toBeGreaterThan(0);
    expect(
      visible.every((key) => key.projects !== null && key.projects.every((p) => p === 'ops')),
    ).toBe(true);
    const unrestricted = keys.find((key) => key.projects === null)!;
    const revoke = await t.app.inject({
      method: 'POST',
      url: `${t.prefix}/auth/api-keys/revoke`,
      headers: bearer(admin.raw),
      payload: { id: unrestricted.id },
    });
    expect(revoke.statusCode).toBe(404);
  });
});
