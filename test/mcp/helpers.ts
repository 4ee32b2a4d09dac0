/** MCP test helpers: a small indexed corpus, and the SDK's own client over either transport. */
import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';
import { bearer, type TestApp } from '../helpers.js';
import { KnowledgeClient } from '../knowledge/helpers.js';

export const CLI = resolve(import.meta.dirname, '../../dist/cli.js');

/** A three-page manual (page markers as the converter writes them) and two other documents. */
export const CORPUS = {
  'pump-manual.md': [
    '# Pump manual',
    '<!-- page: 1 -->',
    '## Installation',
    'Mount the pump on a level concrete base and connect the inlet hose before switching on.',
    '<!-- page: 2 -->',
    '## Maintenance',
    'Replace the impeller every 2,000 operating hours. Worn blades lower the flow and make the motor run hot.',
    '<!-- page: 3 -->',
    '## Error codes',
    'E-4711: the pressure sensor is disconnected; check its cable. E-17: the motor overheated.',
  ].join('\n\n'),
  'garden.md':
    '# Tomatoes\n\nWater tomato plants deeply twice a week, early in the morning, and mulch the soil to keep it moist.',
  'finance.txt':
    'Quarterly revenue grew by eight percent, driven by subscriptions in the northern region.',
};

/** Adds the corpus through the text route and waits until every document is indexed. */
export async function addCorpus(t: TestApp): Promise<Record<string, string>> {
  const client = new KnowledgeClient(t);
  const ids: Record<string, string> = {};
  for (const [name, text] of Object.entries(CORPUS)) {
    const res = await t.app.inject({
      method: 'POST',
      url: client.url('/documents/text'),
      headers: bearer(t.key),
      payload: { name, text, index: true, projectId: name === 'finance.txt' ? 'money' : 'ops' },
    });
    expect(res.statusCode, res.body).toBe(201);
    ids[name] = res.json<{ id: string }>().id;
  }
  for (const id of Object.values(ids)) await client.waitFor(id, ['indexed'], 60_000);
  return ids;
}

export type TransportKind = 'http' | 'stdio';

/** The SDK client connected to the server at `base` over `kind`, with `key` (if any). */
export async function connect(
  kind: TransportKind,
  base: string,
  prefix: string,
  key: string | undefined,
): Promise<Client> {
  const client = new Client({ name: 'aps-test', version: '1.0.0' });
  const headers: Record<string, string> = key === undefined ? {} : bearer(key);
  const transport =
    kind === 'http'
      ? new StreamableHTTPClientTransport(new URL(`${base}${prefix}/mcp`), {
          requestInit: { headers },
        })
      : new StdioClientTransport({
          command: process.execPath,
          args: [CLI, 'mcp'],
          env: {
            PATH: process.env.PATH ?? '',
            APS_URL: base,
            APS_API_PREFIX: prefix,
            ...(key === undefined ? {} : { APS_API_KEY: key }),
          },
          stderr: 'pipe',
        });
  await client.connect(transport);
  return client;
}

/** The text of a tool result. */
export function textOf(result: unknown): string {
  return (result as CallToolResult).content
    .map((c) => (c.type === 'text' ? c.text : ''))
    .join('\n');
}
