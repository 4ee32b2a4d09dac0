import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isReachableWord,
  normalizeText,
  resolveToken,
  tokenize,
} from '../../../src/knowledge/embeddings/static/tokenize.js';

// Text from an alphabet that exercises every rule: separators, joiners, accents (precomposed and
// combining), typographic apostrophes/hyphens, case mappings that change length, other scripts.
const pieces = [...Array.from('aBzÉéßİﬁΩ猫٣70 \n\t\'\u2019-\u2010\u2013.,!"(😀_'), 'e\u0301'];
const text = fc.oneof(
  fc.array(fc.constantFrom(...pieces), { maxLength: 40 }).map((p) => p.join('')),
  fc.string({ unit: 'grapheme', maxLength: 60 }), // any Unicode
);

describe('tokenize', () => {
  it('splits words, keeps compounds, clitics and numbers whole, lowercases', () => {
    expect(
      tokenize("Hello, World! It's a well-known fact: 3.5% of 10,000 don\u2019t (e.g. U.S.)"),
    ).toEqual([
      'hello',
      'world',
      "it's",
      'a',
      'well-known',
      'fact',
      '3.5',
      'of',
      '10,000',
      "don't",
      'e',
      'g',
      'u',
      's',
    ]);
  });

  it('is Unicode-aware', () => {
    expect(tokenize('Café NAÏVE naïve')).toEqual(['café', 'naïve', 'naïve']);
    expect(tokenize('COVID\u201019 \u2014dash\u2013en 猫が好き Straße')).toEqual([
      'covid-19',
      'dash',
      'en',
      '猫が好き',
      'straße',
    ]);
    expect(tokenize('ﬁne')).toEqual(['fine']); // NFKC unfolds the ligature
  });

  it('never attaches leading/trailing punctuation', () => {
    expect(tokenize("--x-- 'quoted' end. 1. 2,")).toEqual(['x', 'quoted', 'end', '1', '2']);
    expect(tokenize('')).toEqual([]);
    expect(tokenize(' .,;!? \n')).toEqual([]);
  });

  it('gives lowercase, separator-free tokens that start with a letter or digit', () => {
    fc.assert(
      fc.property(text, (t) => {
        for (const token of tokenize(t)) {
          expect(token).toMatch(/^[\p{L}\p{N}][^\s]*$/u);
          expect(token.toLowerCase()).toBe(token);
        }
      }),
    );
  });

  it('takes tokens in order from the normalised text', () => {
    fc.assert(
      fc.property(text, (t) => {
        const normal = normalizeText(t);
        let from = 0;
        for (const token of tokenize(t)) {
          const at = normal.indexOf(token, from);
          expect(at).toBeGreaterThanOrEqual(from);
          from = at + token.length;
        }
      }),
    );
  });

  it('is idempotent and compositional over whitespace', () => {
    fc.assert(
      fc.property(text, text, (a, b) => {
        const tokens = tokenize(a);
        expect(tokenize(tokens.join(' '))).toEqual(tokens);
        expect(tokenize(`${a} ${b}`)).toEqual([...tokenize(a), ...tokenize(b)]);
        expect(tokenize(a)).toEqual(tokens); // pure: no state kept between calls
      }),
    );
  });
});

describe('resolveToken', () => {
  const vocab = [
    'the',
    'cafe',
    'do',
    'can',
    'will',
    'cat',
    'obrien',
    'state',
    'of',
    'art',
    'well-known',
  ];
  const index = new Map(vocab.map((w, i) => [w, i]));
  const lookup = (w: string): number | undefined => index.get(w);
  const words = (token: string): string[] => resolveToken(token, lookup).map((i) => vocab[i]!);

  it('prefers the whole word, then the unaccented spelling', () => {
    expect(words('well-known')).toEqual(['well-known']);
    expect(words('café')).toEqual(['cafe']);
    expect(words('cafe\u0301')).toEqual(['cafe']);
  });

  it('reduces clitics to their stem', () => {
    expect(words("don't")).toEqual(['do']);
    expect(words("can't")).toEqual(['can']);
    expect(words("won't")).toEqual(['will']);
    expect(words("cat's")).toEqual(['cat']);
    expect(words("o'brien")).toEqual(['obrien']);
  });

  it('falls back to the known parts of compounds, then skips', () => {
    expect(words('state-of-the-art')).toEqual(['state', 'of', 'the', 'art']);
    expect(words('cat-xyzzy')).toEqual(['cat']);
    expect(words('covid-19')).toEqual([]);
    expect(words('xyzzy')).toEqual([]);
    expect(words('3.5')).toEqual([]);
  });

  it('only ever returns vocabulary indices, for any token', () => {
    fc.assert(
      fc.property(text, (t) => {
        for (const token of tokenize(t)) {
          for (const i of resolveToken(token, lookup)) expect(vocab[i]).toBeDefined();
          if (index.has(token)) expect(resolveToken(token, lookup)).toEqual([index.get(token)]);
        }
      }),
    );
  });
});

describe('isReachableWord', () => {
  it('keeps words the tokenizer can produce and drops punctuation', () => {
    expect(['the', 'well-known', 'h1n1', 'mid-1990s'].every(isReachableWord)).toBe(true);
    expect([',', '"', '-', 'anti-', "'", '_', '“', 'The'].some(isReachableWord)).toBe(false);
  });
});
