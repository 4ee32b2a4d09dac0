/**
 * The console's pure helpers (console/src/lib): passages marked from a hit's highlights, status,
 * page and citation wording, the markdown cut at page markers, and how live events and list answers
 * merge. They run in Node here; the browser tests (npm run test:e2e) cover the pages.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  chunkCount,
  citation,
  pageLabel,
  sizeLabel,
  splitPages,
  statusLabel,
} from '../../../console/src/lib/format.js';
import { highlightSegments } from '../../../console/src/lib/highlight.js';
import { LiveRecords, isNewer, needsReload } from '../../../console/src/lib/live-records.js';
import { refreshDelay } from '../../../console/src/lib/refresh.js';
import type { KnowledgeDocument } from '../../../console/src/lib/types.js';

describe('highlightSegments', () => {
  it('marks the ranges and keeps the text between', () => {
    expect(highlightSegments('the solar wind blows', [{ start: 4, end: 9 }])).toEqual([
      { text: 'the ', marked: false },
      { text: 'solar', marked: true },
      { text: ' wind blows', marked: false },
    ]);
  });

  it('merges touching and overlapping ranges, drops empty and out-of-bounds parts', () => {
    const segments = highlightSegments('abcdefgh', [
      { start: 6, end: 99 },
      { start: 0, end: 2 },
      { start: 1, end: 3 },
      { start: 3, end: 4 },
      { start: 5, end: 5 },
    ]);
    expect(segments).toEqual([
      { text: 'abcd', marked: true },
      { text: 'ef', marked: false },
      { text: 'gh', marked: true },
    ]);
  });

  it('property: segments always join back to the content, marked exactly where a range is', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40 }),
        fc.array(
          fc.record({
            start: fc.integer({ min: -5, max: 50 }),
            end: fc.integer({ min: -5, max: 50 }),
          }),
        ),
        (content, ranges) => {
          const segments = highlightSegments(content, ranges);
          expect(segments.map((s) => s.text).join('')).toBe(content);
          expect(segments.every((s) => s.text.length > 0)).toBe(true);
          let at = 0;
          for (const segment of segments) {
            for (let i = at; i < at + segment.text.length; i++) {
              const inRange = ranges.some((r) => i >= r.start && i < r.end);
              expect(segment.marked).toBe(inRange);
            }
            at += segment.text.length;
          }
        },
      ),
    );
  });
});

describe('wording', () => {
  it('status with progress, stage and failure reason', () => {
    const base = { progress: null, errorMessage: null };
    expect(statusLabel({ ...base, status: 'indexed' })).toBe('indexed');
    expect(
      statusLabel({
        ...base,
        status: 'indexing',
        progress: { stage: 'embedding', done: 4, total: 10 },
      }),
    ).toBe('indexing 40 % (embedding)');
    expect(
      statusLabel({
        ...base,
        status: 'indexing',
        progress: { stage: 'queued', done: 0, total: null },
      }),
    ).toBe('indexing (queued)');
    expect(
      statusLabel({ ...base, status: 'failed', errorMessage: 'The converter timed out.' }),
    ).toBe('failed: The converter timed out.');
  });

  it('pages, sizes and chunk counts', () => {
    expect(pageLabel(null, null)).toBe('');
    expect(pageLabel(3, 3)).toBe('p. 3');
    expect(pageLabel(3, 4)).toBe('pp. 3–4');
    expect(sizeLabel(999)).toBe('999 B');
    expect(sizeLabel(12_300)).toBe('12 kB');
    expect(sizeLabel(1_500_000)).toBe('1.5 MB');
    expect(chunkCount({ converterMeta: null })).toBe('—');
    expect(chunkCount({ converterMeta: { chunking: { chunkCount: 7 } } })).toBe('7');
  });

  it('a citation quotes the passage and names the document, page and section', () => {
    const hit = {
      documentName: 'aurora.md',
      page: 2,
      pageEnd: 2,
      sectionPath: 'Auroras > How they form',
      content: 'The aurora   borealis\nappears.',
    };
    expect(citation(hit)).toBe(
      '“The aurora borealis appears.” (aurora.md, p. 2, § Auroras › How they form)',
    );
    expect(citation({ ...hit, page: null, pageEnd: null, sectionPath: '' })).toBe(
      '“The aurora borealis appears.” (aurora.md)',
    );
    expect(citation({ ...hit, content: 'x'.repeat(500) }, 10)).toMatch(/^“x{9}…” /);
  });

  it('splitPages cuts at page markers; text before the first is page 1; unpaged is one part', () => {
    expect(splitPages('# A\n\ntext')).toEqual([{ page: null, text: '# A\n\ntext' }]);
    expect(splitPages('intro\n<!-- page: 2 -->\ntwo\n<!-- page: 3 -->\nthree')).toEqual([
      { page: 1, text: 'intro\n' },
      { page: 2, text: '\ntwo\n' },
      { page: 3, text: '\nthree' },
    ]);
  });
});

function doc(overrides: Partial<KnowledgeDocument>): KnowledgeDocument {
  return {
    id: 'd1',
    name: 'a.md',
    fileType: 'md',
    mimeType: 'text/markdown',
    source: 'upload',
    projectId: null,
    version: 1,
    status: 'uploaded',
    checksum: 'x',
    sizeBytes: 1,
    filePath: 'f',
    markdownPath: null,
    converterCommand: null,
    converterMeta: null,
    errorMessage: null,
    embeddingModel: null,
    metadata: {},
    progress: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

describe('live records', () => {
  const indexing = doc({ status: 'indexing', updatedAt: '2026-01-01T00:00:01.000Z' });
  const indexed = doc({ status: 'indexed', version: 2, updatedAt: '2026-01-01T00:00:02.000Z' });

  it('newer: higher version, then later update, then further status', () => {
    expect(isNewer(indexed, indexing)).toBe(true);
    expect(isNewer(indexing, indexed)).toBe(false);
    // A progress record read before the commit but delivered after it stays behind.
    expect(
      isNewer(doc({ status: 'indexing', version: 1, updatedAt: indexed.updatedAt }), indexed),
    ).toBe(false);
    expect(isNewer(doc({ status: 'failed', updatedAt: indexing.updatedAt }), indexing)).toBe(true);
  });

  it('a list answer older than an event already seen shows the event’s record', () => {
    const records = new LiveRecords();
    expect(records.note({ type: 'document.indexed', document: indexed })).toBe(true);
    expect(records.note({ type: 'document.progress', document: indexing })).toBe(false);
    expect(records.merge([indexing])).toEqual([indexed]);
    const later = doc({ status: 'indexing', version: 2, updatedAt: '2026-01-01T00:00:03.000Z' });
    expect(records.merge([later])).toEqual([later]);
    records.note({ type: 'document.deleted', id: 'd1' });
    expect(records.merge([later, doc({ id: 'd2' })]).map((d) => d.id)).toEqual(['d2']);
  });

  it('a created document not shown reloads the first page only', () => {
    const event = { type: 'document.created', document: doc({ id: 'new' }) } as const;
    expect(needsReload([doc({})], event, true)).toBe(true);
    expect(needsReload([doc({})], event, false)).toBe(false);
    expect(needsReload([doc({ id: 'new' })], event, true)).toBe(false);
  });
});

describe('refreshDelay', () => {
  it('refreshes a minute before expiry, halfway for short tokens, never sooner than 1 s', () => {
    expect(refreshDelay(15 * 60_000)).toBe(14 * 60_000);
    expect(refreshDelay(6000)).toBe(3000);
    expect(refreshDelay(500)).toBe(1000);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 }), (left) => {
        const delay = refreshDelay(left);
        expect(delay).toBeGreaterThanOrEqual(1000);
        // Some time is left at the refresh whenever the token lives longer than 2 s.
        if (left > 2000) expect(delay).toBeLessThan(left);
        expect(left - delay).toBeLessThanOrEqual(60_000);
      }),
    );
  });
});
