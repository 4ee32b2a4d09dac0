/**
 * Indexing requests: starting a run (the document moves to `indexing` under a fresh token and a
 * `knowledgeIndex` job is queued, see index-job.ts), re-indexing, and taking over runs a crash or
 * restart interrupted. The run itself is index-pipeline.ts.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { isDatabaseUnavailable, retryWhileUnavailable } from '../../db/unavailable.js';
import { AppError } from '../../errors.js';
import type { JobQueue } from '../../queue/queue.js';
import type { ConverterCommand } from './converting/commands.js';
import type { KnowledgeEvents } from '../events/events.js';
import type { DocumentsRepository } from '../documents/documents.repository.js';
import { INDEX_JOB, indexJobPayload } from './index-job.js';
import type { IndexParams, IndexResult } from './index-pipeline.js';
import { MAX_CHARS, type IndexBody } from './indexing.schemas.js';
import { type KnowledgeDocument } from '../documents/documents.schemas.js';
import { toDocument } from '../documents/records.js';

interface IndexingDeps {
  repo: DocumentsRepository;
  queue: JobQueue;
  commands: readonly ConverterCommand[];
  log: FastifyBaseLogger;
  events: KnowledgeEvents;
}

/**
 * Resolves defaults and checks bounds (400, never clamped), except the overlap: any overlap below
 * maxChars is accepted, as the reference server does, and at most half a chunk is applied (the
 * chunker's bound); the run records both. The schema cannot compare two fields, hence this check.
 */
function indexParams(body: IndexBody, commands: readonly ConverterCommand[]): IndexParams {
  const commandId = body.commandId ?? 'auto';
  if (!commands.some((c) => c.id === commandId)) {
    throw new AppError(
      'KNOWLEDGE_COMMAND_NOT_FOUND',
      `Unknown converter command "${commandId}"; available: ${commands.map((c) => c.id).join(', ')}.`,
    );
  }
  const maxChars = body.maxChars ?? MAX_CHARS.default;
  const requested = body.overlapChars ?? Math.round(maxChars * 0.15);
  if (requested >= maxChars) {
    throw new AppError(
      'VALIDATION_ERROR',
      `body.overlapChars must be less than maxChars (${maxChars}).`,
    );
  }
  const overlapChars = Math.min(requested, Math.floor(maxChars / 2));
  return {
    commandId,
    maxChars,
    overlapChars,
    ...(overlapChars === requested ? {} : { requestedOverlapChars: requested }),
  };
}

/** The request of a stored run's parameters (index_params), with the overlap as requested. */
function storedBody(json: string): IndexBody {
  const { requestedOverlapChars, ...params } = JSON.parse(json) as Partial<IndexParams>;
  return { ...params, overlapChars: requestedOverlapChars ?? params.overlapChars };
}

/** A document left `indexing` this long without a live job is taken over at start-up. */
const ORPHAN_GRACE_MS = 60_000;

export class IndexingService {
  constructor(private readonly deps: IndexingDeps) {}

  /** Checks an index request's settings without starting anything (400 when invalid). */
  check(body: IndexBody): void {
    indexParams(body, this.deps.commands);
  }

  /** Starts an indexing run; resolves when it is done, or at once (`async`) after it is queued. */
  async index(
    id: string,
    body: IndexBody,
  ): Promise<{ done: true; result: IndexResult } | { done: false; document: KnowledgeDocument }> {
    const params = indexParams(body, this.deps.commands);
    const token = randomUUID();
    if (!(await this.deps.repo.beginIndex(id, token, JSON.stringify(params)))) {
      const row = await this.deps.repo.findById(id);
      if (row === undefined)
        throw new AppError('KNOWLEDGE_DOCUMENT_NOT_FOUND', `Knowledge document ${id} not found.`);
      throw new AppError(
        'KNOWLEDGE_INDEX_IN_PROGRESS',
        `Document ${id} is being indexed already; wait for it to finish.`,
      );
    }
    await this.enqueue(id, token, params);
    this.deps.events.announce('document.progress', { id, projectId: null });
    if (body.async === true) {
      const row = await this.deps.repo.findById(id);
      if (row === undefined) {
        throw new AppError(
          'KNOWLEDGE_INDEX_CANCELLED',
          'The document was deleted as its indexing run was queued.',
        );
      }
      return { done: false, document: toDocument(row) };
    }
    return { done: true, result: (await this.deps.queue.wait(token)) as IndexResult };
  }

  /** Indexes a document again with the parameters of its last run (e.g. after a model change). */
  async reindex(id: string): Promise<IndexResult> {
    const outcome = await this.index(id, { ...(await this.lastParams(id)), async: false });
    if (!outcome.done) throw new Error('a synchronous index run did not finish');
    return outcome.result;
  }

  /**
   * Queues a run of every document embedded with another model than `model` (the stored markdown
   * is reused: no conversion), with the parameters of its last run; those being indexed already
   * are left alone. The number queued.
   */
  async reindexStale(model: string, projectId?: string): Promise<{ queued: number }> {
    const stale = await this.deps.repo.list({
      staleFor: model,
      limit: Number.MAX_SAFE_INTEGER,
      ...(projectId === undefined ? {} : { projectId }),
    });
    let queued = 0;
    for (const row of stale) {
      if (row.status === 'indexing') continue;
      try {
        await this.index(row.id, { ...(await this.lastParams(row.id)), async: true });
        queued += 1;
      } catch (error) {
        // Deleted or started meanwhile: the others still go.
        if (!(error instanceof AppError)) throw error;
      }
    }
    return { queued };
  }

  /** The settings of the document's last run (an index request's body). */
  private async lastParams(id: string): Promise<IndexBody> {
    const row = await this.deps.repo.findById(id);
    if (row === undefined)
      throw new AppError('KNOWLEDGE_DOCUMENT_NOT_FOUND', `Knowledge document ${id} not found.`);
    return row.index_params === null ? {} : storedBody(row.index_params);
  }

  /**
   * After a crash or restart: documents left `indexing` without a live job are re-queued with
   * their last parameters (or failed with an explanation when those are unusable). On a shared
   * queue, jobs of instances that died are the queue's to retry; this catches documents whose job
   * was never queued, once they are older than a grace period.
   */
  async recoverInterrupted(): Promise<number> {
    const stuck = await this.deps.repo.listIndexing();
    const shared = this.deps.queue.driver !== 'memory';
    let requeued = 0;
    for (const doc of stuck) {
      if (doc.index_token !== null && (await this.deps.queue.isLive(doc.index_token))) continue;
      if (shared && Date.now() - Date.parse(doc.updated_at) < ORPHAN_GRACE_MS) continue;
      let params: IndexParams;
      try {
        params = indexParams(storedBody(doc.index_params ?? '{}'), this.deps.commands);
      } catch {
        await this.deps.repo.failIndex(
          doc.id,
          doc.index_token ?? '',
          'Indexing was interrupted by a restart; index the document again.',
        );
        continue;
      }
      const token = randomUUID();
      // Compare-and-set on the old token: of several instances starting together, one takes it.
      if (!(await this.deps.repo.resumeIndex(doc.id, doc.index_token, token))) continue;
      this.deps.log.info({ documentId: doc.id }, 're-queued indexing interrupted by a restart');
      await this.enqueue(doc.id, token, params);
      requeued += 1;
    }
    return requeued;
  }

  /** Queues the run holding `token` (the job id); a failure to queue fails the run. */
  private async enqueue(id: string, token: string, params: IndexParams): Promise<void> {
    try {
      await this.deps.queue.enqueue(INDEX_JOB, indexJobPayload(id, token, params), { id: token });
    } catch (error) {
      const fail = () =>
        this.deps.repo.failIndex(id, token, 'The indexing job could not be queued.');
      if (!isDatabaseUnavailable(error)) {
        await fail();
        throw error;
      }
      // The database went away between the two steps: the request answers 503 now, and the
      // document is failed once the database is back, rather than left `indexing`.
      retryWhileUnavailable(fail).catch((failError: unknown) => {
        this.deps.log.warn({ err: failError, documentId: id }, 'failing an unqueued run failed');
      });
      throw error;
    }
  }
}
