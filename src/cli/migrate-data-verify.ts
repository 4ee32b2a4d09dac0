/**
 * `aps migrate-data`: the check after a copy. Counts per table and status on both sides, then
 * the same retrievals (queries drawn from the chunks' own text; keyword, semantic and hybrid)
 * through the real retrieval service over each engine's own store, answered in this process:
 * the same hits in the same order on both, or the same up to ties (migrate-data-compare.ts); a
 * hybrid answer may also differ by a chunk only one engine took as a candidate, which is checked
 * to be so (hybridCandidatesOnly). Scores differ by float noise only (the largest is reported).
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
import { commonAgree, compareHits, notCandidatesOf, type Hit } from './migrate-data-compare.js';

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
  /**
   * Hybrid retrievals whose answers rank alike the hits both hold, and differ only by chunks
   * one engine did not take as candidates (hybridCandidatesOnly).
   */
  candidates: number;
  mismatches: RetrievalMismatch[];
  /** The largest difference of a hit's score between the engines. */
  maxScoreDelta: number;
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

/**
 * Whether two hybrid answers differ only by candidates: they rank alike the hits both hold
 * (commonAgree), and each hit one engine ranked in where the other did not is, on that other
 * engine, neither among its keyword candidates (the keyword answer `depth` deep) nor among its
 * `topK` nearest chunks. Such a chunk reached the first engine's candidates only through the
 * keyword scoring of the `depth` nearest chunks, and that set's edge differs between engines:
 * SQLite takes the `depth` nearest not already keyword candidates by their int8 cosines
 * (sqlite-searches.ts nearestMatches), PostgreSQL the `depth` nearest by exact distance.
 */
async function hybridCandidatesOnly(
  services: readonly [RetrievalService, RetrievalService],
  query: string,
  answers: readonly [readonly Hit[], readonly Hit[]],
  topK: number,
  depth: number,
): Promise<boolean> {
  const [a, b] = answers;
  if (!commonAgree(a, b)) return false;
  const sides = [
    [notCandidatesOf(a, b, topK), services[1]],
    [notCandidatesOf(b, a, topK), services[0]],
  ] as const;
  for (const [missing, other] of sides) {
    if (missing.length === 0) continue;
    const keyword = await other.retrieve({ query, mode: 'keyword', topK: depth, rerank: false });
    const nearest = await other.retrieve({ query, mode: 'semantic', topK, rerank: false });
    const found = new Set([...keyword.items, ...nearest.items].map((h) => h.id));
    if (missing.some((id) => found.has(id))) return false;
  }
  return true;
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
    candidates: 0,
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
        const depth = Math.max(options.hybridCandidates, body.topK * 4);
        if (
          outcome === 'different' &&
          mode === 'hybrid' &&
          (await hybridCandidatesOnly(services, query, [mine, theirs], body.topK, depth))
        ) {
          result.candidates += 1;
          continue;
        }
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
