/**
 * How a cross-encoder's input rows are built from (query, passage) pairs (pure), as Hugging
 * Face's tokenizers build them, so that our scores equal the model's reference pipeline.
 *
 * Why by hand: transformers.js cuts a pair that is too long at the end, after adding the special
 * tokens, which drops the closing [SEP] and, for a long query, the whole passage. The reference
 * (`tokenizers`' LongestFirst) cuts the contents, the longer one first, and then adds the special
 * tokens: [CLS] query [SEP] passage [SEP]. Here the contents are cut the same way and the special
 * tokens put around them as the tokenizer's own template for a pair places them (`pairTemplate`,
 * learnt from the tokenizer once), so the closing [SEP] is always there and other families
 * (`<s> q </s></s> p </s>`) work too.
 */

/** Where a tokenizer puts its special tokens around a pair, and their token types. */
export interface PairTemplate {
  prefix: TypedIds;
  middle: TypedIds;
  suffix: TypedIds;
  /** Token type of the query's tokens, and of the passage's. */
  queryType: number;
  passageType: number;
}

interface TypedIds {
  ids: number[];
  types: number[];
}

/** One tokenized pair as the tokenizer encodes it, special tokens and all. */
export interface EncodedPair {
  ids: readonly number[];
  /** Token types; absent when the tokenizer has none (every type 0). */
  types?: readonly number[] | undefined;
}

/**
 * The template from one probe pair: `full` is the pair (a, b) encoded with special tokens, `a`
 * and `b` the two texts' tokens without them. Throws when the contents cannot be found in order.
 */
export function pairTemplate(
  full: EncodedPair,
  a: readonly number[],
  b: readonly number[],
): PairTemplate {
  const types = full.types ?? full.ids.map(() => 0);
  const i = indexOf(full.ids, a, 0);
  const j = i < 0 ? -1 : indexOf(full.ids, b, i + a.length);
  if (i < 0 || j < 0 || a.length === 0 || b.length === 0) {
    throw new Error('the tokenizer does not encode a pair as its two texts in order');
  }
  const part = (from: number, to: number): TypedIds => ({
    ids: full.ids.slice(from, to),
    types: types.slice(from, to),
  });
  return {
    prefix: part(0, i),
    middle: part(i + a.length, j),
    suffix: part(j + b.length, full.ids.length),
    queryType: types[i] ?? 0,
    passageType: types[j] ?? 0,
  };
}

function indexOf(haystack: readonly number[], needle: readonly number[], from: number): number {
  outer: for (let i = from; i + needle.length <= haystack.length; i++) {
    for (let k = 0; k < needle.length; k++) if (haystack[i + k] !== needle[k]) continue outer;
    return i;
  }
  return -1;
}

/** Special tokens the template adds to a pair. */
export function specialCount(template: PairTemplate): number {
  return template.prefix.ids.length + template.middle.ids.length + template.suffix.ids.length;
}

/**
 * The lengths the query and passage keep within `budget` content tokens, as `tokenizers`'
 * LongestFirst leaves them: nothing is cut when they fit; else the shorter keeps its length up to
 * half the budget (rounded down) and the longer takes the rest (equal lengths: the passage counts
 * as the longer). Checked against the Python library in test/knowledge/rerank/pairs.test.ts.
 */
export function truncatedLengths(query: number, passage: number, budget: number): [number, number] {
  const room = Math.max(0, budget);
  if (query + passage <= room) return [query, passage];
  const passageLonger = passage >= query;
  const shorter = passageLonger ? query : passage;
  const keepShorter = Math.min(shorter, Math.floor(room / 2));
  const keepLonger = room - keepShorter;
  return passageLonger ? [keepShorter, keepLonger] : [keepLonger, keepShorter];
}

/** One row of a model's input: ids and types, unpadded. */
export interface PairRow {
  ids: number[];
  types: number[];
}

/** The row of one pair: contents cut to fit `maxTokens` with the template's special tokens. */
export function buildRow(
  template: PairTemplate,
  query: readonly number[],
  passage: readonly number[],
  maxTokens: number,
): PairRow {
  const [nq, np] = truncatedLengths(
    query.length,
    passage.length,
    maxTokens - specialCount(template),
  );
  const ids = [
    ...template.prefix.ids,
    ...query.slice(0, nq),
    ...template.middle.ids,
    ...passage.slice(0, np),
    ...template.suffix.ids,
  ];
  const types = [
    ...template.prefix.types,
    ...new Array<number>(nq).fill(template.queryType),
    ...template.middle.types,
    ...new Array<number>(np).fill(template.passageType),
    ...template.suffix.types,
  ];
  return { ids, types };
}

/** A batch of rows padded to the longest (right side), flat and row-major, as the model reads it. */
export interface PaddedBatch {
  rows: number;
  width: number;
  inputIds: BigInt64Array;
  attentionMask: BigInt64Array;
  tokenTypeIds: BigInt64Array;
}

export function padBatch(rows: readonly PairRow[], padId: number): PaddedBatch {
  const width = Math.max(0, ...rows.map((r) => r.ids.length));
  const inputIds = new BigInt64Array(rows.length * width).fill(BigInt(padId));
  const attentionMask = new BigInt64Array(rows.length * width);
  const tokenTypeIds = new BigInt64Array(rows.length * width);
  rows.forEach((row, r) => {
    for (let t = 0; t < row.ids.length; t++) {
      inputIds[r * width + t] = BigInt(row.ids[t] ?? padId);
      attentionMask[r * width + t] = 1n;
      tokenTypeIds[r * width + t] = BigInt(row.types[t] ?? 0);
    }
  });
  return { rows: rows.length, width, inputIds, attentionMask, tokenTypeIds };
}
