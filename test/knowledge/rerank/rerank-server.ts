/**
 * A real local HTTP server answering `POST /rerank` as the test tells it to (the shapes of
 * Cohere, Jina and infinity, of TEI, errors, slow answers): the HTTP exchange is what the http
 * reranker's tests are about, so a real one is used, not a stubbed fetch.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RerankRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface RerankReply {
  status?: number;
  body: unknown;
  /** Wait this long before answering. */
  delayMs?: number;
}

export interface RerankServer {
  /** Base URL (RERANK_BASE_URL): the server answers at `${url}/rerank`. */
  url: string;
  requests: RerankRequest[];
  /** Replaces how the server answers. */
  answer: (request: RerankRequest) => RerankReply;
  close(): Promise<void>;
}

export async function startRerankServer(
  answer: (request: RerankRequest) => RerankReply,
): Promise<RerankServer> {
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      const request: RerankRequest = {
        path: req.url ?? '',
        headers: req.headers,
        body: JSON.parse(raw || '{}') as Record<string, unknown>,
      };
      state.requests.push(request);
      const reply = state.answer(request);
      const send = () => {
        timers.delete(timer);
        if (res.destroyed) return;
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' });
        res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body));
      };
      const timer = setTimeout(send, reply.delayMs ?? 0);
      timers.add(timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const state: RerankServer = {
    url: `http://127.0.0.1:${port}`,
    requests: [],
    answer,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
  return state;
}

/** The documents of a request, in either dialect (`documents`, TEI's `texts`). */
export function documentsOf(request: RerankRequest): string[] {
  const docs = request.body.documents ?? request.body.texts;
  return Array.isArray(docs) ? (docs as string[]) : [];
}

/**
 * Cohere's answer with relevance rising along the documents: the last one sent is the most
 * relevant, so a reranked answer is the fused order reversed. A stand-in for a model: the
 * retrieval tests check what retrieval does with a reranker's scores, not a model's judgement.
 */
export function reversingAnswer(request: RerankRequest): RerankReply {
  const docs = documentsOf(request);
  const results = docs.map((_, index) => ({
    index,
    relevance_score: (index + 1) / (docs.length + 1),
  }));
  return { body: { results: results.reverse() } };
}
