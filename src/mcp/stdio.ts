/**
 * `aps mcp`: the MCP server over stdio for hosts that launch a command. It reaches a running
 * server over HTTP (never the database), so it works against a remote or multi-instance
 * deployment. stdout carries protocol messages only; notes go to stderr.
 */
import { createRequire } from 'node:module';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { redactUrl } from '../http/redact.js';
import { httpTransport, type HttpTarget } from './http-transport.js';
import { KnowledgeApi } from './knowledge-api.js';
import { createMcpServer } from './server.js';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

export async function runStdio(
  target: HttpTarget & { projectId?: string | undefined },
): Promise<void> {
  const server = createMcpServer(new KnowledgeApi(httpTransport(target)), {
    version,
    projectId: target.projectId,
  });
  const transport = new StdioServerTransport();
  // The host closing our stdin ends the session.
  process.stdin.once('end', () => {
    void server.close().finally(() => process.exit(0));
  });
  await server.connect(transport);
  if (target.apiKey === undefined || target.apiKey === '') {
    process.stderr.write('aps mcp: no API key (APS_API_KEY or --api-key): calls will answer 401\n');
  }
  process.stderr.write(`aps mcp: serving ${redactUrl(target.url)}${target.prefix} over stdio\n`);
}
