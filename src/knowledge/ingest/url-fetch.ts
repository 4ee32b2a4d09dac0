/**
 * Fetching a document from a URL for URL ingest: http/https only, redirects followed by hand (at
 * most MAX_REDIRECTS, each one checked again), one deadline for the whole fetch, and addresses
 * outside the public unicast ranges refused unless allowed. The address check runs where the
 * connection is made: a hostname is resolved by our own `lookup`, which refuses a forbidden
 * address and hands the socket exactly the addresses it checked (no second resolution that a
 * rebinding DNS server could answer differently); an IP literal is checked before connecting.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError } from '../../errors.js';

export const MAX_REDIRECTS = 5;

/** Whether `address` (an IP) is public unicast; IPv4-mapped IPv6 counts as its IPv4 address. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  // process(): ::ffff:10.0.0.1 → 10.0.0.1, so a mapped private address is judged as such.
  return ipaddr.process(address).range() === 'unicast';
}

export interface FetchOptions {
  timeoutMs: number;
  maxBytes: number;
  /** Which resolved or literal addresses may be connected to (default: public unicast only). */
  allowAddress: (address: string) => boolean;
}

export interface FetchedUrl {
  /** The URL that answered (after redirects). */
  url: URL;
  /** The media type of the answer, lower case, without parameters; undefined when absent. */
  contentType: string | undefined;
  body: IncomingMessage;
  /** Ends the deadline timer (call once the body is consumed or abandoned). */
  done(): void;
  /** Whether the deadline passed (an error reading the body is then a timeout). */
  timedOut(): boolean;
}

class ForbiddenAddressError extends Error {}

const forbidden = (host: string) =>
  new AppError(
    'KNOWLEDGE_URL_FORBIDDEN',
    `${host} resolves to a private, loopback or otherwise non-public address; it is not fetched (KNOWLEDGE_URL_ALLOW_PRIVATE).`,
  );

function parseUrl(raw: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    throw new AppError('VALIDATION_ERROR', `body.url is not a valid URL: ${raw.slice(0, 200)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new AppError('VALIDATION_ERROR', 'body.url must be an http or https URL.');
  }
  if (url.username !== '' || url.password !== '') {
    throw new AppError('VALIDATION_ERROR', 'body.url must not carry credentials.');
  }
  return url;
}

/** A `lookup` for the socket that refuses names resolving to any address outside the policy. */
function guardedLookup(allow: (address: string) => boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error !== null) {
        callback(error, '', 0);
        return;
      }
      const first = addresses[0];
      if (first === undefined || addresses.some((a) => !allow(a.address))) {
        callback(new ForbiddenAddressError(hostname), '', 0);
        return;
      }
      if (options.all === true) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}

/** One request, no redirect handling; resolves with the response head. */
function get(url: URL, options: FetchOptions, signal: AbortSignal): Promise<IncomingMessage> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) !== 0 && !options.allowAddress(host)) throw forbidden(url.hostname);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const request = send(url, {
      method: 'GET',
      agent: false,
      lookup: guardedLookup(options.allowAddress),
      signal,
      headers: { 'user-agent': 'agent-platform-server', accept: '*/*' },
    });
    request.on('response', resolve);
    request.on('error', (error) => {
      reject(error instanceof ForbiddenAddressError ? forbidden(url.hostname) : error);
    });
    request.end();
  });
}

const failed = (message: string) => new AppError('KNOWLEDGE_URL_FETCH_FAILED', message);

/** Turns transport errors into the catalogue's (timeout and network failures: 502). */
export function fetchError(error: unknown, timedOut: boolean, timeoutMs: number): unknown {
  if (error instanceof AppError) return error;
  if (timedOut) return failed(`Fetching the URL did not finish within ${timeoutMs} ms.`);
  const message = error instanceof Error ? error.message : String(error);
  return failed(`Fetching the URL failed: ${message}`);
}

/**
 * Fetches `raw`, following redirects; resolves with the successful answer's body to read
 * (status 2xx). Over-limit Content-Length → 413; any other status → 502 naming it.
 */
export async function fetchUrl(raw: string, options: FetchOptions): Promise<FetchedUrl> {
  let url = parseUrl(raw);
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, options.timeoutMs);
  timer.unref();
  const done = () => {
    clearTimeout(timer);
  };
  try {
    for (let redirects = 0; ; redirects += 1) {
      const response = await get(url, options, controller.signal);
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (status >= 300 && status < 400 && location !== undefined) {
        response.resume();
        if (redirects >= MAX_REDIRECTS) throw failed(`More than ${MAX_REDIRECTS} redirects.`);
        url = parseUrl(location, url);
        continue;
      }
      if (status < 200 || status >= 300) {
        response.resume();
        throw failed(`The URL answered HTTP ${status}.`);
      }
      const length = Number(response.headers['content-length'] ?? Number.NaN);
      if (Number.isFinite(length) && length > options.maxBytes) {
        response.destroy();
        throw new AppError(
          'PAYLOAD_TOO_LARGE',
          `The document at the URL is larger than the upload limit of ${options.maxBytes} bytes.`,
        );
      }
      const contentType = response.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
      return { url, contentType, body: response, done, timedOut: () => timedOut };
    }
  } catch (error) {
    done();
    throw fetchError(error, timedOut, options.timeoutMs);
  }
}

/** Text formats a Content-Type decides (others are recognised by their content). */
const TEXT_TYPES: Record<string, { fileType: string; mimeType: string }> = {
  'text/html': { fileType: 'html', mimeType: 'text/html' },
  'application/xhtml+xml': { fileType: 'html', mimeType: 'text/html' },
  'text/markdown': { fileType: 'md', mimeType: 'text/markdown' },
  'text/x-markdown': { fileType: 'md', mimeType: 'text/markdown' },
  'text/plain': { fileType: 'txt', mimeType: 'text/plain' },
  'text/csv': { fileType: 'csv', mimeType: 'text/csv' },
  'text/tab-separated-values': { fileType: 'tsv', mimeType: 'text/tab-separated-values' },
  'application/json': { fileType: 'json', mimeType: 'application/json' },
  'application/x-ndjson': { fileType: 'jsonl', mimeType: 'application/x-ndjson' },
};

/** The format a text Content-Type stands for; undefined: detect from the content and name. */
export function formatOfContentType(
  contentType: string | undefined,
): { fileType: string; mimeType: string } | undefined {
  return contentType === undefined ? undefined : TEXT_TYPES[contentType];
}

/** A document name from a URL: the last path segment, else the host. */
export function nameOfUrl(url: URL): string {
  const segment = url.pathname
    .split('/')
    .filter((s) => s !== '')
    .pop();
  if (segment === undefined) return url.hostname;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
