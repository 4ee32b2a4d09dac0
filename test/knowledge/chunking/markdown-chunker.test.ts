import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { pageMarker, PAGE_MARKER_PATTERN } from '../../../src/converter/contract.js';
import {
  chunkMarkdown,
  type Chunk,
  type ChunkOptions,
} from '../../../src/knowledge/chunking/markdown-chunker.js';

// ---------- an independent, deliberately simple model of the documents the generators produce ----------

const isWs = (ch: string | undefined): boolean => ch !== undefined && /\s/.test(ch);

interface Model {
  marker: Uint8Array; // 1 for every char of a page-marker line (incl. its "\n")
  markers: { start: number; at: number; page: number }[]; // marker line [start, at); page starts at `at`
  headings: { start: number; level: number; title: string }[];
  rows: [number, number][]; // table rows outside fences, trimmed
  fences: [number, number][]; // ``` opener .. closer, trimmed
}

function model(md: string): Model {
  const m: Model = {
    marker: new Uint8Array(md.length),
    markers: [],
    headings: [],
    rows: [],
    fences: [],
  };
  let inFence = -1;
  for (let line = 0; line < md.length;) {
    const nl = md.indexOf('\n', line);
    const end = nl === -1 ? md.length : nl;
    const next = nl === -1 ? md.length : nl + 1;
    const text = md.slice(line, end).replace(/\r$/, '');
    const pm = PAGE_MARKER_PATTERN.exec(text);
    if (pm) {
      m.marker.fill(1, line, next);
      m.markers.push({ start: line, at: next, page: Number(pm[1]) });
    } else if (inFence >= 0) {
      if (/^ {0,3}```\s*$/.test(text)) {
        m.fences.push([inFence, line + text.trimEnd().length]);
        inFence = -1;
      }
    } else if (/^ {0,3}```/.test(text)) inFence = line + text.length - text.trimStart().length;
    else if (/^ {0,3}#{1,6} /.test(text)) {
      const h = /^ *(#+) (.*)$/.exec(text.trimEnd())!;
      m.headings.push({
        start: line,
        level: h[1]!.length,
        title: h[2]!.replace(/\s+#+$/, '').trim(),
      });
    } else if (/^\s*\|/.test(text))
      m.rows.push([line + text.length - text.trimStart().length, line + text.trimEnd().length]);
    line = next;
  }
  return m;
}

/** markdown.slice(a, b) without page-marker lines — the documented meaning of content vs offsets. */
function strip(md: string, m: Model, a: number, b: number): string {
  let out = '';
  let i = a;
  for (const mk of m.markers) {
    if (mk.at <= i || mk.start >= b) continue;
    out += md.slice(i, Math.max(i, mk.start));
    i = mk.at;
  }
  return out + md.slice(Math.min(i, b), b);
}

function expectedPath(m: Model, at: number): { path: string; level: number | undefined } {
  const trail: { level: number; title: string }[] = [];
  let level: number | undefined;
  for (const h of m.headings) {
    if (h.start > at) break;
    while (trail.length > 0 && trail[trail.length - 1]!.level >= h.level) trail.pop();
    trail.push(h);
    level = h.level;
  }
  return { path: trail.map((t) => t.title).join(' > '), level };
}

function expectedPage(m: Model, at: number): number | null {
  if (m.markers.length === 0) return null;
  let page = 1;
  for (const mk of m.markers) if (mk.at <= at) page = mk.page;
  return page;
}

/**
 * The heading lines a chunk opens with: the line of its first char and each next non-blank line
 * (page markers skipped) while they are headings. More than one only where a heading-only
 * section was joined to the deeper section after it.
 */
function leadingHeadings(
  md: string,
  m: Model,
  s: number,
  e: number,
): { run: Model['headings']; onlyHeadings: boolean } {
  const run: Model['headings'] = [];
  for (let p = s; p < e;) {
    const lineStart = md.lastIndexOf('\n', p - 1) + 1;
    const nl = md.indexOf('\n', p);
    const next = nl === -1 ? md.length : nl + 1;
    const h = m.headings.find((x) => x.start === lineStart);
    if (h !== undefined) run.push(h);
    else if (!m.marker[lineStart] && md.slice(p, Math.min(next, e)).trim() !== '')
      return { run, onlyHeadings: false };
    p = next;
  }
  return { run, onlyHeadings: run.length > 0 };
}

/** Smallest-containing check: ends increase with starts, so the last chunk starting <= a has the max end. */
function contained(chunks: Chunk[], a: number, b: number): boolean {
  let lo = 0;
  let hi = chunks.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (chunks[mid]!.metadata.startOffset <= a) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && chunks[lo - 1]!.metadata.endOffset >= b;
}

/**
 * Every documented guarantee. Failures are collected as strings and asserted once, because a
 * per-chunk expect() dominates the runtime on large inputs. `full` adds the never-split checks.
 */
function checkAll(md: string, opts: ChunkOptions, chunks: Chunk[], full = true): void {
  const m = model(md);
  const problems: string[] = [];
  const check = (ok: boolean, what: string, i: number): void => {
    if (!ok && problems.length < 20) problems.push(`chunk ${i}: ${what}`);
  };
  const cover = new Int32Array(md.length + 1);
  chunks.forEach((c, i) => {
    const { startOffset: s, endOffset: e } = c.metadata;
    check(c.chunkIndex === i, 'chunkIndex', i);
    check(c.content.length > 0 && c.content.length <= opts.maxChars, 'length', i);
    check(c.content === c.content.trim(), 'trimmed', i);
    check(c.content === strip(md, m, s, e), 'content matches offsets', i);
    check(!/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/.test(c.content), 'surrogate pair split', i);
    check(c.tokenEstimate >= Math.ceil(c.content.length / 4), 'tokenEstimate', i);
    cover[s]!++;
    cover[e]!--;
    // A chunk takes the path of the last heading it opens with (a heading-only section joined to
    // the deeper one after it), else of the section it lies in.
    const { run, onlyHeadings } = leadingHeadings(md, m, s, e);
    const want = expectedPath(m, run.at(-1)?.start ?? s);
    check(c.sectionPath === want.path, `sectionPath ${c.sectionPath} != ${want.path}`, i);
    check(c.metadata.headingLevel === want.level, 'headingLevel', i);
    check(c.page === expectedPage(m, s), 'page', i);
    check(c.metadata.pageEnd === expectedPage(m, e - 1), 'pageEnd', i);
    // A chunk never crosses a heading line, so chunks of different sections never overlap; the
    // one exception is the run of headings it opens with, each deeper than the one before.
    check(
      !m.headings.some((h) => h.start > s && h.start < e && !run.includes(h)),
      'crosses a heading',
      i,
    );
    check(
      run.every((h, k) => k === 0 || h.level > run[k - 1]!.level),
      'joins a heading that is not deeper',
      i,
    );
    check((c.metadata.kind === 'heading') === onlyHeadings, `kind ${c.metadata.kind}`, i);
    // A heading-only chunk is never followed by a deeper section's heading: it would be joined.
    const next = chunks[i + 1]?.metadata;
    const after = next && leadingHeadings(md, m, next.startOffset, next.endOffset).run[0];
    check(
      !(onlyHeadings && after !== undefined && after.start >= e && after.level > run.at(-1)!.level),
      'heading left alone above a deeper section',
      i,
    );
    if (i === 0) return;
    const p = chunks[i - 1]!;
    check(s > p.metadata.startOffset && e > p.metadata.endOffset, 'monotonic offsets', i);
    if (s < p.metadata.endOffset) {
      const overlap = strip(md, m, s, p.metadata.endOffset);
      check(overlap.length <= opts.overlapChars, `overlap ${overlap.length}`, i);
      check(p.content.endsWith(overlap) && c.content.startsWith(overlap), 'overlap text', i);
      check(isWs(md[s - 1]) || m.marker[s - 1] === 1, 'overlap starts mid-word', i);
    }
  });
  for (let i = 0, depth = 0; i < md.length; i++) {
    depth += cover[i]!;
    if (depth === 0 && !m.marker[i] && !isWs(md[i])) check(false, `char ${i} uncovered`, -1);
  }
  if (full) {
    // Words, table rows and code blocks that fit are inside one chunk (never split).
    const units: [number, number][] = [...m.rows, ...m.fences];
    for (let i = 0; i < md.length;) {
      const a = i;
      while (i < md.length && !m.marker[i] && !isWs(md[i])) i++;
      if (i > a) units.push([a, i]);
      else i++;
    }
    for (const [a, b] of units)
      if (strip(md, m, a, b).length <= opts.maxChars && !contained(chunks, a, b))
        check(false, `split unit ${JSON.stringify(md.slice(a, b))}`, -1);
    // A code block too big for one chunk is cut only at line ends, or inside a line too long to fit.
    for (const [a, b] of m.fences) {
      if (strip(md, m, a, b).length <= opts.maxChars) continue;
      for (const c of chunks) {
        const e = c.metadata.endOffset;
        if (e <= a || e >= b) continue;
        const lineEnd = md.indexOf('\n', e) < 0 ? md.length : md.indexOf('\n', e);
        const line = md.slice(md.lastIndexOf('\n', e - 1) + 1, lineEnd).trim();
        const ok = md.slice(e, lineEnd).trim() === '' || line.length > opts.maxChars;
        check(ok, `code line cut: ${JSON.stringify(line)}`, c.chunkIndex);
      }
    }
  }
  expect(problems).toEqual([]);
}

// ---------- generators ----------

const pick = <T>(xs: readonly T[]): fc.Arbitrary<T> => fc.constantFrom(...xs);
const CHARS = ['😀', '👍🏽', '中', '文', 'é', 'ß', '\u00a0', ...'aeonstx1-,.'.split('')]; // emoji: surrogate pairs
const word = (max = 12): fc.Arbitrary<string> =>
  fc.array(pick(CHARS), { minLength: 1, maxLength: max }).map((a) => a.join(''));
const words = (min: number, max: number): fc.Arbitrary<string> =>
  fc.array(word(), { minLength: min, maxLength: max }).map((a) => a.join(' ').trim() || 'w');
const sentence = fc.tuple(words(1, 14), pick(['.', '!', '?', ''])).map(([w, p]) => w + p);
const paragraph = fc
  .array(fc.tuple(sentence, pick([' ', ' ', '\n', '  '])), { minLength: 1, maxLength: 10 })
  .map(
    (xs) =>
      xs
        .map(([s, sep]) => s + sep)
        .join('')
        .trim() || 'p',
  );
const heading = fc
  .tuple(fc.integer({ min: 1, max: 6 }), words(1, 4))
  .map(([l, w]) => `${'#'.repeat(l)} ${w}`);
const table = fc
  .array(fc.array(words(1, 4), { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 8 })
  .map((rows) => rows.map((r) => `| ${r.join(' | ')} |`).join('\n'));
const codeLine = fc.oneof(
  words(0, 12),
  pick(['# not a heading', '| not a row |', '', '    indented();', pageMarker(7)]),
  fc.array(word(20), { minLength: 20, maxLength: 60 }).map((a) => a.join(' ')), // very long line
);
const code = fc
  .array(codeLine, { minLength: 0, maxLength: 40 })
  .map((ls) => ['```ts', ...ls, '```'].join('\n'));
const longWord = fc
  .tuple(pick(['x', '😀', 'é', 'ab']), fc.integer({ min: 100, max: 1500 }))
  .map(([c, n]) => c.repeat(n));
const marker = fc.integer({ min: 1, max: 60 }).map(pageMarker);
const block = fc.oneof(
  { arbitrary: paragraph, weight: 6 },
  { arbitrary: heading, weight: 3 },
  { arbitrary: table, weight: 2 },
  { arbitrary: code, weight: 2 },
  { arbitrary: longWord, weight: 1 },
  { arbitrary: marker, weight: 2 },
);
const doc = fc
  .array(fc.tuple(block, pick(['\n\n', '\n\n', '\n', '\r\n\r\n', '\n\n\n  '])), { maxLength: 25 })
  .map((bs) => bs.map(([b, sep]) => b + sep).join(''));
const options = fc
  .integer({ min: 200, max: 700 })
  .chain((maxChars) =>
    fc
      .integer({ min: 0, max: Math.floor(maxChars / 2) })
      .map((overlapChars) => ({ maxChars, overlapChars })),
  );

const RUNS = { numRuns: 200 };

// ---------- tests ----------

describe('chunkMarkdown examples', () => {
  const opts = { maxChars: 200, overlapChars: 40 };

  it('returns [] for empty, whitespace-only and marker-only input', () => {
    expect(chunkMarkdown('', opts)).toEqual([]);
    expect(chunkMarkdown(' \n\t\r\n  \n', opts)).toEqual([]);
    expect(chunkMarkdown(`${pageMarker(1)}\n\n${pageMarker(2)}\n`, opts)).toEqual([]);
  });

  it('validates options with RangeError', () => {
    for (const bad of [
      { maxChars: 199, overlapChars: 0 },
      { maxChars: 8001, overlapChars: 0 },
      { maxChars: 300, overlapChars: 151 },
      { maxChars: 300, overlapChars: -1 },
      { maxChars: 300.5, overlapChars: 0 },
      { maxChars: Number.NaN, overlapChars: 0 },
    ])
      expect(() => chunkMarkdown('x', bad)).toThrow(RangeError);
    expect(() => pageMarker(0)).toThrow(RangeError);
  });

  it('builds the heading trail and keeps each heading with its body', () => {
    const md =
      'pre\n\n# A\n\nalpha\n\n## B\n\nbeta\n\n### C ###\n\ngamma\n\n## D\n\ndelta\n\n# E\n';
    const chunks = chunkMarkdown(md, opts);
    expect(chunks.map((c) => [c.sectionPath, c.content, c.metadata.headingLevel])).toEqual([
      ['', 'pre', undefined],
      ['A', '# A\n\nalpha', 1],
      ['A > B', '## B\n\nbeta', 2],
      ['A > B > C', '### C ###\n\ngamma', 3],
      ['A > D', '## D\n\ndelta', 2],
      ['E', '# E', 1],
    ]);
    checkAll(md, opts, chunks);
  });

  it('keeps a heading with the start of its long body', () => {
    const md = `# Title\n\n${'A sentence of prose that goes on. '.repeat(30)}`;
    const chunks = chunkMarkdown(md, opts);
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks[0]!.content.startsWith('# Title\n\nA sentence')).toBe(true);
    expect(chunks[0]!.content.length).toBeGreaterThan(100);
    checkAll(md, opts, chunks);
  });

  it('ignores headings inside code fences', () => {
    const md = '# Real\n\n```\n# not a heading\n```\n';
    expect(chunkMarkdown(md, opts).map((c) => c.sectionPath)).toEqual(['Real']);
  });

  it('joins a heading-only section to the deeper one after it, across a page start too', () => {
    const md = [
      pageMarker(4),
      '# 2. How to use bzip2',
      '',
      '## 2.1. NAME',
      '',
      'bzip2, bunzip2 - a block-sorting file compressor.',
      '',
      '## 2.2. SYNOPSIS',
      pageMarker(5),
      'bzip2 [ -cdfkqstvzVL123456789 ] [ filenames ... ]',
      '',
      '## 2.3. AUTHOR',
      '',
      '# 3. Programming with libbzip2',
    ].join('\n');
    const chunks = chunkMarkdown(md, opts);
    expect(chunks.map((c) => [c.sectionPath, c.page, c.metadata.pageEnd, c.metadata.kind])).toEqual(
      [
        ['2. How to use bzip2 > 2.1. NAME', 4, 4, undefined],
        ['2. How to use bzip2 > 2.2. SYNOPSIS', 4, 5, undefined],
        // A sibling follows: nothing to join it to, so it is marked instead.
        ['2. How to use bzip2 > 2.3. AUTHOR', 5, 5, 'heading'],
        ['3. Programming with libbzip2', 5, 5, 'heading'],
      ],
    );
    expect(chunks[0]!.content).toBe(
      '# 2. How to use bzip2\n\n## 2.1. NAME\n\nbzip2, bunzip2 - a block-sorting file compressor.',
    );
    expect(chunks[1]!.content).toBe(
      '## 2.2. SYNOPSIS\nbzip2 [ -cdfkqstvzVL123456789 ] [ filenames ... ]',
    );
    checkAll(md, opts, chunks);
  });

  it('keeps markdown escapes out of the section trail, not out of the content', () => {
    const md = '# XML\\_ParserCreate\n\nCalls `XML\\_Parse` and XML\\_ParserFree.\n';
    const [chunk] = chunkMarkdown(md, opts);
    expect(chunk!.sectionPath).toBe('XML_ParserCreate');
    expect(chunk!.content).toBe(
      '# XML\\_ParserCreate\n\nCalls `XML\\_Parse` and XML\\_ParserFree.',
    );
  });

  it('marks table-of-contents and index chunks', () => {
    const toc = [
      '## Table of Contents',
      '',
      '1 Introduction . . . . . . . . . . . . 1',
      '',
      '7.1 Hash functions . . . . . . . . . . 8',
      '',
      'aes_encrypt........................23',
    ].join('\n');
    const links = [
      '## Contents',
      '',
      '- [Introduction](#intro)',
      '- [Usage](#usage)',
      '- [Index](#index)',
    ].join('\n');
    // As the PDF converter writes entries: the leader as one ellipsis.
    const pdf = [
      '## Contents',
      '',
      '1 Introduction … 1',
      '',
      '7.1 Hash functions … 8',
      '',
      'Index … iv',
    ].join('\n');
    const prose = '## Usage\n\nRun it. Then wait. . . . 3 times, or more… 2 at most.';
    const kinds = chunkMarkdown([toc, links, pdf, prose].join('\n\n'), {
      maxChars: 400,
      overlapChars: 0,
    }).map((c) => c.metadata.kind);
    expect(kinds).toEqual(['toc', 'toc', 'toc', undefined]);
  });

  it('assigns pages from markers and never emits a marker', () => {
    const para = (n: number): string => `Sentence ${n} of the page is here.`.repeat(3);
    const md = [
      pageMarker(1),
      para(1),
      pageMarker(2),
      para(2),
      '',
      pageMarker(3),
      '',
      para(3),
    ].join('\n');
    const chunks = chunkMarkdown(md, { maxChars: 200, overlapChars: 0 });
    expect(chunks.some((c) => c.content.includes('<!--'))).toBe(false);
    expect(chunks[0]!.page).toBe(1);
    // Pages are hard boundaries: a paragraph flowing over a page break is cut there.
    expect(chunks.map((c) => [c.page, c.metadata.pageEnd])).toEqual(
      chunks.map((c) => [c.page, c.page]),
    );
    expect(chunks.map((c) => c.page)).toEqual([1, 2, 3]);
    checkAll(md, { maxChars: 200, overlapChars: 0 }, chunks);
    expect(chunkMarkdown('no pages here', opts)[0]!.page).toBeNull();
  });

  it('never splits a table row', () => {
    const rows = Array.from({ length: 30 }, (_, i) => `| row ${i} | some cell text | more ${i} |`);
    const md = `# T\n\n| a | b | c |\n|---|---|---|\n${rows.join('\n')}\n`;
    const chunks = chunkMarkdown(md, opts);
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks) expect(c.content.endsWith('|')).toBe(true);
    checkAll(md, opts, chunks);
  });

  it('keeps a fitting code block whole and splits a big one at line ends', () => {
    const small = '```js\n' + 'const x = 1;\n'.repeat(10) + '```';
    const md = `${'Lead text here. '.repeat(8)}\n\n${small}\n\nTail.`;
    const chunks = chunkMarkdown(md, opts);
    expect(chunks.some((c) => c.content.includes(small))).toBe(true);
    checkAll(md, opts, chunks);

    const big =
      '```\n' + Array.from({ length: 60 }, (_, i) => `line ${i} = f(${i});`).join('\n') + '\n```';
    const bigChunks = chunkMarkdown(big, opts);
    for (const c of bigChunks) expect(big[c.metadata.endOffset] ?? '\n').toBe('\n');
    checkAll(big, opts, bigChunks);
  });

  it('splits a run without spaces, never inside a surrogate pair', () => {
    for (const md of ['x'.repeat(1000), '😀'.repeat(500), 'a😀'.repeat(333)]) {
      const chunks = chunkMarkdown(md, { maxChars: 201, overlapChars: 50 });
      expect(chunks.length).toBeGreaterThanOrEqual(5);
      checkAll(md, { maxChars: 201, overlapChars: 50 }, chunks);
    }
  });

  it('handles CRLF and an unclosed fence', () => {
    const md = '# H\r\n\r\nText line.\r\n\r\n```\r\ncode\r\n# still code\r\n';
    const chunks = chunkMarkdown(md, opts);
    expect(chunks.map((c) => c.sectionPath)).toEqual(['H']);
    checkAll(md, opts, chunks);
  });

  it('chunks ~1 MB correctly', () => {
    const parts: string[] = [];
    for (let i = 0, size = 0; size < 1_000_000; i++) {
      const part =
        `${pageMarker(i + 1)}\n## Section ${i}\n\n${'Some prose with words, and a sentence. '.repeat(40)}\n\n` +
        `| k | v |\n|---|---|\n${'| key | value |\n'.repeat(10)}\n\`\`\`\n${'code();\n'.repeat(30)}\`\`\`\n\n`;
      parts.push(part);
      size += part.length;
    }
    const md = parts.join('');
    const chunks = chunkMarkdown(md, { maxChars: 1000, overlapChars: 150 });
    expect(chunks.length).toBeGreaterThan(1000);
    checkAll(md, { maxChars: 1000, overlapChars: 150 }, chunks, false);
  });
});

describe('chunkMarkdown properties', () => {
  it('covers every char, respects maxChars/overlap/offsets/sections/pages, never splits units', () => {
    fc.assert(
      fc.property(doc, options, (md, opts) => {
        checkAll(md, opts, chunkMarkdown(md, opts));
      }),
      RUNS,
    );
  });

  it('is deterministic', () => {
    fc.assert(
      fc.property(doc, options, (md, opts) => {
        expect(chunkMarkdown(md, opts)).toEqual(chunkMarkdown(md, opts));
      }),
      RUNS,
    );
  });

  it('overlap is exactly the requested amount up to the word-start snap (prose)', () => {
    const prose = fc
      .array(fc.tuple(fc.oneof(paragraph, heading), pick(['\n\n', '\n'])), { maxLength: 20 })
      .map((bs) => bs.map(([b, sep]) => b + sep).join(''));
    fc.assert(
      fc.property(prose, options, (md, opts) => {
        const chunks = chunkMarkdown(md, opts);
        const wordStart = (p: number): boolean => !isWs(md[p]) && isWs(md[p - 1]);
        const sectionStarts = new Set(model(md).headings.map((h) => h.start));
        for (let i = 1; i < chunks.length; i++) {
          const prev = chunks[i - 1]!.metadata;
          const { startOffset: s } = chunks[i]!.metadata;
          if (sectionStarts.has(s)) continue; // first chunk of a section: no overlap by design
          const s0 = Math.max(prev.endOffset - opts.overlapChars, prev.startOffset + 1);
          expect(s).toBeGreaterThanOrEqual(s0);
          for (let p = s0; p < Math.min(s, prev.endOffset); p++) expect(wordStart(p)).toBe(false);
        }
      }),
      RUNS,
    );
  });
});
