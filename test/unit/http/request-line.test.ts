/** The request line formatted in one pass: the same line pino writes for the same fields. */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import type { FastifyBaseLogger } from 'fastify';
import { pino, type LoggerOptions } from 'pino';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/logger.js';
import { lineLogger } from '../../../src/http/request-log.js';
import {
  lineWriter,
  requestLineObject,
  type RequestLineFields,
  type RequestLineLevel,
} from '../../../src/http/request-line.js';

/** A pino logger writing into `lines`, as logger.ts makes it (redaction), and its bare child. */
function capture(options: LoggerOptions = {}): { logger: FastifyBaseLogger; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const root = pino(
    { level: 'debug', redact: { paths: ['apiKey'], censor: 'x' }, ...options },
    stream,
  );
  return { logger: root.child({}, { redact: [] }), lines };
}

/** The line as pino writes it (RequestLog without the fast writer). */
function pinoLine(logger: FastifyBaseLogger, f: RequestLineFields, level: RequestLineLevel): void {
  logger[level](requestLineObject(f), 'request completed');
}

const withoutTime = (line: string): unknown => {
  const { time, ...rest } = JSON.parse(line) as Record<string, unknown>;
  expect(time).toEqual(expect.any(Number));
  return rest;
};

const anyText = fc.string({ unit: 'binary', maxLength: 60 });
const fields: fc.Arbitrary<RequestLineFields> = fc.record({
  reqId: anyText,
  method: fc.constantFrom('GET', 'POST', 'DELETE'),
  url: anyText,
  version: fc.option(anyText, { nil: undefined }),
  host: anyText,
  remoteAddress: fc.option(fc.ipV4(), { nil: undefined }),
  remotePort: fc.option(fc.integer({ min: 0, max: 65535 }), { nil: undefined }),
  statusCode: fc.integer({ min: 100, max: 599 }),
  responseTime: fc.oneof(fc.double(), fc.constantFrom(Number.NaN, Infinity)),
});

describe('the request line', () => {
  it('equals pino’s line for the same fields and level (any text, missing parts, non-finite numbers)', async () => {
    const { logger, lines } = capture();
    const write = lineWriter(logger);
    expect(write).toBeDefined();
    await fc.assert(
      fc.asyncProperty(fields, fc.constantFrom<RequestLineLevel>('info', 'debug'), async (f, l) => {
        lines.length = 0;
        pinoLine(logger, f, l);
        write!(f, l);
        await new Promise((r) => setImmediate(r));
        expect(lines).toHaveLength(2);
        expect(lines[1]!.endsWith('}\n')).toBe(true);
        expect(withoutTime(lines[1]!)).toEqual(withoutTime(lines[0]!));
      }),
      { numRuns: 300 },
    );
  });

  it('carries the logger’s bindings and level prefix', () => {
    const { logger, lines } = capture({ base: { pid: 7, hostname: 'h', instance: 'a"b' } });
    const line = {
      reqId: 'r1',
      method: 'GET',
      url: '/x?q="1"',
      version: undefined,
      host: 'localhost:4000',
      remoteAddress: '127.0.0.1',
      remotePort: 5000,
      statusCode: 200,
      responseTime: 1.5,
    };
    lineWriter(logger)!(line, 'info');
    lineWriter(logger)!(line, 'debug');
    expect(lines.map((l) => (JSON.parse(l) as { level: number }).level)).toEqual([30, 20]);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 30,
      pid: 7,
      hostname: 'h',
      instance: 'a"b',
      reqId: 'r1',
      req: { url: '/x?q="1"', remotePort: 5000 },
      res: { statusCode: 200 },
      responseTime: 1.5,
      msg: 'request completed',
    });
  });

  it('is used with the server’s own logger (logger.ts), JSON lines and readable ones', () => {
    for (const logFormat of ['json', 'pretty'] as const) {
      const out = new Writable({
        write: (_chunk, _encoding, done) => {
          done();
        },
      });
      const root = createLogger({ logLevel: 'info', logFormat }, out, false);
      expect(lineWriter(lineLogger(root))).toBeDefined();
    }
  });

  it('is not used where pino would format the line differently', () => {
    const cases: LoggerOptions[] = [
      { formatters: { log: (o) => ({ ...o, extra: 1 }) } },
      { mixin: () => ({ extra: 1 }) },
      { messageKey: 'message' },
      { msgPrefix: '[api] ' },
      { hooks: { streamWrite: (s) => s } },
      { serializers: { req: (r: unknown) => r } },
      { crlf: true },
      { nestedKey: 'payload' },
    ];
    for (const options of cases) expect(lineWriter(capture(options).logger)).toBeUndefined();
  });
});
