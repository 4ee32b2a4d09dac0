/**
 * Documents copied from another database (`aps migrate-data`), written as the store writes a
 * commit: keyword rows built by the same code (keyword-rows.ts: tsvector, BM25 statistics;
 * postings.ts) and vectors inserted into each model's table (vector-tables.ts), all in one
 * transaction with the rows the caller writes, so a batch of documents lands whole or not at all.
 */
import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '../../../db/postgres.js';
import {
  bumpKeywordGeneration,
  insertKeywordRows,
  keywordRows,
  updateStatistics,
  type KeywordRows,
} from './keyword/keyword-rows.js';
import { insertPostings, type ChunkPostings } from './keyword/postings.js';
import { Stemmer } from './keyword/words.js';
import { VectorTables } from './vector/vector-tables.js';

/** Chunks per statement (as commitIndex). */
const INSERT_BATCH = 1000;

/** What the keyword rows of a chunk are made of. */
export interface CopiedChunk {
  id: string;
  sectionPath: string;
  content: string;
}

/** Stored vectors of one model for some of a document's chunks. */
export interface CopiedVectors {
  model: string;
  dimensions: number;
  ids: string[];
  vectors: Float32Array[];
}

export interface CopiedDocument {
  id: string;
  /** In every keyword row of its chunks. */
  name: string;
  projectKey: string;
  /** Its current chunks (the caller writes their rows). */
  chunks: CopiedChunk[];
  vectors: CopiedVectors[];
}

/** Documents with their keyword rows built, ready for `write`. */
export interface PreparedDocuments {
  documents: readonly CopiedDocument[];
  keyword: KeywordRows[];
}

const NOTHING_REMOVED = { lexemes: [], counts: [], chunks: 0, tokens: 0 };

export class PostgresDocumentImport {
  private readonly stemmer = new Stemmer();
  private readonly vectors: VectorTables;

  constructor(private readonly pool: Pool) {
    // No graph is built here: the server builds each large table's graph once, at its start.
    this.vectors = new VectorTables(pool);
  }

  /** Creates the vector table of (model, dimensions) if missing (a model with no vectors yet). */
  async ensureVectorTable(model: string, dimensions: number): Promise<void> {
    try {
      await withTransaction(this.pool, 'begin', async (client) => {
        await this.vectors.table(client, model, dimensions, true);
      });
    } catch (error) {
      this.vectors.forget();
      throw error;
    }
  }

  /**
   * Builds the keyword rows of `documents` (outside any transaction, so that a caller may build
   * the next batch's while the previous one is written).
   */
  async prepare(documents: readonly CopiedDocument[]): Promise<PreparedDocuments> {
    const keyword = await this.withClient(async (client) => {
      const rows = [];
      for (const doc of documents) {
        rows.push(await keywordRows(client, this.stemmer, doc.name, doc.chunks));
      }
      return rows;
    });
    return { documents, keyword };
  }

  /**
   * Writes prepared documents in one transaction: `writeRows` first (the documents' and chunks'
   * rows), then each chunk's keyword row, postings, statistics and vectors. The documents must be
   * new to this database.
   */
  async write(
    prepared: PreparedDocuments,
    writeRows: (client: PoolClient) => Promise<void>,
  ): Promise<void> {
    const { documents, keyword } = prepared;
    const features = await this.vectors.loadFeatures();
    try {
      await withTransaction(this.pool, 'begin', async (client) => {
        await writeRows(client);
        const added = { chunks: 0, tokens: 0 };
        for (const [n, doc] of documents.entries()) {
          const rows = keyword[n];
          if (rows === undefined) throw new Error('keyword rows missing');
          const postings: ChunkPostings[] = [];
          for (let from = 0; from < doc.chunks.length; from += INSERT_BATCH) {
            const ids = doc.chunks.slice(from, from + INSERT_BATCH).map((c) => c.id);
            const batch = { keyword: rows, from };
            postings.push(...(await insertKeywordRows(client, ids, doc.id, doc.projectKey, batch)));
          }
          for (const set of doc.vectors) {
            const table = await this.vectors.table(client, set.model, set.dimensions, true);
            if (table === null) throw new Error('the vector table was not created');
            for (let from = 0; from < set.ids.length; from += INSERT_BATCH) {
              await this.vectors.insert(client, features, table, {
                ids: set.ids.slice(from, from + INSERT_BATCH),
                documentId: doc.id,
                projectKey: doc.projectKey,
                vectors: set.vectors.slice(from, from + INSERT_BATCH),
              });
            }
          }
          await insertPostings(client, doc.id, doc.projectKey, postings);
          added.chunks += doc.chunks.length;
          added.tokens += rows.tokenCounts.reduce((a, b) => a + b, 0);
        }
        // Once for the batch: each lexeme's count row is updated once, not once per document.
        await updateStatistics(
          client,
          documents.map((d) => d.id),
          NOTHING_REMOVED,
          added,
        );
        await bumpKeywordGeneration(client);
      });
    } catch (error) {
      this.vectors.forget(); // a table created in the rolled-back transaction is gone
      throw error;
    }
  }

  private async withClient<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      return await fn(client);
    } finally {
      client.release();
    }
  }
}
