/**
 * `aps migrate-data` (dist/cli.js, a process of its own) from a SQLite base built through the
 * HTTP API into fresh PostgreSQL databases: a full copy that a PostgreSQL server then serves as
 * the SQLite one did (same documents, same retrievals, markdown from the copied files, keys made
 * on SQLite still accepted); a run killed mid-way and resumed; targets that are refused.
 * Runs only when TEST_DATABASE_URL is set.
 */
import { CLI as CLI_ACTOR } from '../../src/audit/actor.js';
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareHits } from '../../src/cli/migrate-data-compare.js';
import { bearer, tempDir, TEST_EMBEDDING_CACHE } from '../helpers.js';
import {
  insertIndexingDocument,
  knowledgeApp,
  storeOf,
  type KnowledgeClient,
} from '../knowledge/helpers.js';
import { freshDatabase, TEST_DATABASE_URL, type FreshDatabase } from './pg.js';

/** Copied: 30 made, one deleted, two more committed through the store. */
const DOCUMENTS = 31;

const CLI = resolve(import.meta.dirname, '../../dist/cli.js');
const run = promisify(execFile);

interface Report {
  resumed: boolean;
  skipped: number;
  copied: {
    documents: number;
    chunks: number;
    vectors: number;
    files: number;
    missingFiles: string[];
  };
  verification: {
    countMismatches: unknown[];
    counts: Record<string, { source: number; target: number }>;
    queries: number;
    agreed: Record<string, number>;
    mismatches: unknown[];
  } | null;
}

const WORDS = [
  'turtle',
  'harbour',
  'compiler',
  'glacier',
  'violin',
  'orchard',
  'lantern',
  'satellite',
  'pepper',
  'canyon',
  'ledger',
  'meadow',
  'quartz',
  'falcon',
  'bakery',
  'voltage',
];

/** A document of a few sections, each about two of WORDS. */
function text(n: number): string {
  const sections = [];
  for (let s = 0; s < 4; s++) {
    const a = WORDS[(n + s) % WORDS.length] ?? '';
    const b = WORDS[(n * 3 + s * 5) % WORDS.length] ?? '';
    sections.push(
      `## Part ${s} of ${a}\n\nThe ${a} and the ${b} met near document ${n}. ` +
        `Every ${a} keeps a ${b}; section ${s} explains why the ${b} matters to a ${a}.`,
    );
  }
  return `# Notes ${n}\n\n${sections.join('\n\n')}\n`;
}

function cliEnv(dir: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    DATA_DIR: dir,
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    EMBEDDING_CACHE_DIR: TEST_EMBEDDING_CACHE,
  };
}

async function migrateData(dir: string, args: string[]): Promise<Report> {
  const { stdout } = await run(process.execPath, [CLI, 'migrate-data', '--json', ...args], {
    env: cliEnv(dir),
    cwd: dir,
  });
  return JSON.parse(stdout) as Report;
}

async function migrateDataFails(dir: string, args: string[]): Promise<string> {
  return run(process.execPath, [CLI, 'migrate-data', ...args], { env: cliEnv(dir), cwd: dir }).then(
    () => {
      throw new Error('migrate-data succeeded');
    },
    (e: unknown) => (e as { stderr: string }).stderr,
  );
}

async function query<T>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

/** Documents as the list route shows them, in a stable order. */
async function listed(k: KnowledgeClient) {
  const res = await k.get('/documents?limit=100');
  expect(res.statusCode, res.body).toBe(200);
  const items = res.json<{ items: Record<string, unknown>[] }>().items;
  return items
    .map((d) => [
      d.id,
      d.name,
      d.status,
      d.projectId,
      d.metadata,
      d.version,
      d.checksum,
      d.createdAt,
    ])
    .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
}

const QUERIES = [
  'turtle harbour',
  'why the glacier matters',
  'violin',
  'document 7',
  'quartz falcon',
];

describe.skipIf(TEST_DATABASE_URL === undefined)('aps migrate-data', () => {
  const dir = tempDir();
  const sqliteEnv = { DATABASE_URL: `sqlite:${join(dir, 'aps.sqlite')}` };
  let rawKey = '';
  let revokedKey = '';
  let scopedKey = '';
  const databases: FreshDatabase[] = [];
  const fresh = async () => {
    const db = await freshDatabase();
    databases.push(db);
    return db;
  };

  beforeAll(async () => {
    const { t, k } = await knowledgeApp(sqliteEnv, dir);
    rawKey = t.key;
    const revoked = await t.ctx.apiKeys.create({
      name: 'old',
      level: 'L1',
      actor: CLI_ACTOR,
      origin: 'cli',
    });
    revokedKey = revoked.rawKey;
    await t.ctx.apiKeys.revoke(revoked.record.id, CLI_ACTOR);
    scopedKey = (
      await t.ctx.apiKeys.create({
        name: 'reader',
        level: 'L0',
        actor: CLI_ACTOR,
        origin: 'cli',
        access: 'read',
        projects: ['p1'],
      })
    ).rawKey;
    for (let n = 0; n < 30; n++) {
      const res = await t.app.inject({
        method: 'POST',
        url: k.url('/documents/text'),
        headers: bearer(t.key),
        payload: {
          name: `notes-${n}.md`,
          text: text(n),
          metadata: { n, team: n % 2 === 0 ? 'even' : 'odd' },
          ...(n % 3 === 0 ? {} : { projectId: `p${n % 3}` }),
        },
      });
      expect(res.statusCode, res.body).toBe(201);
      const id = res.json<{ id: string }>().id;
      // Two left as uploaded (never indexed), one deleted (not copied).
      if (n >= 28) continue;
      await k.indexOk(id, { maxChars: 200, overlapChars: 0 });
      if (n === 27) expect((await k.delete(id)).statusCode).toBeLessThan(300);
    }
    // Two documents also holding a second model's vectors (a model switch in progress), written
    // through the store's own commit; they have no stored file (reported as missing).
    const store = await storeOf(t.ctx);
    const { embedder } = t.ctx.knowledge;
    if (t.ctx.database.driver !== 'sqlite') throw new Error('expected SQLite');
    for (let n = 30; n < 32; n++) {
      const contents = [0, 1].map(
        (i) => `Switch ${n}.${i}: the ${WORDS[n % 16] ?? ''} in the orchard.`,
      );
      const vectors = await embedder.embedDocuments(contents);
      const { id, token } = insertIndexingDocument(t.ctx.database.native, 'p1');
      const outcome = await store.commitIndex({
        documentId: id,
        indexToken: token,
        model: embedder.model,
        dimensions: embedder.dimensions,
        chunks: contents.map((content, i) => ({
          id: `${id}-${i}`,
          chunkIndex: i,
          sectionPath: `Switch ${n}`,
          page: null,
          content,
          tokenEstimate: 10,
          metadata: {},
          contentHash: createHash('sha256').update(content).digest('hex'),
          vector: vectors[i] ?? new Float32Array(embedder.dimensions),
        })),
        alsoVectors: [
          {
            model: 'other-model',
            dimensions: 8,
            vectors: contents.map((_, i) =>
              Float32Array.from({ length: 8 }, (_, j) => Math.sin(n + i + j)),
            ),
          },
        ],
        document: { markdown_path: null, converter_command: null, converter_meta: null },
      });
      expect(outcome).toBe('committed');
    }
    await store.close?.();
    await t.close(true);
  }, 120_000);

  afterAll(async () => {
    for (const db of databases) await db.drop();
  });

  it('copies everything; a PostgreSQL server then lists, retrieves and authenticates alike', async () => {
    const target = await fresh();
    const report = await migrateData(dir, ['--to', target.url, '--storage', 'postgres']);
    expect(report.resumed).toBe(false);
    expect(report.copied.documents).toBe(DOCUMENTS);
    expect(report.copied.files).toBeGreaterThanOrEqual(29 + 27); // sources, markdown of the indexed
    expect(report.copied.missingFiles).toHaveLength(2);
    const v = report.verification;
    expect(v?.countMismatches).toEqual([]);
    expect(v?.counts['documents indexed']).toEqual({ source: 29, target: 29 });
    expect(v?.counts['vectors other-model (8)']).toEqual({ source: 4, target: 4 });
    expect(v?.counts['documents uploaded']).toEqual({ source: 2, target: 2 });
    expect(v?.counts.api_keys).toEqual({ source: 3, target: 3 });
    expect(v?.counts.chunks?.target).toBeGreaterThan(100);
    expect(v?.queries).toBe(20);
    expect(v?.mismatches).toEqual([]);

    const sqlite = await knowledgeApp(sqliteEnv, dir);
    // Same DATA_DIR: the same secrets.json, so the same API_KEY_SALT.
    const postgres = await knowledgeApp(
      { DATABASE_URL: target.url, STORAGE_DRIVER: 'postgres' },
      dir,
    );
    try {
      // The key made on SQLite is accepted by the PostgreSQL server; the revoked one is not.
      const pk = postgres.k;
      pk.t.key = rawKey;
      sqlite.t.key = rawKey;
      expect((await pk.get('/documents?limit=1')).statusCode).toBe(200);
      const revoked = await postgres.t.app.inject({
        method: 'GET',
        url: pk.url('/documents'),
        headers: bearer(revokedKey),
      });
      expect(revoked.statusCode).toBe(401);
      // A scoped key stays scoped: it reads its project, may not write or reach another.
      const reads = await pk.t.app.inject({
        method: 'GET',
        url: pk.url('/documents?projectId=p1&limit=1'),
        headers: bearer(scopedKey),
      });
      expect(reads.statusCode, reads.body).toBe(200);
      const writes = await pk.t.app.inject({
        method: 'POST',
        url: pk.url('/documents/text'),
        headers: bearer(scopedKey),
        payload: { name: 'x.md', text: 'x', projectId: 'p1' },
      });
      expect(writes.json()).toMatchObject({ code: 'AUTH_ACCESS_FORBIDDEN' });
      const elsewhere = await pk.t.app.inject({
        method: 'GET',
        url: pk.url('/documents?projectId=other'),
        headers: bearer(scopedKey),
      });
      expect(elsewhere.json()).toMatchObject({ code: 'AUTH_PROJECT_FORBIDDEN' });

      expect(await listed(pk)).toEqual(await listed(sqlite.k));
      for (const mode of ['keyword', 'semantic', 'hybrid']) {
        for (const q of QUERIES) {
          const body = { query: q, mode, topK: 8 };
          const a = await sqlite.k.hits(body);
          const b = await pk.hits(body);
          expect(a.length).toBeGreaterThan(0);
          // Keyword scores are exact; cosines tie within float noise (compareHits).
          if (mode === 'keyword')
            expect(
              b.map((h) => h.id),
              q,
            ).toEqual(a.map((h) => h.id));
          else expect(compareHits(a, b, 8), `${mode}: ${q}`).not.toBe('different');
        }
      }
      const doc = (await pk.get('/documents?limit=100'))
        .json<{ items: { id: string; name: string; status: string }[] }>()
        .items.find((d) => d.status === 'indexed' && d.name.startsWith('notes-'));
      const path = `/documents/${doc?.id ?? ''}/markdown`;
      const md = await pk.get(path);
      expect(md.statusCode, md.body).toBe(200);
      expect(md.json()).toEqual((await sqlite.k.get(path)).json());
    } finally {
      await sqlite.t.close(true);
      await postgres.t.close(true);
    }
  }, 180_000);

  it('resumes a run killed mid-way: exact counts, no duplicates', async () => {
    const target = await fresh();
    const child = spawn(
      process.execPath,
      [CLI, 'migrate-data', '--to', target.url, '--batch-chunks', '1', '--no-verify'],
      {
        env: cliEnv(dir),
        cwd: dir,
      },
    );
    let err = '';
    await new Promise<void>((resolveKilled, reject) => {
      child.stderr.on('data', (d: Buffer) => {
        err += d.toString();
        if (/copying 4\//.test(err)) child.kill('SIGKILL');
      });
      child.on('exit', (code, signal) => {
        if (signal === 'SIGKILL') resolveKilled();
        else reject(new Error(`exited ${String(code)} before it was killed: ${err}`));
      });
    });
    const [partial] = await query<{ n: number }>(
      target.url,
      'select count(*)::int as n from knowledge_documents',
    );
    expect(partial?.n).toBeGreaterThanOrEqual(3);
    expect(partial?.n).toBeLessThan(DOCUMENTS);

    const report = await migrateData(dir, ['--to', target.url]);
    expect(report.resumed).toBe(true);
    expect(report.skipped).toBe(partial?.n);
    expect(report.skipped + report.copied.documents).toBe(DOCUMENTS);
    expect(report.verification?.countMismatches).toEqual([]);
    expect(report.verification?.mismatches).toEqual([]);
    // The BM25 statistics count each chunk once.
    const [stats] = await query<{
      stats: number;
      rows: number;
      chunks: number;
      terms: number;
      lexemes: number;
    }>(
      target.url,
      `select (select chunks from knowledge_fts_stats)::int as stats,
              (select count(*) from knowledge_chunks_fts)::int as rows,
              (select count(*) from knowledge_chunks)::int as chunks,
              (select sum(chunks) from knowledge_fts_terms)::int as terms,
              (select count(*) from knowledge_chunks_fts f, unnest(tsvector_to_array(f.terms)))::int as lexemes`,
    );
    expect(stats?.stats).toBe(stats?.chunks);
    expect(stats?.rows).toBe(stats?.chunks);
    expect(stats?.terms).toBe(stats?.lexemes);
  }, 180_000);

  it('copies files to --files-dir; refuses a target holding other documents, a copy of another base, a source being written', async () => {
    const target = await fresh();
    const other = await knowledgeApp(
      { DATABASE_URL: target.url, STORAGE_DRIVER: 'postgres' },
      tempDir(),
    );
    const res = await other.t.app.inject({
      method: 'POST',
      url: other.k.url('/documents/text'),
      headers: bearer(other.t.key),
      payload: { name: 'mine.md', text: '# Mine\n\nNot from the SQLite base.' },
    });
    expect(res.statusCode, res.body).toBe(201);
    await other.t.close(true);
    expect(await migrateDataFails(dir, ['--to', target.url])).toMatch(/already holds 1 documents/);

    const copied = await fresh();
    // --storage local --files-dir: the files copied to another data directory.
    const filesDir = tempDir();
    const local = await migrateData(dir, [
      '--to',
      copied.url,
      '--no-verify',
      '--files-dir',
      filesDir,
    ]);
    expect(local.copied.files).toBeGreaterThanOrEqual(29 + 27);
    const [row] = await query<{ file_path: string; markdown_path: string }>(
      copied.url,
      'select file_path, markdown_path from knowledge_documents where markdown_path is not null limit 1',
    );
    for (const key of [row?.file_path ?? '', row?.markdown_path ?? '']) {
      expect(readFileSync(join(filesDir, key))).toEqual(readFileSync(join(dir, key)));
    }
    const elsewhere = tempDir();
    const { t } = await knowledgeApp(
      { DATABASE_URL: `sqlite:${join(elsewhere, 'aps.sqlite')}` },
      elsewhere,
    );
    await t.close(true);
    expect(await migrateDataFails(elsewhere, ['--to', copied.url])).toMatch(
      /holds a copy of another base/,
    );

    // A process writing to the source (holding its write lock): refused, nothing copied.
    const writer = new Database(join(dir, 'aps.sqlite'));
    const empty = await fresh();
    try {
      writer.exec('begin immediate');
      expect(await migrateDataFails(dir, ['--to', empty.url])).toMatch(
        /being written by another process/,
      );
    } finally {
      writer.exec('rollback');
      writer.close();
    }
    const [none] = await query<{ n: boolean }>(
      empty.url,
      "select to_regclass('knowledge_documents') is null as n",
    );
    expect(none?.n).toBe(true);
  }, 180_000);

  it('fails when the source is written during the copy', async () => {
    const target = await fresh();
    const args = [CLI, 'migrate-data', '--to', target.url, '--batch-chunks', '1', '--no-verify'];
    const child = spawn(process.execPath, args, { env: cliEnv(dir), cwd: dir });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    let written = false;
    child.stderr.on('data', (d: Buffer) => {
      if (written || !/copying 3\//.test(d.toString())) return;
      written = true;
      const writer = new Database(join(dir, 'aps.sqlite'));
      writer
        .prepare('insert into audit_log (id, at, actor, action, target) values (?, ?, ?, ?, ?)')
        .run('late', new Date().toISOString(), 'test', 'late.write', 'x');
      writer.close();
    });
    const code = await new Promise<number | null>((done) => child.on('exit', done));
    expect(written).toBe(true);
    expect(code).toBe(1);
    expect(out).toMatch(/written during the copy/);
  }, 120_000);
});
