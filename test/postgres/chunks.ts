/**
 * Chunks for the PostgreSQL store's tests: vectors, document rows being indexed, commits and
 * requests (shared by chunk-store.test.ts, vector-graph.test.ts and table-sizes.test.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/schema.js';
import type {
  ChunkStore,
  NewChunk,
  RankedHit,
  Ranking,
  SearchRequest,
} from '../../src/knowledge/search/chunk-store.js';

export const MODEL = 'test-model';
export const DIMS = 8;

export function unit(v: Float32Array): Float32Array {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n);
  return v.map((x) => x / n);
}

export function randomVector(random: () => number, dims = DIMS): Float32Array {
  return unit(Float32Array.from({ length: dims }, () => random() * 2 - 1));
}

/** `base` plus noise of the given size, normalised. */
export function near(base: Float32Array, random: () => number, noise: number): Float32Array {
  return unit(base.map((x) => x + (random() * 2 - 1) * noise));
}

export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
}

export interface Doc {
  id: string;
  token: string;
}

/** A document row being indexed (status `indexing`, holding an index token). */
export async function addDocument(
  db: Db,
  name: string,
  projectId: string | null = null,
  id: string = randomUUID(),
): Promise<Doc> {
  const token = randomUUID();
  const now = new Date().toISOString();
  await db
    .insertInto('knowledge_documents')
    .values({
      id,
      name,
      file_type: 'md',
      mime_type: 'text/markdown',
      source: 'upload',
      project_id: projectId,
      project_key: projectId ?? '',
      version: 0,
      status: 'indexing',
      checksum: id,
      size_bytes: 1,
      file_path: `knowledge/${id}/source`,
      markdown_path: null,
      converter_command: null,
      converter_meta: null,
      error_message: null,
      embedding_model: null,
      index_token: token,
      index_params: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return { id, token };
}

/** A new index token on the document, as a re-index request sets it. */
export async function newToken(db: Db, doc: Doc): Promise<Doc> {
  const token = randomUUID();
  await db
    .updateTable('knowledge_documents')
    .set({ index_token: token, status: 'indexing' })
    .where('id', '=', doc.id)
    .execute();
  return { id: doc.id, token };
}

let hashCounter = 0;
export function chunk(
  content: string,
  vector: Float32Array,
  extra: Partial<NewChunk> & { chunkIndex?: number } = {},
): NewChunk {
  return {
    id: randomUUID(),
    chunkIndex: 0,
    sectionPath: '',
    page: null,
    content,
    tokenEstimate: Math.ceil(content.length / 4),
    metadata: { startOffset: 0 },
    contentHash: `hash-${hashCounter++}`,
    vector,
    ...extra,
  };
}

export function indexed(chunks: NewChunk[]): NewChunk[] {
  return chunks.map((c, i) => ({ ...c, chunkIndex: i }));
}

export async function commit(
  store: ChunkStore,
  doc: Doc,
  chunks: NewChunk[],
  model = MODEL,
  dimensions = DIMS,
): Promise<'committed' | 'discarded'> {
  return store.commitIndex({
    documentId: doc.id,
    indexToken: doc.token,
    model,
    dimensions,
    chunks: indexed(chunks),
    document: {
      markdown_path: `knowledge/${doc.id}/md`,
      converter_command: 'test',
      converter_meta: '{}',
    },
  });
}

/** Rankings that keep one side's candidates in their order. */
export const keywordOnly: Ranking = { rank: (e) => e.keyword };
export const semanticOnly: Ranking = { rank: (e) => e.semantic };

export function request(partial: Partial<SearchRequest>): SearchRequest {
  return { text: null, vector: null, model: MODEL, filter: {}, limit: 100, ...partial };
}

export const ids = (hits: RankedHit[]) => hits.map((h) => h.chunk.id);
