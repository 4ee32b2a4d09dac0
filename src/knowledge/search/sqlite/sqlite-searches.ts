/**
 * How the SQLite store searches (sqlite-chunk-store.ts): in one deferred read transaction (WAL
 * mode: every statement inside sees the same snapshot), the scope resolved, the keyword and
 * vector candidates gathered from the in-process copies, ranked by the request's Ranking
 * (retrieval/ranking.ts), and the answer's rows read.
 */
import type BetterSqlite3 from 'better-sqlite3';
import {
  inRankOrder,
  SEARCHABLE,
  type Candidate,
  type ChunkHit,
  type Evidence,
  type IndexScope,
  type RankedHit,
  type Ranking,
  type SearchFilter,
  type SearchRequest,
  vectorDepth,
} from '../chunk-store.js';
import { sqliteFilterSql, toSqlite } from '../../filter/sql.js';
import { CURRENT, type InProcessCopies } from './copies/in-process-copies.js';
import { fusedEvidence, nearestContenders, type CosineSource } from './fused-cosines.js';
import type { KeywordQueries, KeywordQuery } from './keyword-queries.js';
import type { Statements } from './statements.js';
import type { BoundedNearest } from './vector/vector-types.js';
import type { VectorIndex } from './vector/vector-index.js';
import type { VectorTables } from './vector/vector-tables.js';

/**
 * Which of the given documents (a JSON array of ids) are searchable. The status test is kept off
 * the status index (`+`): SQLite would otherwise walk every searchable document through it and
 * test each against the list (~0.4 ms a search at 1,000 documents, growing with them), instead of
 * looking the list's ids up by primary key (~0.1 ms).
 */
export const SEARCHABLE_OF = `select d.id from knowledge_documents d
  where d.id in (select value from json_each(?)) and +${SEARCHABLE}`;

export class SqliteSearches {
  constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly statement: Statements,
    private readonly tables: VectorTables,
    private readonly copies: InProcessCopies,
    private readonly keywords: KeywordQueries,
  ) {}

  /** The answer: the candidates ranked, with their rows, all in one read snapshot. */
  search(request: SearchRequest, ranking: Ranking): RankedHit[] {
    return this.db
      .transaction(() => {
        const top = ranking.rank(this.evidence(request, ranking));
        return inRankOrder(top, this.hits(top.map((c) => c.chunkId)));
      })
      .deferred();
  }

  /** A search's candidates within its scope (inside its transaction). */
  private evidence(request: SearchRequest, ranking: Ranking): Evidence {
    const { text, vector, model, limit } = request;
    const filter = this.scope(request.filter);
    const empty = filter.documents?.size === 0;
    // The vector copy, current as of this snapshot; a graph of it looks for its candidates (in its
    // worker) while the keywords are ranked.
    const vectors = vector === null || empty ? null : this.vectorIndexOf(vector, model);
    // With a text too (hybrid), the vector candidates are fused with the keyword ones: the vector
    // search goes only as deep as the answer needs (`fusedTop`, chunk-store.ts), and the graph
    // looks less far (ann-graph.ts) — asked ahead so, asked again in full if no keyword matched
    // after all (the vector order is then the answer's).
    const depth = vectorDepth(request, ranking);
    const top = ranking.fusedTop;
    // Fetched at first: a margin for chunks of unsearchable documents, except when fused (they are
    // rare, and a fused search reads only the exact cosines its depth can use). A fused search
    // also scores the `limit` nearest chunks by their keywords (`nearestMatches`).
    const fetch = text === null ? depth + 32 : top === undefined ? depth : Math.max(depth, limit);
    if (vector !== null) vectors?.prefetch(vector, filter, fetch, text !== null);
    const query = text === null ? null : this.keywords.parse(text);
    const keyword = query === null || empty ? [] : this.keywordCandidates(query, filter, limit);
    const keywordMax = query === null ? 0 : this.keywords.max(query);
    if (vector === null || vectors === null) {
      return { keyword, semantic: [], cosine: new Map(), keywordMax };
    }
    // Hybrid: the nearest chunks that hold a query word join the keyword candidates, with their
    // BM25 (`nearestMatches`).
    const near =
      query === null || keyword.length === 0
        ? null
        : this.nearestBounds(vectors, vector, filter, fetch);
    const candidates =
      query === null || near === null
        ? keyword
        : keyword.concat(this.nearestMatches(query, keyword, near, limit));
    if (top !== undefined && near !== null && ranking.fusedScorer !== undefined) {
      const score = ranking.fusedScorer(candidates, keywordMax);
      const cosines = this.cosineSource(vectors, vector, near);
      const fused = fusedEvidence(candidates, nearestContenders(near, top), cosines, score, top);
      return { ...fused, keywordMax };
    }
    const cosine = vectors.similarities(
      vector,
      candidates.map((k) => k.chunkId),
    );
    const semantic = this.vectorSearch(vectors, vector, filter, depth, fetch, keyword.length > 0);
    return { keyword: candidates, semantic, cosine, keywordMax };
  }

  /**
   * Where a fused search gets its candidates' cosines (fused-cosines.ts): bounds from the int8
   * rows (the nearest chunks' are known already), exact values read from the vector table.
   */
  private cosineSource(
    vectors: VectorIndex,
    vector: Float32Array,
    near: readonly BoundedNearest[],
  ): CosineSource {
    const known = new Map(near.map((n) => [n.chunkId, n]));
    return {
      bounds: (ids) => {
        const bounds = vectors.cosineBounds(
          vector,
          ids.filter((id) => !known.has(id)),
        );
        for (const id of ids) {
          const n = known.get(id);
          if (n !== undefined) bounds.set(id, { lower: n.lower, upper: n.upper });
        }
        return bounds;
      },
      read: (ids) => vectors.similarities(vector, ids),
    };
  }

  /**
   * The scope as the indexes apply it: a metadata filter becomes the set of searchable documents
   * it matches, read in this transaction's snapshot, so the indexes restrict their candidates
   * before ranking (a filter never leaves fewer than `limit` when enough chunks match).
   */
  private scope(filter: SearchFilter): IndexScope {
    const projectId = filter.projectId === undefined ? {} : { projectId: filter.projectId };
    let documentIds = filter.documentIds;
    if (filter.documentId !== undefined) {
      documentIds = (documentIds ?? [filter.documentId]).filter((id) => id === filter.documentId);
    }
    if (filter.where === undefined) {
      return documentIds === undefined
        ? projectId
        : { ...projectId, documents: new Set(documentIds) };
    }
    const params: unknown[] = [];
    const condition = toSqlite(sqliteFilterSql(filter.where, 'd.'), params);
    let sql = `select d.id from knowledge_documents d where ${SEARCHABLE} and ${condition}`;
    if (filter.projectId !== undefined) {
      sql += ' and d.project_id = ?';
      params.push(filter.projectId);
    }
    if (documentIds !== undefined) {
      sql += ' and d.id in (select value from json_each(?))';
      params.push(JSON.stringify(documentIds));
    }
    const ids = this.statement(sql)
      .pluck()
      .all(...params) as string[];
    return { ...projectId, documents: new Set(ids) };
  }

  /** Keyword candidates by BM25, within the scope (public for the tests that compare with FTS5). */
  keywordSearch(text: string, filter: IndexScope, limit: number): Candidate[] {
    return this.keywordCandidates(this.keywords.parse(text), filter, limit);
  }

  private keywordCandidates(query: KeywordQuery, filter: IndexScope, limit: number): Candidate[] {
    const { lexemes } = query;
    if (lexemes === 'phrase') return this.keywords.phraseSearch(query, filter, limit);
    return lexemes.length === 0 ? [] : this.keywordInProcess(lexemes, filter, limit);
  }

  /**
   * The `limit` nearest chunks (by their int8 cosine, among `near`) that hold a query word and are
   * not keyword candidates already, with their BM25 as the keyword search scores it: a chunk close
   * in meaning that also matches, but below the keyword candidates' depth, is fused with both.
   */
  private nearestMatches(
    query: KeywordQuery,
    keyword: readonly Candidate[],
    near: readonly BoundedNearest[],
    limit: number,
  ): Candidate[] {
    const known = new Set(keyword.map((k) => k.chunkId));
    const nearest = near
      .filter((n) => !known.has(n.chunkId))
      .sort((a, b) => b.lower + b.upper - (a.lower + a.upper))
      .slice(0, limit);
    const scores = this.keywords.scoresOf(query, nearest);
    return nearest.flatMap((n) => {
      const score = scores.get(n.chunkId);
      return score === undefined ? [] : [{ chunkId: n.chunkId, score }];
    });
  }

  /**
   * Ranks with the in-process keyword index (FTS5's scores) and drops the chunks of unsearchable
   * documents (a failed re-index keeps its rows in the statistics, as FTS5 does); fetches deeper
   * while that left fewer than `limit`. Such chunks are rare, so the first search asks for
   * `limit` alone: a deeper top k lowers the pruning's floor (keyword-maxscore.ts); asking for 32
   * more cost every search ~9 % at 1M chunks (docs/performance.md).
   */
  private keywordInProcess(groups: number[][], filter: IndexScope, limit: number): Candidate[] {
    const index = this.copies.keywordIndex();
    return this.searchableResults(limit, limit, (fetch) => index.search(groups, filter, fetch))
      .slice(0, limit)
      .map((k) => ({ chunkId: k.chunkId, score: k.score }));
  }

  /** The candidates whose document is searchable (one lookup per distinct document). */
  private searchable<T extends { documentId: string }>(candidates: T[]): T[] {
    if (candidates.length === 0) return candidates;
    const documents = [...new Set(candidates.map((c) => c.documentId))];
    const ok = new Set(
      this.statement(SEARCHABLE_OF).pluck().all(JSON.stringify(documents)) as string[],
    );
    return ok.size === documents.length
      ? candidates
      : candidates.filter((c) => ok.has(c.documentId));
  }

  /** The vector copy of the model's table (current as of this transaction), if it has one. */
  private vectorIndexOf(vector: Float32Array, model: string): VectorIndex | null {
    const table = this.tables.find(model, vector.length);
    return table === null ? null : this.copies.vectorIndex(table, vector.length);
  }

  private vectorSearch(
    index: VectorIndex,
    vector: Float32Array,
    filter: IndexScope,
    limit: number,
    first: number,
    fused: boolean,
  ): Candidate[] {
    // Exact KNN in process; the scope filters apply before ranking, the status check after it
    // only drops chunks of failed re-indexes.
    const kept = this.searchableResults(first, limit, (fetch) =>
      index.search(vector, filter, fetch, fused),
    );
    return kept.slice(0, limit).map((n) => ({ chunkId: n.chunkId, score: n.score }));
  }

  /**
   * A fused search's nearest chunks before their cosines are read: the searchable ones of those
   * the index looks at for the `depth` nearest (with bounds of their cosines, in no order).
   */
  private nearestBounds(
    index: VectorIndex,
    vector: Float32Array,
    filter: IndexScope,
    depth: number,
  ): BoundedNearest[] {
    return this.searchableResults(depth, depth, (fetch) =>
      index.nearestBounds(vector, filter, fetch, true),
    );
  }

  /**
   * The searchable ones of a search's results for `fetch` (`find`), from `first` on and deeper
   * while fewer than `enough` are left (a run's staged rows are in the copies too).
   */
  private searchableResults<T extends { documentId: string }>(
    first: number,
    enough: number,
    find: (fetch: number) => T[],
  ): T[] {
    for (let fetch = first; ; fetch *= 4) {
      const nearest = find(fetch);
      const kept = this.searchable(nearest);
      if (kept.length >= enough || nearest.length < fetch) return kept;
    }
  }

  private hits(chunkIds: string[]): ChunkHit[] {
    if (chunkIds.length === 0) return [];
    return this.statement(
      `select c.*, d.name as document_name, d.project_id as project_id, d.source as source,
         d.metadata as document_metadata
       from knowledge_chunks c join knowledge_documents d on d.id = c.document_id
       where c.id in (select value from json_each(?)) and ${CURRENT}`,
    ).all(JSON.stringify(chunkIds)) as ChunkHit[];
  }
}
