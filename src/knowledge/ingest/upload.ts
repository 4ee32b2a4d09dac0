/**
 * Reads a multipart upload: the file part is streamed to a temporary file while it is hashed;
 * `projectId` and `source` may come before or after it (the reference console sends them after).
 * A batch (readBatch) holds several file parts; the form fields apply to each of them.
 */
import type { FastifyRequest } from 'fastify';
import { AppError } from '../../errors.js';
import type { UploadInput } from '../documents/documents.service.js';
import { UPLOAD_FIELD_LIMITS } from './ingest.schemas.js';
import type { FileStorage, PendingFile } from '../storage/storage.js';

/** Characters of each text field at most (fields not listed are ignored). */
const FIELD_LIMITS: Record<string, number> = {
  ...UPLOAD_FIELD_LIMITS,
  index: 10,
  commandId: 100,
  maxChars: 20,
  overlapChars: 20,
  // Bounded in bytes by the service (16 kB as JSON); the plugin's fieldSize caps the rest.
  metadata: 64 * 1024,
};

/** The text fields of the form (trimmed; empty ones left out). */
export type FormFields = Partial<Record<string, string>>;

/** Multipart parser errors are the client's: a malformed body is a 400, not a 500. */
function asUploadError(error: unknown): unknown {
  if (error instanceof AppError) return error;
  const status = (error as { statusCode?: number }).statusCode;
  if (status === 413) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new AppError('BAD_REQUEST', `Malformed multipart upload: ${message}`);
}

function requireMultipart(request: FastifyRequest): void {
  if (!request.isMultipart()) {
    throw new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      'Upload a file as multipart/form-data (a file part plus optional projectId and source).',
    );
  }
}

const tooLargeError = (maxBytes: number) => () =>
  new AppError(
    'PAYLOAD_TOO_LARGE',
    `The file is larger than the upload limit of ${maxBytes} bytes.`,
  );

/** Records a text field, or 400 when it is over its limit. */
function readField(fields: FormFields, name: string, raw: unknown): void {
  if (!(name in FIELD_LIMITS)) return;
  // Browser forms send empty fields for unset values: empty means absent.
  const value = typeof raw === 'string' ? raw.trim() : '';
  const max = FIELD_LIMITS[name] ?? 0;
  if (value.length > max) {
    throw new AppError('VALIDATION_ERROR', `${name} must be at most ${max} characters.`);
  }
  if (value !== '') fields[name] = value;
}

export async function readUpload(
  request: FastifyRequest,
  storage: FileStorage,
  maxBytes: number,
): Promise<{ input: UploadInput; fields: FormFields }> {
  requireMultipart(request);
  const tooLarge = tooLargeError(maxBytes);
  let file: PendingFile | undefined;
  let fileName: string | undefined;
  const fields: FormFields = {};
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (file !== undefined)
          throw new AppError('VALIDATION_ERROR', 'Upload exactly one file per request.');
        file = await storage.receive(part.file, maxBytes, tooLarge);
        if (part.file.truncated) throw tooLarge();
        fileName = part.filename;
      } else readField(fields, part.fieldname, part.value);
    }
  } catch (error) {
    await file?.discard();
    throw asUploadError(error);
  }
  if (file === undefined) throw new AppError('KNOWLEDGE_DOCUMENT_REQUIRED');
  return {
    input: { file, fileName, projectId: fields.projectId, source: fields.source },
    fields,
  };
}

/** One file part of a batch: received (to commit or discard), or refused on its own. */
export interface BatchPart {
  name: string;
  file?: PendingFile;
  error?: AppError;
}

/** Removes the temporary files of a batch's received parts. */
export async function discardAll(parts: readonly BatchPart[]): Promise<void> {
  for (const part of parts) if (part.file !== undefined) await part.file.discard();
}

/**
 * Reads a batch: every file part is received in turn (one over the size limit is cut off by the
 * parser, recorded as a 413 and its temporary file removed; the others go on). On a failure of
 * the request itself every received file is discarded.
 */
export async function readBatch(
  request: FastifyRequest,
  storage: FileStorage,
  maxBytes: number,
  maxFiles: number,
): Promise<{ parts: BatchPart[]; fields: FormFields }> {
  requireMultipart(request);
  const tooLarge = tooLargeError(maxBytes);
  const parts: BatchPart[] = [];
  const fields: FormFields = {};
  try {
    // The plugin reads `throwFileSizeLimit` per call too, though its type omits it: a file over
    // the limit is then truncated (its stream ends), not failed, and the next part follows.
    const options = {
      limits: {
        fileSize: maxBytes,
        files: maxFiles,
        parts: maxFiles + Object.keys(FIELD_LIMITS).length + 10,
      },
      throwFileSizeLimit: false,
    };
    for await (const part of request.parts(options)) {
      if (part.type === 'file') {
        const file = await storage.receive(part.file, maxBytes, tooLarge);
        if (part.file.truncated) {
          await file.discard();
          parts.push({ name: part.filename, error: tooLarge() });
        } else parts.push({ name: part.filename, file });
      } else readField(fields, part.fieldname, part.value);
    }
  } catch (error) {
    await discardAll(parts);
    if ((error as { code?: string }).code === 'FST_FILES_LIMIT') {
      throw new AppError('PAYLOAD_TOO_LARGE', `A batch holds at most ${maxFiles} files.`);
    }
    throw asUploadError(error);
  }
  if (parts.length === 0) throw new AppError('KNOWLEDGE_DOCUMENT_REQUIRED');
  return { parts, fields };
}
