/**
 * Reads a multipart upload: the file part is streamed to a temporary file while it is hashed;
 * `projectId` and `source` may come before or after it (the reference console sends them after).
 */
import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { UploadInput } from './documents.service.js';
import { UPLOAD_FIELD_LIMITS } from './knowledge.schemas.js';
import type { FileStorage, PendingFile } from './storage/storage.js';

const FIELD_LIMITS: Record<string, number> = UPLOAD_FIELD_LIMITS;

/** Multipart parser errors are the client's: a malformed body is a 400, not a 500. */
function asUploadError(error: unknown): unknown {
  if (error instanceof AppError) return error;
  const status = (error as { statusCode?: number }).statusCode;
  if (status === 413) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new AppError('BAD_REQUEST', `Malformed multipart upload: ${message}`);
}

export async function readUpload(
  request: FastifyRequest,
  storage: FileStorage,
  maxBytes: number,
): Promise<UploadInput> {
  if (!request.isMultipart()) {
    throw new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      'Upload a file as multipart/form-data (a file part plus optional projectId and source).',
    );
  }
  const tooLarge = () =>
    new AppError(
      'PAYLOAD_TOO_LARGE',
      `The file is larger than the upload limit of ${maxBytes} bytes.`,
    );
  let file: PendingFile | undefined;
  let fileName: string | undefined;
  const fields: Record<string, string> = {};
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (file !== undefined)
          throw new AppError('VALIDATION_ERROR', 'Upload exactly one file per request.');
        file = await storage.receive(part.file, maxBytes, tooLarge);
        if (part.file.truncated) throw tooLarge();
        fileName = part.filename;
      } else if (part.fieldname in FIELD_LIMITS) {
        // Browser forms send empty fields for unset values: empty means absent.
        const value = typeof part.value === 'string' ? part.value.trim() : '';
        const max = FIELD_LIMITS[part.fieldname] ?? 0;
        if (value.length > max) {
          throw new AppError(
            'VALIDATION_ERROR',
            `${part.fieldname} must be at most ${max} characters.`,
          );
        }
        if (value !== '') fields[part.fieldname] = value;
      }
    }
  } catch (error) {
    await file?.discard();
    throw asUploadError(error);
  }
  if (file === undefined) throw new AppError('KNOWLEDGE_DOCUMENT_REQUIRED');
  return { file, fileName, projectId: fields.projectId, source: fields.source };
}
