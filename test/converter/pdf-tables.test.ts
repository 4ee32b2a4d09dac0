/** Issue 41's table rules on hand-made text runs: columns kept, rows never headings. */
import { describe, expect, it } from 'vitest';
import { layoutPages } from '../../src/converter/formats/pdf/layout.js';
import { toLines, type TextRun } from '../../src/converter/formats/pdf/lines.js';

/** A run of `size` pt text whose glyphs are half an em wide. */
const run = (str: string, x: number, y: number, size = 11, font = 'regular'): TextRun => ({
  str,
  x,
  y,
  width: str.length * size * 0.5,
  size,
  font,
});

/** zstd's README benchmark table, as LibreOffice sets it under a paragraph (columns 120 pt apart). */
const ROWS = [
  ['Compressor name', 'Ratio', 'Compression', 'Decompress.'],
  ['zstd 1.5.1 -1', '2.887', '530 MB/s', '1700 MB/s'],
  ['zlib 1.2.11 -1', '2.743', '95 MB/s', '400 MB/s'],
  ['zstd 1.5.1 --fast=3', '2.239', '670 MB/s', '2250 MB/s'],
  ['quicklz 1.5.0 -1', '2.238', '540 MB/s', '760 MB/s'],
];
const COLUMNS = [60, 180, 300, 420];

function tablePage(): TextRun[] {
  const prose = [
    'The figures below were measured on one core of a desktop machine with the Silesia corpus',
    'and a compressor of each family at its fastest and its default levels, as listed here.',
  ];
  return [
    ...prose.map((t, i) => run(t, 57, 671 - 12.6 * i)),
    ...ROWS.flatMap((cells, r) =>
      cells.map((c, k) =>
        run(c, COLUMNS[k] ?? 0, 636 - 20 * r, 11, c.startsWith('zstd') ? 'bold' : 'regular'),
      ),
    ),
  ];
}

describe('tables', () => {
  it('keeps a header cell apart from the next, though a paragraph above runs across the gap', () => {
    const header = toLines(tablePage()).filter((l) => Math.abs(l.y - 636) < 1);
    expect(header.map((l) => l.text)).toEqual(ROWS[0]);
  });

  it('makes the rows one GFM table with every column, bold rows included, no heading', () => {
    const [md] = layoutPages([{ kind: 'text', lines: toLines(tablePage()) }]);
    const rows = (md ?? '').split('\n').filter((l) => l.startsWith('|'));
    expect(rows[0]).toBe('| Compressor name | Ratio | Compression | Decompress. |');
    expect(rows).toContain('| zstd 1.5.1 --fast=3 | 2.239 | 670 MB/s | 2250 MB/s |');
    expect(md).not.toMatch(/^#/m);
  });
});
