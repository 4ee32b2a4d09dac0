/**
 * The exact vectors of a vector index read from its SQLite table (vector-tables.ts): by rowid
 * where the index knows it, kept only when the row there is still that chunk's, else by chunk id.
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { statementCache } from '../../../src/knowledge/search/sqlite/statements.js';
import { tableVectors } from '../../../src/knowledge/search/sqlite/vector/vector-tables.js';

let db: Database.Database | undefined;
afterEach(() => db?.close());

/** A vector table of `n` rows, and a source over it that records the statements it runs. */
function table(n: number) {
  db = new Database(':memory:');
  db.exec(`create table v (chunk_id text primary key, document_id text not null,
    project_key text not null, embedding blob not null)`);
  const insert = db.prepare(
    'insert into v (chunk_id, document_id, project_key, embedding) values (?, ?, ?, ?)',
  );
  const rows = Array.from({ length: n }, (_, i) => {
    const id = randomUUID();
    const vector = Float32Array.from({ length: 4 }, (_, j) => i * 10 + j);
    const rowid = Number(insert.run(id, 'd', '', Buffer.from(vector.buffer)).lastInsertRowid);
    return { id, vector, rowid };
  });
  const ran: string[] = [];
  const cache = statementCache(db);
  const source = tableVectors((sql) => {
    ran.push(sql.includes('where rowid') ? 'by rowid' : 'by id');
    return cache(sql);
  }, 'v');
  return { rows, ran, source, db };
}

describe('tableVectors', () => {
  it('reads by rowid alone when every row is where the index knows it', () => {
    const { rows, ran, source } = table(50);
    const wanted = rows.slice(10, 30);
    const found = source.vectors(
      wanted.map((r) => r.id),
      wanted.map((r) => r.rowid),
    );
    expect(ran).toEqual(['by rowid']);
    for (const r of wanted) expect(found.get(r.id)).toEqual(r.vector);
    expect(found.size).toBe(wanted.length);
  });

  it('a renumbered table (rowids reversed, as a VACUUM may renumber): each chunk still gets its own vector', () => {
    const { rows, ran, source, db } = table(50);
    db.exec('update v set rowid = rowid + 1000000');
    db.exec(`update v set rowid = ${rows.length + 1 + 1_000_000} - rowid`);
    // The rowids the index knew now name other chunks' rows: none may be taken.
    const found = source.vectors(
      rows.map((r) => r.id),
      rows.map((r) => r.rowid),
    );
    expect(ran).toEqual(['by rowid', 'by id']);
    for (const r of rows) expect(found.get(r.id)).toEqual(r.vector);
  });

  it('unknown rowids (NaN), deleted rows and chunks without a vector', () => {
    const { rows, ran, source, db } = table(20);
    db.prepare('delete from v where chunk_id = ?').run(rows[3]!.id);
    const ids = [...rows.map((r) => r.id), 'no-such-chunk'];
    const rowids = [...rows.map((r, i) => (i % 2 === 0 ? r.rowid : Number.NaN)), 999];
    const found = source.vectors(ids, rowids);
    expect(ran).toEqual(['by rowid', 'by id']);
    expect(found.has(rows[3]!.id)).toBe(false);
    expect(found.has('no-such-chunk')).toBe(false);
    for (const [i, r] of rows.entries()) if (i !== 3) expect(found.get(r.id)).toEqual(r.vector);
    // Without rowids: by chunk id, as before.
    ran.length = 0;
    expect(source.vectors([rows[0]!.id]).get(rows[0]!.id)).toEqual(rows[0]!.vector);
    expect(ran).toEqual(['by id']);
  });
});
