/**
 * A small streaming JSON walker. The word-vector source is a 300 MB JSON document; `JSON.parse`
 * needs the whole text plus every parsed array in memory at once (well over 1 GB) and blocks for
 * seconds. This walks the bytes chunk by chunk and reports scalars with their path, so the cache
 * builder keeps only the vectors it wants.
 */

export type JsonPath = readonly (string | number)[];
export type JsonScalar = string | number | boolean | null;

interface JsonVisitor {
  /** A scalar value. `path` is reused between calls: copy it if you keep it. */
  scalar(path: JsonPath, value: JsonScalar): void;
  open?(path: JsonPath, kind: 'object' | 'array'): void;
  close?(path: JsonPath, kind: 'object' | 'array'): void;
}

export class JsonSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonSyntaxError';
  }
}

const NEED_MORE = 0;
const END = 1;
const PUNCT = 2;
const STRING = 3;
const NUMBER = 4;
const LITERAL = 5;
type TokenKind =
  typeof NEED_MORE | typeof END | typeof PUNCT | typeof STRING | typeof NUMBER | typeof LITERAL;

const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);
const EMPTY = Buffer.alloc(0);

const isDigit = (b: number): boolean => b >= 0x30 && b <= 0x39;
const isNumberByte = (b: number): boolean =>
  isDigit(b) || b === 0x2d || b === 0x2b || b === 0x2e || b === 0x65 || b === 0x45;
const isSpace = (b: number): boolean => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/** Byte-level tokenizer. A token cut by a chunk boundary is retried once more bytes arrive. */
class Tokenizer {
  private buf: Buffer = EMPTY;
  private pos = 0;
  punct = 0;
  value: JsonScalar = null;

  feed(chunk: Buffer): void {
    const rest = this.buf.subarray(this.pos);
    this.buf = rest.length === 0 ? chunk : Buffer.concat([rest, chunk]);
    this.pos = 0;
  }

  next(final: boolean): TokenKind {
    const b = this.buf;
    let i = this.pos;
    while (i < b.length && isSpace(b[i] ?? 0)) i++;
    this.pos = i;
    if (i >= b.length) return final ? END : NEED_MORE;
    const c = b[i] ?? 0;
    if (c === 0x7b || c === 0x7d || c === 0x5b || c === 0x5d || c === 0x3a || c === 0x2c) {
      this.punct = c;
      this.pos = i + 1;
      return PUNCT;
    }
    if (c === 0x22) return this.string(final);
    let j = i;
    if (c === 0x2d || isDigit(c)) {
      while (j < b.length && isNumberByte(b[j] ?? 0)) j++;
      if (j === b.length && !final) return NEED_MORE;
      this.value = this.number(i, j);
      this.pos = j;
      return NUMBER;
    }
    while (j < b.length && (b[j] ?? 0) >= 0x61 && (b[j] ?? 0) <= 0x7a) j++;
    if (j === b.length && !final) return NEED_MORE;
    const word = b.toString('latin1', i, j);
    if (word === 'true') this.value = true;
    else if (word === 'false') this.value = false;
    else if (word === 'null') this.value = null;
    else throw new JsonSyntaxError(`unexpected ${JSON.stringify(b.toString('utf8', i, i + 20))}`);
    this.pos = j;
    return LITERAL;
  }

  private string(final: boolean): TokenKind {
    const b = this.buf;
    let j = this.pos + 1;
    let escaped = false;
    for (;;) {
      if (j >= b.length) {
        if (final) throw new JsonSyntaxError('unterminated string');
        return NEED_MORE;
      }
      const c = b[j] ?? 0;
      if (c === 0x22) break;
      if (c === 0x5c) {
        escaped = true;
        j++; // skip the escaped byte (an escaped quote must not end the string)
      }
      j++;
    }
    // Escapes are rare in this data: let JSON.parse handle them exactly.
    this.value = escaped
      ? (JSON.parse(b.toString('utf8', this.pos, j + 1)) as string)
      : b.toString('utf8', this.pos + 1, j);
    this.pos = j + 1;
    return STRING;
  }

  /**
   * Plain decimals (the whole vector payload) are parsed without allocating a string: an integer
   * mantissa below 2^53 divided by an exact power of ten is correctly rounded, i.e. the same
   * double `Number()` returns. Anything else (exponents, long mantissas) goes through `Number()`.
   */
  private number(start: number, end: number): number {
    const b = this.buf;
    let i = start;
    const negative = b[i] === 0x2d;
    if (negative) i++;
    let mantissa = 0;
    let digits = 0;
    let scale = 0;
    while (i < end && isDigit(b[i] ?? 0)) {
      mantissa = mantissa * 10 + (b[i] ?? 0) - 0x30;
      digits++;
      i++;
    }
    if (i < end && b[i] === 0x2e) {
      i++;
      while (i < end && isDigit(b[i] ?? 0)) {
        mantissa = mantissa * 10 + (b[i] ?? 0) - 0x30;
        digits++;
        scale++;
        i++;
      }
    }
    if (i !== end || digits === 0 || digits > 15) {
      const text = b.toString('latin1', start, end);
      const n = Number(text);
      if (text === '' || Number.isNaN(n)) throw new JsonSyntaxError(`bad number ${text}`);
      return n;
    }
    const v = scale === 0 ? mantissa : mantissa / (POW10[scale] ?? 10 ** scale);
    return negative ? -v : v;
  }
}

// What the innermost open container expects next.
const VALUE = 0; // a value (top level, after ':' or after ',' in an array)
const VALUE_OR_CLOSE = 1; // right after '['
const KEY = 2; // after ',' in an object
const KEY_OR_CLOSE = 3; // right after '{'
const COLON = 4;
const COMMA_OR_CLOSE = 5;
const DONE = 6;

/** Walks a JSON document arriving as byte chunks, reporting scalars with their path. */
export async function walkJson(
  chunks: AsyncIterable<Buffer> | Iterable<Buffer>,
  visitor: JsonVisitor,
): Promise<void> {
  const tok = new Tokenizer();
  const path: (string | number)[] = [];
  const kinds: ('object' | 'array')[] = [];
  let state = VALUE;

  const afterValue = (): void => {
    state = kinds.length === 0 ? DONE : COMMA_OR_CLOSE;
  };
  const fail = (what: string): never => {
    throw new JsonSyntaxError(`${what} at ${JSON.stringify(path)}`);
  };

  const drain = (final: boolean): void => {
    for (;;) {
      const kind = tok.next(final);
      if (kind === NEED_MORE) return;
      if (kind === END) {
        if (state !== DONE) fail('unexpected end of input');
        return;
      }
      if (state === DONE) fail('trailing data');
      const inObject = kinds[kinds.length - 1] === 'object';
      if (kind !== PUNCT) {
        if (state === KEY || state === KEY_OR_CLOSE) {
          if (kind !== STRING) fail('expected a key');
          path[path.length - 1] = tok.value as string;
          state = COLON;
        } else if (state === VALUE || state === VALUE_OR_CLOSE) {
          visitor.scalar(path, tok.value);
          afterValue();
        } else fail('unexpected value');
        continue;
      }
      const p = tok.punct;
      if (p === 0x3a) {
        if (state !== COLON) fail("unexpected ':'");
        state = VALUE;
      } else if (p === 0x2c) {
        if (state !== COMMA_OR_CLOSE) fail("unexpected ','");
        if (inObject) state = KEY;
        else {
          path[path.length - 1] = (path[path.length - 1] as number) + 1;
          state = VALUE;
        }
      } else if (p === 0x7b || p === 0x5b) {
        if (state !== VALUE && state !== VALUE_OR_CLOSE) fail('unexpected container');
        const k = p === 0x7b ? 'object' : 'array';
        visitor.open?.(path, k);
        kinds.push(k);
        path.push(k === 'object' ? '' : 0);
        state = k === 'object' ? KEY_OR_CLOSE : VALUE_OR_CLOSE;
      } else {
        const k = p === 0x7d ? 'object' : 'array';
        const canClose =
          state === COMMA_OR_CLOSE || state === (k === 'object' ? KEY_OR_CLOSE : VALUE_OR_CLOSE);
        if (kinds[kinds.length - 1] !== k || !canClose)
          fail(`unexpected '${String.fromCharCode(p)}'`);
        kinds.pop();
        path.pop();
        visitor.close?.(path, k);
        afterValue();
      }
    }
  };

  for await (const chunk of chunks) {
    tok.feed(chunk);
    drain(false);
  }
  drain(true);
}
