/**
 * The "request completed" line, formatted in one pass: the same JSON pino writes for
 * `logger.info({reqId, req, res, responseTime}, 'request completed')`, built from the fixed shape
 * of its fields instead of pino's walk over an object (its key loop, nested `JSON.stringify`,
 * escaping checks): the line was the largest cost of a small authenticated GET left in our code
 * (docs/performance.md). pino still supplies every part that is its own, through its exported
 * `symbols`: the level's prefix, the time, the bindings (pid, hostname) and the destination
 * stream, so the line reaches the same buffered stdout (or pino-pretty) as every other line.
 *
 * Used only when the logger is a pino logger this shape matches (no log formatter, mixin, hook,
 * message prefix or multistream, message key `msg`); otherwise `lineWriter` returns undefined and
 * the caller logs through pino. A test compares both lines field by field.
 */
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';

/** What the request line reports (the fields of Fastify's req and res serializers). */
export interface RequestLineFields {
  reqId: string;
  method: string;
  url: string;
  version: string | undefined;
  host: string;
  remoteAddress: string | undefined;
  remotePort: number | undefined;
  statusCode: number;
  responseTime: number;
}

/** The two levels a request line is written at: request-log.ts chooses. */
export type RequestLineLevel = 'info' | 'debug';

export type RequestLineWriter = (fields: RequestLineFields, level: RequestLineLevel) => void;

/** pino's symbols (its typings name fewer than it exports: `msgPrefixSym`). */
const symbols = pino.symbols as unknown as Record<string, symbol>;
const symbol = (name: string): symbol => symbols[name] ?? Symbol(name);
const lsCacheSym = symbol('lsCacheSym');
const timeSym = symbol('timeSym');
const chindingsSym = symbol('chindingsSym');
const streamSym = symbol('streamSym');
const formattersSym = symbol('formattersSym');
const mixinSym = symbol('mixinSym');
const hooksSym = symbol('hooksSym');
const msgPrefixSym = symbol('msgPrefixSym');
const messageKeySym = symbol('messageKeySym');
const needsMetadataGsym = symbol('needsMetadataGsym');
const serializersSym = symbol('serializersSym');
const stringifiersSym = symbol('stringifiersSym');
const wildcardFirstSym = symbol('wildcardFirstSym');
const endSym = symbol('endSym');
const nestedKeySym = symbol('nestedKeySym');

/** The line's own keys: a serializer or stringifier of one would change what pino writes. */
const KEYS = ['reqId', 'req', 'res', 'responseTime', 'msg'];

/** pino's numbers of those levels. */
export const LEVEL_NUMBERS: Record<RequestLineLevel, number> = { info: 30, debug: 20 };
const END = ',"msg":"request completed"}\n';

/** pino's number: a non-finite one becomes null. */
const num = (n: number): string => (Number.isFinite(n) ? String(n) : 'null');

/** The object pino writes as this line (where the logger is not plain pino). */
export function requestLineObject(f: RequestLineFields): Record<string, unknown> {
  return {
    reqId: f.reqId,
    req: {
      method: f.method,
      url: f.url,
      version: f.version,
      host: f.host,
      remoteAddress: f.remoteAddress,
      remotePort: f.remotePort,
    },
    res: { statusCode: f.statusCode },
    responseTime: f.responseTime,
  };
}

/** The line's JSON after pino's prefix (level, time, bindings). */
export function requestLineBody(f: RequestLineFields): string {
  let req = `{"method":${JSON.stringify(f.method)},"url":${JSON.stringify(f.url)}`;
  if (f.version !== undefined) req += `,"version":${JSON.stringify(f.version)}`;
  req += `,"host":${JSON.stringify(f.host)}`;
  if (f.remoteAddress !== undefined) req += `,"remoteAddress":${JSON.stringify(f.remoteAddress)}`;
  if (f.remotePort !== undefined) req += `,"remotePort":${num(f.remotePort)}`;
  return (
    `,"reqId":${JSON.stringify(f.reqId)},"req":${req}}` +
    `,"res":{"statusCode":${num(f.statusCode)}},"responseTime":${num(f.responseTime)}` +
    END
  );
}

interface PinoInternals {
  [key: symbol]: unknown;
}

/**
 * Whether an object (pino's serializers or stringifiers) has nothing for the line's keys (a key
 * set to undefined, as a child logger unsets an inherited serializer, changes nothing).
 */
function ownNone(object: unknown): boolean {
  if (typeof object !== 'object' || object === null) return true;
  const entries = object as Record<string, unknown>;
  return KEYS.every(
    (key) => !Object.prototype.hasOwnProperty.call(object, key) || entries[key] === undefined,
  );
}

/**
 * A writer of the request line through `logger`'s own stream, or undefined when `logger` is not
 * a plain pino logger (then pino must format the line).
 */
export function lineWriter(logger: FastifyBaseLogger): RequestLineWriter | undefined {
  const internals = logger as unknown as PinoInternals;
  const levels = internals[lsCacheSym] as Record<number, string> | undefined;
  const time = internals[timeSym];
  const stream = internals[streamSym] as { write?: unknown } | undefined;
  const formatters = internals[formattersSym] as { log?: unknown } | undefined;
  const hooks = internals[hooksSym] as { streamWrite?: unknown; logMethod?: unknown } | undefined;
  const info = levels?.[LEVEL_NUMBERS.info];
  const debug = levels?.[LEVEL_NUMBERS.debug];
  const plain =
    info !== undefined &&
    debug !== undefined &&
    typeof time === 'function' &&
    typeof internals[chindingsSym] === 'string' &&
    typeof stream?.write === 'function' &&
    (stream as PinoInternals)[needsMetadataGsym] !== true &&
    formatters?.log === undefined &&
    internals[mixinSym] == null &&
    hooks?.streamWrite == null &&
    hooks?.logMethod == null &&
    !internals[msgPrefixSym] &&
    internals[messageKeySym] === 'msg' &&
    internals[endSym] === '}\n' &&
    internals[nestedKeySym] == null &&
    ownNone(internals[serializersSym]) &&
    ownNone(internals[stringifiersSym]) &&
    (internals[stringifiersSym] as PinoInternals | undefined)?.[wildcardFirstSym] === undefined;
  if (!plain) return undefined;
  const now = (time as () => string).bind(logger);
  const bindings = internals[chindingsSym] as string;
  const write = (stream.write as (line: string) => void).bind(stream);
  const prefixes: Record<RequestLineLevel, string> = { info, debug };
  return (fields, level) => {
    write(prefixes[level] + now() + bindings + requestLineBody(fields));
  };
}
