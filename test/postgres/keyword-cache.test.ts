/**
 * The postings cache of PostgreSQL keyword search: two stores on one database stand
 * for two instances. Whatever one writes (a re-index, a delete) or another process does to a
 * document's status (a failed re-index), the other's next search sees it, as if it had no cache;
 * and a search from the cache reads no postings rows. Runs only when TEST_DATABASE_URL is set.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import type { PostgresDatabase } from '../../src/db/database.js';
import type { Evidence, NewChunk, SearchRequest } from '../../src/knowledge/search/chunk-store.js';
import { PostgresChunkStore } from '../../src/knowledge/search/postgres/postgres-chunk-store.js';
import { instrumentedPool, migratedDatabase, TEST_DATABASE_URL } from './pg.js';

const MODEL = 'test-model';
const DIMS = 4;

/**
 * A pool that records the text of every statement its clients run, after awaiting `before` (of
 * that text).
 */
function recordingPool(
  pool: pg.Pool,
  statements: string[],
  before: (sql: string) => Promise<void> = () => Promise.resolve(),
): pg.Pool {
  return instrumentedPool(pool, async (sql) => {
    statements.push(sql);
    await before(sql);
  });
}

describe.skipIf(TEST_DATABASE_URL === undefined)('PostgreSQL keyword postings cache', () => {
  const fresh = migratedDatabase();
  let database: PostgresDatabase;
  /** The instance that writes. */
  let writer: PostgresChunkStore;
  /** The instance that searches (its statements recorded). */
  let reader: PostgresChunkStore;
  const statements: string[] = [];

  beforeAll(() => {
    ({ database } = fresh);
    writer = new PostgresChunkStore(database.pool);
    reader = new PostgresChunkStore(recordingPool(database.pool, statements));
  });

  const addDocument = async (): Promise<{ id: string; token: string }> => {
    const id = randomUUID();
    const token = randomUUID();
    const now = new Date().toISOString();
    await database.pool.query(
      `insert into knowledge_documents (id, name, file_type, mime_type, source, project_id,
         project_key, version, status, checksum, size_bytes, file_path, index_token, created_at,
         updated_at)
       values ($1, $1, 'md', 'text/markdown', 'upload', null, '', 0, 'indexing', $1, 0, $1, $2, $3, $3)`,
      [id, token, now],
    );
    return { id, token };
  };
  const newToken = async (id: string): Promise<string> => {
    const token = randomUUID();
    await database.pool.query(
      `update knowledge_documents set index_token = $2, status = 'indexing' where id = $1`,
      [id, token],
    );
    return token;
  };
  const commit = (doc: { id: string; token: string }, texts: string[]) =>
    writer.commitIndex({
      documentId: doc.id,
      indexToken: doc.token,
      model: MODEL,
      dimensions: DIMS,
      chunks: texts.map((content, i): NewChunk => ({
        id: randomUUID(),
        chunkIndex: i,
        sectionPath: '',
        page: null,
        content,
        tokenEstimate: 4,
        metadata: {},
        contentHash: randomUUID(),
        vector: Float32Array.from([1, i, 0, 1]),
      })),
      document: { markdown_path: null, converter_command: null, converter_meta: null },
    });
  const search = async (text: string, filter: SearchRequest['filter'] = {}) => {
    const hits = await reader.search(
      { text, vector: null, model: MODEL, filter, limit: 10 },
      { rank: (e: Evidence) => e.keyword },
    );
    return hits.map((h) => h.chunk.content);
  };
  const postingsReads = () => statements.filter((s) => s.includes('knowledge_fts_postings')).length;

  it('reads a lexeme once, then answers from memory until something changes', async () => {
    const doc = await addDocument();
    expect(await commit(doc, ['copper wire', 'copper pipe', 'glass pipe'])).toBe('committed');
    expect(await search('copper pipe')).toEqual(['copper pipe', 'copper wire', 'glass pipe']);
    statements.length = 0;
    expect(await search('copper pipe')).toEqual(['copper pipe', 'copper wire', 'glass pipe']);
    expect(await search('pipe')).toEqual(['copper pipe', 'glass pipe']);
    expect(postingsReads()).toBe(0);
    // A new lexeme is read (and only it).
    expect(await search('glass pipe')).toEqual(['glass pipe', 'copper pipe']);
    expect(postingsReads()).toBe(1);
  });

  it("sees another instance's re-index and delete at its next search", async () => {
    const doc = await addDocument();
    await commit(doc, ['amber resin', 'amber light']);
    expect(await search('amber')).toEqual(['amber resin', 'amber light']);
    await commit({ id: doc.id, token: await newToken(doc.id) }, ['amber stone']);
    expect(await search('amber')).toEqual(['amber stone']);
    expect(await search('resin')).toEqual([]);
    await writer.deleteDocument(doc.id);
    expect(await search('amber')).toEqual([]);
  });

  it('sees a document leave and re-enter the searchable statuses (no postings changed)', async () => {
    const doc = await addDocument();
    await commit(doc, ['cobalt blue', 'cobalt ore']);
    expect(await search('cobalt')).toHaveLength(2);
    // A re-index that fails: the chunks stay, the document is no longer searchable.
    await database.pool.query(`update knowledge_documents set status = 'failed' where id = $1`, [
      doc.id,
    ]);
    expect(await search('cobalt')).toEqual([]);
    await newToken(doc.id);
    expect(await search('cobalt')).toEqual(['cobalt blue', 'cobalt ore']);
  });

  it('answers from memory in one statement, and reads what is missing in one more', async () => {
    const doc = await addDocument();
    await commit(doc, ['zinc alloy', 'zinc roof', 'tin roof']);
    statements.length = 0;
    expect(await search('zinc roof')).toEqual(['zinc roof', 'zinc alloy', 'tin roof']);
    // Statistics, lexemes and postings in one statement; the ranked rows in another.
    expect(statements).toHaveLength(2);
    statements.length = 0;
    expect(await search('roof zinc')).toEqual(['zinc roof', 'zinc alloy', 'tin roof']);
    expect(statements).toHaveLength(1);
    expect(statements[0]).not.toContain('knowledge_fts_postings');
  });

  it('searches again in one snapshot when a change lands between scoring and loading the rows', async () => {
    const doc = await addDocument();
    await commit(doc, ['iron bar', 'iron rod']);
    const held: { change: (() => Promise<unknown>) | null } = { change: null };
    const racing = new PostgresChunkStore(
      recordingPool(database.pool, [], async (sql) => {
        // Just before the ranked rows load: another instance re-indexes the document.
        const change = held.change;
        if (sql.includes('document_name') && change !== null) {
          held.change = null;
          await change();
        }
      }),
    );
    const find = async (text: string) =>
      (
        await racing.search(
          { text, vector: null, model: MODEL, filter: {}, limit: 10 },
          { rank: (e: Evidence) => e.keyword },
        )
      ).map((h) => h.chunk.content);
    expect(await find('iron')).toEqual(['iron bar', 'iron rod']);
    held.change = async () => commit({ id: doc.id, token: await newToken(doc.id) }, ['iron nail']);
    // Scored from memory at the old generation; the rows' statement finds the new one.
    expect(await find('iron')).toEqual(['iron nail']);
    expect(held.change).toBeNull();
    expect(await find('iron')).toEqual(['iron nail']);
  });

  it('applies document filters to cached rows', async () => {
    const a = await addDocument();
    const b = await addDocument();
    await commit(a, ['nickel plate']);
    await commit(b, ['nickel coin']);
    expect(await search('nickel')).toHaveLength(2);
    statements.length = 0;
    expect(await search('nickel', { documentId: b.id })).toEqual(['nickel coin']);
    expect(await search('nickel', { documentIds: [a.id] })).toEqual(['nickel plate']);
    expect(await search('nickel', { projectId: 'other' })).toEqual([]);
    expect(postingsReads()).toBe(0);
  });
});
