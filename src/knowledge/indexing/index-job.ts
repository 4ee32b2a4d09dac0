/**
 * The `knowledgeIndex` job: one indexing run of a document. IndexingService queues it, with the
 * run's token as the job id; a worker of the queue (this process's lanes, or any instance's on
 * the shared PostgreSQL queue) calls `handle`, which runs the pipeline (index-pipeline.ts) and,
 * when the run fails, marks the document failed with a plain message. knowledge.module.ts
 * registers it.
 */
import type { FastifyBaseLogger } from 'fastify';
import { isDatabaseUnavailable, retryWhileUnavailable } from '../../db/unavailable.js';
import { AppError } from '../../errors.js';
import type { JobContext, JobQueue } from '../../queue/queue.js';
import type { DocumentsRepository } from '../documents/documents.repository.js';
import type { KnowledgeEvents } from '../events/events.js';
import type { IndexParams, IndexPipeline, IndexResult } from './index-pipeline.js';
import { toDocument } from '../documents/records.js';
import { progressReporter } from './progress.js';

/** The job type, also the queue lane of indexing runs. */
export const INDEX_JOB = 'knowledgeIndex';

/**
 * The payload, stored as JSON and perhaps read by an instance of another version: `version`
 * names its shape (payloads queued before the field existed are version 1).
 */
export interface IndexJobPayload {
  version: 1;
  documentId: string;
  /** The run's `index_token`, also the job id. */
  token: string;
  params: IndexParams;
}

/** The payload of a run. */
export function indexJobPayload(
  documentId: string,
  token: string,
  params: IndexParams,
): IndexJobPayload {
  return { version: 1, documentId, token, params };
}

/** A stored payload, checked: a version this build does not know fails the job. */
function readPayload(payload: unknown): IndexJobPayload {
  const p = (payload ?? {}) as Partial<Record<keyof IndexJobPayload, unknown>>;
  const version = p.version ?? 1;
  if (version !== 1 || typeof p.documentId !== 'string' || typeof p.token !== 'string') {
    throw new AppError(
      'INTERNAL_ERROR',
      `This indexing job (payload version ${JSON.stringify(version)}) was queued by another version of the server.`,
    );
  }
  return { version, documentId: p.documentId, token: p.token, params: p.params as IndexParams };
}

export interface IndexJobDeps {
  pipeline: IndexPipeline;
  repo: DocumentsRepository;
  /** Absolute; stripped from error messages. */
  dataDir: string;
  log: FastifyBaseLogger;
  /** Progress, indexed and failed are announced here. */
  events: KnowledgeEvents;
}

export class IndexJob {
  /** Runs in this process, by document id, so that deleting a document can stop its run. */
  private readonly running = new Map<string, AbortController>();

  constructor(private readonly deps: IndexJobDeps) {}

  /** Makes this instance run indexing jobs. */
  register(queue: JobQueue): void {
    queue.handle(INDEX_JOB, (payload, job) => this.handle(readPayload(payload), job), {
      // Instances kept dying while indexing it (a crashing document?): fail it, don't retry.
      onAbandoned: async (payload, error) => {
        const { documentId, token } = readPayload(payload);
        await this.deps.repo.failIndex(documentId, token, error.message);
      },
    });
  }

  /** Cancels a run of the document in this process (its results would be discarded anyway). */
  cancel(documentId: string): void {
    this.running.get(documentId)?.abort(new AppError('KNOWLEDGE_INDEX_CANCELLED'));
  }

  /** Runs the job; a failed run leaves the document `failed` with the error's message. */
  async handle(job: IndexJobPayload, context: JobContext): Promise<IndexResult> {
    const { documentId: id, params } = job;
    const token = await this.attemptToken(job, context);
    if (typeof token !== 'string') return token.done;
    const controller = new AbortController();
    this.running.set(id, controller);
    const signal = AbortSignal.any([controller.signal, context.signal]);
    const progress = progressReporter(this.deps, id, token);
    try {
      // A database restart mid-run is no reason to fail the document: the run starts over (its
      // commit is guarded by the token, so a second one is harmless) once the database is back.
      const result = await retryWhileUnavailable(
        () => this.deps.pipeline.run(id, token, params, signal, progress),
        {
          signal,
          onRetry: (error, delayMs) => {
            this.deps.log.warn(
              { err: error, documentId: id, delayMs },
              'indexing: the database is unavailable; the run starts over when it is back',
            );
          },
        },
      );
      this.deps.events.announce('document.indexed', result.document);
      return result;
    } catch (error) {
      if (context.signal.aborted) {
        // This instance is shutting down (or lost the job's lease): the document stays
        // `indexing`; the job is run again after the restart (memory queue) or by another
        // instance (shared queue).
        throw new AppError(
          'SERVICE_UNAVAILABLE',
          'The server shut down during indexing; it resumes after the restart.',
        );
      }
      const appError = this.toAppError(error, signal);
      // The document must not stay `indexing` because the database was away when it failed.
      await retryWhileUnavailable(
        () => this.deps.repo.failIndex(id, token, this.redact(appError.message)),
        { signal: context.signal },
      );
      this.deps.events.announce('document.failed', { id, projectId: null });
      throw new AppError(appError.code, this.redact(appError.message));
    } finally {
      progress.finish();
      if (this.running.get(id) === controller) this.running.delete(id);
    }
  }

  /**
   * The run's token: the job's for its first attempt; a later attempt (an instance lost the job)
   * takes the document over under a token of its own, so the earlier attempt, if it still runs,
   * finds its token gone and reports itself superseded. When an earlier attempt committed
   * already, the job is done: its result is the indexed document.
   */
  private async attemptToken(
    job: IndexJobPayload,
    context: JobContext,
  ): Promise<string | { done: IndexResult }> {
    if (context.attempt <= 1) return job.token;
    const token = `${job.token}#${context.attempt}`;
    if (await this.deps.repo.takeOverIndex(job.documentId, job.token, token)) return token;
    const doc = await this.deps.repo.findById(job.documentId);
    if (doc === undefined) throw new AppError('KNOWLEDGE_INDEX_CANCELLED');
    if (doc.status !== 'indexed') throw new AppError('KNOWLEDGE_INDEX_SUPERSEDED');
    const meta = JSON.parse(doc.converter_meta ?? '{}') as { chunking?: { chunkCount?: number } };
    return {
      done: {
        document: toDocument(doc),
        chunkCount: meta.chunking?.chunkCount ?? 0,
        embeddingModel: doc.embedding_model ?? '',
      },
    };
  }

  /** Messages reach clients: no absolute data-directory paths, no credentials in URLs. */
  private redact(message: string): string {
    return message.replaceAll(`${this.deps.dataDir}/`, '').replace(/\/\/[^/@\s]+@/g, '//');
  }

  private toAppError(error: unknown, signal: AbortSignal): AppError {
    if (signal.aborted && signal.reason instanceof AppError) return signal.reason;
    if (error instanceof AppError) return error;
    if (isDatabaseUnavailable(error)) {
      return new AppError(
        'DATABASE_UNAVAILABLE',
        'Indexing failed: the database was unavailable for too long; index the document again.',
      );
    }
    this.deps.log.error({ err: error }, 'indexing failed');
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof Error && error.name === 'EmbeddingError') {
      return new AppError('KNOWLEDGE_EMBEDDING_FAILED', `Embedding failed: ${message}`);
    }
    return new AppError('KNOWLEDGE_CONVERTER_FAILED', `Indexing failed: ${message}`);
  }
}
