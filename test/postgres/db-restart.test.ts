/**
 * The database goes away under load and comes back, several times in a row: three real server
 * processes on a PostgreSQL cluster of the test's own (started on a chosen port, PG_PORT), with
 * retrievals, uploads and listings running and an indexing job in flight at each outage. Every
 * instance survives; requests during the outage answer 503 DATABASE_UNAVAILABLE (or succeed),
 * never 500 and never hang; /health/ready says 503 meanwhile and 200 once the database is back;
 * afterwards requests succeed and no document is left `indexing`.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandsFile, slowConverter, TEST_EMBEDDING_CACHE, tempDir } from '../helpers.js';
import { freePort, startInstance, TestCluster, type Instance } from './instances.js';
import { TEST_DATABASE_URL } from './pg.js';

const KEY = `aps_${randomBytes(32).toString('base64url')}`;
/** A request without an answer this long counts as hanging. */
const HANG_MS = 15_000;
const OUTAGES = 3;
const OUTAGE_MS = 3000;

interface Outcome {
  instance: string;
  what: string;
  status: number;
  code?: string;
  error?: string;
  at: number;
}

interface Doc {
  id: string;
  status: string;
  errorMessage: string | null;
}

type Init = Omit<RequestInit, 'headers'> & { headers?: Record<string, string> };

/** One request; network errors and hangs come back as status 0 with the error. */
async function request(
  instance: Instance,
  what: string,
  path: string,
  init: Init = {},
): Promise<Outcome & { body: unknown }> {
  const at = Date.now();
  try {
    const res = await fetch(`${instance.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${KEY}`, ...init.headers },
      signal: AbortSignal.timeout(HANG_MS),
    });
    const body = (await res.json()) as { code?: string };
    return { instance: instance.name, what, status: res.status, code: body.code, at, body };
  } catch (error) {
    return { instance: instance.name, what, status: 0, error: String(error), at, body: null };
  }
}

const json = (body: unknown) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

function uploadInit(name: string, text: string): Init {
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/plain' }), name);
  return { method: 'POST', body: form };
}

/** Acceptable: a success, or 503 DATABASE_UNAVAILABLE. */
const acceptable = (o: Outcome) =>
  (o.status >= 200 && o.status < 300) || (o.status === 503 && o.code === 'DATABASE_UNAVAILABLE');

describe.skipIf(TEST_DATABASE_URL === undefined)('PostgreSQL restarting under load', () => {
  const cluster = new TestCluster();
  const work = tempDir();
  let port: number;
  let instances: Instance[] = [];

  beforeAll(async () => {
    port = await freePort();
    await cluster.start(port);
    // A converter that takes 1.5 s, so that an indexing run is in flight when the database stops.
    const slow = slowConverter(work, {
      ms: 1500,
      markdown: '# Tides\n\nThe tide tables of the northern harbour list every spring tide.',
    });
    const commands = commandsFile(work, [{ id: 'slow', description: '1.5 s', script: slow }]);
    const env = {
      NODE_ENV: 'test',
      LOG_LEVEL: 'warn',
      DATABASE_URL: cluster.url,
      STORAGE_DRIVER: 'postgres',
      BOOTSTRAP_API_KEY: KEY,
      QUEUE_LEASE_MS: '6000',
      DATABASE_CONNECT_TIMEOUT_MS: '2000',
      READY_CHECK_CACHE_MS: '200',
      EMBEDDING_CACHE_DIR: TEST_EMBEDDING_CACHE,
      KNOWLEDGE_COMMANDS_FILE: commands,
    };
    instances = await Promise.all(['A', 'B', 'C'].map((name) => startInstance(name, env)));
    // Something to find.
    const seeded = await request(
      instances[0]!,
      'seed',
      '/api/v1/knowledge/documents/upload',
      uploadInit('harbour.txt', 'The harbour master counts the fishing boats at dawn.'),
    );
    expect(seeded.status).toBe(201);
    const id = (seeded.body as Doc).id;
    const indexed = await request(
      instances[1]!,
      'seed',
      `/api/v1/knowledge/documents/${id}/index`,
      json({}),
    );
    expect(indexed.status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    for (const i of instances) i.child.kill('SIGKILL');
    await cluster.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('runs the cluster on the port given by PG_PORT', () => {
    expect(cluster.url).toBe(`postgres://postgres@127.0.0.1:${String(port)}/postgres`);
  });

  it('every instance survives each outage, answers 503 meanwhile and recovers by itself', async () => {
    const outcomes: Outcome[] = [];
    let loading = true;
    let n = 0;
    // Each instance: a retrieval, an upload and a listing, over and over.
    const load = instances.map(async (instance) => {
      while (loading) {
        n += 1;
        const results = await Promise.all([
          request(
            instance,
            'retrieve',
            '/api/v1/knowledge/retrieve',
            json({ query: 'who counts boats' }),
          ),
          request(
            instance,
            'upload',
            '/api/v1/knowledge/documents/upload',
            uploadInit(`note-${String(n)}.txt`, `Note ${String(n)} about the harbour.`),
          ),
          request(instance, 'list', '/api/v1/knowledge/documents?limit=5'),
        ]);
        outcomes.push(...results);
        await sleep(50);
      }
    });

    const indexedDocs: string[] = [];
    const outages: { from: number; to: number }[] = [];
    for (let round = 0; round < OUTAGES; round += 1) {
      // An indexing run in flight (its converter takes 1.5 s) when the database stops.
      const instance = instances[round % instances.length]!;
      const up = await request(
        instance,
        'upload',
        '/api/v1/knowledge/documents/upload',
        uploadInit(`tides-${String(round)}.txt`, `placeholder ${String(round)}, converted slowly`),
      );
      expect(up.status).toBe(201);
      const id = (up.body as Doc).id;
      const queued = await request(
        instance,
        'index',
        `/api/v1/knowledge/documents/${id}/index`,
        json({ commandId: 'slow', async: true }),
      );
      expect(queued.status).toBe(202);
      indexedDocs.push(id);
      await sleep(300);

      const from = Date.now();
      await cluster.pause();
      await sleep(OUTAGE_MS / 2);
      // Not ready while the database is away; /health (liveness) still answers from memory.
      for (const i of instances) {
        const ready = await request(i, 'ready', '/health/ready');
        expect(ready).toMatchObject({ status: 503, code: 'DATABASE_UNAVAILABLE' });
        expect((await request(i, 'health', '/health')).status).toBe(200);
      }
      await sleep(OUTAGE_MS / 2);
      await cluster.resume();
      outages.push({ from, to: Date.now() });

      // Each instance is ready again by itself, and serves.
      for (const i of instances) {
        await expect
          .poll(async () => (await request(i, 'ready', '/health/ready')).status, {
            timeout: 15_000,
            interval: 200,
          })
          .toBe(200);
        const retrieved = await request(
          i,
          'retrieve',
          '/api/v1/knowledge/retrieve',
          json({ query: 'who counts boats' }),
        );
        expect(retrieved.status).toBe(200);
      }
      for (const i of instances) expect(i.alive(), `${i.name} died:\n${i.output()}`).toBe(true);
    }
    loading = false;
    await Promise.all(load);

    for (const i of instances) expect(i.alive(), `${i.name} died:\n${i.output()}`).toBe(true);
    const bad = outcomes.filter((o) => !acceptable(o));
    expect(bad, JSON.stringify(bad.slice(0, 5))).toEqual([]);
    // The load did meet the outages, and was served before and after them.
    const during = outcomes.filter((o) => outages.some((w) => o.at >= w.from && o.at <= w.to));
    expect(during.some((o) => o.code === 'DATABASE_UNAVAILABLE')).toBe(true);
    expect(outcomes.filter((o) => o.status === 200).length).toBeGreaterThan(OUTAGES * 3);

    // Every indexing run ended: indexed, or failed with a message; none is left `indexing`.
    for (const id of indexedDocs) {
      await expect
        .poll(
          async () =>
            ((await request(instances[0]!, 'get', `/api/v1/knowledge/documents/${id}`)).body as Doc)
              .status,
          { timeout: 30_000, interval: 250 },
        )
        .toMatch(/^(indexed|failed)$/);
    }
  }, 120_000);
});
