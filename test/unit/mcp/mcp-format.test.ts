/** The MCP text formatting: highlights, page labels, budgets (pure functions). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  formatHits,
  markPassage,
  pagesLabel,
  shareBudget,
  type HitLike,
} from '../../../src/mcp/format.js';
import { cutToBudget, pageIndex } from '../../../src/knowledge/markdown/markdown-range.js';

const hit = (content: string, extra: Partial<HitLike> = {}): HitLike => ({
  documentId: 'd1',
  documentName: 'manual.pdf',
  chunkIndex: 4,
  sectionPath: 'Setup > Pump',
  page: 3,
  score: 0.8123,
  content,
  ...extra,
});

describe('markPassage', () => {
  it('marks highlights, merging overlapping and unsorted ranges', () => {
    const h = hit('replace the impeller yearly', {
      highlights: [
        { start: 12, end: 20 },
        { start: 0, end: 7 },
        { start: 3, end: 5 },
      ],
    });
    expect(markPassage(h, 1000)).toBe('**replace** the **impeller** yearly');
  });

  it('works without highlights and cuts around the first highlight within the budget', () => {
    expect(markPassage(hit('plain text'), 1000)).toBe('plain text');
    const long = `${'lorem '.repeat(200)}TARGET ${'ipsum '.repeat(200)}`;
    const start = long.indexOf('TARGET');
    const out = markPassage(hit(long, { highlights: [{ start, end: start + 6 }] }), 120);
    expect(out.length).toBeLessThanOrEqual(120);
    expect(out).toContain('**TARGET**');
    expect(out.startsWith('…') && out.endsWith('…')).toBe(true);
  });

  it('never exceeds the budget (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 400 }),
        fc.array(fc.record({ start: fc.nat(450), end: fc.nat(450) }), { maxLength: 6 }),
        fc.integer({ min: 20, max: 500 }),
        (content, highlights, budget) => {
          expect(markPassage(hit(content, { highlights }), budget).length).toBeLessThanOrEqual(
            Math.max(budget, 0),
          );
        },
      ),
    );
  });
});

describe('pagesLabel and formatHits', () => {
  it('labels one page, a page span, or none', () => {
    expect(pagesLabel({ page: 3 })).toBe('p. 3');
    expect(pagesLabel({ page: 3, pageEnd: 3 })).toBe('p. 3');
    expect(pagesLabel({ page: 3, pageEnd: 5 })).toBe('pp. 3–5');
    expect(pagesLabel({ page: null })).toBe('');
  });

  it('numbers hits with document, pages, section and score', () => {
    const text = formatHits(
      'pump',
      'hybrid',
      [hit('first'), hit('second', { page: null, pageEnd: null, sectionPath: '' })],
      7000,
    );
    expect(text).toContain(
      '[1] manual.pdf — p. 3 — Setup > Pump — score 0.812\n(documentId d1, chunk 4; read around it: read_document id d1, fromPage 3, toPage 3)\nfirst',
    );
    expect(text).toContain(
      '[2] manual.pdf — score 0.812\n(documentId d1, chunk 4; read around it: read_document id d1, fromChunk 3, toChunk 5)\nsecond',
    );
  });

  it('stays within maxChars and says how many hits it left out', () => {
    const hits = Array.from({ length: 10 }, (_, i) => hit(`passage ${i} ${'x '.repeat(700)}`));
    for (const max of [500, 2000, 7000]) {
      const text = formatHits('q', 'hybrid', hits, max);
      expect(text.length).toBeLessThanOrEqual(max);
      expect(text).toContain('[1] manual.pdf');
    }
    expect(formatHits('q', 'hybrid', hits, 1500)).toMatch(/\(\d+ more hits not shown/);
    expect(formatHits('q', 'hybrid', [], 7000)).toMatch(/^No passage matched "q"/);
  });

  it('shares a budget: cheap items whole, the rest equally (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(3000), { minLength: 1, maxLength: 12 }),
        fc.nat(20000),
        (costs, budget) => {
          const shares = shareBudget(costs, budget);
          expect(shares.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(budget);
          shares.forEach((s, i) => {
            expect(s).toBeLessThanOrEqual(costs[i] ?? 0);
          });
          if (costs.reduce((a, b) => a + b, 0) <= budget) expect(shares).toEqual(costs);
        },
      ),
    );
  });
});

describe('markdown ranges', () => {
  it('indexes pages by their markers; text before the first is page 1', () => {
    const md = 'intro\n<!-- page: 2 -->\ntwo\n<!-- page: 4 -->\nfour';
    expect(pageIndex(md)).toEqual({ pages: 4, starts: [0, 6, 27, 27] });
    expect(pageIndex('no markers')).toEqual({ pages: null, starts: [0] });
  });

  it('cuts at a line end within the budget', () => {
    expect(cutToBudget('aaaa\nbbbb\ncccc', 12)).toEqual({ text: 'aaaa\nbbbb', truncated: true });
    expect(cutToBudget('short', 12)).toEqual({ text: 'short', truncated: false });
  });
});
