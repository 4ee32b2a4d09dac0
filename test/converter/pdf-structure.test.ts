/**
 * Issue 17's text structure on generated PDFs, converted in this process: headings without an
 * outline (sizes and bold learnt from the document, numbering, never TOC lines), monospaced
 * listings as fenced code, paragraphs that run on into the next column or page.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertFile } from '../../src/converter/convert-file.js';
import { buildPdf, type PdfPage, type TextRun } from './fixtures/pdf-writer.js';
import { tempDir } from './helpers.js';

async function markdownOf(pages: PdfPage[]): Promise<string[]> {
  const file = join(tempDir(), 'doc.pdf');
  writeFileSync(file, buildPdf(pages));
  const { markdown } = await convertFile(file, { command: 'text', maxInputBytes: 1 << 24 });
  return markdown
    .split(/<!-- page: \d+ -->/)
    .slice(1)
    .map((p) => p.trim());
}

/** Lines of body text (Helvetica 10 pt, 12 pt apart) from `y` down. */
const body = (texts: string[], y: number, x = 72): TextRun[] =>
  texts.map((text, i) => ({ x, y: y - 12 * i, size: 10, text }));

describe('headings without an outline', () => {
  const pages: PdfPage[] = [
    {
      text: [
        { x: 72, y: 720, size: 14, text: 'Contents' },
        ...[
          ['1 Getting started 2', true],
          ['1.1 Installing 2', false],
          ['1.2 Configuring the frobnicator for large installations 2', false],
          ['2 Reference 3', true],
          ['2.1 Options 3', false],
          ['Index 3', true],
        ].flatMap(([entry, bold], i) => {
          // The page number right-aligned at the margin, as tables of contents set it.
          const [, title = '', page = ''] = /^(.*) (\d+)$/.exec(String(entry)) ?? [];
          const y = 690 - 14 * i;
          return [
            { x: 72, y, size: 10, text: title, bold: Boolean(bold) },
            { x: 534, y, size: 10, text: page, bold: Boolean(bold) },
          ];
        }),
        { x: 300, y: 40, size: 10, text: 'i' },
      ],
    },
    {
      text: [
        { x: 72, y: 720, size: 14, text: '1 Getting started' },
        ...body(
          [
            'The frobnicator turns widgets into gadgets at a steady pace, and this',
            'chapter shows how to install it and how to run it for the first time.',
          ],
          690,
        ),
        { x: 72, y: 650, size: 11.5, text: '1.1 Installing' },
        ...body(['Install it with the package manager of your system, then check it.'], 630),
        { x: 72, y: 600, size: 10, text: 'Before you begin', bold: true },
        ...body(
          [
            'Make sure that the widgets directory exists and that you may write to it,',
            'otherwise the first run stops at once with a message saying so.',
          ],
          584,
        ),
        { x: 72, y: 540, size: 11.5, text: '1.2 Configuring the frobnicator for' },
        { x: 72, y: 526, size: 11.5, text: 'large installations' },
        ...body(['Large sites set the number of workers and the size of the queue.'], 506),
      ],
    },
    {
      text: [
        { x: 72, y: 720, size: 14, text: '2 Reference' },
        ...body(['Every option can be given on the command line or in the file.'], 690),
        { x: 72, y: 660, size: 10, text: 'Checking the result', bold: true },
        ...body(['Run the check command after every change of the configuration.'], 644),
        { x: 72, y: 614, size: 11.5, text: '2.1 Options' },
        ...body(['The fast option skips the checksum pass and halves the run time.'], 594),
      ],
    },
  ];

  it('takes sizes and bold from the document, numbering for levels, never TOC lines', async () => {
    const [toc, first, second] = await markdownOf(pages);
    expect(toc?.split('\n\n')).toEqual([
      '# Contents',
      '1 Getting started 2',
      '1.1 Installing 2',
      '1.2 Configuring the frobnicator for large installations 2',
      '2 Reference 3',
      '2.1 Options 3',
      'Index 3',
    ]);
    expect(first?.split('\n\n')).toEqual([
      '# 1 Getting started',
      'The frobnicator turns widgets into gadgets at a steady pace, and this chapter shows how ' +
        'to install it and how to run it for the first time.',
      '## 1.1 Installing',
      'Install it with the package manager of your system, then check it.',
      '### Before you begin',
      'Make sure that the widgets directory exists and that you may write to it, otherwise ' +
        'the first run stops at once with a message saying so.',
      '## 1.2 Configuring the frobnicator for large installations',
      'Large sites set the number of workers and the size of the queue.',
    ]);
    expect(second?.split('\n\n')).toEqual([
      '# 2 Reference',
      'Every option can be given on the command line or in the file.',
      '### Checking the result',
      'Run the check command after every change of the configuration.',
      '## 2.1 Options',
      'The fast option skips the checksum pass and halves the run time.',
    ]);
  });
});

describe('code listings', () => {
  /** Courier 10 pt: every character 6 pt wide. */
  const code = (text: string, column: number, y: number): TextRun => ({
    x: 72 + 6 * column,
    y,
    size: 10,
    text,
    mono: true,
  });

  it('fences a monospaced block with its line breaks, indents and aligned comments', async () => {
    const [page] = await markdownOf([
      {
        text: [
          ...body(['The smallest program that uses the library looks like this:'], 720),
          code('int main(void)', 0, 700),
          code('{', 0, 688),
          code('frob(1);', 4, 676),
          code('/* one */', 18, 676),
          code('return 0;', 4, 664),
          code('}', 0, 652),
          ...body(['It prints nothing and returns at once.'], 630),
          { x: 72, y: 606, size: 10, text: 'Read more at' },
          code('http://example.org/frob', 12.5, 606),
        ],
      },
    ]);
    expect(page?.split('\n\n')).toEqual([
      'The smallest program that uses the library looks like this:',
      [
        '```',
        'int main(void)',
        '{',
        '    frob(1);      /* one */',
        '    return 0;',
        '}',
        '```',
      ].join('\n'),
      'It prints nothing and returns at once.',
      'Read more at http://example.org/frob',
    ]);
  });
  it('fences a listing cut by a page break on each page, on one grid', async () => {
    const [first, second] = await markdownOf([
      {
        text: [
          ...body(['The loop reads the input:'], 720),
          code('while (n > 0) {', 0, 700),
          code('n = step(n);', 4, 688),
        ],
      },
      {
        text: [
          code('print(n);', 4, 720),
          code('}', 0, 708),
          ...body(['The loop ends when n reaches zero.'], 684),
        ],
      },
    ]);
    expect(first?.split('\n\n')).toEqual([
      'The loop reads the input:',
      ['```', 'while (n > 0) {', '    n = step(n);', '```'].join('\n'),
    ]);
    // The second part keeps its indentation on the whole listing's grid (its own left edge
    // would be the indented `print(n);`).
    expect(second?.split('\n\n')).toEqual([
      ['```', '    print(n);', '}', '```'].join('\n'),
      'The loop ends when n reaches zero.',
    ]);
  });

  it('keeps a monospaced line inside a sentence as inline code, fences one standing alone', async () => {
    const [page] = await markdownOf([
      {
        text: [
          ...body(['The options are read from the file named'], 720),
          code('/etc/frob/frob.conf', 0, 708),
          ...body(['unless the environment names another one.', 'To install it, run:'], 696),
          code('make install', 0, 660),
          ...body(['and restart the service.'], 636),
        ],
      },
    ]);
    expect(page?.split('\n\n')).toEqual([
      'The options are read from the file named `/etc/frob/frob.conf` unless the environment ' +
        'names another one. To install it, run:',
      '```\nmake install\n```',
      'and restart the service.',
    ]);
  });
});

describe('paragraphs across columns and pages', () => {
  it('joins a paragraph across columns; across pages each part stays on its page', async () => {
    const left = [
      'A column of text that starts the page and',
      'goes on for a few lines, and at the foot of',
      'the left column it has not ended yet, so the',
    ];
    const right = [
      'sentence ends at the top of the right column.',
      'Then a new paragraph starts after a gap.',
    ];
    // Paragraphs are 20 pt apart, their lines 12 pt.
    const pages = await markdownOf([
      {
        text: [
          ...body(left, 720),
          ...body([right[0] ?? ''], 720, 330),
          ...body([right[1] ?? ''], 700, 330),
          ...body(['A last paragraph runs over the page', 'and it ends on the'], 668, 330),
        ],
      },
      {
        text: [
          ...body(['next page, where it stops after', 'a second line.'], 720),
          ...body(['After it, one more paragraph', 'of two lines.'], 690),
        ],
      },
    ]);
    expect(pages).toEqual([
      [
        `${left.join(' ')} ${right[0]}`,
        right[1],
        'A last paragraph runs over the page and it ends on the',
      ].join('\n\n'),
      [
        'next page, where it stops after a second line.',
        'After it, one more paragraph of two lines.',
      ].join('\n\n'),
    ]);
  });
});
