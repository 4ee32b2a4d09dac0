/** How cross-encoder rows are built (pairs.ts): the reference's truncation, the closing token. */
import { describe, expect, it } from 'vitest';
import {
  buildRow,
  padBatch,
  pairTemplate,
  specialCount,
  truncatedLengths,
} from '../../../src/knowledge/rerank/pairs.js';

// BERT: [CLS]=101 alpha=6541 [SEP]=102 beta=8247 [SEP]=102, types 0 0 0 1 1 (what the
// ms-marco tokenizer answers for the probe pair).
const BERT = pairTemplate(
  { ids: [101, 6541, 102, 8247, 102], types: [0, 0, 0, 1, 1] },
  [6541],
  [8247],
);

describe('truncatedLengths (tokenizers LongestFirst)', () => {
  it('matches what the Python tokenizers library keeps', () => {
    // [query tokens, passage tokens, max_length] → what `tokenizers` 0.23 kept of each (pair
    // encoded with enable_truncation(max_length), BERT's 3 special tokens), measured.
    const measured: [number, number, number, number, number][] = [
      [3, 30, 20, 3, 14],
      [30, 3, 20, 14, 3],
      [30, 30, 20, 8, 9],
      [12, 9, 20, 9, 8],
      [9, 12, 20, 8, 9],
      [11, 11, 20, 8, 9],
      [10, 11, 20, 8, 9],
      [11, 10, 20, 9, 8],
      [16, 5, 20, 12, 5],
      [3, 30, 21, 3, 15],
      [30, 30, 21, 9, 9],
      [12, 9, 21, 9, 9],
      [16, 5, 21, 13, 5],
    ];
    for (const [q, p, max, keptQ, keptP] of measured) {
      expect(truncatedLengths(q, p, max - 3), `${q}+${p} in ${max}`).toEqual([keptQ, keptP]);
    }
  });

  it('keeps pairs that fit, and never exceeds the budget', () => {
    expect(truncatedLengths(5, 7, 12)).toEqual([5, 7]);
    for (let q = 0; q < 40; q++) {
      for (let p = 0; p < 40; p++) {
        const [a, b] = truncatedLengths(q, p, 17);
        expect(a + b).toBe(Math.min(q + p, 17));
        expect(a).toBeLessThanOrEqual(q);
        expect(b).toBeLessThanOrEqual(p);
      }
    }
  });
});

describe('rows', () => {
  it('learns BERT template from a probe pair', () => {
    expect(BERT.prefix.ids).toEqual([101]);
    expect(BERT.middle.ids).toEqual([102]);
    expect(BERT.suffix.ids).toEqual([102]);
    expect([BERT.queryType, BERT.passageType]).toEqual([0, 1]);
    expect(specialCount(BERT)).toBe(3);
  });

  it('keeps the closing [SEP] when it cuts a long passage, and cuts a long query too', () => {
    const query = [1, 2, 3];
    const passage = Array.from({ length: 600 }, (_, i) => 1000 + i);
    const row = buildRow(BERT, query, passage, 512);
    expect(row.ids).toHaveLength(512);
    expect(row.ids.slice(0, 5)).toEqual([101, 1, 2, 3, 102]);
    expect(row.ids.at(-1)).toBe(102);
    expect(row.ids.at(-2)).toBe(1000 + 512 - 3 - 3 - 1);
    expect(row.types.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    expect(row.types.slice(5)).toEqual(new Array<number>(507).fill(1));

    const longQuery = Array.from({ length: 400 }, (_, i) => 2000 + i);
    const both = buildRow(BERT, longQuery, passage, 512);
    // 509 content tokens: the shorter (the query) keeps half, rounded down.
    expect(both.ids).toHaveLength(512);
    expect(both.ids.indexOf(102)).toBe(1 + 254);
    expect(both.ids.at(-1)).toBe(102);
  });

  it('learns a template with two separators and no token types (RoBERTa, XLM-R)', () => {
    const roberta = pairTemplate({ ids: [0, 7, 2, 2, 8, 2] }, [7], [8]);
    expect(buildRow(roberta, [40, 41], [50], 512)).toEqual({
      ids: [0, 40, 41, 2, 2, 50, 2],
      types: [0, 0, 0, 0, 0, 0, 0],
    });
  });

  it('refuses a tokenizer that does not show both texts in order', () => {
    expect(() => pairTemplate({ ids: [101, 8247, 102, 6541, 102] }, [6541], [8247])).toThrow(
      /two texts in order/,
    );
  });

  it('pads a batch to its longest row, masked', () => {
    const batch = padBatch(
      [
        { ids: [101, 5, 102, 6, 102], types: [0, 0, 0, 1, 1] },
        { ids: [101, 5, 102], types: [0, 0, 0] },
      ],
      0,
    );
    expect([batch.rows, batch.width]).toEqual([2, 5]);
    expect(Array.from(batch.inputIds, Number)).toEqual([101, 5, 102, 6, 102, 101, 5, 102, 0, 0]);
    expect(Array.from(batch.attentionMask, Number)).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 0, 0]);
    expect(Array.from(batch.tokenTypeIds, Number)).toEqual([0, 0, 0, 1, 1, 0, 0, 0, 0, 0]);
  });
});
