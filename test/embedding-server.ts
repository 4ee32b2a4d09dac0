/** A local embeddings server for tests (no import of the app: the browser suite uses it too). */
/**
 * A real local HTTP server speaking the OpenAI embeddings API, with deterministic vectors: each
 * word (lower-cased) adds to one of 64 dimensions, so texts sharing words are similar.
 */
export async function startEmbeddingServer(): Promise<{
  url: string;
  requests: number;
  close(): Promise<void>;
}> {
  const { createServer } = await import('node:http');
  const { createHash } = await import('node:crypto');
  const state = { requests: 0 };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      state.requests += 1;
      const { input } = JSON.parse(body) as { input: string[] };
      const data = input.map((text, index) => {
        const v = new Array<number>(64).fill(0);
        for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
          v[createHash('md5').update(word).digest()[0]! % 64]! += 1;
        }
        v[63]! += 0.01;
        return { index, embedding: v };
      });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ data }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    get requests() {
      return state.requests;
    },
    close: () =>
      new Promise<void>((r) =>
        server.close(() => {
          r();
        }),
      ),
  };
}
