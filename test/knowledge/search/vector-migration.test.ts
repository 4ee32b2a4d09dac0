/**
 * Migration 0008: vectors that older versions stored in sqlite-vec `vec0` tables move to plain
 * tables, read without the extension. The old tables are written here by the real sqlite-vec (a
 * dev dependency, for this test only), exactly as the store before 0008 created and filled them.
 */
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';
import { migrate } from '../../../src/db/migrator.js';
import { openSqlite } from '../../../src/db/sqlite.js';
import { seededRandom } from '../../../src/knowledge/embeddings/static/sif.js';
import { vectorTableName } from '../../../src/knowledge/search/chunk-store.js';
import { SqliteChunkStore } from '../../../src/knowledge/search/sqlite/sqlite-chunk-store.js';
import { tempDir } from '../../helpers.js';

const BEFORE_0008 = MIGRATIONS.findIndex((m) => m.name === '0008_plain_vector_tables');

interface OldVectors {
  model: string;
  dimensions: number;
  /** chunk id → vector, as written (deleted ones excluded). */
  vectors: Map<string, Float32Array>;
  documentOf: Map<string, string>;
}

/**
 * A database at migration 0007 with documents whose vectors sit in sqlite-vec tables: one model
 * with more vectors than one sqlite-vec chunk holds (1,024), some deleted; one with a few.
 */
async function oldDatabase(file: string): Promise<OldVectors[]> {
  const old = openSqlite(file);
  expect((await migrate(old, MIGRATIONS.slice(0, BEFORE_0008))).status).toBe('ok');
  await old.close();

  const raw = new BetterSqlite3(file);
  sqliteVec.load(raw);
  const random = seededRandom(8);
  const now = new Date().toISOString();
  const insertDoc = raw.prepare(
    `insert into knowledge_documents (id, name, file_type, mime_type, source, project_id, project_key,
       version, status, checksum, size_bytes, file_path, embedding_model, created_at, updated_at)
     values (?, ?, 'md', 'text/markdown', 'upload', ?, ?, 2, 'indexed', ?, 1, 'x', ?, ?, ?)`,
  );
  const insertChunk = raw.prepare(
    `insert into knowledge_chunks (id, document_id, chunk_index, section_path, page, content,
       token_estimate, metadata, embedding_model, embedding_dimensions, content_hash, created_at)
     values (?, ?, ?, '', null, ?, 1, '{}', ?, ?, ?, ?)`,
  );
  const sets: OldVectors[] = [];
  for (const [model, dimensions, chunks] of [
    ['big-model', 24, 1500],
    ['small-model', 5, 7],
  ] as const) {
    const table = vectorTableName(model, dimensions);
    // The DDL the store used before 0008.
    raw.exec(
      `create virtual table ${table} using vec0(chunk_id text primary key, embedding float[${dimensions}] distance_metric=cosine, document_id text, project_key text)`,
    );
    raw
      .prepare(
        'insert into knowledge_vector_tables (model, dimensions, table_name) values (?, ?, ?)',
      )
      .run(model, dimensions, table);
    const insertVector = raw.prepare(
      `insert into ${table} (chunk_id, embedding, document_id, project_key) values (?, ?, ?, ?)`,
    );
    const set: OldVectors = { model, dimensions, vectors: new Map(), documentOf: new Map() };
    raw.transaction(() => {
      for (let d = 0; d * 100 < chunks; d++) {
        const documentId = `${model}-doc${d}`;
        const project = d % 2 === 0 ? 'alpha' : null;
        insertDoc.run(
          documentId,
          `${documentId}.md`,
          project,
          project ?? '',
          documentId,
          model,
          now,
          now,
        );
        for (let i = d * 100; i < Math.min(chunks, (d + 1) * 100); i++) {
          const chunkId = `${model}-c${i}`;
          const vector = Float32Array.from({ length: dimensions }, () => random() * 2 - 1);
          insertChunk.run(chunkId, documentId, i, `text ${i}`, model, dimensions, `h${i}`, now);
          insertVector.run(chunkId, vector, documentId, project ?? '');
          set.vectors.set(chunkId, vector);
          set.documentOf.set(chunkId, documentId);
        }
      }
    })();
    sets.push(set);
  }
  // A deleted document leaves holes in sqlite-vec's chunks.
  const big = sets[0]!;
  raw.transaction(() => {
    for (const [chunkId, documentId] of big.documentOf) {
      if (documentId !== 'big-model-doc3') continue;
      raw
        .prepare(`delete from ${vectorTableName(big.model, big.dimensions)} where chunk_id = ?`)
        .run(chunkId);
      big.vectors.delete(chunkId);
    }
    raw.prepare(`delete from knowledge_documents where id = 'big-model-doc3'`).run();
  })();
  raw.close();
  return sets;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function open(file: string) {
  const db = openSqlite(file);
  cleanups.push(() => db.close());
  return db;
}

describe('migration 0008: sqlite-vec tables to plain tables', () => {
  it('moves every vector, byte for byte, drops the virtual tables, and the store uses the new ones', async () => {
    const file = join(tempDir(), 'old.db');
    const sets = await oldDatabase(file);
    const db = open(file);
    const state = await migrate(db, MIGRATIONS);
    expect(state.status).toBe('ok');
    expect(state.errorMessage).toBeNull();

    const left = db.native
      .prepare(
        `select name, sql from sqlite_master where type = 'table' and name glob 'knowledge_vec_*' order by name`,
      )
      .all() as { name: string; sql: string }[];
    expect(left.map((t) => t.name)).toEqual(
      sets.map((s) => vectorTableName(s.model, s.dimensions)).sort(),
    );
    for (const t of left) expect(t.sql).not.toMatch(/virtual/i);

    for (const set of sets) {
      const table = vectorTableName(set.model, set.dimensions);
      const rows = db.native
        .prepare(`select chunk_id, document_id, project_key, embedding from ${table}`)
        .all() as {
        chunk_id: string;
        document_id: string;
        project_key: string;
        embedding: Buffer;
      }[];
      expect(rows).toHaveLength(set.vectors.size);
      for (const row of rows) {
        const written = set.vectors.get(row.chunk_id)!;
        expect(Buffer.compare(row.embedding, Buffer.from(written.buffer))).toBe(0);
        expect(row.document_id).toBe(set.documentOf.get(row.chunk_id));
        const even = Number(row.document_id.split('doc')[1]) % 2 === 0;
        expect(row.project_key).toBe(even ? 'alpha' : '');
      }
    }

    // The store searches the moved vectors: each chunk's own vector finds it first.
    const store = new SqliteChunkStore(db.native);
    const big = sets[0]!;
    for (const chunkId of [
      'big-model-c0',
      'big-model-c1023',
      'big-model-c1024',
      'big-model-c1499',
    ]) {
      const ranked = await store.search(
        { text: null, vector: big.vectors.get(chunkId)!, model: big.model, filter: {}, limit: 3 },
        { rank: (evidence) => evidence.semantic },
      );
      expect(ranked[0]?.chunk.id).toBe(chunkId);
      expect(ranked[0]?.score).toBeCloseTo(1, 5);
    }
    const cached = await store.cachedVectors(big.model, big.dimensions, ['h5']);
    expect([...(cached.get('h5') ?? [])]).toEqual([...big.vectors.get('big-model-c5')!]);

    // Deleting a document deletes its vectors.
    const table = vectorTableName(big.model, big.dimensions);
    expect(await store.deleteDocument('big-model-doc0')).toBe(true);
    const count = db.native
      .prepare(`select count(*) from ${table} where document_id = 'big-model-doc0'`)
      .pluck()
      .get();
    expect(count).toBe(0);
  });

  it('fails, keeping everything, when sqlite-vec tables do not hold every vector', async () => {
    const file = join(tempDir(), 'broken.db');
    const sets = await oldDatabase(file);
    const table = vectorTableName(sets[0]!.model, sets[0]!.dimensions);
    const raw = new BetterSqlite3(file);
    raw.prepare(`delete from ${table}_vector_chunks00 where rowid = 2`).run();
    raw.close();

    const db = open(file);
    const state = await migrate(db, MIGRATIONS);
    expect(state.status).toBe('degraded');
    expect(state.errorMessage).toMatch(
      /0008_plain_vector_tables failed: the vectors of .* could not all be read/,
    );
    const kept = db.native
      .prepare(`select sql from sqlite_master where name = ?`)
      .pluck()
      .get(table) as string;
    expect(kept).toMatch(/create virtual table/i);
    expect(db.native.prepare(`select count(*) from ${table}_rowids`).pluck().get()).toBe(
      sets[0]!.vectors.size,
    );
  });
});
