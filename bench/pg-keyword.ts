/**
 * PostgreSQL keyword search, two builds side by side on one database:
 *
 *   npm run bench:pg-keyword -- --url postgres://…/db [--before <build>/dist] [--scale 100000]
 *                               [--queries 200] [--seed 42]
 *
 * The database is one `bench:retrieval --db postgres --scale N --pg-database NAME` filled; the
 * queries are that bench's (same seed and scale). Each query goes to this build's store and to
 * the `--before` build's (its dist/knowledge/search/postgres/postgres-chunk-store.js), alternately,
 * keyword only, at k = 10 and k = 100; twice over: the first pass meets every lexeme for the first
 * time (this build reads its postings), the second finds them in memory. Also compares the two
 * rankings (chunk ids and scores). Results (p50 / p95 / p99 ms, and the statements each build
 * runs per search, begin and commit included) to stdout.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { ChunkStore, RankedHit } from '../src/knowledge/search/chunk-store.js';
import { PostgresChunkStore } from '../src/knowledge/search/postgres/postgres-chunk-store.js';
import { latencySummary } from './retrieval/metrics.js';
import { loadParaphrase } from './retrieval/paraphrase.js';
import { rng, SentenceGenerator, syntheticFiles } from './retrieval/synthetic.js';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    before: { type: 'string' },
    scale: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '200' },
    seed: { type: 'string', default: '42' },
  },
});
if (values.url === undefined) throw new Error('--url is required');
const n = Number(values.scale);
// The queries of bench/retrieval.ts at this scale: drawn after its files.
const generator = new SentenceGenerator(
  loadParaphrase().docs.map((d) => d.markdown),
  rng(Number(values.seed) + n),
);
let files = 0;
for (const file of syntheticFiles(generator, n)) files += file.sections > 0 ? 1 : 0;
process.stderr.write(`${files} files drawn, ${n} sections: the queries follow\n`);
const queries = Array.from({ length: Number(values.queries) }, () => generator.query());

const pool = new pg.Pool({ connectionString: values.url, max: 4 });

/** `pool` with every statement its clients run counted in `counter.statements`. */
function counting(counter: { statements: number }): pg.Pool {
  const wrap = <T extends pg.Pool | pg.PoolClient>(target: T): T =>
    new Proxy(target, {
      get(object, prop) {
        if (prop === 'query') {
          return (...args: unknown[]) => {
            counter.statements++;
            return (object.query as (...a: unknown[]) => unknown)(...args);
          };
        }
        if (prop === 'connect' && object instanceof pg.Pool) {
          return async () => wrap(await object.connect());
        }
        const value: unknown = Reflect.get(object, prop, object);
        return typeof value === 'function' ? (value as () => unknown).bind(object) : value;
      },
    });
  return wrap(pool);
}

const stores: { name: string; store: ChunkStore; statements: number }[] = [];
const addStore = (name: string, make: (p: pg.Pool) => ChunkStore) => {
  const entry = { name, statements: 0, store: undefined as unknown as ChunkStore };
  entry.store = make(counting(entry));
  stores.push(entry);
};
if (values.before !== undefined) {
  const path = resolve(values.before, 'knowledge/search/postgres/postgres-chunk-store.js');
  const module = (await import(path)) as { PostgresChunkStore: new (p: pg.Pool) => ChunkStore };
  addStore('before', (p) => new module.PostgresChunkStore(p));
}
addStore('this build', (p) => new PostgresChunkStore(p));

const search = async (store: ChunkStore, text: string, limit: number) => {
  const t = performance.now();
  const hits = await store.search(
    { text, vector: null, model: 'none', filter: {}, limit },
    { rank: (e) => e.keyword },
  );
  return { ms: performance.now() - t, hits };
};
const key = (hits: RankedHit[]) => hits.map((h) => `${h.chunk.id}:${h.score}`).join(',');
const fmt = (ms: number[]) => {
  const s = latencySummary(ms);
  return `${s.p50.toFixed(1)} / ${s.p95.toFixed(1)} / ${s.p99.toFixed(1)}`;
};

console.log(
  `| pass | k | ${stores.map((s) => `${s.name}: p50 / p95 / p99 ms (statements per search)`).join(' | ')} | same ranking |`,
);
console.log(`|---|---|${stores.map(() => '---|').join('')}---|`);
for (const pass of ['first', 'second']) {
  for (const limit of [10, 100]) {
    const ms = stores.map(() => [] as number[]);
    for (const s of stores) s.statements = 0;
    let same = 0;
    for (const [i, text] of queries.entries()) {
      const results: string[] = [];
      // Alternating which goes first: neither always meets a warmer database.
      for (let j = 0; j < stores.length; j++) {
        const at = (i + j) % stores.length;
        const r = await search(stores[at]!.store, text, limit);
        ms[at]!.push(r.ms);
        results[at] = key(r.hits);
      }
      if (results.every((r) => r === results[0])) same++;
    }
    console.log(
      `| ${pass} | ${limit} | ${ms.map((m, i) => `${fmt(m)} (${((stores[i]?.statements ?? 0) / queries.length).toFixed(1)})`).join(' | ')} | ${same} of ${queries.length} |`,
    );
  }
}
await pool.end();
