/**
 * Rules of knowledge documents: upload (with de-duplication), listing, chunks and deletion. What
 * the rest of the module must hear (a document created or deleted, a run to cancel) goes out
 * through DocumentsHooks, which knowledge.module.ts wires to events/ and the indexing job: this
 * file imports neither.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../../errors.js';
import type { DocumentRow } from '../../db/schema.js';
import { orderOf, type DocumentQuery, type DocumentsRepository } from './documents.repository.js';
import { parseFilterJson } from '../filter/filter.js';
import { detectFileType, safeExtension, sanitizeFileName } from './file-type.js';
import {
  DOCUMENT_ORDERS,
  METADATA_LIMITS,
  type DocumentOrder,
  type DocumentMetadata,
  type KnowledgeChunk,
  type KnowledgeDocument,
  type PatchDocumentBody,
} from './documents.schemas.js';
import { toChunk, toDocument } from './records.js';
import type { ChunkStore } from '../search/chunk-store.js';
import type { FileStorage, PendingFile } from '../storage/storage.js';
import { documentKeys } from './storage-keys.js';

export interface UploadInput {
  file: PendingFile;
  fileName: string | undefined;
  projectId: string | undefined;
  source: string | undefined;
  /** The document's metadata (`{}` when unset); checked by checkMetadata. */
  metadata?: DocumentMetadata;
  /** The type to record instead of the detected one (text ingest: `md` or `txt`). */
  fileType?: { fileType: string; mimeType: string };
  /** The projects the creating key reaches (null or absent: every project): see projectFor. */
  projects?: readonly string[] | null;
}

/**
 * The project a new document goes to for a key restricted to `projects`: the one asked for if
 * the key reaches it, else 403; none asked: the key's only project, or 403 asking to name one.
 */
export function projectFor(
  asked: string | undefined,
  projects: readonly string[] | null | undefined,
): string | undefined {
  if (projects == null) return asked;
  if (asked === undefined) {
    if (projects.length === 1) return projects[0];
    throw new AppError(
      'AUTH_PROJECT_FORBIDDEN',
      `Your key reaches projects ${projects.join(', ')}: name one (projectId).`,
    );
  }
  if (!projects.includes(asked)) {
    throw new AppError('AUTH_PROJECT_FORBIDDEN', `Your key may not reach project "${asked}".`);
  }
  return asked;
}

/** The serialised metadata, or 400 when it is over METADATA_LIMITS.bytes (the schema checks the rest). */
export function metadataJson(metadata: DocumentMetadata | undefined): string {
  const json = JSON.stringify(metadata ?? {});
  if (Buffer.byteLength(json) > METADATA_LIMITS.bytes) {
    throw new AppError(
      'VALIDATION_ERROR',
      `metadata must be at most ${METADATA_LIMITS.bytes} bytes as JSON.`,
    );
  }
  return json;
}

/** A list request as the route passes it: `filter` as the JSON text of the query string. */
export type ListInput = Omit<DocumentQuery, 'where' | 'after'> & {
  filter?: string;
  cursor?: string;
};

export interface DocumentPage {
  items: KnowledgeDocument[];
  nextCursor: string | null;
}

export interface ProjectSummary {
  projectId: string | null;
  documentCount: number;
  chunkCount: number;
  updatedAt: string;
}

/** The cursor after `row` in `order`: base64url of the order, the row's sort value and its id. */
function encodeCursor(order: DocumentOrder, row: DocumentRow): string {
  const value = row[orderOf(order).column];
  return Buffer.from(JSON.stringify([order, value, row.id])).toString('base64url');
}

function decodeCursor(cursor: string, order: DocumentOrder): { value: string; id: string } {
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parts = null;
  }
  if (
    !Array.isArray(parts) ||
    parts.length !== 3 ||
    !parts.every((p) => typeof p === 'string') ||
    !(DOCUMENT_ORDERS as readonly string[]).includes(parts[0] as string)
  ) {
    throw new AppError('VALIDATION_ERROR', 'cursor is not a cursor this list returned');
  }
  const [made, value, id] = parts as [string, string, string];
  if (made !== order) {
    throw new AppError('VALIDATION_ERROR', `cursor belongs to order=${made}, not order=${order}`);
  }
  return { value, id };
}

/**
 * What the service tells the rest of the module, wired by knowledge.module.ts: a run to stop, and
 * the changes live views hear of (events/).
 */
export interface DocumentsHooks {
  /** Cancels an indexing run of the document, if one is running here. */
  cancelIndexing(documentId: string): void;
  /** `document.created` (the record) and `document.deleted` (its id and project). */
  announce(
    type: 'document.created' | 'document.deleted',
    document: KnowledgeDocument | { id: string; projectId: string | null },
  ): void;
}

/** Hooks that do nothing (a service on its own, as in tests). */
const NO_HOOKS: DocumentsHooks = { cancelIndexing: () => undefined, announce: () => undefined };

export class DocumentsService {
  constructor(
    private readonly repo: DocumentsRepository,
    private readonly store: ChunkStore,
    private readonly storage: FileStorage,
    private readonly log: FastifyBaseLogger,
    private readonly hooks: DocumentsHooks = NO_HOOKS,
  ) {}

  /**
   * Creates a document from a received file; byte-identical content in the same project returns
   * the existing document instead (`created: false`). The temporary file is always consumed.
   */
  async create(input: UploadInput): Promise<{ document: KnowledgeDocument; created: boolean }> {
    const { file } = input;
    try {
      const projectId = projectFor(input.projectId, input.projects);
      const metadata = metadataJson(input.metadata);
      if (file.size === 0) throw new AppError('KNOWLEDGE_DOCUMENT_EMPTY');
      const projectKey = projectId ?? '';
      const existing = await this.repo.findByChecksum(projectKey, file.checksum);
      if (existing !== undefined) return { document: toDocument(existing), created: false };

      const name = sanitizeFileName(input.fileName);
      const { fileType, mimeType } = input.fileType ?? (await detectFileType(file.head, name));
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
          project_id: projectId ?? null,
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
          metadata,
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
      this.hooks.announce('document.created', document);
      return { document, created: true };
    } finally {
      await file.discard();
    }
  }

  /**
   * One page of documents in `order` (default newest first) and the cursor of the next page (null
   * at the end). The cursor holds the last document's sort value and id (keyset paging), so each
   * document is listed once however many are added or deleted between pages.
   */
  async list(input: ListInput): Promise<DocumentPage> {
    const { filter, cursor, ...query } = input;
    const order = query.order ?? '-createdAt';
    const rows = await this.repo.list({
      ...query,
      order,
      ...(filter === undefined ? {} : { where: parseFilterJson(filter) }),
      ...(cursor === undefined ? {} : { after: decodeCursor(cursor, order) }),
      limit: query.limit + 1,
    });
    const more = rows.length > query.limit;
    const page = more ? rows.slice(0, query.limit) : rows;
    const last = page.at(-1);
    return {
      items: page.map(toDocument),
      nextCursor: more && last !== undefined ? encodeCursor(order, last) : null,
    };
  }

  /**
   * The projects in use (documents without a project: one row, `projectId` null, first), with
   * their documents, current chunks and newest `updatedAt`.
   */
  async projects(only: readonly string[] | null = null): Promise<ProjectSummary[]> {
    const [documents, chunks] = await Promise.all([
      this.repo.projectCounts(),
      this.store.chunkCountsByProject(),
    ]);
    return documents
      .filter((d) => only === null || (d.projectId !== null && only.includes(d.projectId)))
      .map((d) => ({ ...d, chunkCount: chunks.get(d.projectId) ?? 0 }))
      .sort((a, b) =>
        a.projectId === b.projectId
          ? 0
          : a.projectId === null
            ? -1
            : b.projectId === null
              ? 1
              : a.projectId < b.projectId
                ? -1
                : 1,
      );
  }

  /** Current chunks of all documents (the metrics' `aps_chunks`; one grouped count). */
  async chunkCount(): Promise<number> {
    let total = 0;
    for (const count of (await this.store.chunkCountsByProject()).values()) total += count;
    return total;
  }

  /** What the knowledge base holds, and how much of it needs re-embedding for `activeModel`. */
  async status(activeModel: string) {
    const { byStatus, stale } = await this.repo.counts(activeModel);
    const total = Object.values(byStatus).reduce((a, b) => a + b, 0);
    return { total, ...byStatus, stale };
  }

  /** The visible documents of these projects. */
  idsInProjects(projects: readonly string[]): Promise<string[]> {
    return this.repo.idsInProjects(projects);
  }

  /** A document's project (null: none); undefined when there is no such document. */
  projectOf(id: string): Promise<string | null | undefined> {
    return this.repo.projectOf(id);
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

  /** Renames the document and/or replaces its metadata (the whole object). */
  async update(id: string, patch: PatchDocumentBody): Promise<KnowledgeDocument> {
    const changes = {
      ...(patch.name === undefined ? {} : { name: sanitizeFileName(patch.name) }),
      ...(patch.metadata === undefined ? {} : { metadata: metadataJson(patch.metadata) }),
    };
    if (!(await this.repo.update(id, changes))) {
      throw new AppError('KNOWLEDGE_DOCUMENT_NOT_FOUND', `Knowledge document ${id} not found.`);
    }
    return toDocument(await this.getRow(id));
  }

  async chunks(id: string): Promise<KnowledgeChunk[]> {
    await this.getRow(id);
    return (await this.store.listChunks(id)).map(toChunk);
  }

  /**
   * Hides the document (one short statement: it is gone from every read at once), cancels a
   * running index, then purges its rows and files in the background, in slices. A purge cut short
   * (shutdown, crash) is finished at the next start (resumePurges).
   */
  async delete(id: string): Promise<void> {
    const projectId = (await this.repo.findById(id))?.project_id ?? null;
    if (!(await this.store.hideDocument(id))) {
      throw new AppError('KNOWLEDGE_DOCUMENT_NOT_FOUND', `Knowledge document ${id} not found.`);
    }
    this.hooks.announce('document.deleted', { id, projectId });
    this.hooks.cancelIndexing(id);
    this.purgeInBackground(id);
  }

  /** Purges running in the background, by document id. */
  private readonly purges = new Map<string, Promise<void>>();
  private closing = false;

  private purgeInBackground(id: string): void {
    if (this.purges.has(id)) return;
    const done = this.purge(id).finally(() => this.purges.delete(id));
    this.purges.set(id, done);
  }

  /** A hidden document's rows, then its files; failures are logged and retried at the next start. */
  private async purge(id: string): Promise<void> {
    try {
      await this.store.purgeDocument(id, () => this.closing);
      if (this.closing) return;
    } catch (error) {
      if (!this.closing) {
        this.log.error({ err: error, documentId: id }, 'purging a deleted document failed');
      }
      return;
    }
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
   * At start: purges what a crash left (a run's staged rows, a replaced version's) and resumes
   * the purges of documents deleted before the stop, in the background.
   */
  async resumePurges(): Promise<number> {
    const hidden = await this.store.purgeLeftovers(() => this.closing);
    for (const id of hidden) this.purgeInBackground(id);
    return hidden.length;
  }

  /** The purges in progress, finished (for tests and benchmarks). */
  async settled(): Promise<void> {
    while (this.purges.size > 0) await Promise.all(this.purges.values());
  }

  /** Stops the background purges between two slices (the next start resumes them). */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.purges.values());
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
