/**
 * Ingest on PostgreSQL, one build against another in the same run:
 *
 *   npm run bench:ingest-pg -- --before-cli PATH [--cli dist/cli.js] [--docs 300]
 *                              [--concurrency 8] [--files 2] [--sections 5000] [--rounds 1]
 *
 * Each round starts, for each build (`--before-cli` first, then `--cli`; the order alternates
 * from round to round so a drifting machine load favours neither), a real `aps serve` process on
 * a fresh database of one PostgreSQL cluster (BENCH_DATABASE_URL, or a throwaway one) with files
 * kept in the database, then:
 * - small documents: `--docs` SciFact abstracts uploaded with `index=true` by `--concurrency`
 *   clients, the clock stopped when no document is indexing (documents/s);
 * - large documents: `--files` synthetic files of `--sections` ~1,000-character sections
 *   (bench/retrieval/synthetic.ts), uploaded and indexed one after the other (chunks/s, s per file).
 *
 * Progress goes to stderr; the results to stdout. Run `npm run build` first (the script does).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadParaphrase } from './retrieval/paraphrase.js';
import { DEFAULT_EMBEDDING_CACHE } from './retrieval/harness.js';
import { startPostgres } from './retrieval/postgres.js';
import { scifactAbstracts, type ScifactAbstract as Doc } from './retrieval/sets.js';
import { rng, SentenceGenerator, syntheticFiles } from './retrieval/synthetic.js';
import { startBenchServer, stopServerProcess } from './server-process.js';

const { values } = parseArgs({
  options: {
    cli: { type: 'string', default: resolve(import.meta.dirname, '../dist/cli.js') },
    'before-cli': { type: 'string' },
    docs: { type: 'string', default: '300' },
    concurrency: { type: 'string', default: '8' },
    files: { type: 'string', default: '2' },
    sections: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '1' },
  },
});

const KEY = 'aps_bench_ingest_pg_0123456789abcdef';
const PREFIX = '/api/v1';
const auth = { authorization: `Bearer ${KEY}` };
const log = (line: string) => process.stderr.write(`${line}\n`);
const round = (n: number, d = 1) => Number(n.toFixed(d));

async function api<T>(base: string, path: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(`${base}${PREFIX}${path}`, {
    ...init,
    headers: { ...auth, ...(init.headers as Record<string, string> | undefined) },
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

function upload(base: string, doc: Doc, index: boolean): Promise<{ id: string; status: string }> {
  const form = new FormData();
  if (index) form.append('index', 'true');
  form.append('file', new Blob([doc.text], { type: 'text/markdown' }), doc.name);
  return api(base, '/knowledge/documents/upload', { method: 'POST', body: form });
}

/** Until no document is indexing. */
async function indexingDone(base: string): Promise<void> {
  for (;;) {
    const status = await api<{ documents: { indexing: number; failed: number } }>(
      base,
      '/knowledge/status',
    );
    if (status.documents.failed > 0) throw new Error(`${status.documents.failed} runs failed`);
    if (status.documents.indexing === 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Result {
  docsS: number;
  largeS: number;
  largeChunks: number;
  perFile: number[];
}

async function measure(
  cli: string,
  databaseUrl: string,
  docs: Doc[],
  files: Doc[],
  concurrency: number,
): Promise<Result> {
  const dataDir = mkdtempSync(join(tmpdir(), 'aps-bench-ingest-pg-'));
  const server = await startBenchServer(cli, dataDir, KEY, DEFAULT_EMBEDDING_CACHE, {
    DATABASE_URL: databaseUrl,
    STORAGE_DRIVER: 'postgres',
    UPLOAD_MAX_BYTES: String(1 << 30),
  });
  try {
    // The embedding model loads in the background at start: wait until it indexes a document.
    await upload(server.base, { name: 'warm.md', text: '# Warm\n\nwarm up.\n' }, true);
    await indexingDone(server.base);
    let next = 0;
    let start = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < docs.length) {
          const doc = docs[next++] as Doc;
          const created = await upload(server.base, doc, true);
          if (created.status !== 'indexing') throw new Error(`not queued: ${created.status}`);
        }
      }),
    );
    await indexingDone(server.base);
    const docsS = (performance.now() - start) / 1000;
    const perFile: number[] = [];
    let largeChunks = 0;
    start = performance.now();
    for (const file of files) {
      const t = performance.now();
      const { id } = await upload(server.base, file, false);
      const indexed = await api<{ chunkCount: number }>(
        server.base,
        `/knowledge/documents/${id}/index`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        },
      );
      largeChunks += indexed.chunkCount;
      perFile.push((performance.now() - t) / 1000);
      log(`  ${file.name}: ${indexed.chunkCount} chunks in ${round(perFile.at(-1) ?? 0)} s`);
    }
    return { docsS, largeS: (performance.now() - start) / 1000, largeChunks, perFile };
  } finally {
    await stopServerProcess(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const before = values['before-cli'];
  const builds = [
    ...(before === undefined ? [] : [{ label: 'before', cli: resolve(before) }]),
    { label: 'after', cli: resolve(values.cli) },
  ];
  const docs = scifactAbstracts(Number(values.docs));
  const generator = new SentenceGenerator(
    loadParaphrase().docs.map((d) => d.markdown),
    rng(42),
  );
  const files = [
    ...syntheticFiles(
      generator,
      Number(values.files) * Number(values.sections),
      Number(values.sections),
    ),
  ].map((f) => ({ name: f.name, text: f.markdown }));
  const concurrency = Number(values.concurrency);
  const postgres = startPostgres(log);
  const results = new Map<string, Result[]>(builds.map((b) => [b.label, []]));
  try {
    for (let r = 0; r < Number(values.rounds); r++) {
      const order = r % 2 === 0 ? builds : [...builds].reverse();
      for (const build of order) {
        log(`round ${r + 1}, ${build.label} (${build.cli})`);
        const database = await postgres.createDatabase(`ingest_${build.label}`);
        try {
          results
            .get(build.label)
            ?.push(await measure(build.cli, database.url, docs, files, concurrency));
        } finally {
          await database.drop();
        }
      }
    }
  } finally {
    postgres.stop();
  }
  console.log(
    `\nPostgreSQL ingest: ${docs.length} SciFact abstracts (concurrency ${concurrency}, index=true), then ${files.length} files of ${values.sections} sections one by one`,
  );
  for (const build of builds) {
    for (const [i, x] of (results.get(build.label) ?? []).entries()) {
      console.log(
        `  ${build.label.padEnd(6)} round ${i + 1}: small ${round(docs.length / x.docsS)} docs/s, ` +
          `large ${round(x.largeChunks / x.largeS)} chunks/s ` +
          `(${x.perFile.map((s) => `${round(s)} s`).join(', ')} per file)`,
      );
    }
  }
}

await main();
