/** Glyph repairs of a PDF's text layer (text-fixes.ts): ligatures, mojibake, TeX's ©, accents. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { layoutPages } from '../../src/converter/formats/pdf/layout.js';
import { toLines, type Line } from '../../src/converter/formats/pdf/lines.js';
import { tocEntry } from '../../src/converter/formats/pdf/structure.js';
import {
  combineAccents,
  fixLineText,
  fixRunText,
  repairMojibake,
} from '../../src/converter/formats/pdf/text-fixes.js';

/** `text` as UTF-8 bytes shown as Windows-1252 (Latin-1 where it has no face): the mojibake. */
function doubleEncoded(text: string): string {
  const faces = '€\u0081‚ƒ„…†‡ˆ‰Š‹Œ\u008DŽ\u008F\u0090‘’“”•–—˜™š›œ\u009DžŸ';
  return [...new TextEncoder().encode(text)]
    .map((b) => (b >= 0x80 && b < 0xa0 ? faces.charAt(b - 0x80) : String.fromCharCode(b)))
    .join('');
}

describe('ligatures and encodings', () => {
  it('splits Latin ligatures into their letters', () => {
    expect(fixRunText('eﬃcient ﬁles, ﬂow, staﬀ, baﬄe, ﬅyle, ﬆop')).toBe(
      'efficient files, flow, staff, baffle, style, stop',
    );
  });

  it('decodes UTF-8 read as Latin-1 or Windows-1252, leaves real Latin-1 alone', () => {
    expect(repairMojibake('lÃ¤uft, cafÃ©, donâ€™t, 10Â°C')).toBe('läuft, café, don’t, 10°C');
    expect(repairMojibake('Ã alone, é» and São Paulo')).toBe('Ã alone, é» and São Paulo');
  });

  it('undoes any double encoding of text (property)', () => {
    const text = fc.string({
      unit: fc.oneof(
        fc.constantFrom('a', 'b', 'c', ' ', 'x', 'y', 'z'),
        fc.integer({ min: 0xc0, max: 0x24f }).map((c) => String.fromCharCode(c)),
        fc.constantFrom('’', '€', '—', '“', '”', '€', 'π', 'Ж'),
      ),
      maxLength: 30,
    });
    fc.assert(fc.property(text, (t) => repairMojibake(doubleEncoded(t)) === t));
  });

  it('leaves text without mojibake as it is (property)', () => {
    const ascii = fc.string({
      unit: fc.constantFrom(...Array.from('abc ÄÖÜäöüéèçß.,-')),
      maxLength: 40,
    });
    fc.assert(fc.property(ascii, (t) => repairMojibake(t) === t));
  });

  it("reads TeX's copyright sign, a circle over a c, as one ©", () => {
    expect(fixLineText('Copyright ©c 2001–2022 Free Software Foundation')).toBe(
      'Copyright © 2001–2022 Free Software Foundation',
    );
    expect(fixLineText('©copyright')).toBe('©copyright');
  });

  it('runs through toLines: no ligature or mojibake reaches a line', () => {
    const [lineOut] = toLines([{ str: 'The ﬁrst lÃ¤uft', x: 72, y: 700, width: 80, size: 10 }]);
    expect(lineOut?.text).toBe('The first läuft');
  });
});

describe('spacing accents', () => {
  it('combines an accent with the letter it sits on, also across a space inside a word', () => {
    expect(combineAccents('M¨oller, M¨ oller, Garc´ıa')).toBe('Möller, Möller, García');
  });

  it('keeps an accent standing alone apart: `ˆ u` is not `û`', () => {
    expect(combineAccents('x ˆ u and the ˆ operator')).toBe('x ˆ u and the ˆ operator');
  });

  it('reads a code line’s ˆ and ˜ as the ASCII caret and tilde, never as accents', () => {
    expect(fixLineText('a = bˆu; ˜mask', true)).toBe('a = b^u; ~mask');
    const line = (text: string, y: number, mono: boolean): Line => ({
      text,
      x0: 72,
      x1: 72 + 6 * text.length,
      y,
      size: 10,
      mono,
    });
    const [md] = layoutPages([
      {
        kind: 'text',
        lines: [
          line('The exclusive or of two values is written as follows:', 700, false),
          line('x = y ˆu;', 686, true),
          line('z = ˜x;', 674, true),
        ],
      },
    ]);
    expect(md).toContain('```\nx = y ^u;\nz = ~x;\n```');
  });
});

describe('table-of-contents leaders', () => {
  it('keeps the entry and its page number, not the dots', () => {
    expect(tocEntry('7.1 Hash functions . . . . . . . . . . 8')).toBe('7.1 Hash functions … 8');
    expect(tocEntry('Index ··········· 53')).toBe('Index … 53');
    expect(tocEntry('Appendix A………… iv')).toBe('Appendix A … iv');
  });
});
