/**
 * `aps backup` / `aps restore` (dist/cli.js as child processes) against a real server process
 * on SQLite that keeps ingesting and indexing while the backup runs.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { create } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/knowledge/embeddings/static/sif.js';
import { tempDir, TEST_EMBEDDING_CACHE } from '../helpers.js';
import { TEST_DATABASE_URL } from '../postgres/pg.js';

const CLI = resolve(import.meta.dirname, '../../dist/cli.js');
const PREFIX = '/api/v1';

function env(dir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    DATA_DIR: dir,
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    EMBEDDING_CACHE_DIR: TEST_EMBEDDING_CACHE,
    ...extra,
  };
}

/** `aps …`: resolves with its output, or rejects with its exit code and output. */
function aps(dir: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, [CLI, ...args], { env: env(dir), cwd: dir });
}

async function apsFails(dir: string, args: string[]): Promise<{ code: number; stderr: string }> {
  return aps(dir, args).then(
    () => {
      throw new Error(`aps ${args.join(' ')} succeeded`);
    },
    (e: unknown) => e as { code: number; stderr: string },
  );
}

interface Server {
  url: string;
  child: ChildProcess;
  out: () => string;
}

/** `aps serve` on `dir` (a free port); its first key is in `out()` when it made one. */
async function serve(dir: string, extra: Record<string, string> = {}): Promise<Server> {
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: env(dir, { PORT: '0', ...extra }),
    cwd: dir,
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => {
      fail(new Error(`no address in: ${out}`));
    }, 30_000);
    child.stdout.on('data', () => {
      const m = /listening on (http:\/\/\S+) /.exec(out);
      if (m) {
        clearTimeout(timer);
        ok(m[1]!);
      }
    });
  });
  return { url, child, out: () => out };
}

async function stop(server: Server): Promise<void> {
  const exit = new Promise((r) => server.child.once('exit', r));
  server.child.kill('SIGTERM');
  await exit;
}

/** A small API client with the key of the source server (the restored one shares it). */
function client(server: Server, key: string) {
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${server.url}${PREFIX}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return (text === '' ? null : JSON.parse(text)) as T;
  };
  return {
    call,
    async documents(): Promise<{ id: string; name: string; checksum: string; status: string }[]> {
      const page = await call<{
        items: { id: string; name: string; checksum: string; status: string }[];
      }>('GET', '/knowledge/documents?limit=1000');
      return page.items;
    },
    /** Until no document is being indexed. */
    async settled(): Promise<void> {
      for (let i = 0; i < 600; i++) {
        const docs = await this.documents();
        if (docs.every((d) => d.status !== 'indexing')) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('indexing never settled');
    },
  };
}

const WORDS = (
  'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar ' +
  'papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu river mountain cloud ' +
  'stone forest ember harbor lantern meadow orbit prism quartz saddle timber velvet willow'
).split(' ');

/** A markdown document of `sections` sections of seeded words. */
function documentText(random: () => number, sections: number): string {
  const word = () => WORDS[Math.floor(random() * WORDS.length)]!;
  const parts: string[] = [];
  for (let s = 0; s < sections; s++) {
    parts.push(`## ${word()} ${word()}`);
    parts.push(Array.from({ length: 60 + Math.floor(random() * 80) }, word).join(' ') + '.');
  }
  return parts.join('\n\n');
}

describe.skipIf(TEST_DATABASE_URL !== undefined)('aps backup / restore (SQLite)', () => {
  const work = tempDir();
  const sourceDir = join(work, 'source');
  const archive = join(work, 'backup.tar.gz');
  let source: Server;
  let key = '';

  beforeAll(async () => {
    mkdirSync(sourceDir);
    // Snapshots of the search copies soon after each change: the backup finds some to take.
    source = await serve(sourceDir, { SEARCH_SNAPSHOT_DELAY_MS: '200' });
    // A first start prints the key it made (maybe just after the address).
    for (let i = 0; i < 100 && key === ''; i++) {
      key = /(aps_\S+)/.exec(source.out())?.[1] ?? '';
      if (key === '') await new Promise((r) => setTimeout(r, 50));
    }
    expect(key).not.toBe('');
  }, 60_000);

  afterAll(async () => {
    if (source.child.exitCode === null) await stop(source);
  });

  it(
    'a backup taken during uploads and index runs restores the state of its moment',
    { timeout: 240_000 },
    async () => {
      const api = client(source, key);
      const random = seededRandom(42);
      /** Every document the source acknowledged (committed), in order. */
      const created: string[] = [];
      const ingest = async (n: number, sections: number) => {
        const doc = await api.call<{ id: string }>('POST', '/knowledge/documents/text', {
          name: `doc-${n}.md`,
          text: documentText(random, sections),
          index: true,
        });
        created.push(doc.id);
      };
      for (let n = 0; n < 30; n++) await ingest(n, 3 + (n % 5));
      await api.settled();
      // Deleted before the backup: hidden then purged while it may run.
      const first = await api.documents();
      for (const d of first.slice(0, 3)) await api.call('DELETE', `/knowledge/documents/${d.id}`);

      // Uploads (every fifth one large: index runs of many slices) until the backup is done.
      const state = { writing: true };
      let written = 30;
      const writer = (async () => {
        while (state.writing) {
          await ingest(written, written % 5 === 0 ? 120 : 4);
          written++;
        }
      })();
      await new Promise((r) => setTimeout(r, 1500));
      const before = written;
      const acknowledged = created.filter((id) => !first.slice(0, 3).some((d) => d.id === id));
      const backedUp = await aps(sourceDir, ['backup', '--out', archive, '--json']);
      state.writing = false;
      await writer;
      const manifest = JSON.parse(backedUp.stdout) as {
        counts: { documents: number; chunks: number };
        dropped: unknown[];
        files: { path: string; role: string }[];
      };
      expect(written).toBeGreaterThan(before); // uploads went on while it ran
      expect(manifest.dropped).toEqual([]);
      expect(manifest.files[0]).toMatchObject({ path: 'aps.sqlite', role: 'database' });
      expect(readdirSync(work)).toEqual(['backup.tar.gz', 'source']); // no temporary left

      const restoredDir = join(work, 'restored');
      const restored = await aps(work, ['restore', archive, '--data-dir', restoredDir]);
      expect(restored.stdout).toMatch(
        `restored ${manifest.counts.documents} documents, ${manifest.counts.chunks} chunks`,
      );
      await api.settled();
      expect(manifest.files.filter((f) => f.role === 'snapshot').length).toBeGreaterThan(0);
      const copy = await serve(restoredDir, { LOG_LEVEL: 'info' });
      try {
        const restoredApi = client(copy, key); // the key verifies: secrets.json came along
        await restoredApi.settled(); // runs interrupted by the backup's moment run again
        // The snapshots were taken as this database's (then caught up), not rebuilt. The search
        // indexes load after the server listens: wait for their line.
        for (let i = 0; i < 200 && !/search index snapshot loaded/.test(copy.out()); i++) {
          await new Promise((r) => setTimeout(r, 100));
        }
        expect(copy.out()).toMatch(/"kind":"keyword".*search index snapshot loaded/);
        expect(copy.out()).not.toMatch(/another database/);
        const inCopy = await restoredApi.documents();
        const inSource = await api.documents();
        expect(inCopy.length).toBe(manifest.counts.documents);
        // Every upload acknowledged before the backup started is in, the deleted ones are not.
        const copied = new Set(inCopy.map((d) => d.id));
        expect(acknowledged.filter((id) => !copied.has(id))).toEqual([]);
        expect(acknowledged.length).toBeGreaterThan(27);
        expect(first.slice(0, 3).filter((d) => copied.has(d.id))).toEqual([]);
        const sourceById = new Map(inSource.map((d) => [d.id, d]));
        for (const d of inCopy) {
          expect(d.status).toBe('indexed');
          expect(sourceById.get(d.id)).toMatchObject({ name: d.name, checksum: d.checksum });
        }
        // The source minus what came after the moment is what the copy must equal.
        const later = inSource.filter((d) => !inCopy.some((c) => c.id === d.id));
        expect(later.length).toBeGreaterThan(0);
        for (const d of later) await api.call('DELETE', `/knowledge/documents/${d.id}`);
        for (const d of inCopy) {
          const chunks = (c: typeof api) =>
            c.call<{ items: { chunkIndex: number; content: string }[] }>(
              'GET',
              `/knowledge/documents/${d.id}/chunks`,
            );
          const [a, b] = await Promise.all([chunks(api), chunks(restoredApi)]);
          expect(b.items.map((c) => [c.chunkIndex, c.content])).toEqual(
            a.items.map((c) => [c.chunkIndex, c.content]),
          );
        }
        // Let the source's purge of the later documents finish.
        for (let i = 0; i < 100 && (await api.documents()).length !== inCopy.length; i++) {
          await new Promise((r) => setTimeout(r, 100));
        }
        const queryRandom = seededRandom(7);
        const modes = ['hybrid', 'semantic', 'keyword'] as const;
        let hits = 0;
        for (let q = 0; q < 50; q++) {
          const query = Array.from(
            { length: 1 + (q % 4) },
            () => WORDS[Math.floor(queryRandom() * WORDS.length)]!,
          ).join(' ');
          const body = { query, topK: 10, mode: modes[q % 3] };
          type Answer = { items: { documentId: string; content: string; score: number }[] };
          const [a, b] = await Promise.all([
            api.call<Answer>('POST', '/knowledge/retrieve', body),
            restoredApi.call<Answer>('POST', '/knowledge/retrieve', body),
          ]);
          // Equal scores may come in another order (rows renumbered by a re-run): sorted by id.
          const shown = (x: Answer) =>
            x.items
              .map((h) => `${h.score.toFixed(6)} ${h.documentId} ${h.content.slice(0, 40)}`)
              .sort((p, q) => q.localeCompare(p));
          expect(shown(b), `${body.mode}: ${query}`).toEqual(shown(a));
          hits += a.items.length;
        }
        expect(hits).toBeGreaterThan(200);
      } finally {
        await stop(copy);
      }
    },
  );

  it('refuses a truncated or altered archive and writes nothing', { timeout: 60_000 }, async () => {
    const bytes = readFileSync(archive);
    const tar = gunzipSync(bytes);
    // A byte of the database's content (its header block is at the first 512-byte boundary
    // after the manifest's entry whose name is aps.sqlite).
    let at = -1;
    for (let o = 0; o < tar.length; o += 512) {
      if (tar.subarray(o, o + 11).toString('latin1') === 'aps.sqlite\0') {
        at = o + 512 + 4096 + 7;
        break;
      }
    }
    expect(at).toBeGreaterThan(0);
    const altered = Buffer.from(tar);
    altered[at] = altered[at]! ^ 0xff;
    const cases: [string, Buffer, RegExp][] = [
      ['half.tar.gz', bytes.subarray(0, bytes.length >> 1), /truncated/],
      ['half.tar', tar.subarray(0, tar.length >> 1), /truncated/],
      ['cut.tar', tar.subarray(0, tar.length - 2048), /truncated/],
      ['altered.tar', altered, /aps\.sqlite does not match its checksum/],
    ];
    for (const [name, content, message] of cases) {
      const dir = join(tempDir(), 'target');
      mkdirSync(dir);
      writeFileSync(join(dir, '..', name), content);
      const failed = await apsFails(dir, ['restore', join(dir, '..', name), '--data-dir', dir]);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(message);
      expect(failed.stderr).toMatch(/Nothing was written to/);
      expect(readdirSync(dir)).toEqual([]);
      expect(readdirSync(dirname(dir)).sort()).toEqual([name, 'target']); // no extraction left
    }
  });

  it(
    'refuses a non-empty target without --force, replaces it with',
    { timeout: 60_000 },
    async () => {
      const dir = join(tempDir(), 'busy');
      mkdirSync(dir);
      writeFileSync(join(dir, 'keep.txt'), 'mine');
      const failed = await apsFails(dir, ['restore', archive, '--data-dir', dir]);
      expect(failed.stderr).toMatch(/is not empty: .*--force/);
      expect(readdirSync(dir)).toEqual(['keep.txt']);
      // Nor with it when the archive itself is inside what --force would replace.
      writeFileSync(join(dir, 'inside.tar.gz'), readFileSync(archive));
      const inside = await apsFails(dir, [
        'restore',
        join(dir, 'inside.tar.gz'),
        '--data-dir',
        dir,
        '--force',
      ]);
      expect(inside.stderr).toMatch(/inside.tar.gz is inside .*--force would replace/);
      rmSync(join(dir, 'inside.tar.gz'));
      await aps(dir, ['restore', archive, '--data-dir', dir, '--force']);
      expect(existsSync(join(dir, 'keep.txt'))).toBe(false);
      expect(existsSync(join(dir, 'aps.sqlite'))).toBe(true);
      expect(existsSync(join(dir, 'secrets.json'))).toBe(true);
    },
  );

  it(
    'refuses entries outside the target, links and unlisted files',
    { timeout: 60_000 },
    async () => {
      const root = tempDir();
      const inner = join(root, 'a', 'b');
      mkdirSync(inner, { recursive: true });
      writeFileSync(join(root, 'a', 'evil'), 'x');
      const sha = 'a'.repeat(64);
      const manifestOf = (path: string) => ({
        format: 1,
        database: { kind: 'postgres' },
        files: [{ path, role: 'stored', size: 1, sha256: sha }],
      });
      const build = async (name: string, manifest: unknown, entry: string) => {
        writeFileSync(join(inner, 'manifest.json'), JSON.stringify(manifest));
        const file = join(root, name);
        await create({ file, cwd: inner, preservePaths: true }, ['manifest.json', entry]);
        return file;
      };
      const cases: [string, RegExp][] = [
        [
          await build('dotdot.tar', manifestOf('evil'), '../evil'),
          /"\.\.\/evil" has an unsafe path/,
        ],
        [await build('listed.tar', manifestOf('../evil'), '../evil'), /unsafe path "\.\.\/evil"/],
        [await build('abs.tar', manifestOf('evil'), join(root, 'a', 'evil')), /unsafe path/],
      ];
      const { symlinkSync } = await import('node:fs');
      symlinkSync('/etc/passwd', join(inner, 'evil'));
      cases.push([await build('link.tar', manifestOf('evil'), 'evil'), /"evil" is a SymbolicLink/]);
      for (const [file, message] of cases) {
        const dir = join(root, 'target');
        const failed = await apsFails(root, ['restore', file, '--data-dir', dir]);
        expect(failed.stderr).toMatch(message);
        expect(existsSync(dir)).toBe(false);
        expect(existsSync(join(root, 'evil'))).toBe(false);
      }
    },
  );

  it(
    'a document whose files vanished before they were copied is left out, not restored broken',
    { timeout: 90_000 },
    async () => {
      const api = client(source, key);
      const [gone] = await api.documents();
      rmSync(join(sourceDir, 'documents', gone!.id), { recursive: true, force: true });
      const out = join(tempDir(), 'dropped.tar');
      const backedUp = await aps(sourceDir, ['backup', '--out', out, '--json']);
      expect(backedUp.stderr).toMatch(/1 documents changed while copying their files/);
      const manifest = JSON.parse(backedUp.stdout) as {
        counts: { documents: number };
        dropped: { documentId: string; missing: string[] }[];
      };
      expect(manifest.dropped).toEqual([
        {
          documentId: gone!.id,
          missing: [expect.stringMatching(/^documents\//) as string, expect.any(String) as string],
        },
      ]);
      const dir = join(tempDir(), 'restored');
      await aps(dirname(dir), ['restore', out, '--data-dir', dir]);
      const copy = await serve(dir);
      try {
        const docs = await client(copy, key).documents();
        expect(docs.length).toBe(manifest.counts.documents);
        expect(docs.some((d) => d.id === gone!.id)).toBe(false);
      } finally {
        await stop(copy);
      }
    },
  );
});
