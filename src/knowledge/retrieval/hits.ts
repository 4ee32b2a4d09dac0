/** A ranked chunk → the API's retrieval hit (the spec's field names). */
import { parseObject } from '../documents/records.js';
import type { ChunkHit } from '../search/chunk-store.js';
import type { Highlight } from './highlights.js';
import type { RetrievalHit } from './retrieval.schemas.js';

export function toHit(row: ChunkHit, score: number, highlights: Highlight[]): RetrievalHit {
  return {
    id: row.id,
    score,
    model: row.embedding_model,
    documentId: row.document_id,
    documentName: row.document_name,
    projectId: row.project_id,
    source: row.source,
    chunkIndex: row.chunk_index,
    sectionPath: row.section_path,
    page: row.page,
    pageEnd: row.page_end,
    content: row.content,
    highlights,
    metadata: parseObject(row.metadata) ?? {},
    documentMetadata: parseObject(row.document_metadata) ?? {},
  };
}
