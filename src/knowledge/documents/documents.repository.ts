/**
 * SQL for knowledge documents (chunks and index rows live in the ChunkStore).
 *
 * A document's status, and who writes each transition (every one a single conditional UPDATE,
 * so concurrent requests and instances cannot both win):
 *
 *   (new) → uploaded             DocumentsService.create → insert
 *   uploaded | indexed | failed
 *         → indexing             IndexingService.index → beginIndex (a fresh index_token;
 *                                already indexing → 409); after a restart resumeIndex hands a
 *                                document left indexing to a new run (a new token)
 *   indexing → indexed           ChunkStore.commitIndex, in the transaction that swaps the
 *                                chunks, only while the run's token is still there (the
 *                                column list: indexedDocument in search/chunk-store.ts)
 *   indexing → failed            IndexingService (the run failed, or its job was abandoned) →
 *                                failIndex, only while the run's token is still there
 *   any → (deleted)              DocumentsService.delete → ChunkStore.hideDocument (the row
 *                                becomes `deleting`: no query here returns it, the run finds
 *                                its token gone and writes nothing), then purgeDocument in slices
 */
import type { Insertable } from 'kysely';
import type { Db, DocumentRow, DocumentStatus, KnowledgeDocumentsTable } from '../../db/schema.js';
import type { FilterNode } from '../filter/filter.js';
import type { DocumentOrder } from './documents.schemas.js';
import { toKysely, type DocumentSql } from '../filter/sql.js';

/**
 * The row state of a document being deleted (migration 0011, ChunkStore.hideDocument): not a
 * status of the API; every query here leaves such rows out.
 */
export const HIDDEN = 'deleting' as string as DocumentStatus;

const ORDER_COLUMNS = { createdAt: 'created_at', updatedAt: 'updated_at', name: 'name' } as const;

/** The sort column and direction of an order (ties broken by id, in the same direction). */
export function orderOf(order: DocumentOrder): {
  column: (typeof ORDER_COLUMNS)[keyof typeof ORDER_COLUMNS];
  descending: boolean;
} {
  const descending = order.startsWith('-');
  const field = (descending ? order.slice(1) : order) as keyof typeof ORDER_COLUMNS;
  return { column: ORDER_COLUMNS[field], descending };
}

export interface DocumentQuery {
  projectId?: string;
  /** Only documents of these projects (a key restricted to them); null or absent: every one. */
  projects?: readonly string[] | null;
  status?: DocumentStatus;
  /** Only documents whose chunks were embedded with another model than this one. */
  staleFor?: string;
  /** Only documents this filter matches. */
  where?: FilterNode;
  /** Only documents whose name contains this, in any case. */
  q?: string;
  /** Default `-createdAt` (newest first). */
  order?: DocumentOrder;
  /** Only documents after this one in the order: its sort value and id (keyset paging). */
  after?: { value: string; id: string };
  limit: number;
}

export class DocumentsRepository {
  constructor(
    private readonly db: Db,
    /** The engine's filter SQL (filter/sql.ts), for lists with `where` or `q`. */
    private readonly sql?: DocumentSql,
  ) {}

  async insert(row: Insertable<KnowledgeDocumentsTable>): Promise<void> {
    await this.db.insertInto('knowledge_documents').values(row).execute();
  }

  findById(id: string): Promise<DocumentRow | undefined> {
    return this.db
      .selectFrom('knowledge_documents')
      .selectAll()
      .where('id', '=', id)
      .where('status', '!=', HIDDEN)
      .executeTakeFirst();
  }

  /** Which of `ids` are documents (one query per 500 ids). */
  /** The visible documents of these projects. */
  async idsInProjects(projects: readonly string[]): Promise<string[]> {
    if (projects.length === 0) return [];
    const rows = await this.db
      .selectFrom('knowledge_documents')
      .select('id')
      .where('project_id', 'in', [...projects])
      .where('status', '!=', HIDDEN)
      .execute();
    return rows.map((r) => r.id);
  }

  /** A visible document's project (null: none); undefined when there is no such document. */
  async projectOf(id: string): Promise<string | null | undefined> {
    const row = await this.db
      .selectFrom('knowledge_documents')
      .select('project_id')
      .where('id', '=', id)
      .where('status', '!=', HIDDEN)
      .executeTakeFirst();
    return row?.project_id;
  }

  async existingIds(ids: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let i = 0; i < ids.length; i += 500) {
      const rows = await this.db
        .selectFrom('knowledge_documents')
        .select('id')
        .where('id', 'in', ids.slice(i, i + 500))
        .execute();
      for (const r of rows) found.add(r.id);
    }
    return found;
  }

  findByChecksum(projectKey: string, checksum: string): Promise<DocumentRow | undefined> {
    return this.db
      .selectFrom('knowledge_documents')
      .selectAll()
      .where('project_key', '=', projectKey)
      .where('checksum', '=', checksum)
      .executeTakeFirst();
  }

  list(query: DocumentQuery): Promise<DocumentRow[]> {
    let q = this.db.selectFrom('knowledge_documents').selectAll().where('status', '!=', HIDDEN);
    if (query.projectId !== undefined) q = q.where('project_id', '=', query.projectId);
    if (query.projects != null) q = q.where('project_id', 'in', [...query.projects]);
    if (query.status !== undefined) q = q.where('status', '=', query.status);
    if (query.staleFor !== undefined) {
      q = q.where('embedding_model', 'is not', null).where('embedding_model', '!=', query.staleFor);
    }
    if (query.where !== undefined) q = q.where(toKysely(this.sqlOf().filter(query.where, '')));
    if (query.q !== undefined) q = q.where(toKysely(this.sqlOf().nameContains(query.q, '')));
    const { column, descending } = orderOf(query.order ?? '-createdAt');
    const direction = descending ? 'desc' : 'asc';
    const after = query.after;
    if (after !== undefined) {
      const beyond = descending ? '<' : '>';
      q = q.where((eb) =>
        eb.or([
          eb(column, beyond, after.value),
          eb.and([eb(column, '=', after.value), eb('id', beyond, after.id)]),
        ]),
      );
    }
    return q.orderBy(column, direction).orderBy('id', direction).limit(query.limit).execute();
  }

  /** The engine's filter SQL; a repository made without one cannot filter. */
  private sqlOf(): DocumentSql {
    if (this.sql === undefined) throw new Error('this repository was made without filter SQL');
    return this.sql;
  }

  /** Per project (null: documents without one): documents and their newest `updated_at`. */
  async projectCounts(): Promise<
    { projectId: string | null; documentCount: number; updatedAt: string }[]
  > {
    const rows = await this.db
      .selectFrom('knowledge_documents')
      .select((eb) => [
        'project_id',
        eb.fn.countAll<string | number>().as('n'),
        eb.fn.max('updated_at').as('updated_at'),
      ])
      .where('status', '!=', HIDDEN)
      .groupBy('project_id')
      .execute();
    return rows.map((r) => ({
      projectId: r.project_id,
      documentCount: Number(r.n),
      updatedAt: r.updated_at,
    }));
  }

  /**
   * Moves a document to `indexing` unless it is already there; returns false when another run holds
   * it (or it does not exist).
   */
  async beginIndex(id: string, token: string, params: string): Promise<boolean> {
    const result = await this.db
      .updateTable('knowledge_documents')
      .set({
        status: 'indexing',
        index_token: token,
        index_params: params,
        progress: null,
        updated_at: new Date().toISOString(),
      })
      .where('id', '=', id)
      .where('status', '!=', 'indexing')
      .where('status', '!=', HIDDEN)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Marks the run `token` failed; a run that lost its token (deleted, superseded) changes nothing. */
  async failIndex(id: string, token: string, message: string): Promise<void> {
    await this.db
      .updateTable('knowledge_documents')
      .set({
        status: 'failed',
        error_message: message,
        index_token: null,
        updated_at: new Date().toISOString(),
      })
      .where('id', '=', id)
      .where('index_token', '=', token)
      .execute();
  }

  /** Renames and/or sets the metadata (JSON text); false when the document does not exist. */
  async update(id: string, changes: { name?: string; metadata?: string }): Promise<boolean> {
    const result = await this.db
      .updateTable('knowledge_documents')
      .set({ ...changes, updated_at: new Date().toISOString() })
      .where('id', '=', id)
      .where('status', '!=', HIDDEN)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Records the progress of the run `token`; a run that lost its token changes nothing. */
  async setProgress(id: string, token: string, progress: string): Promise<boolean> {
    const result = await this.db
      .updateTable('knowledge_documents')
      .set({ progress })
      .where('id', '=', id)
      .where('index_token', '=', token)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Document counts by status, and how many hold chunks of another model than `activeModel`. */
  async counts(
    activeModel: string,
  ): Promise<{ byStatus: Record<DocumentStatus, number>; stale: number }> {
    const rows = await this.db
      .selectFrom('knowledge_documents')
      .select((eb) => [
        'status',
        eb.fn.countAll<string | number>().as('n'),
        eb.fn
          .sum<string | number | null>(
            eb.case().when('embedding_model', '!=', activeModel).then(1).else(0).end(),
          )
          .as('stale'),
      ])
      .where('status', '!=', HIDDEN)
      .groupBy('status')
      .execute();
    const byStatus: Record<DocumentStatus, number> = {
      uploaded: 0,
      indexing: 0,
      indexed: 0,
      failed: 0,
    };
    let stale = 0;
    for (const row of rows) {
      byStatus[row.status] = Number(row.n);
      stale += Number(row.stale ?? 0);
    }
    return { byStatus, stale };
  }

  /**
   * Gives a document left `indexing` under `oldToken` to a new run; false when someone else took
   * it first (or it changed meanwhile).
   */
  async resumeIndex(id: string, oldToken: string | null, token: string): Promise<boolean> {
    const result = await this.db
      .updateTable('knowledge_documents')
      .set({ index_token: token, updated_at: new Date().toISOString() })
      .where('id', '=', id)
      .where('status', '=', 'indexing')
      .where('index_token', oldToken === null ? 'is' : '=', oldToken)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * A later attempt of the job `jobToken` takes its document over under `token` (from the
   * job's own token or an earlier attempt's, `<jobToken>#<attempt>`); false when the document is
   * no longer indexed by this job (committed, failed, deleted or re-requested meanwhile).
   */
  async takeOverIndex(id: string, jobToken: string, token: string): Promise<boolean> {
    const result = await this.db
      .updateTable('knowledge_documents')
      .set({ index_token: token, updated_at: new Date().toISOString() })
      .where('id', '=', id)
      .where('status', '=', 'indexing')
      .where((eb) =>
        eb.or([eb('index_token', '=', jobToken), eb('index_token', 'like', `${jobToken}#%`)]),
      )
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Documents left `indexing` by a previous process. */
  listIndexing(): Promise<DocumentRow[]> {
    return this.db
      .selectFrom('knowledge_documents')
      .selectAll()
      .where('status', '=', 'indexing')
      .execute();
  }
}
