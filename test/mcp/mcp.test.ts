/**
 * The MCP server through the official SDK client, over streamable HTTP ({prefix}/mcp on a real
 * port) and stdio (the built `aps mcp` against the same server): tools, search quality on a
 * small corpus, page ranges, adding a document, tool errors and resources.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers.js';
import { addCorpus, connect, textOf, type TransportKind } from './helpers.js';

let t: TestApp;
let base: string;
let ids: Record<string, string>;

beforeAll(async () => {
  t = await createTestApp();
  ids = await addCorpus(t);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}, 60_000);
afterAll(() => t.close());

interface Hit {
  documentName: string;
  page: number | null;
  content: string;
}

describe.each<TransportKind>(['http', 'stdio'])('MCP over %s', (kind) => {
  let client: Client;
  beforeAll(async () => {
    client = await connect(kind, base, t.prefix, t.key);
  });
  afterAll(() => client.close());

  it('lists the tools with schemas and annotations', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'add_text_document',
      'get_document',
      'list_documents',
      'list_projects',
      'read_document',
      'search_knowledge',
    ]);
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    expect(byName.search_knowledge?.outputSchema?.properties).toHaveProperty('items');
    expect(byName.search_knowledge?.inputSchema.required).toEqual(['query']);
    expect(byName.search_knowledge?.annotations?.readOnlyHint).toBe(true);
    expect(byName.read_document?.annotations?.readOnlyHint).toBe(true);
    expect(byName.add_text_document?.annotations).toMatchObject({
      readOnlyHint: false,
      idempotentHint: false,
    });
  });

  it('finds the right passage first for a paraphrase and cites it', async () => {
    const result = await client.callTool({
      name: 'search_knowledge',
      arguments: { query: 'how often must the rotor blades be swapped', topK: 3 },
    });
    expect(result.isError).toBeFalsy();
    const hits = (result.structuredContent as { items: Hit[] }).items;
    expect(hits[0]?.documentName).toBe('pump-manual.md');
    expect(hits[0]?.content).toContain('impeller');
    expect(hits[0]?.page).toBe(2);
    const text = textOf(result);
    expect(text).toMatch(/^\[1\] pump-manual\.md — p\. 2 — Pump manual > Maintenance — score /m);
    expect(text).toContain('Replace the impeller');
  });

  it('finds an identifier first, in a question and alone (keyword mode), within the budget', async () => {
    const asked = await client.callTool({
      name: 'search_knowledge',
      arguments: { query: 'what does error E-4711 mean' },
    });
    expect((asked.structuredContent as { items: Hit[] }).items[0]?.content).toContain('E-4711');
    const result = await client.callTool({
      name: 'search_knowledge',
      arguments: { query: 'E-4711', mode: 'keyword', maxChars: 600 },
    });
    const hits = (result.structuredContent as { items: Hit[] }).items;
    expect(hits[0]?.content).toContain('E-4711');
    expect(hits[0]?.page).toBe(3);
    const text = textOf(result);
    expect(text.length).toBeLessThanOrEqual(600);
    expect(text).toContain('[1] pump-manual.md — p. 3');
  });

  it('reads a page range of the converted markdown', async () => {
    const result = await client.callTool({
      name: 'read_document',
      arguments: { id: ids['pump-manual.md'], fromPage: 2, toPage: 3 },
    });
    expect(result.isError).toBeFalsy();
    const text = textOf(result);
    expect(text).toContain('pages 2–3 of 3');
    expect(text).toContain('Replace the impeller');
    expect(text).toContain('E-4711');
    expect(text).not.toContain('Mount the pump');
    expect(result.structuredContent).toMatchObject({ fromPage: 2, toPage: 3, pages: 3 });
  });

  it('adds a text document, answers when it is searchable, and finds it', async () => {
    const marker = `${kind} note`;
    const added = await client.callTool({
      name: 'add_text_document',
      arguments: {
        name: `${kind}-note.md`,
        text: `# Lighthouse\n\nThe ${marker}: the lighthouse keeper logs the fog horn tests every Sunday.`,
        projectId: 'ops',
        metadata: { author: 'agent' },
      },
    });
    expect(added.isError, textOf(added)).toBeFalsy();
    expect(added.structuredContent).toMatchObject({ status: 'indexed', projectId: 'ops' });
    expect(textOf(added)).toContain('indexed and searchable now');
    const found = await client.callTool({
      name: 'search_knowledge',
      arguments: { query: 'when does the keeper test the fog horn', projectId: 'ops' },
    });
    const hits = (found.structuredContent as { items: Hit[] }).items;
    expect(hits[0]?.documentName).toBe(`${kind}-note.md`);
  });

  it('answers bad arguments and route errors as tool errors', async () => {
    const wrongType = await client.callTool({
      name: 'search_knowledge',
      arguments: { query: 42 },
    });
    expect(wrongType.isError).toBe(true);
    expect(textOf(wrongType)).toMatch(/query/);

    const blank = await client.callTool({ name: 'search_knowledge', arguments: { query: '   ' } });
    expect(blank.isError).toBe(true);
    expect(textOf(blank)).toMatch(/^KNOWLEDGE_QUERY_REQUIRED \(400\): /);

    const missing = await client.callTool({ name: 'get_document', arguments: { id: 'nope' } });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toBe(
      'KNOWLEDGE_DOCUMENT_NOT_FOUND (404): Knowledge document nope not found.',
    );

    const both = await client.callTool({
      name: 'read_document',
      arguments: { id: ids['pump-manual.md'], fromPage: 1, fromChunk: 0 },
    });
    expect(both.isError).toBe(true);
    expect(textOf(both)).toMatch(/^VALIDATION_ERROR \(400\): Give a page range or a chunk range/);
  });

  it('lists documents and reads one', async () => {
    const listed = await client.callTool({
      name: 'list_documents',
      arguments: { projectId: 'money' },
    });
    expect(textOf(listed)).toContain(`finance.txt (id ${ids['finance.txt']})`);
    expect(textOf(listed)).not.toContain('garden.md');
    const one = await client.callTool({
      name: 'get_document',
      arguments: { id: ids['garden.md'] },
    });
    expect(one.structuredContent).toMatchObject({ name: 'garden.md', status: 'indexed' });
  });

  it('lists projects, and passes filters and q through to the routes', async () => {
    const projects = await client.callTool({ name: 'list_projects', arguments: {} });
    expect(projects.isError, textOf(projects)).toBeFalsy();
    expect(textOf(projects)).toMatch(/^- money: 1 documents, \d+ chunks$/m);
    const { items } = projects.structuredContent as {
      items: { projectId: string | null; documentCount: number }[];
    };
    expect(items.find((p) => p.projectId === 'money')?.documentCount).toBe(1);

    const named = await client.callTool({ name: 'list_documents', arguments: { q: 'GARDEN' } });
    expect(textOf(named)).toContain('garden.md');
    expect(textOf(named)).not.toContain('finance.txt');

    const search = async (filter: Record<string, unknown>) => {
      const result = await client.callTool({
        name: 'search_knowledge',
        arguments: { query: 'water the tomato plants', mode: 'keyword', filter },
      });
      expect(result.isError, textOf(result)).toBeFalsy();
      return (result.structuredContent as { items: Hit[] }).items.map((h) => h.documentName);
    };
    const garden = await search({ name: 'garden.md' });
    expect(garden.length).toBeGreaterThan(0);
    expect(new Set(garden)).toEqual(new Set(['garden.md']));
    expect(await search({ fileType: 'txt' })).not.toContain('garden.md');
    const bad = await client.callTool({
      name: 'search_knowledge',
      arguments: { query: 'water', filter: { year: { $gt: 'soon' } } },
    });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toMatch(/^VALIDATION_ERROR \(400\): filter\.year\.\$gt must be/);
  });

  it('exposes indexed documents as markdown resources', async () => {
    const { resources } = await client.listResources();
    const uri = `knowledge://documents/${ids['garden.md']}`;
    expect(resources.find((r) => r.uri === uri)).toMatchObject({
      name: 'garden.md',
      title: 'garden.md',
      mimeType: 'text/markdown',
    });
    const read = await client.readResource({ uri });
    expect(read.contents[0]).toMatchObject({ uri, mimeType: 'text/markdown' });
    expect((read.contents[0] as { text: string }).text).toContain('Water tomato plants deeply');
  });
});
