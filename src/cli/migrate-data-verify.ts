/**
 * `aps migrate-data`: the check after a copy. Counts per table and status on both sides, then
 * the same retrievals (queries drawn from the chunks' own text; keyword, semantic and hybrid)
 * through the real retrieval service over each engine's own store, answered in this process:
 * the same hits in the same order on both, or the same up to ties (compareHits). Scores differ
 * by float noise only (the largest difference is reported).
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Pool } from 'pg';
import type { Config } from '../config.js';
import type { EmbeddingProvider } from '../knowledge/embeddings/provider.js';
import type { RetrieveBody } from '../knowledge/retrieval/retrieval.schemas.js';
import { RetrievalService } from '../knowledge/retrieval/retrieval.service.js';
import { PostgresChunkStore } from '../knowledge/search/postgres/postgres-chunk-store.js';
import { SqliteChunkStore } from '../knowledge/search/sqlite/sqlite-chunk-store.js';
import { PLAIN_TABLES } from './migrate-data-copy.js';
import type { SqliteSource } from './migrate-data-source.js';

export const MODES = ['keyword', 'semantic', 'hybrid'] as const;

/** A count that differs between the two databases. */
export interface CountMismatch {
  what: string;
  source: number;
  target: number;
}

/** A retrieval whose hits differ. */
export interface RetrievalMismatch {
  mode: string;
  query: string;
  source: string[];
  target: string[];
}

export interface Verification {
  counts: Record<string, { source: number; target: number }>;
  countMismatches: CountMismatch[];
  queries: number;
  /** Per mode: retrievals with the same hits in the same order. */
  agreed: Record<string, number>;
  /** Per mode: retrievals with the same hits but for the order (or choice, at the cut) of ties. */
  tied: Record<string, number>;
  mismatches: RetrievalMismatch[];
  /** The largest difference of a hit's score between the engines. */
  maxScoreDelta: number;
}

/** A hit as compared: its chunk and score. */
interface Hit {
  id: string;
  score: number;
}

/**
 * Scores closer than this are a tie: the engines compute cosines (float32 in WebAssembly vs
 * pgvector's float8 over float4) and BM25 in different float arithmetic, a few 1e-8 apart.
 */
export const TIE = 1e-6;

/**
 * Whether two answers to one retrieval agree: `same` hits in the same order; `tied` when they
 * differ only among hits whose scores tie within TIE, that is position by position the same
 * scores, each run of tied scores the same set of chunks, but for the last run of a full answer
 * (`topK` hits), where each engine may have kept different ones of the chunks tied at the cut;
 * `different` otherwise. Ties are why exact order equality is not achievable: the ranking breaks
 * an exact tie by chunk id on both engines, but chunks of (nearly) the same text have cosines a
 * few 1e-8 apart that each engine computes with its own rounding (SQLite in float32 over its
 * copies, pgvector in float8 over float4), so their order flips between engines.
 */
export function compareHits(
  a: readonly Hit[],
  b: readonly Hit[],
  topK: number,
): 'same' | 'tied' | 'different' {
  if (a.length !== b.length) return 'different';
  if (a.every((h, i) => h.id === b[i]?.id)) return 'same';
  if (a.some((h, i) => Math.abs(h.score - (b[i]?.score ?? Number.NaN)) > TIE)) return 'different';
  for (let start = 0; start < a.length;) {
    let end = start + 1;
    while (end < a.length && Math.abs((a[end - 1]?.score ?? 0) - (a[end]?.score ?? 0)) <= TIE)
      end++;
    const atCut = end === a.length && a.length === topK;
    const ids = (hits: readonly Hit[]) => new Set(hits.slice(start, end).map((h) => h.id));
    const mine = ids(a);
    const theirs = ids(b);
    if (!atCut && (mine.size !== theirs.size || [...mine].some((id) => !theirs.has(id))))
      return 'different';
    start = end;
  }
  return 'tied';
}

/** The target's counts, named as the source's (SqliteSource.counts). */
async function targetCounts(pool: Pool, tables: readonly string[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const one = async (sql: string) => (await pool.query<{ n: number }>(sql)).rows[0]?.n ?? 0;
  const { rows } = await pool.query<{ status: string; n: number }>(
    'select status, count(*)::int as n from knowledge_documents group by status',
  );
  for (const r of rows) counts.set(`documents ${r.status}`, r.n);
  counts.set('chunks', await one('select count(*)::int as n from knowledge_chunks'));
  counts.set('keyword rows', await one('select count(*)::int as n from knowledge_chunks_fts'));
  const vectorTables = await pool.query<{ model: string; dimensions: number; table_name: string }>(
    'select model, dimensions, table_name from knowledge_vector_tables',
  );
  for (const t of vectorTables.rows) {
    counts.set(
      `vectors ${t.model} (${t.dimensions})`,
      await one(`select count(*)::int as n from ${t.table_name}`),
    );
  }
  for (const table of tables) {
    const exists = await pool.query('select to_regclass($1) is not null as e', [table]);
    if ((exists.rows[0] as { e: boolean } | undefined)?.e === true) {
      counts.set(table, await one(`select count(*)::int as n from ${table}`));
    }
  }
  return counts;
}

/**
 * `n` queries from the source's chunks, spread over them: a run of up to six words from each
 * chosen chunk's text (a question whose answer is in the base, as an agent would ask it).
 */
export function sampleQueries(source: SqliteSource, n: number): string[] {
  const total = source.count('select count(*) from knowledge_chunks');
  if (total === 0 || n === 0) return [];
  const pick = source.native.prepare(
    'select content from knowledge_chunks order by id limit 1 offset ?',
  );
  const queries: string[] = [];
  for (let i = 0; i < n; i++) {
    const content = pick.pluck().get(Math.floor(((i + 0.5) * total) / n)) as string | undefined;
    const words = (content ?? '').split(/\s+/).filter((w) => /\p{L}/u.test(w));
    if (words.length === 0) continue;
    const from = (i * 7) % Math.max(1, words.length - 6);
    queries.push(words.slice(from, from + 2 + (i % 5)).join(' '));
  }
  return queries;
}

/** Counts on both sides, and the retrievals compared. */
export async function verify(deps: {
  source: SqliteSource;
  pool: Pool;
  config: Config;
  embedder: EmbeddingProvider;
  log: FastifyBaseLogger;
  queries: number;
  topK?: number;
}): Promise<Verification> {
  const { source, pool, config, embedder, log } = deps;
  const mine = source.counts(PLAIN_TABLES);
  const theirs = await targetCounts(pool, PLAIN_TABLES);
  const counts: Verification['counts'] = {};
  const countMismatches: CountMismatch[] = [];
  for (const what of new Set([...mine.keys(), ...theirs.keys()])) {
    const c = { source: mine.get(what) ?? 0, target: theirs.get(what) ?? 0 };
    counts[what] = c;
    if (c.source !== c.target) countMismatches.push({ what, ...c });
  }
  const queries = sampleQueries(source, deps.queries);
  const result: Verification = {
    counts,
    countMismatches,
    queries: queries.length,
    agreed: Object.fromEntries(MODES.map((m) => [m, 0])),
    tied: Object.fromEntries(MODES.map((m) => [m, 0])),
    mismatches: [],
    maxScoreDelta: 0,
  };
  if (queries.length === 0) return result;
  // Exact vector search on both sides: an approximate graph (SQLite's HNSW past
  // SEARCH_ANN_MIN_VECTORS, or PostgreSQL's) may miss a different neighbour on each.
  const sqliteStore = new SqliteChunkStore(source.native, {
    vectors: { annMin: Number.POSITIVE_INFINITY },
  });
  const pgStore = new PostgresChunkStore(pool, { exactSearchMax: Number.MAX_SAFE_INTEGER });
  const options = { hybridCandidates: config.knowledge.hybridCandidates };
  const services = [
    new RetrievalService(sqliteStore, embedder, log, options),
    new RetrievalService(pgStore, embedder, log, options),
  ] as const;
  try {
    await embedder.ready();
    for (const service of services) await service.warm();
    for (const mode of MODES) {
      for (const query of queries) {
        const body: RetrieveBody = { query, mode, topK: deps.topK ?? 10, rerank: false };
        const [a, b] = await Promise.all(services.map((s) => s.retrieve(body)));
        const mine = a?.items ?? [];
        const theirs = b?.items ?? [];
        const outcome = compareHits(mine, theirs, body.topK);
        if (outcome === 'different') {
          const ids = (hits: readonly Hit[]) => hits.map((h) => h.id);
          result.mismatches.push({ mode, query, source: ids(mine), target: ids(theirs) });
          continue;
        }
        const counter = outcome === 'same' ? result.agreed : result.tied;
        counter[mode] = (counter[mode] ?? 0) + 1;
        mine.forEach((h, i) => {
          const delta = Math.abs(h.score - (theirs[i]?.score ?? h.score));
          result.maxScoreDelta = Math.max(result.maxScoreDelta, delta);
        });
      }
    }
  } finally {
    await sqliteStore.close();
    await pgStore.close();
  }
  return result;
}
