/**
 * At every start (SQLite), the documents with rows to purge are found before the server listens
 * (leftovers.ts): hidden documents, and documents holding chunks of a run that is neither their
 * current one nor their running one (a crashed or replaced run's). It walks each document's
 * distinct run tokens through the chunks' index; the scan of every chunk it replaces (0.3 s at
 * 1M chunks, docs/performance.md) is the reference it must agree with, on documents and chunks of any tokens.
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';
import { migrate } from '../../../src/db/migrator.js';
import { openSqlite } from '../../../src/db/sqlite.js';
import { purgeableDocuments } from '../../../src/knowledge/search/sqlite/leftovers.js';
import { statementCache } from '../../../src/knowledge/search/sqlite/statements.js';
import { tempDir } from '../../helpers.js';

const database = openSqlite(join(tempDir(), 'aps.sqlite'));
afterAll(() => database.close());

/** The scan the walk replaces: every chunk joined to its document (PURGEABLE). */
const SCAN = `select distinct c.document_id from knowledge_chunks c
  join knowledge_documents d on d.id = c.document_id
  where d.status <> 'deleting' and (c.run_token is not d.chunk_token
    and (d.index_token is null or c.run_token is not d.index_token))`;

const token = fc.constantFrom(null, 'r1', 'r2', 'r3', 'r10');
const documents = fc.array(
  fc.record({
    status: fc.constantFrom('indexed', 'indexing', 'failed', 'deleting'),
    current: token,
    running: token,
    chunks: fc.array(token, { maxLength: 6 }),
  }),
  { maxLength: 8 },
);

describe('the documents a start purges', () => {
  it('are those a scan of every chunk finds, and the hidden ones (property)', async () => {
    expect((await migrate(database, MIGRATIONS)).status).toBe('ok');
    const db = database.native;
    const statements = statementCache(db);
    const insertDocument = db.prepare(
      `insert into knowledge_documents (id, name, file_type, mime_type, source, project_key,
         version, status, checksum, size_bytes, file_path, created_at, updated_at, chunk_token,
         index_token)
       values (?, 'doc', 'md', 'text/markdown', 'upload', '', 1, ?, ?, 1, 'f', 'now', 'now', ?, ?)`,
    );
    const insertChunk = db.prepare(
      `insert into knowledge_chunks (id, document_id, chunk_index, section_path, content,
         token_estimate, metadata, embedding_model, embedding_dimensions, content_hash,
         created_at, run_token)
       values (?, ?, ?, '', 'text', 1, '{}', 'm', 4, 'h', 'now', ?)`,
    );
    let leftovers = 0;
    fc.assert(
      fc.property(documents, (docs) => {
        db.transaction(() => {
          db.exec('delete from knowledge_chunks; delete from knowledge_documents');
          docs.forEach((d, i) => {
            insertDocument.run(`d${i}`, d.status, `c${i}`, d.current, d.running);
            d.chunks.forEach((t, n) => insertChunk.run(`d${i}-${n}`, `d${i}`, n, t));
          });
        })();
        const found = purgeableDocuments(statements);
        const scanned = db.prepare(SCAN).pluck().all() as string[];
        expect(found.leftovers.sort()).toEqual(scanned.sort());
        expect(found.hidden.sort()).toEqual(
          docs.flatMap((d, i) => (d.status === 'deleting' ? [`d${i}`] : [])).sort(),
        );
        leftovers += found.leftovers.length;
      }),
      { numRuns: 300 },
    );
    // Documents with leftovers were among those generated.
    expect(leftovers).toBeGreaterThan(0);
  });
});
