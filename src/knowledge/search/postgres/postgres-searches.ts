/**
 * How the PostgreSQL store searches (postgres-chunk-store.ts). A keyword search without a
 * metadata filter runs without a transaction, checked against the keyword generation afterwards;
 * every other search (a metadata filter, a vector, or both) reads one REPEATABLE READ snapshot:
 * the filter's documents, the keyword and vector candidates, their cosines and the hits' rows.
 */
import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '../../../db/postgres.js';
import { postgresFilterSql, toPg } from '../../filter/sql.js';
import {
  SEARCHABLE,
  inRankOrder,
  type Candidate,
  type ChunkHit,
  type RankedHit,
  type Ranking,
  type SearchFilter,
  type SearchRequest,
  vectorDepth,
} from '../chunk-store.js';
import type { KeywordSearch } from './keyword/keyword-search.js';
import { rowsBySeq } from './keyword/keyword-statements.js';
import type { VectorTables } from './vector/vector-tables.js';
import { keywordQueryWords } from './keyword/words.js';

export class PostgresSearches {
  constructor(
    private readonly pool: Pool,
    private readonly vectors: VectorTables,
    private readonly keyword: KeywordSearch,
  ) {}

  async search(request: SearchRequest, ranking: Ranking): Promise<RankedHit[]> {
    const { text, vector, limit } = request;
    const words = text === null ? [] : keywordQueryWords(text);
    if (vector === null && request.filter.where === undefined && words.length > 0) {
      const hits = await this.keywordSearch(words, request, ranking);
      if (hits !== null) return hits;
    }
    // One snapshot for the evidence and the rows: no commit lands in between.
    let begin = 'begin isolation level repeatable read read only';
    if (vector !== null) {
      const features = await this.vectors.loadFeatures();
      begin += this.vectors.searchSettings(features, limit, request.model, vector.length);
    }
    return withTransaction(this.pool, begin, (client) =>
      this.snapshotSearch(client, words, request, ranking),
    );
  }

  /**
   * A keyword search without a metadata filter in two statements at most, without a transaction:
   * scored from memory (or from one statement reading what is missing), then the ranked rows and
   * the keyword generation of their snapshot. The same generation means nothing a search reads
   * changed in between (every such change bumps it): the answer is that snapshot's. Another
   * generation: null, and the caller searches again in one snapshot.
   */
  private async keywordSearch(
    words: string[][],
    request: SearchRequest,
    ranking: Ranking,
  ): Promise<RankedHit[] | null> {
    const { filter, limit } = request;
    if (filter.documentIds?.length === 0) return [];
    const client = await this.pool.connect();
    let failed: Error | undefined;
    try {
      const keyword = await this.keyword.rank(client, words, filter, limit, true);
      const loaded = await rowsBySeq(
        client,
        keyword.top.map((t) => t.seq),
      );
      if (loaded.generation !== keyword.generation) {
        this.keyword.forget();
        return null;
      }
      const candidates = keyword.top.flatMap((t) => {
        const row = loaded.rows.get(t.seq);
        return row === undefined ? [] : [{ chunkId: row.id, score: t.score }];
      });
      const top = ranking.rank({
        keyword: candidates,
        semantic: [],
        cosine: new Map<string, number>(),
        keywordMax: keyword.max,
      });
      return inRankOrder(top, [...loaded.rows.values()]);
    } catch (error) {
      failed = error as Error; // the connection is not reused: its state is unknown
      throw error;
    } finally {
      client.release(failed);
    }
  }

  /** A search inside one REPEATABLE READ snapshot: a metadata filter, vectors, or both. */
  private async snapshotSearch(
    client: PoolClient,
    words: string[][],
    request: SearchRequest,
    ranking: Ranking,
  ): Promise<RankedHit[]> {
    const { vector, model, limit } = request;
    const filter = await this.scope(client, request.filter);
    // No document matches the filter: nothing to rank.
    if (filter.documentIds?.length === 0) return [];
    const table =
      vector === null ? null : await this.vectors.table(client, model, vector.length, false);
    // A hybrid search takes the `limit` nearest chunks (the answer's own length of them, as
    // `fusedTop`, rank as nearest) and also scores them by their keywords: those that hold a query
    // word join the keyword candidates with their BM25 (as on SQLite, sqlite-searches.ts).
    const hybrid = words.length > 0 && vector !== null && table !== null;
    const depth = vectorDepth(request, ranking);
    const nearest =
      vector === null || table === null
        ? []
        : await this.vectors.search(
            client,
            table,
            vector,
            filter,
            hybrid ? Math.max(depth, limit) : depth,
            hybrid,
          );
    const semantic = nearest.slice(0, depth).map((n) => ({ chunkId: n.chunkId, score: n.score }));
    let keyword: Candidate[] = [];
    let keywordMax = 0;
    if (words.length > 0) {
      const nearestBySeq = new Map<number, string>();
      for (const n of hybrid ? nearest.slice(0, limit) : []) {
        if (n.seq !== null) nearestBySeq.set(n.seq, n.chunkId);
      }
      // Read in this snapshot (not from memory): the ranking needs no check afterwards.
      const ranked = await this.keyword.rank(client, words, filter, limit, false, [
        ...nearestBySeq.keys(),
      ]);
      const ids = await this.keyword.chunkIds(
        client,
        ranked.top.map((t) => t.seq),
      );
      keyword = ranked.top.flatMap((t) => {
        const chunkId = ids.get(t.seq);
        return chunkId === undefined ? [] : [{ chunkId, score: t.score }];
      });
      const known = new Set(keyword.map((k) => k.chunkId));
      for (const { seq, score } of ranked.also) {
        const chunkId = nearestBySeq.get(seq);
        if (chunkId !== undefined && !known.has(chunkId)) keyword.push({ chunkId, score });
      }
      keywordMax = ranked.max;
    }
    // The nearest chunks' cosines are known; the keyword candidates' are read.
    const cosine = new Map(nearest.map((n) => [n.chunkId, n.score]));
    const unknown = keyword.filter((k) => !cosine.has(k.chunkId)).map((k) => k.chunkId);
    if (vector !== null && table !== null && unknown.length > 0) {
      for (const [id, c] of await this.vectors.similarities(client, table, vector, unknown)) {
        cosine.set(id, c);
      }
    }
    const top = ranking.rank({ keyword, semantic, cosine, keywordMax });
    return inRankOrder(
      top,
      await this.hits(
        client,
        top.map((c) => c.chunkId),
      ),
    );
  }

  /**
   * A metadata filter resolved, in the search's snapshot, to the searchable documents it matches:
   * keyword and vector search then restrict their candidates to them before ranking (a filter
   * never leaves fewer than `limit` when enough chunks match).
   */
  private async scope(client: PoolClient, filter: SearchFilter): Promise<SearchFilter> {
    if (filter.where === undefined) return filter;
    const params: unknown[] = [];
    // The metadata parsed once per document (`offset 0` keeps the planner from inlining the
    // cast into every condition that reads it: half the time of a filter with several keys).
    let sql = `select d.id from (
        select d.id, d.project_id, d.name, d.file_type, d.source, d.created_at,
          d.metadata::jsonb as metadata
        from knowledge_documents d where ${SEARCHABLE} offset 0
      ) d
      where ${toPg(postgresFilterSql(filter.where, 'd.'), params)}`;
    if (filter.projectId !== undefined) {
      params.push(filter.projectId);
      sql += ` and d.project_id = $${params.length}`;
    }
    if (filter.documentId !== undefined) {
      params.push(filter.documentId);
      sql += ` and d.id = $${params.length}`;
    }
    if (filter.documentIds !== undefined) {
      params.push(filter.documentIds);
      sql += ` and d.id = any($${params.length}::text[])`;
    }
    const { rows } = await client.query<{ id: string }>(sql, params);
    const projectId = filter.projectId === undefined ? {} : { projectId: filter.projectId };
    return { ...projectId, documentIds: rows.map((r) => r.id) };
  }

  private async hits(client: PoolClient, chunkIds: string[]): Promise<ChunkHit[]> {
    if (chunkIds.length === 0) return [];
    const { rows } = await client.query<ChunkHit>(
      `select c.*, d.name as document_name, d.project_id as project_id, d.source as source,
         d.metadata as document_metadata
       from knowledge_chunks c join knowledge_documents d on d.id = c.document_id
       where c.id = any($1::text[])`,
      [chunkIds],
    );
    return rows;
  }
}
