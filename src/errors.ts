/**
 * The one error catalogue. Every error that leaves the server is `{statusCode, code, message}`;
 * services throw `AppError`s built from this table and never know about HTTP beyond the status here.
 */
export const ERROR_CATALOGUE = {
  VALIDATION_ERROR: { status: 400, message: 'The request is invalid.' },
  INVALID_JSON: { status: 400, message: 'The request body is not valid JSON.' },
  BAD_REQUEST: { status: 400, message: 'Bad request.' },
  MALFORMED_REQUEST: { status: 400, message: 'The request is not well-formed HTTP.' },
  AUTH_UNAUTHORIZED: { status: 401, message: 'Missing or invalid credentials.' },
  AUTH_INVALID_API_KEY: { status: 401, message: 'The API key is invalid or revoked.' },
  AUTH_FORBIDDEN: { status: 403, message: 'Your agent level does not allow this request.' },
  AUTH_ACCESS_FORBIDDEN: { status: 403, message: 'Your key’s access does not allow this request.' },
  AUTH_PROJECT_FORBIDDEN: { status: 403, message: 'Your key may not reach this project.' },
  AUTH_API_KEY_NOT_FOUND: { status: 404, message: 'API key not found.' },
  ROUTE_NOT_FOUND: { status: 404, message: 'Route not found.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed on this route.' },
  REQUEST_TIMEOUT: { status: 408, message: 'The request did not arrive in time.' },
  CONFLICT: { status: 409, message: 'The request conflicts with the current state.' },
  AUTH_API_KEY_REVOKED: { status: 409, message: 'The API key is already revoked.' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is too large.' },
  URI_TOO_LONG: { status: 414, message: 'A segment of the request path is too long.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Unsupported media type.' },
  RATE_LIMITED: { status: 429, message: 'Too many requests; retry later.' },
  TOO_MANY_CONNECTIONS: { status: 429, message: 'Too many open connections from this client.' },
  HEADERS_TOO_LARGE: {
    status: 431,
    message: 'The request headers or URL are too large.',
  },
  INTERNAL_ERROR: { status: 500, message: 'Internal server error.' },
  READ_ONLY_MODE: {
    status: 503,
    message: 'Application is in read-only mode because database migration failed',
  },
  SERVICE_UNAVAILABLE: { status: 503, message: 'The service is shutting down; retry shortly.' },
  OVERLOADED: {
    status: 503,
    message: 'The server is serving as many requests as it can; retry after the Retry-After delay.',
  },
  DATABASE_UNAVAILABLE: {
    status: 503,
    message: 'The database is unreachable, busy or did not answer in time; retry shortly.',
  },
  NOT_READY: {
    status: 503,
    message: 'The instance is starting and not ready to serve requests yet; retry shortly.',
  },
  KNOWLEDGE_DOCUMENT_NOT_FOUND: { status: 404, message: 'Knowledge document not found.' },
  KNOWLEDGE_DOCUMENT_NOT_INDEXED: {
    status: 409,
    message: 'The document has no converted markdown yet: index it first.',
  },
  KNOWLEDGE_DOCUMENT_REQUIRED: { status: 400, message: 'The upload has no file part.' },
  KNOWLEDGE_DOCUMENT_EMPTY: { status: 400, message: 'The uploaded file is empty.' },
  KNOWLEDGE_COMMAND_NOT_FOUND: { status: 400, message: 'Unknown converter command.' },
  KNOWLEDGE_QUERY_REQUIRED: { status: 400, message: 'The query must not be blank.' },
  KNOWLEDGE_RERANK_UNAVAILABLE: {
    status: 400,
    message: 'No reranker is configured (RERANK_PROVIDER=none): omit `rerank` or send false.',
  },
  KNOWLEDGE_INDEX_IN_PROGRESS: { status: 409, message: 'The document is being indexed already.' },
  KNOWLEDGE_INDEX_CANCELLED: {
    status: 409,
    message: 'The document was deleted while it was being indexed.',
  },
  KNOWLEDGE_INDEX_SUPERSEDED: {
    status: 409,
    message: 'A newer indexing run of the document took over; this run wrote nothing.',
  },
  KNOWLEDGE_UNSUPPORTED_FORMAT: {
    status: 422,
    message: 'The converter does not support this file format.',
  },
  KNOWLEDGE_DOCUMENT_UNREADABLE: {
    status: 422,
    message: 'The file is encrypted, password-protected or corrupt.',
  },
  KNOWLEDGE_CONVERTER_NO_MARKDOWN: {
    status: 422,
    message: 'The converter found no text to extract from this file.',
  },
  KNOWLEDGE_NO_CHUNKS_GENERATED: { status: 422, message: 'The document produced no chunks.' },
  KNOWLEDGE_CONVERTER_FAILED: { status: 502, message: 'The converter failed.' },
  KNOWLEDGE_CONVERTER_TIMEOUT: { status: 504, message: 'The converter timed out.' },
  KNOWLEDGE_EMBEDDING_FAILED: { status: 502, message: 'Embedding the document failed.' },
  KNOWLEDGE_URL_FORBIDDEN: {
    status: 403,
    message: 'The URL points to a private, loopback or otherwise non-public address.',
  },
  KNOWLEDGE_URL_FETCH_FAILED: { status: 502, message: 'Fetching the URL failed.' },
  KNOWLEDGE_CONVERTER_BINARY_MISSING: {
    status: 500,
    message: 'The converter binary is not installed or not executable.',
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** The body every error response carries. */
export interface ErrorBody {
  statusCode: number;
  code: string;
  message: string;
}

/** An expected, client-facing error: its code picks the status; the message may be more specific. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;

  constructor(code: ErrorCode, message?: string, options?: { cause?: unknown }) {
    const entry = ERROR_CATALOGUE[code];
    super(message ?? entry.message, options);
    this.name = 'AppError';
    this.code = code;
    this.statusCode = entry.status;
  }

  toBody(): ErrorBody {
    return { statusCode: this.statusCode, code: this.code, message: this.message };
  }
}
