/**
 * Database rows → API resources (the spec's field names): a document (toDocument) and a chunk
 * (toChunk). A retrieval hit is made in retrieval/hits.ts.
 */
import type { ChunkRow, DocumentRow } from '../../db/schema.js';
import type { KnowledgeChunk, KnowledgeDocument, Progress } from './documents.schemas.js';

/** A JSON object column (metadata, converter details), or null. */
export function parseObject(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  const value: unknown = JSON.parse(text);
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : null;
}

/** A document's metadata column (JSON text, `{}` by default). */
function parseMetadata(text: string): KnowledgeDocument['metadata'] {
  return (parseObject(text) ?? {}) as KnowledgeDocument['metadata'];
}

/** The run's progress while the document is indexing (queued until the run reports), else null. */
function toProgress(row: DocumentRow): Progress | null {
  if (row.status !== 'indexing') return null;
  const stored = parseObject(row.progress) as Progress | null;
  return stored ?? { stage: 'queued', done: 0, total: null };
}

export function toDocument(row: DocumentRow): KnowledgeDocument {
  return {
    id: row.id,
    name: row.name,
    fileType: row.file_type,
    mimeType: row.mime_type,
    source: row.source,
    projectId: row.project_id,
    version: row.version,
    status: row.status,
    checksum: row.checksum,
    sizeBytes: row.size_bytes,
    filePath: row.file_path,
    markdownPath: row.markdown_path,
    converterCommand: row.converter_command,
    converterMeta: parseObject(row.converter_meta),
    errorMessage: row.error_message,
    embeddingModel: row.embedding_model,
    metadata: parseMetadata(row.metadata),
    progress: toProgress(row),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toChunk(row: ChunkRow): KnowledgeChunk {
  return {
    id: row.id,
    documentId: row.document_id,
    chunkIndex: row.chunk_index,
    sectionPath: row.section_path,
    page: row.page,
    pageEnd: row.page_end,
    content: row.content,
    tokenEstimate: row.token_estimate,
    metadata: parseObject(row.metadata) ?? {},
    createdAt: row.created_at,
  };
}
