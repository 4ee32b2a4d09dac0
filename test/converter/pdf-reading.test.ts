/** Issue 17's PDF rules on hand-made lines: outline headings, justified lines vs gutters. */
import { describe, expect, it } from 'vitest';
import { layoutPages } from '../../src/converter/formats/pdf/layout.js';
import {
  readingOrder,
  toLines,
  type Line,
  type TextRun,
} from '../../src/converter/formats/pdf/lines.js';
import { outlineHeadings, titleKey } from '../../src/converter/formats/pdf/outline.js';
import {
  combineAccents,
  escapeMarkup,
  keepsHyphen,
  vocabulary,
} from '../../src/converter/formats/pdf/text-fixes.js';

const run = (str: string, x: number, y: number, size = 11): TextRun => ({
  str,
  x,
  y,
  width: str.length * size * 0.5,
  size,
});
const line = (text: string, y: number, size = 11, x0 = 72): Line => ({
  text,
  x0,
  x1: x0 + text.length * size * 0.5,
  y,
  size,
});

describe('toLines', () => {
  it("keeps a definition's flush-right category tag on its line, not in a column of tags", () => {
    // Texinfo: `[Function]` at the right margin of each definition's first line, the arguments
    // wrapped onto an indented line that ends well short of it; then the description.
    const rows = [
      [run('void f_update (struct ctx *ctx, size_t length,', 72, 700), run('[Function]', 474, 700)],
      [run('const uint8_t *data)', 120, 687)],
      [run('void f_digest (struct ctx *ctx, size_t length,', 72, 674), run('[Function]', 474, 674)],
      [run('uint8_t *digest)', 120, 661)],
      [run('void f_init (struct ctx *ctx)', 72, 648), run('[Function]', 474, 648)],
      [run('Hashes some more data.', 100, 635)],
    ].flat();
    expect(readingOrder(toLines(rows)).map((l) => l.text)).toEqual([
      'void f_update (struct ctx *ctx, size_t length, [Function]',
      'const uint8_t *data)',
      'void f_digest (struct ctx *ctx, size_t length, [Function]',
      'uint8_t *digest)',
      'void f_init (struct ctx *ctx) [Function]',
      'Hashes some more data.',
    ]);
  });

  it('starts a block at each definition line (one ending with its category tag)', () => {
    const lines = [
      line('Initialize the context struct.', 700, 11, 100),
      line('void f_update (struct ctx *ctx) [Function]', 687),
      line('Hash some more data.', 674, 11, 100),
    ];
    expect(layoutPages([{ kind: 'text', lines }])).toEqual([
      [
        'Initialize the context struct.',
        'void f_update (struct ctx *ctx) [Function]',
        'Hash some more data.',
      ].join('\n\n'),
    ]);
  });

  it('keeps the stretched word spaces of a justified line inside one line', () => {
    // Three justified lines (ending at x = 227.5) whose wide spaces (> 1.5 em) fall at
    // different places.
    const rows = [
      [run('alpha', 72, 700), run('beta', 72 + 27.5 + 20, 700), run('gamma words', 167, 700)],
      [run('delta epsilon', 72, 686), run('zeta', 72 + 71.5 + 19, 686), run('eta', 211, 686)],
      [run('theta iota kappa lambda', 72, 672), run('mu', 72 + 126.5 + 18, 672)],
    ].flat();
    expect(toLines(rows).map((l) => l.text)).toEqual([
      'alpha beta gamma words',
      'delta epsilon zeta eta',
      'theta iota kappa lambda mu',
    ]);
  });

  it('splits at a gutter the neighbouring rows share, even after a short last line', () => {
    const rows = [0, 1, 2].flatMap((i) => [
      run(i === 1 ? 'end.' : 'left column text here', 72, 700 - i * 14),
      run('right column text here', 320, 700 - i * 14),
    ]);
    expect(toLines(rows)).toHaveLength(6);
  });
});

describe('outline headings', () => {
  it('matches titles on their page, wrapped or numbered, and ignores other lines', () => {
    const lines = [
      line('Some text that mentions Installation in passing.', 760),
      line('2.1 Installing the', 730, 14),
      line('library from source', 712, 14),
      line('Body text follows here.', 690),
      line('Appendix', 600),
    ];
    const found = outlineHeadings(lines, [
      { title: 'Installing the library from source', level: 2, page: 1 },
      { title: 'Missing title', level: 1, page: 1 },
    ]);
    expect([...found].map(([l, h]) => [l.text, h.level, h.first])).toEqual([
      ['2.1 Installing the', 2, true],
      ['library from source', 2, false],
    ]);
    expect(titleKey('Möller’s  “Notes”')).toBe('mollersnotes');
  });

  it('turns outline titles into headings of their level, same size as the text', () => {
    const lines = [
      line('Overview', 760),
      line('This paragraph explains the overview in a sentence.', 740),
      line('Details', 710),
      line('More body text in the second section of the page.', 690),
    ];
    const [markdown] = layoutPages([
      {
        kind: 'text',
        lines,
        outline: [
          { title: 'Overview', level: 1, page: 1 },
          { title: 'Details', level: 2, page: 1 },
        ],
      },
    ]);
    expect(markdown).toBe(
      '# Overview\n\nThis paragraph explains the overview in a sentence.\n\n## Details\n\n' +
        'More body text in the second section of the page.',
    );
  });
});

describe('tables', () => {
  const cells = (texts: string[], y: number, xs = [72, 200, 330]) =>
    texts.map((t, i) => line(t, y, 10, xs[i]));

  it('makes rows of boxes on shared column edges a GFM table, cells in their rows', () => {
    const rows = [
      cells(['Name', 'Size', 'Kind'], 700),
      cells(['alpha', '12', 'a | b'], 686),
      cells(['beta', '7', 'leaf'], 672),
      cells(['gamma', '3', 'root'], 658),
    ];
    const [markdown] = layoutPages([{ kind: 'text', lines: rows.flat().reverse() }]);
    expect(markdown).toBe(
      '| Name | Size | Kind |\n| --- | --- | --- |\n| alpha | 12 | a \\| b |\n' +
        '| beta | 7 | leaf |\n| gamma | 3 | root |',
    );
  });

  it('leaves two-column prose and dot-leader index entries alone', () => {
    const short = [0, 1, 2].flatMap((i) => [
      line(`Left column line ${i},`, 800 - 14 * i, 10, 72),
      line(`Right column goes on ${i},`, 800 - 14 * i, 10, 330),
    ]);
    const prose = [0, 1, 2, 3].flatMap((i) => [
      line('This is the left column of running text, long.', 700 - 14 * i, 10, 72),
      line('And this is the right column of text, long too.', 700 - 14 * i, 10, 320),
    ]);
    const index = [0, 1, 2].flatMap((i) => [
      line(`entry${i} . . . . . . . . 12`, 600 - 12 * i, 9, 72),
      line(`other${i} . . . . . . . . 40`, 600 - 12 * i, 9, 320),
    ]);
    const labels = [0, 1, 2].flatMap((i) => [
      line(`SIZE_${i}`, 400 - 12 * i, 10, 90),
      line('[Constant]', 400 - 12 * i, 10, 480),
    ]);
    const [markdown] = layoutPages([
      { kind: 'text', lines: [...short, ...prose, ...index, ...labels] },
    ]);
    expect(markdown).not.toContain('|');
  });

  it('leaves contents and index pages set in columns, and code with comments, alone', () => {
    // A table of contents without leaders: titles, then page numbers that never go down.
    const toc = [
      'Canvas size',
      'Command-line editing',
      'Comments',
      'Coordinates',
      'Datafile',
    ].flatMap((title, i) => [
      line(title, 700 - 12 * i, 10, 90),
      line(String(32 + i), 700 - 12 * i, 10, 500),
    ]);
    // An index in two columns: terms with page numbers after a comma.
    const index = [0, 1, 2, 3].flatMap((i) => [
      line(`term${i}, ${37 + i}`, 600 - 12 * i, 9, 72),
      line(`other${i}, ${50 + i}, ${51 + i}`, 600 - 12 * i, 9, 320),
    ]);
    // A listing whose comments line up far to the right.
    const code = ['write(c);', 'p.f();', 'c.f();'].flatMap((text, i) => [
      { ...line(text, 500 - 12 * i, 10, 90), mono: true },
      { ...line(`// Outputs ${i}`, 500 - 12 * i, 10, 400), mono: true },
    ]);
    const [markdown] = layoutPages([{ kind: 'text', lines: [...toc, ...index, ...code] }]);
    expect(markdown).not.toContain('|');
    const pad = ' '.repeat(53);
    expect(markdown?.split('\n\n')).toEqual([
      'Canvas size 32',
      'Command-line editing 33',
      'Comments 34',
      'Coordinates 35',
      'Datafile 36',
      ...[0, 1, 2, 3].map((i) => `term${i}, ${37 + i}`),
      ...[0, 1, 2, 3].map((i) => `other${i}, ${50 + i}, ${51 + i}`),
      [
        '```',
        ...['write(c);', 'p.f();', 'c.f();'].map((c, i) => `${c.padEnd(9)}${pad}// Outputs ${i}`),
        '```',
      ].join('\n'),
    ]);
  });
});

describe('headings without an outline', () => {
  it('a title ending in a number stays a heading beside table cells that end in numbers', () => {
    const cell = (r: number, c: number) =>
      line(`record ${r * 3 + c}`, 600 - 14 * r, 11, 72 + 150 * c);
    const lines = [
      line('Table group 1', 720, 14),
      line('The values measured in the first run, one row per record of it.', 690),
      ...[0, 1, 2, 3, 4, 5].flatMap((r) => [0, 1, 2].map((c) => cell(r, c))),
      line('Table group 2', 480, 14),
      line('The second run gave fewer values, and no table was made of them.', 450),
    ];
    const [markdown] = layoutPages([{ kind: 'text', lines }]);
    const blocks = markdown?.split('\n\n') ?? [];
    expect(blocks.filter((b) => b.startsWith('#'))).toEqual(['# Table group 1', '# Table group 2']);
    expect(blocks.filter((b) => b.startsWith('|'))).toHaveLength(1);
  });
});

describe('text fixes', () => {
  it('combines spacing accents with their letter, leaves other text alone', () => {
    expect(combineAccents('M¨oller and Erd˝os, Garc´ıa? na¨ıve caf´e')).toBe(
      'Möller and Erdős, García? naïve café',
    );
    expect(combineAccents('plain ASCII text')).toBe('plain ASCII text');
  });

  it('escapes markup so it shows when rendered, not comparisons', () => {
    expect(escapeMarkup('use <!-- note --> or <b>bold</b>; a < b, x <= 3')).toBe(
      'use \\<!-- note --> or \\<b>bold\\</b>; a < b, x <= 3',
    );
  });

  it('keeps a line-end hyphen only where the document says the word has one', () => {
    const words = vocabulary([
      'a store-conditional instruction and the organization of memory',
      'the load and store pair, conditional on the flag',
      'of organi-',
    ]);
    expect(words.has('organi')).toBe(false);
    expect(keepsHyphen(words, 'store', 'conditional')).toBe(true);
    expect(keepsHyphen(words, 'organi', 'zation')).toBe(false);
    expect(keepsHyphen(words, 'compres', 'sion')).toBe(false);
    const [markdown] = layoutPages([
      {
        kind: 'text',
        lines: [
          line('The load-linked and store-', 700),
          line('conditional pair. A store-conditional fails; organi-', 686),
          line('zation <b> matters.', 672),
        ],
      },
    ]);
    expect(markdown).toBe(
      'The load-linked and store-conditional pair. A store-conditional fails; organization \\<b> matters.',
    );
  });
});
