/**
 * What the MCP tools call: the Knowledge routes, reached through a transport — the server's own
 * routes in process (`inject-transport.ts`) or a server over HTTP (`http-transport.ts`). Either
 * way auth, levels, read-only mode, validation and errors are the routes' own.
 */
import type { ErrorBody } from '../errors.js';
import type { KnowledgeDocument } from '../knowledge/documents/documents.schemas.js';
import type { RetrievalHit } from '../knowledge/retrieval/retrieval.schemas.js';
import type { MarkdownResult } from '../knowledge/markdown/markdown.schemas.js';

/** One request to a route under `{API_PREFIX}/knowledge`. */
export interface ApiRequest {
  method: 'GET' | 'POST';
  /** Below `{API_PREFIX}/knowledge`, e.g. `/documents/abc`. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
}

export interface ApiResponse {
  status: number;
  /** The parsed JSON body (an error body for statuses ≥ 400). */
  body: unknown;
}

export type ApiTransport = (request: ApiRequest) => Promise<ApiResponse>;

/** A route's error answer: the catalogue's code, status and message. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** `CODE (status): message`, how tool errors read. */
  describe(): string {
    return `${this.code} (${this.statusCode}): ${this.message}`;
  }
}

function isErrorBody(body: unknown): body is ErrorBody {
  if (typeof body !== 'object' || body === null) return false;
  const { code, message } = body as Record<string, unknown>;
  return typeof code === 'string' && typeof message === 'string';
}

/** A hit as the retrieve route answers it; newer servers add fields (`pageEnd`, `highlights`). */
export type Hit = RetrievalHit & {
  pageEnd?: number | null;
  highlights?: { start: number; end: number }[];
};

export interface RetrieveAnswer {
  query: string;
  topK: number;
  mode: string;
  items: Hit[];
}

export interface DocumentList {
  items: KnowledgeDocument[];
  nextCursor?: string | null;
}

export interface ProjectList {
  items: {
    projectId: string | null;
    documentCount: number;
    chunkCount: number;
    updatedAt?: string;
  }[];
}

/** Drops undefined values, so a route sees only what the caller gave. */
function defined<T extends Record<string, unknown>>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export class KnowledgeApi {
  constructor(private readonly send: ApiTransport) {}

  private async call<T>(request: ApiRequest): Promise<T> {
    const { status, body } = await this.send(request);
    if (status >= 400) {
      if (isErrorBody(body)) throw new ApiError(status, body.code, body.message);
      throw new ApiError(status, 'INTERNAL_ERROR', `The server answered ${status}.`);
    }
    return body as T;
  }

  retrieve(body: Record<string, unknown>): Promise<RetrieveAnswer> {
    return this.call({ method: 'POST', path: '/retrieve', body: defined(body) });
  }

  listDocuments(query: {
    projectId?: string | undefined;
    status?: string | undefined;
    q?: string | undefined;
    filter?: Record<string, unknown> | undefined;
    cursor?: string | undefined;
    limit?: number | undefined;
  }): Promise<DocumentList> {
    const { filter, ...rest } = query;
    return this.call({
      method: 'GET',
      path: '/documents',
      // The list route takes its metadata filter as JSON in the query string.
      query: defined({
        ...rest,
        filter: filter === undefined ? undefined : JSON.stringify(filter),
      }),
    });
  }

  listProjects(): Promise<ProjectList> {
    return this.call({ method: 'GET', path: '/projects' });
  }

  getDocument(id: string): Promise<KnowledgeDocument> {
    return this.call({ method: 'GET', path: `/documents/${encodeURIComponent(id)}` });
  }

  readMarkdown(
    id: string,
    range: {
      fromPage?: number | undefined;
      toPage?: number | undefined;
      fromChunk?: number | undefined;
      toChunk?: number | undefined;
      maxChars?: number | undefined;
    },
  ): Promise<MarkdownResult> {
    return this.call({
      method: 'GET',
      path: `/documents/${encodeURIComponent(id)}/markdown`,
      query: defined(range),
    });
  }

  addText(body: {
    name: string;
    text: string;
    projectId?: string | undefined;
    metadata?: Record<string, unknown> | undefined;
  }): Promise<KnowledgeDocument> {
    return this.call({
      method: 'POST',
      path: '/documents/text',
      body: defined({ ...body, index: true }),
    });
  }
}
