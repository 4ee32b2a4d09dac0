/**
 * Highlights (highlights.ts): ranges within the content, sorted, apart, each covering only words
 * that lex to a query lexeme, and every such word covered.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { highlightRanges, queryLexemes } from '../../../../src/knowledge/retrieval/highlights.js';
import { segmentWords, wordSpans } from '../../../../src/knowledge/search/segment.js';
import { sharedLexer } from '../../../../src/knowledge/search/sqlite/keyword/fts5-lexer.js';

const lexer = sharedLexer();

const WORDS = [
  ...['run', 'runs', 'running', 'Runner', 'ran', 'connect', 'connection', 'CONNECTED', 'policy'],
  ...['policies', 'the', 'of', 'and', 'is', 'café', 'naïve', 'x', 'data', 'skyy', '42', 'v2019'],
  ...['训练', '数据', '训练数据', '我们的训练数据集很大', '東京', 'データ', '機械学習のデータ'],
  ...['ภาษาไทย', 'สวยงาม', 'Straße', 'данные', 'البيانات', '😀'],
];
const SEPARATORS = [' ', ' ', '', '-', '. ', '\n', '。', '’', '_'];
const content = fc
  .array(fc.tuple(fc.constantFrom(...WORDS), fc.constantFrom(...SEPARATORS)), { maxLength: 30 })
  .map((parts) => parts.map(([w, s]) => w + s).join(''));
const query = fc
  .array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 5 })
  .map((w) => w.join(' '));

/** The lexemes the keyword index holds for a piece of text. */
const lexemesOf = (text: string) => lexer.lexemes([segmentWords(text)])[0] ?? [];

describe('highlightRanges', () => {
  it('gives sorted, apart ranges within the content, each of query lexemes only, covering them all', () => {
    fc.assert(
      fc.property(content, query, (text, q) => {
        const groups = queryLexemes(q);
        const wanted = new Set(groups.flat().map((id) => lexer.lexeme(id)));
        const ranges = highlightRanges(text, groups);
        let previousEnd = -1;
        for (const { start, end } of ranges) {
          expect(start).toBeGreaterThan(previousEnd); // sorted, no overlap, adjacent ones merged
          expect(end).toBeGreaterThan(start);
          expect(end).toBeLessThanOrEqual(text.length);
          previousEnd = end;
          const covered = lexemesOf(text.slice(start, end));
          expect(covered.length).toBeGreaterThan(0);
          for (const l of covered) expect(wanted).toContain(l);
        }
        // Every word whose lexeme belongs to a group found whole in the content is covered.
        const present = new Set(lexemesOf(text));
        const found = new Set(
          groups
            .filter((g) => g.every((id) => present.has(lexer.lexeme(id))))
            .flat()
            .map((id) => lexer.lexeme(id)),
        );
        for (const [start, end] of wordSpans(text)) {
          const [lexeme, ...rest] = lexemesOf(text.slice(start, end));
          if (rest.length > 0 || lexeme === undefined || !found.has(lexeme)) continue;
          expect(ranges.some((r) => r.start <= start && end <= r.end)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("cuts the words the keyword index reads: the spans' lexemes are the text's, in order", () => {
    fc.assert(
      fc.property(content, (text) => {
        const lexemes = wordSpans(text).flatMap(([start, end]) =>
          lexemesOf(text.slice(start, end)),
        );
        expect(lexemes).toEqual(lexemesOf(text));
      }),
      { numRuns: 300 },
    );
  });

  it('marks stemmed forms, skips dropped stop words, merges adjacent CJK words', () => {
    const text = 'The runner runs; running is fun.';
    const mark = (t: string, q: string) =>
      highlightRanges(t, queryLexemes(q)).map((r) => t.slice(r.start, r.end));
    expect(mark(text, 'running')).toEqual(['runs', 'running']);
    expect(mark(text, 'the running')).toEqual(['runs', 'running']); // "the" is dropped
    expect(mark(text, 'the')).toEqual(['The']); // a query of stop words only keeps them
    expect(mark('我们的训练数据集很大', '训练数据')).toEqual(['训练数据']);
    // All of a segmented word's parts, or none: 数据 alone does not mark 训练数据's group.
    expect(mark('数据很重要', '训练数据')).toEqual([]);
    expect(mark('機械学習のデータ', 'データ')).toEqual(['データ']);
    expect(mark('Die Straße ist groß', 'straße')).toEqual(['Straße']);
    expect(mark('Большие данные', 'данные')).toEqual(['данные']);
    expect(mark('nothing here', 'walrus')).toEqual([]);
    expect(highlightRanges('', queryLexemes('walrus'))).toEqual([]);
    // UTF-16 offsets: after an emoji (two code units).
    expect(highlightRanges('😀 data', queryLexemes('data'))).toEqual([{ start: 3, end: 7 }]);
  });
});
