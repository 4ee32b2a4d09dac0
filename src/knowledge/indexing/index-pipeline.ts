/**
 * One indexing run, in three stages:
 *
 * 1. convert: the converter process on a local copy of the source file, into a scratch directory;
 * 2. chunk and embed: the markdown into chunks (markdown-chunker.ts), each embedded with its
 *    section trail, reusing the stored vector of any identical text of the same model;
 * 3. commit: the markdown stored, then one transaction swaps the document's chunks, vectors and
 *    keyword rows and marks it indexed, if the run still holds the document's `index_token`
 *    (deleting the document, or a newer run, removes it: a stale run then writes nothing).
 *
 * index-job.ts runs it as a queue job; failures are that file's to report.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.js';
import type { IndexStage, KnowledgeObserver } from '../../metrics/observer.js';
import type { DocumentRow } from '../../db/schema.js';
import { AppError } from '../../errors.js';
import type { Chunk } from '../chunking/markdown-chunker.js';
import { embeddingText } from '../chunking/chunk-hashes.js';
import { chunkDocument } from '../chunking/document-chunks.js';
import type { ConverterCommand } from './converting/commands.js';
import { conversionKey, reusableMarkdown, withConversionKey } from './converting/conversion-key.js';
import type { runConverter } from './converting/runner.js';
import type { DocumentsRepository } from '../documents/documents.repository.js';
import type { ModelSwitch } from '../embeddings/model-switch.js';
import type { EmbeddingProvider } from '../embeddings/provider.js';
import type { KnowledgeDocument } from '../documents/documents.schemas.js';
import { toDocument } from '../documents/records.js';
import { noProgress, type ProgressReporter } from './progress.js';
import type { ChunkStore, IndexCommit, NewChunk } from '../search/chunk-store.js';
import { documentKeys } from '../documents/storage-keys.js';
import type { FileStorage } from '../storage/storage.js';
import { scratchName } from '../storage/scratch.js';

/** The parameters of a run, defaults resolved (see IndexingService.index). */
export interface IndexParams {
  commandId: string;
  maxChars: number;
  /** The overlap the chunker applies (at most maxChars/2). */
  overlapChars: number;
  /** The overlap the request asked for, when more than the chunker applies. */
  requestedOverlapChars?: number;
}

/** What a run answers: the indexed document. */
export interface IndexResult {
  document: KnowledgeDocument;
  chunkCount: number;
  embeddingModel: string;
}

export interface PipelineDeps {
  repo: DocumentsRepository;
  store: ChunkStore;
  storage: FileStorage;
  embedder: EmbeddingProvider;
  /** While the embedding model is being switched: the model whose vectors commits also write. */
  models?: Pick<ModelSwitch, 'keeping' | 'changed'>;
  commands: readonly ConverterCommand[];
  convert: typeof runConverter;
  config: Config['knowledge'];
  /** Local directory for converter output. */
  scratchDir: string;
  log: FastifyBaseLogger;
  /** Stage durations and embedding calls, for the metrics; absent: not reported. */
  observer?: KnowledgeObserver;
}

/** The converter's output. */
type Converted = Awaited<ReturnType<typeof runConverter>>;

/** The chunks of a run with their vectors; `cached` of them reused stored vectors. */
interface Embedded {
  chunks: NewChunk[];
  cached: number;
  /** The same chunks' vectors of the model that answers while a switch is under way. */
  alsoVectors?: IndexCommit['alsoVectors'];
}

/** Stage name → milliseconds, recorded in converterMeta.timings. */
type Timings = Record<string, number>;

/** Chunks per embedding request of a run (progress is reported between them). */
const EMBED_PART = 2048;

/** Runs `stage` and records its duration under `name` (and, when given, reports it). */
async function timed<T>(
  timings: Timings,
  name: string,
  stage: () => Promise<T> | T,
  report?: (seconds: number) => void,
): Promise<T> {
  const start = performance.now();
  const result = await stage();
  const ms = performance.now() - start;
  timings[name] = Math.round(ms);
  report?.(ms / 1000);
  return result;
}

/** Says when the applied overlap is less than the requested one. */
function chunkingWarnings(params: IndexParams): string[] {
  const requested = params.requestedOverlapChars;
  return requested === undefined || requested === params.overlapChars
    ? []
    : [
        `overlapChars ${requested} was reduced to ${params.overlapChars}: chunks share at most half of maxChars (${params.maxChars}).`,
      ];
}

export class IndexPipeline {
  constructor(private readonly deps: PipelineDeps) {}

  /** The observer's callback for `stage`'s duration (metrics); undefined without an observer. */
  private report(stage: IndexStage): ((seconds: number) => void) | undefined {
    const observer = this.deps.observer;
    if (observer === undefined) return undefined;
    return (seconds) => {
      observer.indexStage(stage, seconds);
    };
  }

  /** Runs the three stages for the document `id` under the run's `token`. */
  async run(
    id: string,
    token: string,
    params: IndexParams,
    signal: AbortSignal,
    progress: ProgressReporter = noProgress,
  ): Promise<IndexResult> {
    const doc = await this.document(id, 'before its indexing run started');
    const command = this.deps.commands.find((c) => c.id === params.commandId);
    if (command === undefined) throw new AppError('KNOWLEDGE_COMMAND_NOT_FOUND');
    const outputDir = join(this.deps.scratchDir, scratchName('convert'));
    const timings: Timings = {};
    try {
      progress.stage('converting');
      const converted = await timed(
        timings,
        'convertMs',
        () => this.convert(doc, command, outputDir, signal, progress),
        this.report('convert'),
      );
      const embedded = await this.chunkAndEmbed(
        converted.markdown,
        params,
        signal,
        timings,
        progress,
      );
      progress.stage('committing', embedded.chunks.length);
      await this.commit(doc, token, { command, params, converted, embedded, timings });
      return {
        document: toDocument(await this.document(id, 'right after it was indexed')),
        chunkCount: embedded.chunks.length,
        embeddingModel: this.deps.embedder.model,
      };
    } finally {
      // Usually nothing is there (the pooled converter sends small output back): a sync check
      // is microseconds, a thread-pool round trip costs more than that (storage/local-storage.ts).
      if (existsSync(outputDir)) await rm(outputDir, { recursive: true, force: true });
    }
  }

  /** The document's row; a missing row means it was deleted `when`. */
  private async document(id: string, when: string): Promise<DocumentRow> {
    const row = await this.deps.repo.findById(id);
    if (row === undefined) {
      throw new AppError('KNOWLEDGE_INDEX_CANCELLED', `The document was deleted ${when}.`);
    }
    return row;
  }

  /**
   * Stage 1: the converter on a local copy of the source file — or, when the stored markdown
   * was converted with the same conversion key (conversion-key.ts), that markdown again.
   */
  private async convert(
    doc: DocumentRow,
    command: ConverterCommand,
    outputDir: string,
    signal: AbortSignal,
    progress: ProgressReporter,
  ): Promise<Converted> {
    const { storage, config } = this.deps;
    const key = conversionKey(command, doc.checksum);
    const reused = await reusableMarkdown(doc, key, storage, this.deps.log);
    if (reused !== null) return reused;
    const converted = await storage.withLocalFile(doc.file_path, (source) =>
      this.deps.convert(command, source, outputDir, {
        timeoutMs: config.converterTimeoutMs,
        maxOutputBytes: config.converterMaxOutputBytes,
        signal,
        // Pages (PDF) or frames (images) as the pooled converter reports them.
        onProgress: ({ done, total }) => {
          progress.advance(done, total);
        },
      }),
    );
    return withConversionKey(converted, key);
  }

  /** Stage 2: chunks of the markdown, with their vectors. */
  private async chunkAndEmbed(
    markdown: string,
    params: IndexParams,
    signal: AbortSignal,
    timings: Timings,
    progress: ProgressReporter,
  ): Promise<Embedded> {
    progress.stage('chunking');
    const { chunks, hashes: textHashes } = await timed(
      timings,
      'chunkMs',
      () => chunkDocument(markdown, params, signal),
      this.report('chunk'),
    );
    if (chunks.length === 0) {
      throw new AppError(
        'KNOWLEDGE_NO_CHUNKS_GENERATED',
        'The converted document contains no text to chunk.',
      );
    }
    progress.stage('embedding', chunks.length);
    const { vectors, hashes, cached } = await timed(
      timings,
      'embedMs',
      () => this.embed(this.deps.embedder, chunks, textHashes, signal, progress),
      this.report('embed'),
    );
    // While another model answers (a switch under way), the chunks get its vectors too.
    const keeping = this.deps.models?.keeping() ?? null;
    const also =
      keeping === null
        ? undefined
        : await timed(timings, 'embedKeptMs', () =>
            this.embed(keeping, chunks, textHashes, signal, noProgress),
          );
    signal.throwIfAborted();
    const dimensions = this.deps.embedder.dimensions;
    const prepared = chunks.map((c, i) => ({
      id: randomUUID(),
      chunkIndex: c.chunkIndex,
      sectionPath: c.sectionPath,
      page: c.page,
      pageEnd: c.metadata.pageEnd ?? c.page,
      content: c.content,
      tokenEstimate: c.tokenEstimate,
      metadata: c.metadata,
      contentHash: hashes[i] ?? '',
      vector: vectors[i] ?? new Float32Array(dimensions),
    }));
    if (keeping === null || also === undefined) return { chunks: prepared, cached };
    const alsoVectors = [
      { model: keeping.model, dimensions: keeping.dimensions, vectors: also.vectors },
    ];
    return { chunks: prepared, cached, alsoVectors };
  }

  /**
   * Vectors for the chunks, reusing stored ones of the same model for identical embedded text
   * (keyed by its sha256), so re-indexing an unchanged or lightly edited document embeds only
   * what changed.
   */
  private async embed(
    embedder: EmbeddingProvider,
    chunks: readonly Chunk[],
    hashes: string[],
    signal: AbortSignal,
    progress: ProgressReporter,
  ): Promise<{ vectors: Float32Array[]; hashes: string[]; cached: number }> {
    const { store } = this.deps;
    await embedder.ready();
    const known = await store.cachedVectors(embedder.model, embedder.dimensions, [
      ...new Set(hashes),
    ]);
    const missing: number[] = [];
    hashes.forEach((h, i) => {
      if (!known.has(h)) missing.push(i);
    });
    // In parts, so that progress can be reported between them.
    const fresh: Float32Array[] = [];
    const cached = chunks.length - missing.length;
    progress.advance(cached);
    for (let at = 0; at < missing.length; at += EMBED_PART) {
      const part = missing.slice(at, at + EMBED_PART).map((i) => {
        const c = chunks[i] as Chunk;
        return embeddingText(c);
      });
      const started = performance.now();
      const partVectors = await embedder.embedDocuments(part, signal);
      this.deps.observer?.embeddingBatch('documents', (performance.now() - started) / 1000);
      for (const vector of partVectors) fresh.push(vector);
      progress.advance(cached + at + part.length);
    }
    const vectors = hashes.map((h) => known.get(h) ?? new Float32Array(0));
    missing.forEach((i, j) => {
      vectors[i] = fresh[j] ?? new Float32Array(embedder.dimensions);
    });
    return { vectors, hashes, cached };
  }

  /**
   * Stage 3: the markdown of the new version stored, then the chunks committed with the
   * document's new state (one transaction); the previous version's markdown removed after.
   */
  private async commit(
    doc: DocumentRow,
    token: string,
    run: {
      command: ConverterCommand;
      params: IndexParams;
      converted: Converted;
      embedded: Embedded;
      timings: Timings;
    },
  ): Promise<void> {
    const { deps } = this;
    const { command, params, converted, embedded, timings } = run;
    const { chunks } = embedded;
    const markdownKey = documentKeys.markdown(doc.id, doc.version + 1);
    await deps.storage.writeFile(markdownKey, converted.markdown);
    const meta = {
      ...(converted.meta ?? {}),
      command: command.id,
      chunking: {
        maxChars: params.maxChars,
        overlapChars: params.overlapChars,
        requestedOverlapChars: params.requestedOverlapChars ?? params.overlapChars,
        chunkCount: chunks.length,
      },
      embedding: {
        model: deps.embedder.model,
        dimensions: deps.embedder.dimensions,
        cachedChunks: embedded.cached,
      },
      timings: { ...(converted.meta?.timings ?? {}), ...timings },
      warnings: [...(converted.meta?.warnings ?? []), ...chunkingWarnings(params)],
    };
    const start = performance.now();
    const outcome = await deps.store.commitIndex({
      documentId: doc.id,
      indexToken: token,
      model: deps.embedder.model,
      dimensions: deps.embedder.dimensions,
      chunks,
      ...(embedded.alsoVectors === undefined ? {} : { alsoVectors: embedded.alsoVectors }),
      document: {
        markdown_path: markdownKey,
        converter_command: command.id,
        converter_meta: JSON.stringify(meta),
      },
    });
    if (outcome === 'discarded') {
      await deps.storage.remove(markdownKey);
      // Deleted, or another run (a newer request, or the job's next attempt) holds the document.
      const now = await deps.repo.findById(doc.id);
      throw new AppError(
        now === undefined ? 'KNOWLEDGE_INDEX_CANCELLED' : 'KNOWLEDGE_INDEX_SUPERSEDED',
      );
    }
    deps.observer?.indexStage('index', (performance.now() - start) / 1000);
    // The switch counts again: this commit may have completed the target's vectors.
    deps.models?.changed();
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
        documentId: doc.id,
        chunks: chunks.length,
        ms: { ...timings, commitMs: Math.round(performance.now() - start) },
      },
      'document indexed',
    );
  }
}
