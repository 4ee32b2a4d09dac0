/** The text-layer layout rules of the PDF converter, on hand-made lines (no PDF, no process). */
import { describe, expect, it } from 'vitest';
import { joinLines, ocrTextToMarkdown } from '../../src/converter/formats/paragraphs.js';
import { dropRepeated, layoutPages } from '../../src/converter/formats/pdf/layout.js';
import {
  isPageNumber,
  isTocEntry,
  sectionDepth,
} from '../../src/converter/formats/pdf/structure.js';
import { MANUAL_PAGES } from './fixtures/manual-pdf.js';
import {
  readingOrder,
  toLines,
  type Line,
  type TextRun,
} from '../../src/converter/formats/pdf/lines.js';

/** A text run at (x, y), `size` pt, with Helvetica-ish widths (0.5 em per character). */
function item(str: string, x: number, y: number, size = 11): TextRun {
  return { str, x, y, width: str.length * size * 0.5, size };
}

function line(text: string, x0: number, y: number, size = 11): Line {
  return { text, x0, x1: x0 + text.length * size * 0.5, y, size };
}

const texts = (lines: Line[]) => lines.map((l) => l.text);

describe('toLines', () => {
  it('merges runs on one baseline, adds spaces at gaps, keeps a gutter as two lines', () => {
    const lines = toLines([
      item('Hello', 72, 700),
      item('world', 72 + 5 * 5.5 + 3, 700.4), // a word gap, a slightly different baseline
      item('', 200, 700),
      item('Other column', 400, 700),
      item('Next line', 72, 686),
    ]);
    expect(texts(lines)).toEqual(['Hello world', 'Other column', 'Next line']);
  });
});

describe('readingOrder', () => {
  it('reads two columns under a full-width heading column by column', () => {
    const heading = line('A heading across the whole page width, both columns', 72, 720, 16);
    const left = [0, 1, 2].map((i) => line(`left ${i}`, 72, 700 - i * 14));
    const right = [0, 1, 2].map((i) => line(`right ${i}`, 330, 700 - i * 14));
    const shuffled = [right[1]!, left[2]!, heading, right[0]!, left[0]!, right[2]!, left[1]!];
    expect(texts(readingOrder(shuffled))).toEqual([heading.text, ...texts(left), ...texts(right)]);
  });

  it('does not take a right-aligned line above the text for a column', () => {
    const date = line('12 May 2024', 460, 740);
    const body = [0, 1].map((i) => line(`Dear reader, line ${i}`, 72, 700 - i * 14));
    expect(texts(readingOrder([...body, date]))).toEqual([date.text, ...texts(body)]);
  });
});

describe('dropRepeated', () => {
  it('drops running headers and page numbers, not repeating headings or numbered body text', () => {
    const totals = [120, 95, 301];
    const page = (n: number) => [
      line('ACME | Report 2024', 72, 760, 9),
      line(`Chapter ${n}`, 72, 700, 20),
      line(`Total: ${totals[n - 1]}`, 72, 680),
      line(`- ${n + 4} -`, 300, 36, 9), // printed numbers need not start at 1
    ];
    const kept = dropRepeated([page(1), page(2), page(3)], 11);
    expect(kept.map(texts)).toEqual(
      [1, 2, 3].map((n) => [`Chapter ${n}`, `Total: ${totals[n - 1]}`]),
    );
  });
});

describe('layoutPages', () => {
  it('makes headings from larger lines and paragraphs from spacing, bullets into a list', () => {
    const lines = [
      line('Title', 72, 720, 22),
      line('Section', 72, 690, 15),
      line('First paragraph goes on and on and on and on,', 72, 670),
      line('and ends here.', 72, 656),
      line('Second paragraph after a gap.', 72, 630),
      line('• one item', 72, 610),
      line('• another item', 72, 596),
    ];
    const [page] = layoutPages([{ kind: 'text', lines }]);
    expect(page).toBe(
      [
        '# Title',
        '## Section',
        'First paragraph goes on and on and on and on, and ends here.',
        'Second paragraph after a gap.',
        '- one item',
        '- another item',
      ].join('\n\n'),
    );
  });

  it('takes a large line for a heading only with two letters in it (not a figure label)', () => {
    const lines = [
      line('Overview', 72, 720, 18),
      line('Body text of the page, long enough to set the body size here.', 72, 700),
      line('(3, 5) x', 72, 680, 18),
      line('More body text of the page, long enough to set the size too.', 72, 660),
      line('A  1', 72, 640, 18),
      line('x y', 72, 620, 18),
    ];
    const [page] = layoutPages([{ kind: 'text', lines }]);
    expect(page?.split('\n\n').filter((b) => b.startsWith('#'))).toEqual(['# Overview', '# x y']);
  });

  it('a manual: one heading per wrapped title, numbered subsections, TOC entries, no folios', () => {
    const pages = MANUAL_PAGES.map((runs) => ({
      kind: 'text' as const,
      lines: runs.map((r) => line(r.text, r.x, r.y, r.size)),
    }));
    expect(layoutPages(pages)).toEqual([
      [
        '# The Frobnicator Reference Manual and Guide',
        '## Contents',
        `1 Introduction … 2`,
        `1.1 Getting started … 2`,
        `1.2 Options … 2`,
        `Index … 3`,
      ].join('\n\n'),
      [
        '## 1 Introduction',
        'The frobnicator turns widgets into gadgets at a steady pace.',
        '### 1.1 Getting started',
        'Install it with the package manager, then run frob --init once.',
        '### 1.2 Options',
      ].join('\n\n'),
      [
        'The --fast option skips the checksum pass and halves the run time.',
        '## Index',
        `checksum … 3`,
        `frob --init … 2`,
        `widgets … 2`,
      ].join('\n\n'),
    ]);
  });

  it('tells page numbers, TOC entries and numbered titles from text', () => {
    for (const folio of [
      '3',
      'iii',
      'xiv',
      'Page 3',
      'page 12 of 40',
      '- 3 -',
      '– 7 –',
      '3 of 10',
      '3/10',
    ])
      expect(isPageNumber(folio), folio).toBe(true);
    for (const text of ['civil', 'mix', 'Total 3', '3 apples', 'Page three', '1.5'])
      expect(isPageNumber(text), text).toBe(false);
    expect(isTocEntry('aes192_encrypt . . . . . . . . . . 23 C')).toBe(true);
    expect(isTocEntry('7.1 Hash functions . . . . . . . . . .')).toBe(true);
    expect(isTocEntry('Wait.... and see what happens next')).toBe(false);
    expect(sectionDepth('3.1. Top-level structure')).toBe(2);
    expect(sectionDepth('7.1.1.2 SHA224')).toBe(4);
    expect(sectionDepth('3.3.1. BZ2_bzCompressInit')).toBe(3);
    expect(sectionDepth('1.5 million people came.')).toBe(0);
    expect(sectionDepth('2.5 and then some more words')).toBe(0);
  });

  it('escapes text that would read as a page marker or a heading', () => {
    const lines = [line('<!-- page: 9 -->', 72, 700), line('# not a heading', 72, 660)];
    expect(layoutPages([{ kind: 'text', lines }])).toEqual([
      '\\<!-- page: 9 -->\n\n\\# not a heading',
    ]);
  });
});

describe('joinLines and OCR text', () => {
  it('repairs words hyphenated at a line end, keeps real hyphens and capitals', () => {
    expect(joinLines(['the organi-', 'zation grew'])).toBe('the organization grew');
    expect(joinLines(['a well-', 'known fact'])).toBe('a wellknown fact'); // no dictionary: a known trade-off
    expect(joinLines(['North-', 'East'])).toBe('North-East');
    expect(joinLines(['COVID-', '19 cases'])).toBe('COVID-19 cases');
    expect(joinLines(['soft\u00AD', 'ware'])).toBe('software');
  });

  it('turns tesseract paragraphs into markdown paragraphs', () => {
    expect(ocrTextToMarkdown('One line\nand its hyphen-\nated end.\n\nNext para.\n')).toBe(
      'One line and its hyphenated end.\n\nNext para.',
    );
  });
});
