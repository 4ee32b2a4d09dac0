/**
 * Two real server processes (dist/cli.js) on one PostgreSQL database, files kept in the database:
 * work requested on one instance runs on either, and a job whose instance is killed is finished
 * by the other, with nothing lost or duplicated.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandsFile, slowConverter, TEST_EMBEDDING_CACHE, tempDir } from '../helpers.js';
import { startInstance, type Instance } from './instances.js';
import { freshDatabase, TEST_DATABASE_URL, type FreshDatabase } from './pg.js';

const KEY = `aps_${randomBytes(32).toString('base64url')}`;

// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the response shape
async function api<T = unknown>(
  instance: Instance,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: T }> {
  const res = await fetch(`${instance.url}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${KEY}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as T };
}

async function upload(instance: Instance, name: string, text: string) {
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/plain' }), name);
  const res = await fetch(`${instance.url}/api/v1/knowledge/documents/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}` },
    body: form,
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; status: string; version: number };
}

interface HealthQueue {
  queue: { runningJobs: number; queuedJobs: number };
}

interface Doc {
  id: string;
  status: string;
  version: number;
  errorMessage: string | null;
}

async function waitForStatus(instance: Instance, id: string, timeoutMs = 60_000): Promise<Doc> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { json } = await api<Doc>(instance, 'GET', `/knowledge/documents/${id}`);
    if (json.status !== 'indexing' && json.status !== 'uploaded') return json;
    if (Date.now() > until) throw new Error(`document ${id} still ${json.status}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function retrieve(instance: Instance, query: string, documentId?: string) {
  const { status, json } = await api<{ items: { documentId: string; content: string }[] }>(
    instance,
    'POST',
    '/knowledge/retrieve',
    { query, topK: 5, ...(documentId === undefined ? {} : { documentId }) },
  );
  expect(status).toBe(200);
  return json.items;
}

describe.skipIf(TEST_DATABASE_URL === undefined)('two instances on one PostgreSQL', () => {
  let database: FreshDatabase;
  let a: Instance;
  let b: Instance;
  const work = tempDir();

  beforeAll(async () => {
    database = await freshDatabase();
    // A converter that records which server process runs it, then takes 4 s.
    const slow = slowConverter(work, {
      ms: 4000,
      markdown: '# Ledger\n\nThe lighthouse keeper logs every passing ship in the ledger.',
      runsLog: join(work, 'runs.log'),
    });
    const commands = commandsFile(work, [{ id: 'slow', description: 'takes 4 s', script: slow }]);
    const env = {
      NODE_ENV: 'test',
      LOG_LEVEL: 'warn',
      DATABASE_URL: database.url,
      STORAGE_DRIVER: 'postgres',
      BOOTSTRAP_API_KEY: KEY,
      QUEUE_LEASE_MS: '2000',
      EMBEDDING_CACHE_DIR: TEST_EMBEDDING_CACHE,
      KNOWLEDGE_COMMANDS_FILE: commands,
    };
    // Started together: the advisory lock makes them migrate once.
    [a, b] = await Promise.all([startInstance('A', env), startInstance('B', env)]);
  }, 90_000);

  afterAll(async () => {
    for (const i of [a, b] as (Instance | undefined)[]) i?.child.kill('SIGKILL');
    await database.drop();
    rmSync(work, { recursive: true, force: true });
  });

  it('shares the queue: upload through A, index through B, retrieve through both', async () => {
    const health = await (await fetch(`${a.url}/health`)).json();
    expect(health).toMatchObject({ status: 'ok', queueDriver: 'postgres' });

    const doc = await upload(
      a,
      'harbour.txt',
      'The harbour master counts the fishing boats at dawn.\n\nGulls follow the trawlers home.',
    );
    const indexed = await api<{ chunkCount: number; document: Doc }>(
      b,
      'POST',
      `/knowledge/documents/${doc.id}/index`,
      {},
    );
    expect(indexed.status).toBe(201);
    expect(indexed.json.document).toMatchObject({ status: 'indexed', version: 2 });
    for (const instance of [a, b]) {
      const items = await retrieve(instance, 'who counts fishing boats');
      expect(items[0]).toMatchObject({ documentId: doc.id });
      expect(items[0]!.content).toContain('harbour master');
    }
    // The same document, listed from either instance.
    const list = await api<{ items: Doc[] }>(b, 'GET', '/knowledge/documents');
    expect(list.json.items.map((d) => d.id)).toContain(doc.id);
  }, 60_000);

  it('keeps the job of a large document on a healthy instance (short lease): no stall, no take-over', async () => {
    // ~3,400 chunks: built in one pass, the keyword rows of such a commit would hold the event loop
    // longer than the 2 s lease, and the other instance would take the job and fail it as "deleted".
    const words = 'harbor lantern quartz meadow circuit orbit signal river'.split(' ');
    const paragraphs = Array.from({ length: 3400 }, (_, i) =>
      Array.from({ length: 150 }, (_, j) => words[(i * 7 + j * 3) % words.length]).join(' '),
    );
    const doc = await upload(a, 'large.txt', paragraphs.join('\n\n'));
    const indexed = await api<{ chunkCount: number; document: Doc }>(
      a,
      'POST',
      `/knowledge/documents/${doc.id}/index`,
      { maxChars: 1200 },
    );
    expect(indexed.status, JSON.stringify(indexed.json)).toBe(201);
    expect(indexed.json.chunkCount).toBeGreaterThan(3000);
    expect(indexed.json.document).toMatchObject({ status: 'indexed', errorMessage: null });
    for (const instance of [a, b]) expect(instance.output()).not.toContain('lease lost');
  }, 120_000);

  it('finishes a job on the other instance when the one running it is killed', async () => {
    const doc = await upload(a, 'ledger.txt', 'placeholder text, converted by the slow command');
    const queued = await api<Doc>(b, 'POST', `/knowledge/documents/${doc.id}/index`, {
      commandId: 'slow',
      async: true,
    });
    expect(queued.status).toBe(202);

    // Wait until a server process has started the converter, and kill that process.
    const runs = join(work, 'runs.log');
    const until = Date.now() + 20_000;
    // A whole line: the file exists a moment before the converter has written its pid.
    const logged = () => (existsSync(runs) ? readFileSync(runs, 'utf8') : '');
    while (!logged().includes('\n') && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const firstPid = Number(logged().trim().split('\n')[0]);
    const victim = [a, b].find((i) => i.child.pid === firstPid);
    expect(victim).toBeDefined();
    const survivor = victim === a ? b : a;
    victim!.child.kill('SIGKILL');

    const done = await waitForStatus(survivor, doc.id);
    expect(done).toMatchObject({ status: 'indexed', version: 2, errorMessage: null });
    const pids = readFileSync(runs, 'utf8').trim().split('\n').map(Number);
    expect(pids).toEqual([victim!.child.pid, survivor.child.pid]);

    const chunks = await api<{ items: { chunkIndex: number; content: string }[] }>(
      survivor,
      'GET',
      `/knowledge/documents/${doc.id}/chunks`,
    );
    expect(chunks.json.items.map((c) => c.chunkIndex)).toEqual([0]);
    expect(chunks.json.items[0]!.content).toContain('lighthouse keeper');
    const items = await retrieve(survivor, 'ledger of passing ships', doc.id);
    expect(items).toHaveLength(1);

    // /health reports the shared queue's counts (refreshed in the background).
    await expect
      .poll(
        async () => ((await (await fetch(`${survivor.url}/health`)).json()) as HealthQueue).queue,
      )
      .toMatchObject({ runningJobs: 0, queuedJobs: 0 });
  }, 90_000);
});
