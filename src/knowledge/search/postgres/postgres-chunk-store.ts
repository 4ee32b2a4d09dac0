/**
 * ChunkStore on PostgreSQL: chunk rows, a tsvector keyword table scored with FTS5's BM25
 * (keyword-rows.ts, keyword-search.ts) and pgvector tables with HNSW indexes (vector-tables.ts),
 * written together in one transaction; searched by postgres-searches.ts.
 */
import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '../../../db/postgres.js';
import type { ChunkRow } from '../../../db/schema.js';
import {
  checkAlsoVectors,
  markIndexedSql,
  type ChunkStore,
  type IndexCommit,
  type RankedHit,
  type Ranking,
  type SearchRequest,
  type StoreLog,
  type VectorCoverage,
} from '../chunk-store.js';
import { parseVector } from './encoding.js';
import {
  deleteKeywordRows,
  insertKeywordRows,
  keywordRows,
  purgeKeywordRows,
  updateStatistics,
  bumpKeywordGeneration,
  type Removed,
} from './keyword/keyword-rows.js';
import { KeywordSearch } from './keyword/keyword-search.js';
import { PostgresSearches } from './postgres-searches.js';
import { deletePostings, insertPostings, type ChunkPostings } from './keyword/postings.js';
import { GraphBuilds } from './vector/vector-graph.js';
import { dropOtherVectors, otherModelsStored, vectorCoverage } from './vector/model-vectors.js';
import { EXACT_SEARCH_MAX, VectorTables } from './vector/vector-tables.js';
import { Stemmer } from './keyword/words.js';

/** Chunks written per statement by commitIndex. */
const INSERT_BATCH = 1000;
/** Chunks of a hidden document deleted per transaction by purgeDocument. */
const PURGE_BATCH = 1000;

export class PostgresChunkStore implements ChunkStore {
  private readonly vectors: VectorTables;
  private readonly graphs: GraphBuilds;
  private readonly searches: PostgresSearches;
  private readonly stemmer = new Stemmer();

  constructor(
    private readonly pool: Pool,
    options: {
      /**
       * Scopes of up to this many chunks are searched exactly (default 10,000), and a vector
       * table gets its HNSW graph when it holds more.
       */
      exactSearchMax?: number;
      /** Where the graph builds are told of (start, end, failure). */
      log?: StoreLog;
    } = {},
  ) {
    const exactSearchMax = options.exactSearchMax ?? EXACT_SEARCH_MAX;
    this.vectors = new VectorTables(pool, exactSearchMax);
    this.graphs = new GraphBuilds(pool, exactSearchMax, options.log);
    this.searches = new PostgresSearches(pool, this.vectors, new KeywordSearch(this.stemmer));
  }

  private transaction<T>(begin: string, fn: (client: PoolClient) => Promise<T>): Promise<T> {
    return withTransaction(this.pool, begin, fn);
  }

  // --- writing ----------------------------------------------------------------------------------

  /** Deletes the document's chunks and their index rows (vectors of every model). */
  private async deleteChunks(client: PoolClient, documentId: string): Promise<Removed> {
    const removed = await deleteKeywordRows(client, documentId);
    await deletePostings(client, documentId);
    for (const table of await this.vectors.all(client)) {
      await client.query(`delete from ${table} where document_id = $1`, [documentId]);
    }
    await client.query('delete from knowledge_chunks where document_id = $1', [documentId]);
    return removed;
  }

  /** The keyword rows of a commit, built before its transaction (in slices: keyword-rows.ts). */
  private async keywordRowsOf(commit: IndexCommit, name: string) {
    const client = await this.pool.connect();
    try {
      return await keywordRows(client, this.stemmer, name, commit.chunks);
    } finally {
      client.release();
    }
  }

  async commitIndex(commit: IndexCommit): Promise<'committed' | 'discarded'> {
    checkAlsoVectors(commit);
    const features = await this.vectors.loadFeatures();
    const named = await this.pool.query<{ name: string }>(
      'select name from knowledge_documents where id = $1 and index_token = $2',
      [commit.documentId, commit.indexToken],
    );
    const name = named.rows[0]?.name;
    if (name === undefined) return 'discarded';
    let keyword = await this.keywordRowsOf(commit, name);
    let written: { name: string; dimensions: number }[] = [];
    try {
      const outcome = await this.transaction('begin', async (client) => {
        const doc = (
          await client.query<{ name: string; project_key: string }>(
            `select name, project_key from knowledge_documents
             where id = $1 and index_token = $2 for update`,
            [commit.documentId, commit.indexToken],
          )
        ).rows[0];
        if (doc === undefined) return 'discarded';
        // Renamed meanwhile: the name is in every keyword row.
        if (doc.name !== name)
          keyword = await keywordRows(client, this.stemmer, doc.name, commit.chunks);
        const table = await this.vectors.table(client, commit.model, commit.dimensions, true);
        if (table === null) throw new Error('the vector table was not created');
        // A model switch: the same chunks' vectors of the model that answers meanwhile.
        const also = [];
        for (const other of commit.alsoVectors ?? []) {
          const into = await this.vectors.table(client, other.model, other.dimensions, true);
          if (into === null) throw new Error('the vector table was not created');
          also.push({ table: into, vectors: other.vectors });
        }
        const removed = await this.deleteChunks(client, commit.documentId);
        const now = new Date().toISOString();
        const chunks = commit.chunks;
        const { tokenCounts } = keyword;
        const postings: ChunkPostings[] = [];
        // In batches: every statement stays well inside the statement timeout (inserting into the
        // HNSW index takes a few milliseconds per vector).
        for (let from = 0; from < chunks.length; from += INSERT_BATCH) {
          const batch = chunks.slice(from, from + INSERT_BATCH);
          const ids = batch.map((c) => c.id);
          await client.query(
            `insert into knowledge_chunks (id, document_id, chunk_index, section_path, page, content,
               token_estimate, metadata, embedding_model, embedding_dimensions, content_hash, created_at,
               page_end)
             select t.id, $2, t.chunk_index, t.section_path, t.page, t.content, t.token_estimate,
               t.metadata, $3, $4, t.content_hash, $5, t.page_end
             from unnest($1::text[], $6::int[], $7::text[], $8::int[], $9::text[], $10::int[],
               $11::text[], $12::text[], $13::int[])
               as t(id, chunk_index, section_path, page, content, token_estimate, metadata, content_hash,
                 page_end)`,
            [
              ids,
              commit.documentId,
              commit.model,
              commit.dimensions,
              now,
              batch.map((c) => c.chunkIndex),
              batch.map((c) => c.sectionPath),
              batch.map((c) => c.page),
              batch.map((c) => c.content),
              batch.map((c) => c.tokenEstimate),
              batch.map((c) => JSON.stringify(c.metadata)),
              batch.map((c) => c.contentHash),
              batch.map((c) => c.pageEnd ?? c.page),
            ],
          );
          postings.push(
            ...(await insertKeywordRows(client, ids, commit.documentId, doc.project_key, {
              keyword,
              from,
            })),
          );
          await this.vectors.insert(client, features, table, {
            ids,
            documentId: commit.documentId,
            projectKey: doc.project_key,
            vectors: batch.map((c) => c.vector),
          });
          for (const other of also) {
            await this.vectors.insert(client, features, other.table, {
              ids,
              documentId: commit.documentId,
              projectKey: doc.project_key,
              vectors: other.vectors.slice(from, from + INSERT_BATCH),
            });
          }
        }
        await insertPostings(client, commit.documentId, doc.project_key, postings);
        const update = markIndexedSql(commit, now, (n) => `$${n}`);
        await client.query(update.sql, update.params);
        await updateStatistics(client, commit.documentId, removed, {
          chunks: chunks.length,
          tokens: tokenCounts.reduce((a, b) => a + b, 0),
        });
        await bumpKeywordGeneration(client);
        written = [table, ...also.map((a) => a.table)];
        return 'committed' as const;
      });
      // Past `exactSearchMax` chunks, a table gets its graph (in the background, once).
      for (const table of written) this.graphs.schedule(table, commit.chunks.length);
      return outcome;
    } catch (error) {
      this.vectors.forget(); // e.g. pgvector re-created with another type oid
      throw error;
    }
  }

  async deleteDocument(documentId: string): Promise<boolean> {
    if (!(await this.hideDocument(documentId))) return false;
    await this.purgeDocument(documentId);
    return true;
  }

  async hideDocument(documentId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `update knowledge_documents
       set status = 'deleting', index_token = null, checksum = 'deleting:' || id, updated_at = $2
       where id = $1 and status <> 'deleting'`,
      [documentId, new Date().toISOString()],
    );
    return (rowCount ?? 0) > 0;
  }

  /** In transactions of PURGE_BATCH chunks: no long lock, no statement near the timeout. */
  async purgeDocument(documentId: string, stop: () => boolean = () => false): Promise<void> {
    while (!stop()) {
      const purged = await this.transaction('begin', async (client) => {
        const { rows } = await client.query<{ id: string }>(
          `select c.id from knowledge_chunks c join knowledge_documents d on d.id = c.document_id
           where c.document_id = $1 and d.status = 'deleting' limit ${PURGE_BATCH}`,
          [documentId],
        );
        const ids = rows.map((r) => r.id);
        if (ids.length === 0) return 0;
        await purgeKeywordRows(client, ids);
        // Postings rows are per document (it is hidden: no search reads them).
        await deletePostings(client, documentId);
        await bumpKeywordGeneration(client);
        for (const table of await this.vectors.all(client)) {
          await client.query(`delete from ${table} where chunk_id = any($1::text[])`, [ids]);
        }
        await client.query('delete from knowledge_chunks where id = any($1::text[])', [ids]);
        return ids.length;
      });
      if (purged === 0) break;
    }
    if (stop()) return;
    await this.pool.query(`delete from knowledge_documents where id = $1 and status = 'deleting'`, [
      documentId,
    ]);
  }

  /**
   * Chunks are swapped in one transaction here: only hidden documents can be left. A graph build
   * a stop cut short, or one a table made before is due, starts again (in the background).
   */
  async purgeLeftovers(): Promise<string[]> {
    await this.graphs.scheduleAll();
    const { rows } = await this.pool.query<{ id: string }>(
      `select id from knowledge_documents where status = 'deleting'`,
    );
    return rows.map((r) => r.id);
  }

  async dropVectors(keep: string, stop: () => boolean = () => false): Promise<string[]> {
    const dropped = await dropOtherVectors(this.pool, keep, stop);
    this.vectors.forgetTables();
    for (const { table } of dropped) this.graphs.forget(table);
    return [...new Set(dropped.map((d) => d.model))];
  }

  // --- reading ----------------------------------------------------------------------------------

  otherModelsStored(target: string): Promise<boolean> {
    return otherModelsStored(this.pool, target);
  }

  vectorCoverage(target: string): Promise<VectorCoverage> {
    return vectorCoverage(this.pool, target);
  }

  async listChunks(documentId: string): Promise<ChunkRow[]> {
    const { rows } = await this.pool.query<ChunkRow>(
      'select * from knowledge_chunks where document_id = $1 order by chunk_index',
      [documentId],
    );
    return rows;
  }

  async chunkCountsByProject(): Promise<Map<string | null, number>> {
    const { rows } = await this.pool.query<{ project_id: string | null; n: number }>(
      `select d.project_id, count(*)::int as n from knowledge_chunks c
       join knowledge_documents d on d.id = c.document_id
       where d.status <> 'deleting' group by d.project_id`,
    );
    return new Map(rows.map((r) => [r.project_id, r.n]));
  }

  async cachedVectors(
    model: string,
    dimensions: number,
    hashes: string[],
  ): Promise<Map<string, Float32Array>> {
    const result = new Map<string, Float32Array>();
    if (hashes.length === 0) return result;
    const table = await this.vectors.table(this.pool, model, dimensions, false);
    if (table === null) return result;
    // One vector per hash, of its smallest chunk id (as on SQLite).
    const { rows } = await this.pool.query<{ hash: string; embedding: string }>(
      `select distinct on (c.content_hash) c.content_hash as hash, v.embedding::text as embedding
       from knowledge_chunks c join ${table.name} v on v.chunk_id = c.id
       where c.embedding_model = $1 and c.embedding_dimensions = $2
         and c.content_hash = any($3::text[])
       order by c.content_hash, c.id`,
      [model, dimensions, hashes],
    );
    for (const row of rows) result.set(row.hash, parseVector(row.embedding));
    return result;
  }

  /** Searches run in the database: nothing to load. */
  warm(): Promise<number> {
    return Promise.resolve(0);
  }

  /** Runs the graph builds due and resolves when none is left running (tests, benchmarks). */
  async buildGraphs(): Promise<void> {
    await this.graphs.scheduleAll();
    await this.graphs.settled();
  }

  /** Resolves when the size estimates searches asked for have arrived (tests, benchmarks). */
  settled(): Promise<void> {
    return this.vectors.sizes.settled();
  }

  /** Cancels a graph build in progress (the next start builds it again). */
  async close(): Promise<void> {
    await this.graphs.close();
    await this.vectors.sizes.settled();
  }

  search(request: SearchRequest, rank: Ranking): Promise<RankedHit[]> {
    return this.searches.search(request, rank);
  }
}
