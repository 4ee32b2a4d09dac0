import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { StaticModel } from '../../../src/knowledge/embeddings/static/cache.js';
import {
  cosine,
  embedText,
  embedTokens,
  fallbackVector,
} from '../../../src/knowledge/embeddings/static/embed.js';
import { BUILD_TIMEOUT_MS, sharedStaticModel } from './static-cache-dir.js';

const norm = (v: Float32Array): number => Math.hypot(...v);
const isUnitFinite = (v: Float32Array): boolean =>
  v.length === 100 && v.every(Number.isFinite) && Math.abs(norm(v) - 1) < 1e-5;

let model: StaticModel;
beforeAll(async () => {
  model = await sharedStaticModel();
}, BUILD_TIMEOUT_MS);

describe('SIF sentence embeddings (real vectors, in this thread)', () => {
  it('ranks a paraphrase above an unrelated sentence', () => {
    const cat = embedText(model, 'a cat sat on the mat');
    const kitten = embedText(model, 'a kitten rested on the rug');
    const stocks = embedText(model, 'stock markets fell sharply today');
    expect(cosine(cat, kitten)).toBeGreaterThan(cosine(cat, stocks));
    expect(cosine(cat, kitten)).toBeGreaterThan(0.4);
  });

  it('retrieves the matching passage among topics', () => {
    const passages = [
      'The central bank raised interest rates to curb inflation.',
      'Antibiotics kill bacteria but are useless against viral infections.',
      'The striker scored twice in the second half of the match.',
      'Volcanic eruptions release ash and sulfur dioxide into the atmosphere.',
    ];
    const queries = [
      'monetary policy and prices',
      'drugs that treat infection',
      'football goals',
      'lava and volcano',
    ];
    const docs = passages.map((p) => embedText(model, p));
    queries.forEach((q, expected) => {
      const v = embedText(model, q);
      const scores = docs.map((d) => cosine(v, d));
      expect(scores.indexOf(Math.max(...scores)), q).toBe(expected);
    });
  });

  it('removes the common component: frequent function words carry almost no signal', () => {
    const v = embedText(model, 'the of and to in is was');
    let dot = 0;
    for (let d = 0; d < 100; d++) dot += v[d]! * model.pc[d]!;
    expect(Math.abs(dot)).toBeLessThan(1e-5);
  });

  it('is deterministic and unit length', () => {
    const text = 'Diffusion tensor imaging of the newborn brain';
    expect(embedText(model, text)).toEqual(embedText(model, text));
    expect(isUnitFinite(embedText(model, text))).toBe(true);
  });

  it('falls back to compound parts and unaccented spellings', () => {
    // "cafe-kitten" is not a word, its parts are; "café" is only known unaccented.
    expect(cosine(embedText(model, 'cafe-kitten'), embedText(model, 'cafe kitten'))).toBeCloseTo(
      1,
      5,
    );
    expect(embedText(model, 'café')).toEqual(embedText(model, 'cafe'));
    expect(embedText(model, "The dog's bone")).toEqual(embedText(model, 'the dog bone'));
  });

  it('gives empty and unknown texts a deterministic unit vector, never NaN', () => {
    for (const text of ['', '   ', '!!!', '12345 67.8', 'qwxzvbq zzzyyx', '😀😀']) {
      const v = embedText(model, text);
      expect(isUnitFinite(v), text).toBe(true);
      expect(embedText(model, text)).toEqual(v);
    }
    // Distinct unknown texts do not collide with each other (nor with real text).
    const a = embedText(model, 'qwxzvbq');
    expect(Math.abs(cosine(a, embedText(model, 'zzzyyx')))).toBeLessThan(0.5);
    expect(embedTokens(model, [])).toEqual(fallbackVector([], 100));
  });

  it('returns a finite unit vector for any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (text) => {
        expect(isUnitFinite(embedText(model, text))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
