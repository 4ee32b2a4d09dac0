import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteRevocations } from '../../../src/auth/revocations.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('SqliteRevocations', () => {
  it("sees another connection's bump from the next turn of the event loop on, its own at once", async () => {
    dir = mkdtempSync(join(tmpdir(), 'aps-revocations-'));
    const file = join(dir, 'db.sqlite');
    const server = new Database(file);
    const other = new Database(file);
    server.pragma('journal_mode = WAL');
    server.exec(`create table api_key_generation (id integer primary key, generation integer not null);
      insert into api_key_generation values (1, 0);`);
    const bump = () =>
      other.prepare('update api_key_generation set generation = generation + 1').run();
    try {
      const revocations = new SqliteRevocations(server);
      await nextTurn();
      expect(revocations.current()).toBe(0);
      bump();
      // The same turn: data_version is read once per turn.
      expect(revocations.current()).toBe(0);
      await nextTurn();
      expect(revocations.current()).toBe(1);
      // Nothing committed elsewhere: the same generation, turn after turn.
      await nextTurn();
      expect(revocations.current()).toBe(1);
      // This process's own revocation: refresh() makes the next read fresh at once.
      server.prepare('update api_key_generation set generation = generation + 1').run();
      revocations.refresh();
      expect(revocations.current()).toBe(2);
    } finally {
      other.close();
      server.close();
    }
  });
});
