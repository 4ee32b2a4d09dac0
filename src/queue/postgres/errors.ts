/**
 * Errors as the PostgreSQL queue stores them in `aps_jobs.error` (jsonb) and rebuilds them for
 * `wait`, and the error a run's signal is aborted with when its lease is lost.
 */
import { AppError, ERROR_CATALOGUE, type ErrorCode } from '../../errors.js';

interface StoredError {
  code?: string;
  message: string;
}

/** The reason of a job's signal when its lease was lost (another instance may be running it). */
export class JobLeaseLostError extends Error {
  constructor(jobId: string, detail: string) {
    super(`Job ${jobId} lost its lease: ${detail}`);
    this.name = 'JobLeaseLostError';
  }
}

/** Rebuilds a stored error: an AppError keeps its code, anything else becomes a plain Error. */
export function toError(stored: unknown): Error {
  const { code, message } = (stored ?? {}) as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : 'The job failed.';
  if (typeof code === 'string' && Object.hasOwn(ERROR_CATALOGUE, code)) {
    return new AppError(code as ErrorCode, text);
  }
  return new Error(text);
}

/** What is stored of a handler's error: an AppError's code travels with it to other instances. */
export function fromError(error: unknown): StoredError {
  if (error instanceof AppError) return { code: error.code, message: error.message };
  return { message: error instanceof Error ? error.message : String(error) };
}

/** JSON text for a jsonb column (`undefined`, which JSON cannot hold, becomes null). */
export function toJson(value: unknown): string {
  const text: unknown = JSON.stringify(value);
  return typeof text === 'string' ? text : 'null';
}

/** A data error (SQLSTATE class 22, e.g. a \u0000 in JSON): storing it again will not help. */
export function isDataError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('22');
}
