/** The pieces of the office converters that are easiest to test alone: rows, dates, scanning. */
import { describe, expect, it } from 'vitest';
import { readRow } from '../../src/converter/formats/office/ods.js';
import { scanXml } from '../../src/converter/formats/office/scan.js';
import { formatKind, serialDate } from '../../src/converter/formats/office/xlsx.js';

describe('XLSX values', () => {
  it('formats serial dates and classifies number formats', () => {
    expect(formatKind('yyyy-mm-dd')).toBe('date');
    expect(formatKind('[h]:mm:ss')).toBe('time');
    expect(formatKind('dd/mm/yyyy hh:mm')).toBe('datetime');
    expect(formatKind('#,##0.00 "days"')).toBe('general');
    expect(formatKind('0.0%')).toBe('percent');
    expect(serialDate(45366, 'date', false)).toBe('2024-03-15');
    expect(serialDate(0.5, 'time', false)).toBe('12:00');
    expect(serialDate(45366.25, 'datetime', false)).toBe('2024-03-15 06:00');
    expect(serialDate(0, 'date', true)).toBe('1904-01-01');
  });
});

describe('ODS rows', () => {
  it('reads displayed text, typed values and repeats, leaving comments out', () => {
    const row =
      '<table:table-row table:number-rows-repeated="3">' +
      '<table:table-cell><office:annotation><text:p>a comment</text:p></office:annotation>' +
      '<text:p>two<text:s text:c="2"/>spaces &amp; <text:span>more</text:span></text:p>' +
      '<text:p>line<text:line-break/>break</text:p></table:table-cell>' +
      '<table:covered-table-cell/>' +
      '<table:table-cell office:value-type="float" office:value="42"/>' +
      '<table:table-cell table:number-columns-repeated="2"><text:p>x</text:p></table:table-cell>' +
      '<table:table-cell table:number-columns-repeated="16384"/>' +
      '</table:table-row>';
    expect(readRow(row)).toEqual({
      repeat: 3,
      cells: [
        [0, 'two  spaces & more\nline\nbreak'],
        [2, '42'],
        [3, 'x'],
        [4, 'x'],
      ],
    });
  });
});

describe('streaming XML scanner', () => {
  const rows = Array.from({ length: 200 }, (_, i) =>
    i % 3 === 0
      ? `<x:row r="${i + 1}"/>`
      : `<x:row r="${i + 1}"><x:c r="A${i + 1}"><x:v>${'7'.repeat(i)}</x:v></x:c></x:row>`,
  );
  const xml =
    '<?xml version="1.0"?><t:table t:name="A &amp; B"><x:sheetData>' +
    rows.join('') +
    '</x:sheetData></t:table><t:table t:name="C"/>';

  async function* pieces(size: number) {
    for (let i = 0; i < xml.length; i += size) yield xml.slice(i, i + size);
    await Promise.resolve();
  }

  it('finds the same rows and containers however the text is chunked', async () => {
    for (const size of [xml.length, 1, 7, 255, 256, 257, 1000]) {
      const seen: string[] = [];
      for await (const e of scanXml(pieces(size), ['table'], ['row'])) {
        seen.push(
          e.type === 'element'
            ? e.xml
            : e.type === 'open'
              ? `open ${e.attrs['t:name'] ?? ''}`
              : 'close',
        );
      }
      expect(seen, `chunks of ${size}`).toEqual([
        'open A & B',
        ...rows,
        'close',
        'open C',
        'close',
      ]);
    }
  });

  it('rejects XML that ends inside a row', async () => {
    async function* cut() {
      yield '<sheetData><row r="1"><c><v>1</v>';
      await Promise.resolve();
    }
    const drain = async () => {
      const events = [];
      for await (const event of scanXml(cut(), [], ['row'])) events.push(event);
      return events;
    };
    await expect(drain()).rejects.toThrow(/ends inside <row>/);
  });
});
