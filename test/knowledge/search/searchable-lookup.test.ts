/**
 * A search keeps only its candidates whose document is searchable (sqlite-searches.ts
 * `SEARCHABLE_OF`): the candidates' documents are looked up by primary key, whatever the number of
 * documents. Through the status index SQLite would walk every searchable document instead, a cost
 * that grows with every document added (docs/performance.md). The database has no statistics (the
 * server runs no ANALYZE): that is when SQLite chooses the status index.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';
import { migrate } from '../../../src/db/migrator.js';
import { openSqlite } from '../../../src/db/sqlite.js';
import { SEARCHABLE_OF } from '../../../src/knowledge/search/sqlite/sqlite-searches.js';
import { tempDir } from '../../helpers.js';

const database = openSqlite(join(tempDir(), 'aps.sqlite'));
afterAll(() => database.close());

describe('the searchable documents of a list', () => {
  it('looks the listed documents up by id, and keeps the searchable ones', async () => {
    expect((await migrate(database, MIGRATIONS)).status).toBe('ok');
    const db = database.native;
    const insert = db.prepare(
      `insert into knowledge_documents (id, name, file_type, mime_type, source, project_key,
         version, status, checksum, size_bytes, file_path, created_at, updated_at)
       values (?, 'doc', 'md', 'text/markdown', 'upload', '', 1, ?, ?, 1, 'f', 'now', 'now')`,
    );
    const statuses = ['indexed', 'indexing', 'failed', 'deleting', 'pending'];
    db.transaction(() => {
      for (let i = 0; i < 2000; i++) insert.run(`d${i}`, statuses[i % statuses.length], `c${i}`);
    })();
    const plan = db
      .prepare(`explain query plan ${SEARCHABLE_OF}`)
      .all('[]')
      .map((r) => (r as { detail: string }).detail)
      .join('\n');
    expect(plan).toMatch(
      /SEARCH d USING (INDEX sqlite_autoindex_knowledge_documents_1|PRIMARY KEY)/,
    );
    expect(plan).not.toMatch(/knowledge_documents_status/);
    const found = db
      .prepare(SEARCHABLE_OF)
      .pluck()
      .all(JSON.stringify(['d0', 'd1', 'd2', 'd3', 'd4', 'd5', 'missing'])) as string[];
    expect(found.sort()).toEqual(['d0', 'd1', 'd5']);
  });
});
