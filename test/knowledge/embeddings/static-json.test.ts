import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  JsonSyntaxError,
  walkJson,
  type JsonPath,
  type JsonScalar,
} from '../../../src/knowledge/embeddings/static/json-stream.js';
import {
  powerIteration,
  seededRandom,
  sifWeight,
  zipfNorm,
  zipfProbability,
} from '../../../src/knowledge/embeddings/static/sif.js';

type Json = JsonScalar | Json[] | { [key: string]: Json };

/** Splits `bytes` at the given (sorted, deduplicated) offsets: tokens get cut anywhere. */
function chunks(bytes: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const c of [...at, bytes.length]) {
    out.push(bytes.subarray(from, c));
    from = c;
  }
  return out;
}

/** Rebuilds the document from the walker's events: equal to JSON.parse iff the walk is right. */
async function rebuild(parts: Buffer[]): Promise<Json> {
  const root: { value: Json } = { value: null };
  const stack: Json[] = [];
  const put = (path: JsonPath, value: Json): void => {
    const parent = stack[stack.length - 1];
    const key = path[path.length - 1];
    if (parent === undefined) root.value = value;
    else if (Array.isArray(parent)) parent[key as number] = value;
    // defineProperty, not assignment: a "__proto__" key must become an own property, as in JSON.parse.
    else
      Object.defineProperty(parent, key as string, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
  };
  await walkJson(parts, {
    scalar: (path, value) => {
      put(path, value);
    },
    open: (path, kind) => {
      const container: Json = kind === 'array' ? [] : {};
      put(path, container);
      stack.push(container);
    },
    close: () => {
      stack.pop();
    },
  });
  return root.value;
}

describe('walkJson', () => {
  it('reports exactly what JSON.parse reads, however the bytes are chunked', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.jsonValue(),
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.boolean(),
        async (value, cuts, pretty) => {
          const text = pretty ? JSON.stringify(value, null, 2) : JSON.stringify(value);
          const bytes = Buffer.from(text, 'utf8');
          expect(await rebuild(chunks(bytes, cuts))).toEqual(JSON.parse(text));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('parses decimals exactly as Number() does', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.double({ noNaN: true, noDefaultInfinity: true }), {
          minLength: 1,
          maxLength: 20,
        }),
        fc.integer({ min: 0, max: 9 }),
        async (numbers, digits) => {
          const text = `[${numbers.map((n) => (digits === 9 ? String(n) : n.toFixed(digits))).join(',')}]`;
          expect(await rebuild([Buffer.from(text)])).toEqual(JSON.parse(text));
        },
      ),
    );
  });

  it('reports keys such as "__proto__" like any other key', async () => {
    const text = '{"":{"__proto__":0,"constructor":[1]}}';
    expect(await rebuild([Buffer.from(text)])).toEqual(JSON.parse(text));
  });

  it('rejects malformed documents', async () => {
    for (const bad of [
      '{"a":1,}',
      '[1 2]',
      '{"a":',
      '{"a" 1}',
      '[1]]',
      '"open',
      'tru',
      '[-]',
      '{1:2}',
      '',
    ]) {
      await expect(rebuild([Buffer.from(bad)]), bad).rejects.toBeInstanceOf(JsonSyntaxError);
    }
  });
});

describe('SIF helpers', () => {
  it('estimates Zipf probabilities that sum to one and weights that fall with frequency', () => {
    const norm = zipfNorm(1000);
    let total = 0;
    for (let r = 1; r <= 1000; r++) total += zipfProbability(r, norm);
    expect(total).toBeCloseTo(1, 12);
    expect(sifWeight(zipfProbability(1, norm))).toBeLessThan(sifWeight(zipfProbability(500, norm)));
    expect(sifWeight(0)).toBe(1);
  });

  it('finds the dominant eigenvector, with a fixed sign', () => {
    const m = new Float64Array([2, 0, 0, 0, -5, 0, 0, 0, 1].map((x) => x * x)); // diag 4, 25, 1
    expect(Array.from(powerIteration(m, 3)).map((x) => Math.round(x * 1e6) / 1e6)).toEqual([
      0, 1, 0,
    ]);
  });

  it('has a deterministic PRNG in [0, 1)', () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    for (let i = 0; i < 1000; i++) {
      const x = a();
      expect(x).toBe(b());
      expect(x >= 0 && x < 1).toBe(true);
    }
  });
});
