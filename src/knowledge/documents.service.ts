/** Rules of knowledge documents: upload (with de-duplication), listing, chunks and deletion. */
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../errors.js';
import type { DocumentQuery, DocumentsRepository } from './documents.repository.js';
import type { KnowledgeEvents } from './events.js';
import { detectFileType, safeExtension, sanitizeFileName } from './file-type.js';
import type { KnowledgeChunk, KnowledgeDocument } from './knowledge.schemas.js';
import { toChunk, toDocument } from './mappers.js';
import type { ChunkStore } from './search/chunk-store.js';
import { documentKeys, type FileStorage, type PendingFile } from './storage/storage.js';

export interface UploadInput {
  file: PendingFile;
  fileName: string | undefined;
  projectId: string | undefined;
  source: string | undefined;
}

export class DocumentsService {
  constructor(
    private readonly repo: DocumentsRepository,
    private readonly store: ChunkStore,
    private readonly storage: FileStorage,
    private readonly log: FastifyBaseLogger,
    /** Cancels an indexing run of the document, if one is running here. */
    private readonly cancelIndexing: (id: string) => void = () => undefined,
    /** `document.created` and `document.deleted` are announced here. */
    private readonly events?: KnowledgeEvents,
  ) {}

  /**
   * Creates a document from a received file; byte-identical content in the same project returns
   * the existing document instead (`created: false`). The temporary file is always consumed.
   */
  async create(input: UploadInput): Promise<{ document: KnowledgeDocument; created: boolean }> {
    const { file } = input;
    try {
      if (file.size === 0) throw new AppError('KNOWLEDGE_DOCUMENT_EMPTY');
      const projectKey = input.projectId ?? '';
      const existing = await this.repo.findByChecksum(projectKey, file.checksum);
      if (existing !== undefined) return { document: toDocument(existing), created: false };

      const name = sanitizeFileName(input.fileName);
      const { fileType, mimeType } = await detectFileType(file.head, name);
      const id = randomUUID();
      const key = documentKeys.source(id, safeExtension(fileType));
      const now = new Date().toISOString();
      await file.commit(key);
      try {
        await this.repo.insert({
          id,
          name,
          file_type: fileType,
          mime_type: mimeType,
          source: input.source ?? 'upload',
          project_id: input.projectId ?? null,
          project_key: projectKey,
          version: 1,
          status: 'uploaded',
          checksum: file.checksum,
          size_bytes: file.size,
          file_path: key,
          markdown_path: null,
          converter_command: null,
          converter_meta: null,
          error_message: null,
          embedding_model: null,
          index_token: null,
          index_params: null,
          created_at: now,
          updated_at: now,
        });
      } catch (error) {
        await this.storage.removePrefix(documentKeys.prefix(id));
        // A concurrent upload of the same bytes won the unique index: answer with its document.
        const winner = await this.repo.findByChecksum(projectKey, file.checksum);
        if (winner !== undefined) return { document: toDocument(winner), created: false };
        throw error;
      }
      const document = toDocument(await this.getRow(id));
      this.events?.announce('document.created', document);
      return { document, created: true };
    } finally {
      await file.discard();
    }
  }

  async list(query: DocumentQuery): Promise<KnowledgeDocument[]> {
    return (await this.repo.list(query)).map(toDocument);
  }

  /** What the knowledge base holds, and how much of it needs re-embedding for `activeModel`. */
  async status(activeModel: string) {
    const { byStatus, stale } = await this.repo.counts(activeModel);
    const total = Object.values(byStatus).reduce((a, b) => a + b, 0);
    return { total, ...byStatus, stale };
  }

  private async getRow(id: string) {
    const row = await this.repo.findById(id);
    if (row === undefined)
      throw new AppError('KNOWLEDGE_DOCUMENT_NOT_FOUND', `Knowledge document ${id} not found.`);
    return row;
  }

  async get(id: string): Promise<KnowledgeDocument> {
    return toDocument(await this.getRow(id));
  }

  async chunks(id: string): Promise<KnowledgeChunk[]> {
    await this.getRow(id);
    return (await this.store.listChunks(id)).map(toChunk);
  }

  /**
   * Deletes the record with its chunks and index rows (one transaction), cancels a running index,
   * then removes the files. A file that cannot be removed is logged and swept at the next start.
   */
  async delete(id: string): Promise<void> {
    const projectId = (await this.repo.findById(id))?.project_id ?? null;
    if (!(await this.store.deleteDocument(id))) {
      throw new AppError('KNOWLEDGE_DOCUMENT_NOT_FOUND', `Knowledge document ${id} not found.`);
    }
    this.events?.announce('document.deleted', { id, projectId });
    this.cancelIndexing(id);
    try {
      await this.storage.removePrefix(documentKeys.prefix(id));
    } catch (error) {
      this.log.error(
        { err: error, documentId: id },
        'could not remove the files of a deleted document; they are swept at the next start',
      );
    }
  }

  /**
   * Removes file directories whose document no longer exists (a crash or a failed removal).
   * With storage shared between instances, a directory may belong to an upload another instance
   * is committing right now (files first, then the row): such candidates are checked again after
   * `graceMs` and removed only if their document still does not exist.
   */
  async sweepOrphanFiles(graceMs = 0): Promise<number> {
    const orphans = async (ids: string[]) => {
      const known = await this.repo.existingIds(ids);
      return ids.filter((id) => !known.has(id));
    };
    let candidates = await orphans(await this.storage.list(documentKeys.root));
    if (candidates.length > 0 && graceMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, graceMs).unref());
      candidates = await orphans(candidates);
    }
    for (const id of candidates) await this.storage.removePrefix(documentKeys.prefix(id));
    if (candidates.length > 0)
      this.log.info({ removed: candidates.length }, 'removed files of deleted documents');
    return candidates.length;
  }
}
