/**
 * SIF sentence embeddings from the cached word vectors. Pure functions of (model, text): used in
 * the worker thread, importable anywhere (tests, scripts) without one.
 */
import type { StaticModel } from './format.js';
import { normalizeText, resolveToken, tokenize } from './tokenize.js';

/**
 * SIF-weighted average of the known words' vectors, minus its projection on the model's first
 * principal component, L2-normalised. Unknown words are skipped.
 *
 * A text with no known word (empty, punctuation, numbers, unknown names) — or whose average lies
 * on the principal component — gets `fallbackVector(tokens)`: a unit vector seeded by a hash of
 * its tokens. It is deterministic (the same unknown text always matches itself exactly), nearly
 * orthogonal to everything else (it attracts no unrelated results, as a zero vector's undefined
 * cosine might), and never NaN.
 */
export function embedTokens(model: StaticModel, tokens: readonly string[]): Float32Array {
  const { dims, index, factors, vectors, pc } = model;
  const acc = new Float64Array(dims);
  let known = 0;
  const add = (i: number): void => {
    const f = factors[i] ?? 0;
    const base = i * dims;
    for (let d = 0; d < dims; d++) acc[d] = (acc[d] ?? 0) + f * (vectors[base + d] ?? 0);
    known++;
  };
  for (const token of tokens) {
    const direct = index.get(token); // the common case, without resolveToken's array
    if (direct !== undefined) add(direct);
    else for (const i of resolveUnknown(model, token)) add(i);
  }
  // No division by the word count: scaling does not change the direction, and both the
  // projection removal and the normalisation below are scale-invariant.
  if (known > 0) {
    let dot = 0;
    for (let d = 0; d < dims; d++) dot += (acc[d] ?? 0) * (pc[d] ?? 0);
    let norm = 0;
    for (let d = 0; d < dims; d++) {
      acc[d] = (acc[d] ?? 0) - dot * (pc[d] ?? 0);
      norm += (acc[d] ?? 0) * (acc[d] ?? 0);
    }
    norm = Math.sqrt(norm);
    // Relative threshold: what is left after the projection must be more than rounding noise.
    if (norm > 1e-6 * Math.abs(dot) && norm > 0 && Number.isFinite(norm)) {
      const out = new Float32Array(dims);
      for (let d = 0; d < dims; d++) out[d] = (acc[d] ?? 0) / norm;
      return out;
    }
  }
  return fallbackVector(tokens, dims);
}

/**
 * Tokens missing from the vocabulary (numbers, single letters, inflected or accented forms) are
 * frequent in technical text and each costs a Unicode normalisation to resolve: memoised per
 * model, with a bound so that a stream of unique numbers cannot grow it without limit.
 */
const MEMO_LIMIT = 50_000;
const memos = new WeakMap<StaticModel, Map<string, readonly number[]>>();

function resolveUnknown(model: StaticModel, token: string): readonly number[] {
  let memo = memos.get(model);
  if (memo === undefined) memos.set(model, (memo = new Map<string, readonly number[]>()));
  let resolved = memo.get(token);
  if (resolved === undefined) {
    resolved = resolveToken(token, (word) => model.index.get(word));
    if (memo.size >= MEMO_LIMIT) memo.clear();
    memo.set(token, resolved);
  }
  return resolved;
}

/**
 * Identifier-like runs joined by underscores ("bz_no_stdio", "busy_timeout"): one word to the
 * user, and one the model has no vector for, whatever vectors it has for the parts it embeds.
 */
const IDENTIFIER = /[\p{L}\p{N}][\p{L}\p{M}\p{N}]*(?:_+[\p{L}\p{M}\p{N}]+)+/gu;

/**
 * How much of a query the model understood, 0..1: Σ weight of the known words / Σ weight of all,
 * a known word weighing its SIF weight (so "the", "is" count little and rare words about 1), an
 * unknown one (an identifier, a code, a number, a misspelling) 1; single characters are left
 * out. 0 for a text without words. Pure.
 */
export function queryCoverage(model: StaticModel, text: string): number {
  let known = 0;
  let unknown = 0;
  const rest = normalizeText(text).replace(IDENTIFIER, (identifier) => {
    const i = model.index.get(identifier);
    if (i === undefined) unknown++;
    else known += model.weights[i] ?? 0;
    return ' ';
  });
  for (const token of tokenize(rest)) {
    // A single letter or digit ("-t", "a", "2") means nothing alone, known or not.
    if (token.length === 1) continue;
    const direct = model.index.get(token);
    const ids = direct === undefined ? resolveUnknown(model, token) : [direct];
    if (ids.length === 0) {
      unknown++;
      continue;
    }
    let weight = 0;
    for (const i of ids) weight += model.weights[i] ?? 0;
    known += weight / ids.length;
  }
  const total = known + unknown;
  return total > 0 ? known / total : 0;
}

/** Tokenises and embeds one text. */
export function embedText(model: StaticModel, text: string): Float32Array {
  return embedTokens(model, tokenize(text));
}

/** FNV-1a over the UTF-16 code units of the tokens joined by spaces. */
function hashTokens(tokens: readonly string[]): number {
  let h = 0x811c9dc5;
  const text = tokens.join(' ');
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A deterministic unit vector for texts without a usable known word (see `embedTokens`). */
export function fallbackVector(tokens: readonly string[], dims: number): Float32Array {
  let state = hashTokens(tokens) || 1;
  const out = new Float32Array(dims);
  let norm = 0;
  for (let d = 0; d < dims; d++) {
    // xorshift32: never returns 0 from a non-zero state, so the vector cannot be all zero.
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    const x = (state >>> 0) / 2147483648 - 1;
    out[d] = x;
    norm += x * x;
  }
  norm = Math.sqrt(norm);
  for (let d = 0; d < dims; d++) out[d] = (out[d] ?? 0) / norm;
  return out;
}

/** Cosine similarity of two vectors (unit vectors: their dot product). */
export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let d = 0; d < a.length; d++) {
    dot += (a[d] ?? 0) * (b[d] ?? 0);
    na += (a[d] ?? 0) * (a[d] ?? 0);
    nb += (b[d] ?? 0) * (b[d] ?? 0);
  }
  return dot / Math.sqrt(na * nb);
}
