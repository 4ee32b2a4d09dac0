/**
 * The MCP tools of the knowledge base (their names and arguments are a contract). Each calls the
 * Knowledge routes through a KnowledgeApi; a route's error becomes a tool error carrying the
 * catalogue's code and message. Input schemas are zod because the SDK's McpServer validates and
 * publishes tool schemas from zod; the routes still validate everything they receive.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { formatHits } from './format.js';
import { ApiError, type KnowledgeApi } from './knowledge-api.js';
import { waitUntilSearchable } from './wait.js';

/** Characters of a search answer's text by default. */
export const SEARCH_MAX_CHARS = 7_000;
/** Characters of a read_document answer by default. */
export const READ_MAX_CHARS = 20_000;

export interface ToolOptions {
  /** How long add_text_document waits for the document to become searchable. */
  addWaitMs: number;
  /** Whether the caller's key may write: a read-only key is offered the read tools only. */
  canWrite?: boolean;
}

const READ_ONLY = { readOnlyHint: true, openWorldHint: false } as const;

const id = z.string().min(1).max(100);
const projectId = z.string().min(1).max(200);
const filter = z
  .record(z.string(), z.unknown())
  .describe('Metadata filter on the documents, as the HTTP API takes it, e.g. {"lang": "en"}.');

const hitSchema = z.looseObject({
  id: z.string(),
  score: z.number(),
  documentId: z.string(),
  documentName: z.string(),
  projectId: z.string().nullable(),
  source: z.string(),
  chunkIndex: z.number().int(),
  sectionPath: z.string(),
  page: z.number().int().nullable(),
  pageEnd: z.number().int().nullable().optional(),
  content: z.string(),
  highlights: z.array(z.object({ start: z.number().int(), end: z.number().int() })).optional(),
  metadata: z.record(z.string(), z.unknown()),
  documentMetadata: z.record(z.string(), z.unknown()),
});

// Built once: zod schemas are costly to construct, and the HTTP transport builds a server per request.
const SEARCH_INPUT = z.object({
  query: z
    .string()
    .min(1)
    .max(4000)
    .describe('A question, a paraphrase or exact terms (names, identifiers, codes).'),
  topK: z.number().int().min(1).max(100).optional().describe('Passages to return (6).'),
  mode: z
    .enum(['hybrid', 'semantic', 'keyword'])
    .optional()
    .describe('hybrid (default): meaning and words; keyword: exact terms; semantic: meaning.'),
  minScore: z.number().min(-1).max(1).optional().describe('Drop passages scoring below it.'),
  projectId: projectId.optional().describe('Only documents of this project.'),
  documentId: id.optional().describe('Only this document.'),
  filter: filter.optional(),
  maxChars: z
    .number()
    .int()
    .min(500)
    .max(100_000)
    .optional()
    .describe(`Character budget of the text answer (${SEARCH_MAX_CHARS}).`),
});

const SEARCH_OUTPUT = z.object({
  query: z.string(),
  topK: z.number().int(),
  mode: z.string(),
  // Optional: servers before reranking do not send it.
  reranked: z
    .boolean()
    .optional()
    .describe('Whether a reranker ordered the passages (each score is then its relevance, 0..1).'),
  items: z.array(hitSchema),
});

const LIST_DOCUMENTS_INPUT = z.object({
  projectId: projectId.optional().describe('Only documents of this project.'),
  status: z.enum(['uploaded', 'indexing', 'indexed', 'failed']).optional(),
  q: z.string().min(1).max(200).optional().describe('Words of the document name.'),
  filter: filter.optional(),
  cursor: z.string().min(1).optional().describe('nextCursor of the previous page.'),
  limit: z.number().int().min(1).max(1000).optional().describe('Documents per page (100).'),
});

const GET_DOCUMENT_INPUT = z.object({ id: id.describe('The document id.') });

const READ_DOCUMENT_INPUT = z.object({
  id: id.describe('The document id.'),
  fromPage: z.number().int().min(1).optional().describe('First page (paged documents).'),
  toPage: z.number().int().min(1).optional().describe('Last page, inclusive.'),
  fromChunk: z.number().int().min(0).optional().describe('First chunk (a hit’s chunk).'),
  toChunk: z.number().int().min(0).optional().describe('Last chunk, inclusive.'),
  maxChars: z
    .number()
    .int()
    .min(200)
    .max(200_000)
    .optional()
    .describe(`Character budget (${READ_MAX_CHARS}).`),
});

const ADD_TEXT_INPUT = z.object({
  name: z
    .string()
    .min(1)
    .max(200)
    .describe('Document name; ending in .md means markdown (headings become sections).'),
  text: z.string().min(1).describe('The content.'),
  projectId: projectId.optional().describe('Project to file it under.'),
  metadata: z
    .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]))
    .optional()
    .describe('Free-form metadata: string, number, boolean or string-array values.'),
});

function text(value: string): CallToolResult['content'] {
  return [{ type: 'text', text: value }];
}

/** Runs a tool body; a route's error (or any failure) becomes a tool error, never a crash. */
async function answer(body: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await body();
  } catch (error) {
    const message =
      error instanceof ApiError
        ? error.describe()
        : `INTERNAL_ERROR: ${error instanceof Error ? error.message : String(error)}`;
    return { isError: true, content: text(message) };
  }
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

export function registerTools(server: McpServer, api: KnowledgeApi, options: ToolOptions): void {
  server.registerTool(
    'search_knowledge',
    {
      title: 'Search the knowledge base',
      description:
        'Search the indexed documents for passages that answer a question or mention a term; use it first whenever the answer may be in the knowledge base. Answers numbered passages with document, page(s), section and score to cite as [n].',
      inputSchema: SEARCH_INPUT,
      outputSchema: SEARCH_OUTPUT,
      annotations: READ_ONLY,
    },
    ({ maxChars, ...request }) =>
      answer(async () => {
        const result = await api.retrieve(request);
        return {
          content: text(
            formatHits(result.query, result.mode, result.items, maxChars ?? SEARCH_MAX_CHARS),
          ),
          structuredContent: { ...result },
        };
      }),
  );

  server.registerTool(
    'list_documents',
    {
      title: 'List documents',
      description:
        'List the documents of the knowledge base, newest first, to see what it holds or to find a document id; use search_knowledge to find passages.',
      inputSchema: LIST_DOCUMENTS_INPUT,
      annotations: READ_ONLY,
    },
    (query) =>
      answer(async () => {
        const list = await api.listDocuments(query);
        const lines = list.items.map(
          (d) =>
            `- ${d.name} (id ${d.id}) — ${d.status}${d.projectId === null ? '' : `, project ${d.projectId}`}, ${d.fileType}, updated ${d.updatedAt}`,
        );
        const more =
          typeof list.nextCursor === 'string' ? `\nMore: cursor "${list.nextCursor}".` : '';
        return {
          content: text(
            list.items.length === 0
              ? 'No documents.'
              : `${list.items.length} documents:\n${lines.join('\n')}${more}`,
          ),
          structuredContent: { ...list },
        };
      }),
  );

  server.registerTool(
    'list_projects',
    {
      title: 'List projects',
      description:
        'List the projects documents are filed under, with document and chunk counts; use it to pick a projectId for search_knowledge or list_documents.',
      annotations: READ_ONLY,
    },
    () =>
      answer(async () => {
        const list = await api.listProjects();
        const lines = list.items.map(
          (p) =>
            `- ${p.projectId ?? '(no project)'}: ${p.documentCount} documents, ${p.chunkCount} chunks`,
        );
        return {
          content: text(list.items.length === 0 ? 'No projects.' : lines.join('\n')),
          structuredContent: { ...list },
        };
      }),
  );

  server.registerTool(
    'get_document',
    {
      title: 'Get a document',
      description:
        'The record of one document: name, status, indexing progress or error, metadata, pages. Use it to check whether a document is indexed yet.',
      inputSchema: GET_DOCUMENT_INPUT,
      annotations: READ_ONLY,
    },
    ({ id: documentId }) =>
      answer(async () => {
        const document = await api.getDocument(documentId);
        return { content: text(json(document)), structuredContent: { ...document } };
      }),
  );

  server.registerTool(
    'read_document',
    {
      title: 'Read a document',
      description:
        'The converted markdown of a document, whole or a page range or chunk range, to read around a search hit (use its documentId and page or chunk). Give pages or chunks, not both.',
      inputSchema: READ_DOCUMENT_INPUT,
      annotations: READ_ONLY,
    },
    ({ id: documentId, maxChars, ...range }) =>
      answer(async () => {
        const result = await api.readMarkdown(documentId, {
          ...range,
          maxChars: maxChars ?? READ_MAX_CHARS,
        });
        const where =
          result.fromPage !== null
            ? `pages ${result.fromPage}–${result.toPage ?? result.fromPage} of ${result.pages ?? '?'}`
            : result.fromChunk !== null
              ? `chunks ${result.fromChunk}–${result.toChunk ?? result.fromChunk} of ${result.chunkCount ?? '?'}`
              : `whole document${result.pages === null ? '' : `, ${result.pages} pages`}`;
        const cut = result.truncated
          ? ` (cut to ${result.markdown.length} of ${result.totalChars} characters: read a smaller range)`
          : '';
        return {
          content: text(`# ${result.name} — ${where}${cut}\n\n${result.markdown}`),
          structuredContent: { ...result },
        };
      }),
  );

  if (options.canWrite === false) return;
  server.registerTool(
    'add_text_document',
    {
      title: 'Add a text document',
      description:
        'Add text or markdown (notes, findings, a fetched page) to the knowledge base and index it so search_knowledge finds it; answers once it is searchable. Adding the same text to the same project again returns the existing document.',
      inputSchema: ADD_TEXT_INPUT,
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: false,
      },
    },
    (body, extra) =>
      answer(async () => {
        const added = await api.addText(body);
        const document = await waitUntilSearchable(api, added, options.addWaitMs, extra.signal);
        if (document.status === 'failed') {
          return {
            isError: true,
            content: text(
              `Indexing ${document.name} (id ${document.id}) failed: ${document.errorMessage ?? 'no reason given'}`,
            ),
          };
        }
        const state =
          document.status === 'indexed'
            ? 'indexed and searchable now'
            : `still ${document.status} after ${Math.round(options.addWaitMs / 1000)} s; check it with get_document`;
        return {
          content: text(`${document.name} (id ${document.id}) is ${state}.\n\n${json(document)}`),
          structuredContent: { ...document },
        };
      }),
  );
}
