/**
 * Issue 41's page and heading rules on hand-made lines: text stays on the page it is printed on
 * (also a paragraph or listing that runs over a page break); a definition's prototype is never a
 * heading, however large it is set; with an outline, only the styles of its titles make headings.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { definitionLines } from '../../src/converter/formats/pdf/headings.js';
import { layoutPages, type PageContent } from '../../src/converter/formats/pdf/layout.js';
import type { Line } from '../../src/converter/formats/pdf/lines.js';
import { tagLast } from '../../src/converter/formats/pdf/structure.js';

const line = (text: string, y: number, size = 10, x0 = 72, mono = false): Line => ({
  text,
  x0,
  x1: x0 + text.length * size * 0.5,
  y,
  size,
  mono,
});
const page = (...lines: Line[]): PageContent => ({ kind: 'text', lines });
const words = (text: string) => text.match(/[\p{L}\p{N}]+/gu) ?? [];

describe('page attribution', () => {
  it('keeps each part of a paragraph cut by a page break on its own page', () => {
    const pages = layoutPages([
      page(
        line('A paragraph starts near the foot of the first page and', 100),
        line('carries on over the break without ending its sentence', 88),
      ),
      page(line('until it ends here on the second page.', 720), line('A new one.', 690)),
    ]);
    expect(pages).toEqual([
      'A paragraph starts near the foot of the first page and carries on over the break ' +
        'without ending its sentence',
      'until it ends here on the second page.\n\nA new one.',
    ]);
  });

  it('joins a word split by a hyphen at the break on the first page', () => {
    const pages = layoutPages([
      page(line('The library keeps its internal organi-', 100)),
      page(line('zation simple and small.', 720), line('Then the next section.', 690)),
    ]);
    expect(pages).toEqual([
      'The library keeps its internal organization',
      'simple and small.\n\nThen the next section.',
    ]);
  });

  it('a page whose text is all one continued listing is not empty', () => {
    const code = (text: string, y: number) => line(text, y, 10, 72, true);
    const pages = layoutPages([
      page(line('The program:', 130), code('int main(void) {', 110), code('  int a = 1;', 98)),
      page(code('  a += 2;', 720), code('  a *= 3;', 708)),
      page(code('  return a;', 720), code('}', 708), line('It returns nine.', 680)),
    ]);
    expect(pages[1]).toBe('```\n  a += 2;\n  a *= 3;\n```');
    expect(pages[2]).toBe('```\n  return a;\n}\n```\n\nIt returns nine.');
  });

  it('every word of every page comes out on that page (property)', () => {
    const sentence = fc
      .array(fc.constantFrom('data', 'block', 'stream', 'value', 'the', 'of', 'zation'), {
        minLength: 3,
        maxLength: 9,
      })
      .map((w) => w.join(' '));
    const pageText = fc.array(sentence, { minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(fc.array(pageText, { minLength: 2, maxLength: 4 }), (texts) => {
        const out = layoutPages(
          // Each page's text a little lower than the last: the same line at the same height on
          // every page would be a running header, rightly dropped.
          texts.map((lines, p) => page(...lines.map((t, i) => line(t, 700 - 12 * i - 5 * p)))),
        );
        texts.forEach((lines, p) => {
          expect(words(out[p] ?? '').sort()).toEqual(words(lines.join(' ')).sort());
        });
      }),
    );
  });
});

describe('definitions are not headings', () => {
  // libtasn1's reference: a subheading in a larger bold font, then the prototype set at 12 pt
  // (above the 10.9 pt text), wrapped, with its `[Function]` tag at the right margin.
  const reference = (n: number, y: number): Line[] => [
    { ...line(`asn1 function ${n}`, y, 13.1), font: 'bold' },
    line(`int asn1_function_${n} (asn1 node const definitions, const [Function]`, y - 24, 12),
    line('char * source_name, asn1 node * element)', y - 37, 12, 122),
    line(
      `definitions: pointer to the structure number ${n} returned by the parser.`,
      y - 51,
      10.9,
      100,
    ),
    line(
      'Returns: ASN1_SUCCESS if creation OK, ASN1_ELEMENT_NOT_FOUND otherwise, as',
      y - 65,
      10.9,
      100,
    ),
    line(
      'the other functions of this chapter return their errors in the same way.',
      y - 78,
      10.9,
      100,
    ),
  ];

  it('finds the prototype lines while the argument list is open', () => {
    const lines = reference(1, 700);
    expect([...definitionLines(lines)].map((l) => l.text)).toEqual([
      'int asn1_function_1 (asn1 node const definitions, const [Function]',
      'char * source_name, asn1 node * element)',
    ]);
  });

  it('makes the subheadings headings, each prototype one paragraph with its tag last', () => {
    const pages = layoutPages([
      page(...reference(1, 700), ...reference(2, 560), ...reference(3, 420)),
      page(...reference(4, 700), ...reference(5, 560)),
    ]);
    const blocks = pages.join('\n\n').split('\n\n');
    expect(blocks.filter((b) => b.startsWith('#'))).toEqual(
      [1, 2, 3, 4, 5].map((n) => `# asn1 function ${n}`),
    );
    expect(blocks).toContain(
      'int asn1_function_2 (asn1 node const definitions, const char * source_name, asn1 node * ' +
        'element) [Function]',
    );
  });

  it('with an outline, only its titles’ styles make headings: subheadings become text', () => {
    const section = (title: string, y: number): Line => ({ ...line(title, y, 14.3), font: 'bold' });
    const pages: PageContent[] = [
      {
        kind: 'text',
        lines: [section('4.2 Field functions', 720), ...reference(1, 690), ...reference(2, 550)],
        outline: [{ title: '4.2 Field functions', level: 2, page: 1 }],
      },
      {
        kind: 'text',
        // A section the outline leaves out, in the outline titles' style: a heading still.
        lines: [section('4.3 Unlisted section', 720), ...reference(3, 690), ...reference(4, 550)],
      },
    ];
    const blocks = layoutPages(pages).join('\n\n').split('\n\n');
    const headings = blocks.filter((b) => b.startsWith('#')).map((b) => b.replace(/^#+ /, ''));
    expect(headings).toEqual(['4.2 Field functions', '4.3 Unlisted section']);
    expect(blocks).toContain('asn1 function 3');
    // Without the outline the subheadings' larger bold font is evidence enough.
    const bare = layoutPages(pages.map((p) => (p.kind === 'text' ? { ...p, outline: [] } : p)));
    expect(bare.join('\n\n')).toMatch(/^#+ asn1 function 3$/m);
  });

  it('moves a wrapped prototype’s tag to its end', () => {
    expect(tagLast('void f (int a, [Function] char *b)')).toBe(
      'void f (int a, char *b) [Function]',
    );
    expect(tagLast('void f (int a) [Function]')).toBe('void f (int a) [Function]');
  });
});
