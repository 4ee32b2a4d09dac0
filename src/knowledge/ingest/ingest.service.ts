/**
 * Ways in besides a plain upload: one-step upload-and-index, batches, text and URLs. Every
 * document is created by DocumentsService.create (one path: de-duplication, metadata, events);
 * `index` then queues it as `async: true` of the index route does.
 */
import { Readable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { Value } from 'typebox/value';
import { AppError } from '../../errors.js';
import {
  metadataJson,
  type DocumentsService,
  projectFor,
  type UploadInput,
} from '../documents/documents.service.js';
import type { IndexingService } from '../indexing/indexing.service.js';
import { MAX_CHARS, type IndexBody } from '../indexing/indexing.schemas.js';
import {
  MetadataSchema,
  type DocumentMetadata,
  type KnowledgeDocument,
} from '../documents/documents.schemas.js';
import { type TextBody, type UrlBody } from './ingest.schemas.js';
import type { FileStorage } from '../storage/storage.js';
import type { BatchPart, FormFields } from './upload.js';
import {
  fetchError,
  fetchUrl,
  formatOfContentType,
  isPublicAddress,
  nameOfUrl,
} from './url-fetch.js';

interface IngestDeps {
  documents: DocumentsService;
  indexing: IndexingService;
  storage: FileStorage;
  uploadMaxBytes: number;
  urlTimeoutMs: number;
  urlAllowPrivate: boolean;
  log: FastifyBaseLogger;
}

/** What the form fields of an upload or batch ask for, checked. */
export interface IngestOptions {
  projectId?: string;
  source?: string;
  metadata?: DocumentMetadata;
  /** Set: queue each document for indexing with these settings. */
  index?: IndexBody;
}

export interface Ingested {
  document: KnowledgeDocument;
  created: boolean;
}

/** One file of a batch: its document, or the error it alone would have met. */
export interface BatchOutcome {
  name: string;
  result?: Ingested;
  error?: unknown;
}

const invalid = (message: string) => new AppError('VALIDATION_ERROR', message);

function integerField(fields: FormFields, name: 'maxChars' | 'overlapChars'): number | undefined {
  const raw = fields[name];
  if (raw === undefined) return undefined;
  if (!/^\d{1,9}$/.test(raw)) throw invalid(`${name} must be a whole number.`);
  return Number(raw);
}

function metadataField(raw: string | undefined): DocumentMetadata | undefined {
  if (raw === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw invalid('metadata must be a JSON object.');
  }
  if (!Value.Check(MetadataSchema, value)) {
    throw invalid(
      'metadata must be a JSON object of at most 64 keys whose values are strings, numbers, booleans or arrays of strings.',
    );
  }
  metadataJson(value);
  return value;
}

export class IngestService {
  constructor(private readonly deps: IngestDeps) {}

  /**
   * The options of an upload or batch form, checked before anything is stored (400): `index` is
   * `true` or `false`; `commandId`, `maxChars` and `overlapChars` are checked as the index route
   * checks them (they are used only with `index=true`); `metadata` is a JSON object.
   */
  formOptions(fields: FormFields): IngestOptions {
    const flag = fields.index;
    if (flag !== undefined && flag !== 'true' && flag !== 'false') {
      throw invalid('index must be true or false.');
    }
    const settings: IndexBody = {
      ...(fields.commandId === undefined ? {} : { commandId: fields.commandId }),
      ...optional('maxChars', integerField(fields, 'maxChars')),
      ...optional('overlapChars', integerField(fields, 'overlapChars')),
    };
    this.checkIndex(settings);
    const metadata = metadataField(fields.metadata);
    return {
      ...optional('projectId', fields.projectId),
      ...optional('source', fields.source),
      ...optional('metadata', metadata),
      ...(flag === 'true' ? { index: settings } : {}),
    };
  }

  /** An index request's settings, with the route's messages (bounds, unknown command → 400). */
  private checkIndex(settings: IndexBody): void {
    const { maxChars, overlapChars } = settings;
    if (maxChars !== undefined && (maxChars < MAX_CHARS.minimum || maxChars > MAX_CHARS.maximum)) {
      throw invalid(`maxChars must be from ${MAX_CHARS.minimum} to ${MAX_CHARS.maximum}.`);
    }
    if (overlapChars !== undefined && overlapChars >= MAX_CHARS.maximum) {
      throw invalid(`overlapChars must be from 0 to ${MAX_CHARS.maximum - 1}.`);
    }
    this.deps.indexing.check(settings);
  }

  /**
   * Creates the document (or finds its duplicate) and, with `index`, queues it. A duplicate that
   * is being indexed already is answered as it is: the run under way indexes the same bytes.
   */
  async add(input: UploadInput, index: IndexBody | undefined): Promise<Ingested> {
    const { document, created } = await this.deps.documents.create(input);
    if (index === undefined) return { document, created };
    try {
      const outcome = await this.deps.indexing.index(document.id, { ...index, async: true });
      return { document: outcome.done ? outcome.result.document : outcome.document, created };
    } catch (error) {
      if (error instanceof AppError && error.code === 'KNOWLEDGE_INDEX_IN_PROGRESS' && !created) {
        return { document: await this.deps.documents.get(document.id), created };
      }
      throw error;
    }
  }

  /** Each received file in part order; one file's failure is its own item, never the batch's. */
  async addBatch(
    parts: readonly BatchPart[],
    options: IngestOptions,
    projects: readonly string[] | null = null,
  ): Promise<BatchOutcome[]> {
    const outcomes: BatchOutcome[] = [];
    for (const part of parts) {
      if (part.file === undefined) {
        outcomes.push({ name: part.name, error: part.error });
        continue;
      }
      try {
        const input = {
          ...this.uploadInput(options),
          projects,
          file: part.file,
          fileName: part.name,
        };
        outcomes.push({ name: part.name, result: await this.add(input, options.index) });
      } catch (error) {
        if (!(error instanceof AppError)) {
          this.deps.log.error({ err: error, file: part.name }, 'a file of a batch failed');
        }
        outcomes.push({ name: part.name, error });
      }
    }
    return outcomes;
  }

  /** A document from text: `md` when the name ends in `.md`, else `txt`; same size limit. */
  async addText(body: TextBody, projects: readonly string[] | null = null): Promise<Ingested> {
    const projectId = projectFor(body.projectId, projects);
    const bytes = Buffer.from(body.text, 'utf8');
    if (bytes.length > this.deps.uploadMaxBytes) throw this.tooLarge()();
    const markdown = /\.md$/i.test(body.name);
    const file = await this.deps.storage.receive(
      Readable.from([bytes]),
      this.deps.uploadMaxBytes,
      this.tooLarge(),
    );
    return this.add(
      {
        ...this.uploadInput({ ...body, ...optional('projectId', projectId) }),
        source: body.source ?? 'text',
        file,
        fileName: body.name,
        fileType: markdown
          ? { fileType: 'md', mimeType: 'text/markdown' }
          : { fileType: 'txt', mimeType: 'text/plain' },
      },
      body.index === true ? {} : undefined,
    );
  }

  /** A document fetched from a URL (see url-fetch.ts); `source` defaults to the URL. */
  async addUrl(body: UrlBody, projects: readonly string[] | null = null): Promise<Ingested> {
    // Before fetching: a key that may not add here makes the server fetch nothing.
    const projectId = projectFor(body.projectId, projects);
    metadataJson(body.metadata);
    const { uploadMaxBytes: maxBytes, urlTimeoutMs: timeoutMs } = this.deps;
    const fetched = await fetchUrl(body.url, {
      timeoutMs,
      maxBytes,
      allowAddress: this.deps.urlAllowPrivate ? () => true : isPublicAddress,
    });
    let file;
    try {
      file = await this.deps.storage.receive(fetched.body, maxBytes, this.tooLarge());
    } catch (error) {
      fetched.body.destroy();
      throw fetchError(error, fetched.timedOut(), timeoutMs);
    } finally {
      fetched.done();
    }
    const format = formatOfContentType(fetched.contentType);
    return this.add(
      {
        ...this.uploadInput({ ...body, ...optional('projectId', projectId) }),
        source: body.source ?? body.url,
        file,
        fileName: body.name ?? nameOfUrl(fetched.url),
        ...(format === undefined ? {} : { fileType: format }),
      },
      body.index === true ? {} : undefined,
    );
  }

  private uploadInput(options: {
    projectId?: string;
    source?: string;
    metadata?: DocumentMetadata;
  }): Omit<UploadInput, 'file' | 'fileName'> {
    return {
      projectId: options.projectId,
      source: options.source,
      ...optional('metadata', options.metadata),
    };
  }

  private tooLarge() {
    const max = this.deps.uploadMaxBytes;
    return () =>
      new AppError(
        'PAYLOAD_TOO_LARGE',
        `The document is larger than the upload limit of ${max} bytes.`,
      );
  }
}

/** `{[key]: value}` when the value is set, else `{}` (exactOptionalPropertyTypes). */
function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}
