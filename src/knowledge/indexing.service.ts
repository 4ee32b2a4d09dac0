/**
 * Indexing: converter process → chunker → embedder → one transaction that swaps the document's
 * chunks, vectors and keyword rows. Runs as a job on the `knowledgeIndex` queue lane.
 *
 * Each run holds an `index_token` on the document. Deleting the document (or a newer run) removes
 * the token, so a stale run's results are discarded at commit instead of resurrecting anything.
 */
import { createHash, randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { DocumentRow } from '../db/schema.js';
import { AppError } from '../errors.js';
import type { JobContext, JobQueue } from '../queue/queue.js';
import { chunkMarkdown } from './chunker.js';
import type { ConverterCommand } from './converting/commands.js';
import type { runConverter } from './converting/runner.js';
import type { DocumentsRepository } from './documents.repository.js';
import type { EmbeddingProvider } from './embeddings/provider.js';
import { MAX_CHARS, type IndexBody, type KnowledgeDocument } from './knowledge.schemas.js';
import { toDocument } from './mappers.js';
import type { ChunkStore, NewChunk } from './search/chunk-store.js';
import { documentKeys, type FileStorage } from './storage/storage.js';

export const INDEX_JOB = 'knowledgeIndex';

export interface IndexParams {
  commandId: string;
  maxChars: number;
  overlapChars: number;
}

export interface IndexResult {
  document: KnowledgeDocument;
  chunkCount: number;
  embeddingModel: string;
}

export interface IndexingDeps {
  repo: DocumentsRepository;
  store: ChunkStore;
  storage: FileStorage;
  queue: JobQueue;
  embedder: EmbeddingProvider;
  commands: readonly ConverterCommand[];
  convert: typeof runConverter;
  config: Config['knowledge'];
  /** Absolute; stripped from error messages. */
  dataDir: string;
  /** Local directory for converter output. */
  scratchDir: string;
  log: FastifyBaseLogger;
}

/** Resolves defaults and checks bounds (400, never clamped). */
export function indexParams(body: IndexBody, commands: readonly ConverterCommand[]): IndexParams {
  const commandId = body.commandId ?? 'auto';
  if (!commands.some((c) => c.id === commandId)) {
    throw new AppError(
      'KNOWLEDGE_COMMAND_NOT_FOUND',
      `Unknown converter command "${commandId}"; available: ${commands.map((c) => c.id).join(', ')}.`,
    );
  }
  const maxChars = body.maxChars ?? MAX_CHARS.default;
  const overlapChars = body.overlapChars ?? Math.round(maxChars * 0.15);
  if (overlapChars > Math.floor(maxChars / 2)) {
    throw new AppError(
      'VALIDATION_ERROR',
      `body.overlapChars must be at most maxChars/2 (${Math.floor(maxChars / 2)}).`,
    );
  }
  return { commandId, maxChars, overlapChars };
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** What the embedder sees: the section trail gives a chunk the context its heading carries. */
function embeddingText(sectionPath: string, content: string): string {
  return sectionPath === '' ? content : `${sectionPath}\n${content}`;
}

/** The queue payload of an indexing job (JSON: it may run on another instance). */
interface IndexJob {
  documentId: string;
  token: string;
  params: IndexParams;
}

/** A document left `indexing` this long without a live job is taken over at start-up. */
const ORPHAN_GRACE_MS = 60_000;

export class IndexingService {
  private readonly running = new Map<string, AbortController>();

  constructor(private readonly deps: IndexingDeps) {
    deps.queue.handle(INDEX_JOB, (payload, job) => this.runJob(payload as IndexJob, job), {
      // Instances kept dying while indexing it (a crashing document?): fail it, don't retry.
      onAbandoned: async (payload, error) => {
        const { documentId, token } = payload as IndexJob;
        await deps.repo.failIndex(documentId, token, error.message);
      },
    });
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
    if (body.async === true) return { done: false, document: toDocument(await this.row(id)) };
    return { done: true, result: (await this.deps.queue.wait(token)) as IndexResult };
  }

  /** Indexes a document again with the parameters of its last run (e.g. after a model change). */
  async reindex(id: string): Promise<IndexResult> {
    const row = await this.deps.repo.findById(id);
    if (row === undefined)
      throw new AppError('KNOWLEDGE_DOCUMENT_NOT_FOUND', `Knowledge document ${id} not found.`);
    const stored = row.index_params === null ? {} : (JSON.parse(row.index_params) as IndexBody);
    const outcome = await this.index(id, { ...stored, async: false });
    if (!outcome.done) throw new Error('a synchronous index run did not finish');
    return outcome.result;
  }

  /** Cancels a run of the document in this process (its results would be discarded anyway). */
  cancel(id: string): void {
    this.running.get(id)?.abort(new AppError('KNOWLEDGE_INDEX_CANCELLED'));
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
        params = indexParams(JSON.parse(doc.index_params ?? '{}') as IndexBody, this.deps.commands);
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
    const job: IndexJob = { documentId: id, token, params };
    try {
      await this.deps.queue.enqueue(INDEX_JOB, job, { id: token });
    } catch (error) {
      await this.deps.repo.failIndex(id, token, 'The indexing job could not be queued.');
      throw error;
    }
  }

  private async runJob(job: IndexJob, context: JobContext): Promise<IndexResult> {
    const { documentId: id, token, params } = job;
    const controller = new AbortController();
    this.running.set(id, controller);
    const signal = AbortSignal.any([controller.signal, context.signal]);
    try {
      return await this.run(id, token, params, signal);
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
      await this.deps.repo.failIndex(id, token, this.redact(appError.message));
      throw new AppError(appError.code, this.redact(appError.message));
    } finally {
      if (this.running.get(id) === controller) this.running.delete(id);
    }
  }

  /** Messages reach clients: no absolute data-directory paths, no credentials in URLs. */
  private redact(message: string): string {
    return message.replaceAll(`${this.deps.dataDir}/`, '').replace(/\/\/[^/@\s]+@/g, '//');
  }

  private toAppError(error: unknown, signal: AbortSignal): AppError {
    if (signal.aborted && signal.reason instanceof AppError) return signal.reason;
    if (error instanceof AppError) return error;
    this.deps.log.error({ err: error }, 'indexing failed');
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof Error && error.name === 'EmbeddingError') {
      return new AppError('KNOWLEDGE_EMBEDDING_FAILED', `Embedding failed: ${message}`);
    }
    return new AppError('KNOWLEDGE_CONVERTER_FAILED', `Indexing failed: ${message}`);
  }

  private async row(id: string): Promise<DocumentRow> {
    const row = await this.deps.repo.findById(id);
    if (row === undefined) throw new AppError('KNOWLEDGE_INDEX_CANCELLED');
    return row;
  }

  /**
   * Vectors for the chunks, reusing stored ones of the same model for identical embedded text
   * (keyed by its sha256), so re-indexing an unchanged or lightly edited document embeds only
   * what changed.
   */
  private async embed(
    chunks: readonly { sectionPath: string; content: string }[],
    signal: AbortSignal,
  ): Promise<{ vectors: Float32Array[]; hashes: string[]; cached: number }> {
    const { embedder, store } = this.deps;
    await embedder.ready();
    const texts = chunks.map((c) => embeddingText(c.sectionPath, c.content));
    const hashes = texts.map(sha256);
    const known = await store.cachedVectors(embedder.model, embedder.dimensions, [
      ...new Set(hashes),
    ]);
    const missing = texts.flatMap((text, i) => (known.has(hashes[i] ?? '') ? [] : [{ text, i }]));
    const fresh =
      missing.length === 0
        ? []
        : await embedder.embedDocuments(
            missing.map((m) => m.text),
            signal,
          );
    const vectors = hashes.map((h) => known.get(h) ?? new Float32Array(0));
    missing.forEach((m, j) => {
      vectors[m.i] = fresh[j] ?? new Float32Array(embedder.dimensions);
    });
    return { vectors, hashes, cached: texts.length - missing.length };
  }

  private async run(
    id: string,
    token: string,
    params: IndexParams,
    signal: AbortSignal,
  ): Promise<IndexResult> {
    const { deps } = this;
    const doc = await this.row(id);
    const command = deps.commands.find((c) => c.id === params.commandId);
    if (command === undefined) throw new AppError('KNOWLEDGE_COMMAND_NOT_FOUND');
    const outputDir = join(deps.scratchDir, `convert-${randomUUID()}`);
    const timings: Record<string, number> = {};
    const clock = () => performance.now();
    try {
      let t = clock();
      const converted = await deps.storage.withLocalFile(doc.file_path, (source) =>
        deps.convert(command, source, outputDir, {
          timeoutMs: deps.config.converterTimeoutMs,
          maxOutputBytes: deps.config.converterMaxOutputBytes,
          signal,
        }),
      );
      timings.convertMs = Math.round(clock() - t);

      t = clock();
      const chunks = chunkMarkdown(converted.markdown, params);
      timings.chunkMs = Math.round(clock() - t);
      if (chunks.length === 0) {
        throw new AppError(
          'KNOWLEDGE_NO_CHUNKS_GENERATED',
          'The converted document contains no text to chunk.',
        );
      }

      t = clock();
      const { vectors, hashes, cached } = await this.embed(chunks, signal);
      timings.embedMs = Math.round(clock() - t);
      signal.throwIfAborted();

      const newChunks: NewChunk[] = chunks.map((c, i) => ({
        id: randomUUID(),
        chunkIndex: c.chunkIndex,
        sectionPath: c.sectionPath,
        page: c.page,
        content: c.content,
        tokenEstimate: c.tokenEstimate,
        metadata: c.metadata,
        contentHash: hashes[i] ?? '',
        vector: vectors[i] ?? new Float32Array(deps.embedder.dimensions),
      }));
      const markdownKey = documentKeys.markdown(id, doc.version + 1);
      await deps.storage.writeFile(markdownKey, converted.markdown);
      const meta = {
        ...(converted.meta ?? {}),
        command: command.id,
        chunking: {
          maxChars: params.maxChars,
          overlapChars: params.overlapChars,
          chunkCount: chunks.length,
        },
        embedding: {
          model: deps.embedder.model,
          dimensions: deps.embedder.dimensions,
          cachedChunks: cached,
        },
        timings: { ...(converted.meta?.timings ?? {}), ...timings },
        warnings: converted.meta?.warnings ?? [],
      };

      t = clock();
      const outcome = await deps.store.commitIndex({
        documentId: id,
        indexToken: token,
        model: deps.embedder.model,
        dimensions: deps.embedder.dimensions,
        chunks: newChunks,
        document: {
          markdown_path: markdownKey,
          converter_command: command.id,
          converter_meta: JSON.stringify(meta),
        },
      });
      if (outcome === 'discarded') {
        await deps.storage.remove(markdownKey);
        throw new AppError('KNOWLEDGE_INDEX_CANCELLED');
      }
      if (doc.markdown_path !== null && doc.markdown_path !== markdownKey) {
        await deps.storage.remove(doc.markdown_path).catch((error: unknown) => {
          deps.log.warn(
            { err: error, key: doc.markdown_path },
            'could not remove the previous markdown',
          );
        });
      }
      deps.log.info(
        {
          documentId: id,
          chunks: chunks.length,
          ms: { ...timings, commitMs: Math.round(clock() - t) },
        },
        'document indexed',
      );
      return {
        document: toDocument(await this.row(id)),
        chunkCount: chunks.length,
        embeddingModel: deps.embedder.model,
      };
    } finally {
      await rm(outputDir, { recursive: true, force: true });
    }
  }
}
