/**
 * The MCP server of the knowledge base: tools and resources over a KnowledgeApi. One factory for
 * both transports — streamable HTTP inside the app (mcp.routes.ts) and stdio (`aps mcp`).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { KnowledgeApi } from './knowledge-api.js';
import { registerResources } from './resources.js';
import { registerTools } from './tools.js';

export interface McpServerOptions {
  version: string;
  /** Resources list only this project's documents. */
  projectId?: string | undefined;
  /** How long add_text_document waits for indexing (default 60 s). */
  addWaitMs?: number;
  /** False for a key with read access: add_text_document is not offered. */
  canWrite?: boolean;
}

const INSTRUCTIONS =
  'The knowledge base of this Agent Platform Server: documents converted to markdown, chunked and indexed for hybrid (keyword + meaning) search. Search with search_knowledge and cite the numbered passages; read around a passage with read_document; add notes or findings with add_text_document.';

export function createMcpServer(api: KnowledgeApi, options: McpServerOptions): McpServer {
  const server = new McpServer(
    {
      name: 'aps-knowledge',
      title: 'Agent Platform Server knowledge base',
      version: options.version,
    },
    { instructions: INSTRUCTIONS },
  );
  registerTools(server, api, {
    addWaitMs: options.addWaitMs ?? 60_000,
    canWrite: options.canWrite ?? true,
  });
  registerResources(server, api, { projectId: options.projectId });
  return server;
}
