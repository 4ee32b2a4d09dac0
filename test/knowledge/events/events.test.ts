/**
 * The events stream, read by a real streaming client (fetch on a listening server): document
 * events in order, the project filter, heartbeats, the stream cap, clean-up on disconnect, and on
 * PostgreSQL one instance's events reaching another instance's stream.
 */
import { get, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, tempDir, type TestApp } from '../../helpers.js';
import { freshDatabase, TEST_DATABASE_URL, type FreshDatabase } from '../../postgres/pg.js';
import { fakeConverters, KnowledgeClient, knowledgeApp, type DocumentBody } from '../helpers.js';

interface Received {
  type: string;
  data: DocumentBody & { progress: { stage: string; done: number; total: number | null } | null };
}

/** What answered the request to open a stream. */
interface Opened {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body, for an answer that is not a stream. */
  json(): Promise<unknown>;
}

/**
 * An open events stream read over its own connection (node:http, no agent: closing it closes
 * the socket): the events parsed so far, comment lines counted.
 */
class EventStream {
  readonly events: Received[] = [];
  comments = 0;
  private buffer = '';
  private response: IncomingMessage | undefined;
  /** Every stream a test opened, closed after it (also when it failed). */
  static readonly opened = new Set<EventStream>();

  static async open(t: TestApp, query = ''): Promise<{ res: Opened; stream: EventStream }> {
    const address = await listening(t);
    const stream = new EventStream();
    EventStream.opened.add(stream);
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      get(
        `${address}${t.prefix}/knowledge/events${query}`,
        { headers: bearer(t.key), agent: false },
        resolve,
      ).on('error', reject);
    });
    stream.response = response;
    const body = response.statusCode === 200 ? undefined : text(response);
    if (body === undefined) {
      response.setEncoding('utf8');
      response.on('data', (piece: string) => {
        stream.receive(piece);
      });
    }
    const res: Opened = {
      status: response.statusCode ?? 0,
      headers: response.headers,
      json: async () => JSON.parse(await (body ?? Promise.resolve('null'))) as unknown,
    };
    return { res, stream };
  }

  private receive(piece: string): void {
    this.buffer += piece;
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      this.parse(block);
    }
  }

  private parse(block: string): void {
    let type = '';
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) this.comments++;
      else if (line.startsWith('event: ')) type = line.slice(7);
      else if (line.startsWith('data: ')) data += line.slice(6);
    }
    if (type !== '') this.events.push({ type, data: JSON.parse(data) as Received['data'] });
  }

  /** Resolves once an event matches (or fails after `timeoutMs`). */
  async until(match: (e: Received) => boolean, timeoutMs = 15_000): Promise<Received> {
    const start = Date.now();
    for (;;) {
      const found = this.events.find(match);
      if (found !== undefined) return found;
      if (Date.now() - start > timeoutMs) {
        throw new Error(`no such event; got ${this.events.map((e) => e.type).join(', ')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  close(): void {
    EventStream.opened.delete(this);
    this.response?.destroy();
  }
}

afterEach(() => {
  for (const stream of EventStream.opened) stream.close();
});

async function text(response: IncomingMessage): Promise<string> {
  let body = '';
  response.setEncoding('utf8');
  for await (const piece of response) body += piece as string;
  return body;
}

const servers = new WeakMap<TestApp, string>();
async function listening(t: TestApp): Promise<string> {
  let address = servers.get(t);
  if (address === undefined) {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as { port: number };
    address = `http://127.0.0.1:${port}`;
    servers.set(t, address);
  }
  return address;
}

const waitUntil = async (check: () => boolean, timeoutMs = 5000) => {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

/** A document of `sections` sections: enough chunks for several progress reports. */
const longMarkdown = (sections: number) =>
  Array.from(
    { length: sections },
    (_, i) => `## Part ${i}\n\n${`Sentence ${i} about rivers and harbours. `.repeat(30)}\n`,
  ).join('\n');

describe('events stream', () => {
  let t: TestApp;
  let k: KnowledgeClient;
  beforeAll(async () => {
    ({ t, k } = await knowledgeApp({
      KNOWLEDGE_EVENTS_HEARTBEAT_MS: '200',
      KNOWLEDGE_EVENTS_MAX_STREAMS: '3',
      // `slow` converts in 0.7 s: a run long enough to report progress (a short one reports none).
      KNOWLEDGE_COMMANDS_FILE: fakeConverters(tempDir()),
    }));
  });
  afterAll(() => t.close());

  it('streams created, progress, indexed and deleted with the document records, in order', async () => {
    const { res, stream } = await EventStream.open(t);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const doc = await k.uploadOk('long.md', longMarkdown(200), { projectId: 'events' });
    const created = await stream.until((e) => e.type === 'document.created');
    expect(created.data).toMatchObject({ id: doc.id, status: 'uploaded', progress: null });

    await k.indexOk(doc.id, { maxChars: 400, commandId: 'slow' });
    const indexed = await stream.until((e) => e.type === 'document.indexed');
    expect(indexed.data).toMatchObject({ id: doc.id, status: 'indexed', progress: null });
    const progress = stream.events.filter((e) => e.type === 'document.progress');
    expect(progress.length).toBeGreaterThan(0);
    // Progress events carry the record while it is indexing, with its stage.
    const stages = progress.flatMap((e) => (e.data.progress === null ? [] : [e.data.progress]));
    expect(stages.length).toBeGreaterThan(0);
    for (const p of stages) {
      expect(['queued', 'converting', 'chunking', 'embedding', 'committing']).toContain(p.stage);
      if (p.total !== null) expect(p.done).toBeLessThanOrEqual(p.total);
    }
    expect(stages.map((p) => p.stage)).toContain('converting');
    const types = stream.events.map((e) => e.type);
    expect(types.indexOf('document.created')).toBeLessThan(types.indexOf('document.indexed'));

    expect((await k.delete(doc.id)).statusCode).toBe(200);
    const deleted = await stream.until((e) => e.type === 'document.deleted');
    expect(deleted.data).toEqual({ id: doc.id });
    stream.close();
  });

  it('reports a failed run with its reason', async () => {
    const { stream } = await EventStream.open(t);
    const doc = await k.uploadOk('blank.txt', ' \n\n   \n');
    await k.index(doc.id);
    const failed = await stream.until((e) => e.type === 'document.failed');
    expect(failed.data).toMatchObject({ id: doc.id, status: 'failed', progress: null });
    expect(failed.data.errorMessage).toMatch(/no text/i);
    stream.close();
  });

  it('filters by project', async () => {
    const { stream } = await EventStream.open(t, '?projectId=alpha');
    await k.uploadOk('b.txt', 'in project beta', { projectId: 'beta' });
    const alpha = await k.uploadOk('a.txt', 'in project alpha', { projectId: 'alpha' });
    await stream.until((e) => e.type === 'document.created');
    expect(stream.events.map((e) => e.data.id)).toEqual([alpha.id]);
    await k.delete(alpha.id);
    await stream.until((e) => e.type === 'document.deleted');
    stream.close();
  });

  it('sends heartbeats, caps the streams and lets go of a client that leaves', async () => {
    // Streams of earlier tests are let go of as their connections close.
    await waitUntil(() => t.ctx.knowledge.events.subscribers === 0);
    const baseline = 0;
    const open = await Promise.all([1, 2, 3].map(() => EventStream.open(t)));
    for (const { res } of open) expect(res.status).toBe(200);
    const refused = await EventStream.open(t);
    expect(refused.res.status).toBe(503);
    expect(await refused.res.json()).toMatchObject({ statusCode: 503, code: 'OVERLOADED' });
    expect(t.ctx.knowledge.events.subscribers).toBe(baseline + 3);

    const first = open[0]!.stream;
    await waitUntil(() => first.comments >= 3, 5000);
    // Open streams hold no load-shedding slot.
    expect(t.app.loadShedding.inFlight).toBe(0);

    for (const { stream } of open) stream.close();
    await waitUntil(() => t.ctx.knowledge.events.subscribers === baseline);
    const again = await EventStream.open(t);
    expect(again.res.status).toBe(200);
    again.stream.close();
  });

  it('needs credentials', async () => {
    const address = await listening(t);
    const res = await fetch(`${address}${t.prefix}/knowledge/events`);
    expect(res.status).toBe(401);
  });

  it('shows the progress of a run on the document while it is indexing', async () => {
    const doc = await k.uploadOk('progress.md', longMarkdown(400));
    const res = await k.index(doc.id, { async: true, maxChars: 300 });
    expect(res.statusCode).toBe(202);
    expect(res.json<{ document: { progress: unknown } }>().document.progress).toMatchObject({
      stage: 'queued',
    });
    const seen = new Set<string>();
    for (;;) {
      const current = (await k.get(`/documents/${doc.id}`)).json<Received['data']>();
      if (current.status !== 'indexing') {
        expect(current.progress).toBeNull();
        break;
      }
      expect(current.progress).not.toBeNull();
      seen.add(current.progress!.stage);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(seen.size).toBeGreaterThan(0);
  });
});

describe.skipIf(TEST_DATABASE_URL === undefined)('events across instances (PostgreSQL)', () => {
  let database: FreshDatabase;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    database = await freshDatabase();
    // Instances of one deployment share the database and the secrets (keys work on both).
    const env = {
      DATABASE_URL: database.url,
      STORAGE_DRIVER: 'postgres',
      API_KEY_SALT: 'events-test-salt-0123456789',
      JWT_SECRET: 'events-test-jwt-secret-0123456789abcdef',
    };
    a = await createTestApp({ env });
    b = await createTestApp({ env });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await database.drop();
  });

  it("one instance's events reach the streams of another", async () => {
    // The instances share the database, hence the key a created.
    const { res, stream } = await EventStream.open({ ...b, key: a.key });
    expect(res.status).toBe(200);
    // The LISTEN connection of b comes up in the background, at its first subscriber.
    await waitUntil(() => b.ctx.knowledge.events.listening, 10_000);
    const k = new KnowledgeClient(a);
    const doc = await k.uploadOk('shared.md', '# Shared\n\nSeen from the other instance.');
    const created = await stream.until((e) => e.type === 'document.created');
    expect(created.data).toMatchObject({ id: doc.id, status: 'uploaded' });
    await k.indexOk(doc.id);
    await stream.until((e) => e.type === 'document.indexed' && e.data.id === doc.id);
    await k.delete(doc.id);
    await stream.until((e) => e.type === 'document.deleted');
    stream.close();
  });
});
