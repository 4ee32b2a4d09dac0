/**
 * Errors raised before a request reaches Fastify's routing (Node's HTTP parser: a bad method, a CR
 * or NUL in a header, content-length beside transfer-encoding, a bad chunk size, headers or URL
 * too long, headers too slow) or inside its router (a malformed URL, a path parameter too long).
 * Each answers the catalogue's `{statusCode, code, message}` and never echoes the request.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode } from '../errors.js';

/** A complete HTTP/1.1 error response, for a socket no response object owns; closes the connection. */
export function rawErrorResponse(code: ErrorCode, message?: string): string {
  const error = new AppError(code, message);
  const body = JSON.stringify(error.toBody());
  return (
    `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode] ?? 'Error'}\r\n` +
    'content-type: application/json; charset=utf-8\r\n' +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    'connection: close\r\n\r\n' +
    body
  );
}

/** The catalogue entry for an error of Node's HTTP parser (`HPE_*`) or its timers. */
export function clientErrorCode(nodeCode: string | undefined): ErrorCode {
  if (nodeCode === 'ERR_HTTP_REQUEST_TIMEOUT') return 'REQUEST_TIMEOUT';
  if (nodeCode === 'HPE_HEADER_OVERFLOW') return 'HEADERS_TOO_LARGE';
  return 'MALFORMED_REQUEST';
}

/**
 * Fastify's `clientErrorHandler`: Node's `clientError` event. The raw packet the error carries is
 * never logged or echoed.
 */
export function handleClientError(
  this: { log: { debug: (obj: object, msg: string) => void } },
  error: Error & { code?: string },
  socket: Socket,
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const code = clientErrorCode(error.code);
  this.log.debug({ code, parserCode: error.code }, 'client error');
  if (socket.writable) socket.end(rawErrorResponse(code));
  socket.destroySoon();
}

/** Fastify's `frameworkErrors`: router errors answered before any hook, auth included, runs. */
export function handleFrameworkError(
  error: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
): void {
  const appError =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new AppError('URI_TOO_LONG')
      : new AppError('MALFORMED_REQUEST', 'The request URL is malformed.');
  void reply.status(appError.statusCode).send(appError.toBody());
}
