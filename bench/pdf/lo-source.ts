/**
 * Flat-ODT sources for LibreOffice-made PDFs with known truth: prose with headings, two-column
 * sections between full-width blocks, and tables with prose around them. Deterministic (seeded),
 * so the cache and the truth always agree.
 */

/** What a document says, in reading order. */
export interface Truth {
  /** Every block's text in reading order (headings, paragraphs, table cells row by row). */
  text: string[];
  headings: { text: string; level: number }[];
  tables: string[][][];
  /** Whether its body is set in two columns. */
  columns: boolean;
}

const WORDS = (
  'the of and a to in is that for it as with be on by this are from at or an which can not ' +
  'system memory value buffer compression block data stream error function return pointer ' +
  'library manual example output input file format header table column record index option ' +
  'program process thread signal network packet protocol server client request response key ' +
  'algorithm cipher hash digest message context state length offset number string character ' +
  'structure section chapter figure describes provides contains requires allows returns uses ' +
  'implementation interface parameter argument variable constant command default behaviour ' +
  'compatibility performance measurement allocation initialisation configuration'
).split(' ');

class Prose {
  private state: number;
  constructor(seed: number) {
    this.state = seed;
  }
  private next(n: number): number {
    this.state = (this.state * 1103515245 + 12345) % 2 ** 31;
    return this.state % n;
  }
  word(): string {
    return WORDS[this.next(WORDS.length)] ?? 'data';
  }
  sentence(): string {
    const n = 8 + this.next(12);
    const words = Array.from({ length: n }, () => this.word());
    const s = words.join(' ');
    return `${s.charAt(0).toUpperCase()}${s.slice(1)}.`;
  }
  paragraph(sentences = 3 + this.next(4)): string {
    return Array.from({ length: sentences }, () => this.sentence()).join(' ');
  }
}

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

class Doc {
  readonly body: string[] = [];
  readonly truth: Truth = { text: [], headings: [], tables: [], columns: false };
  private tables = 0;
  private sections = 0;

  heading(text: string, level: number): void {
    this.body.push(
      `<text:h text:style-name="Heading_20_${level}" text:outline-level="${level}">${xml(text)}</text:h>`,
    );
    this.truth.text.push(text);
    this.truth.headings.push({ text, level });
  }
  para(text: string): string {
    this.truth.text.push(text);
    return `<text:p text:style-name="Text_20_body">${xml(text)}</text:p>`;
  }
  p(text: string): void {
    this.body.push(this.para(text));
  }
  columns(inner: (d: Doc) => void): void {
    const start = this.body.length;
    inner(this);
    const content = this.body.splice(start).join('\n');
    this.sections++;
    this.truth.columns = true;
    this.body.push(
      `<text:section text:style-name="Cols" text:name="S${this.sections}">${content}</text:section>`,
    );
  }
  /**
   * A table; `ruled` draws every cell's border (else none), `bold` sets the rows it picks in bold
   * at text size (as the zstd README's own rows are).
   */
  table(
    rows: string[][],
    { ruled = false, bold }: { ruled?: boolean; bold?: (row: string[]) => boolean } = {},
  ): void {
    this.tables++;
    this.truth.tables.push(rows);
    for (const row of rows) this.truth.text.push(...row);
    const width = rows[0]?.length ?? 1;
    const style = ruled ? ' table:style-name="Ruled"' : '';
    const cells = (row: string[]) =>
      row
        .map((c) => {
          const text =
            bold?.(row) === true
              ? `<text:span text:style-name="Bold">${xml(c)}</text:span>`
              : xml(c);
          return `<table:table-cell${style} office:value-type="string"><text:p>${text}</text:p></table:table-cell>`;
        })
        .join('');
    this.body.push(
      `<table:table table:name="Table${this.tables}">` +
        `<table:table-column table:number-columns-repeated="${width}"/>` +
        rows.map((r) => `<table:table-row>${cells(r)}</table:table-row>`).join('') +
        '</table:table>',
    );
  }
  fodt(): string {
    const ns = (p: string, u: string) => `xmlns:${p}="urn:oasis:names:tc:opendocument:xmlns:${u}"`;
    return `<?xml version="1.0" encoding="UTF-8"?>
<office:document ${ns('office', 'office:1.0')} ${ns('style', 'style:1.0')} ${ns('text', 'text:1.0')}
 ${ns('table', 'table:1.0')} ${ns('fo', 'xsl-fo-compatible:1.0')}
 office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
<office:styles>
<style:style style:name="Text_20_body" style:display-name="Text body" style:family="paragraph">
<style:paragraph-properties fo:margin-bottom="0.08in" fo:text-align="justify"/>
<style:text-properties fo:font-size="11pt"/></style:style>
${[1, 2, 3]
  .map(
    (
      l,
    ) => `<style:style style:name="Heading_20_${l}" style:display-name="Heading ${l}" style:family="paragraph" style:default-outline-level="${l}">
<style:paragraph-properties fo:margin-top="0.17in" fo:margin-bottom="0.08in" fo:keep-with-next="always"/>
<style:text-properties fo:font-size="${[18, 14, 12][l - 1]}pt" fo:font-weight="bold"/></style:style>`,
  )
  .join('\n')}
</office:styles>
<office:automatic-styles>
<style:style style:name="Cols" style:family="section"><style:section-properties>
<style:columns fo:column-count="2" fo:column-gap="0.4in"/></style:section-properties></style:style>
<style:style style:name="Ruled" style:family="table-cell"><style:table-cell-properties
 fo:border="0.5pt solid #000000" fo:padding="0.04in"/></style:style>
<style:style style:name="Bold" style:family="text"><style:text-properties fo:font-weight="bold"/></style:style>
</office:automatic-styles>
<office:body><office:text>
${this.body.join('\n')}
</office:text></office:body></office:document>
`;
  }
}

function prose(): Doc {
  const d = new Doc();
  const p = new Prose(7);
  d.heading('Compression Library Manual', 1);
  d.p(p.paragraph());
  for (let s = 1; s <= 5; s++) {
    d.heading(
      `${s} ${p.word()} ${p.word()} overview`.replace(/^./, (c) => c.toUpperCase()),
      2,
    );
    d.p(p.paragraph());
    d.p(p.paragraph());
    for (let t = 1; t <= 2; t++) {
      d.heading(`${s}.${t} Handling the ${p.word()} ${p.word()}`, 3);
      d.p(p.paragraph());
      d.p(p.paragraph(2));
    }
  }
  return d;
}

function columns(): Doc {
  const d = new Doc();
  const p = new Prose(11);
  d.heading('Two Column Report on Stream Processing', 1);
  d.p(p.paragraph(3));
  for (let s = 1; s <= 3; s++) {
    d.columns((c) => {
      c.heading(`Part ${s}: the ${p.word()} ${p.word()}`, 2);
      for (let i = 0; i < 7; i++) c.p(p.paragraph());
    });
    d.p(`Full width note ${s}. ${p.paragraph(2)}`);
  }
  return d;
}

function tables(): Doc {
  const d = new Doc();
  const p = new Prose(23);
  let n = 0;
  const cell = () => `${p.word()} ${++n}`;
  d.heading('Measured Values and Options', 1);
  const shapes: [number, number][] = [
    [4, 6],
    [3, 8],
    [5, 5],
    [2, 7],
    [4, 10],
  ];
  shapes.forEach(([cols, rows], i) => {
    d.heading(`Table group ${i + 1}`, 2);
    d.p(p.paragraph(3));
    const header = Array.from(
      { length: cols },
      (_, c) => `Head${i + 1}${String.fromCharCode(65 + c)}`,
    );
    const body = Array.from({ length: rows }, () => Array.from({ length: cols }, cell));
    d.table([header, ...body]);
    d.p(p.paragraph(2));
  });
  return d;
}

/**
 * The benchmark table of zstd's README (Debian's zstd package, /usr/share/doc/zstd/README.md.gz),
 * ruled, its zstd rows in bold as the README sets them: a bold row at text size was made a
 * heading (`## zstd 1.5.1 -- fast=3`).
 */
const ZSTD_TABLE = [
  ['Compressor name', 'Ratio', 'Compression', 'Decompress.'],
  ['zstd 1.5.1 -1', '2.887', '530 MB/s', '1700 MB/s'],
  ['zlib 1.2.11 -1', '2.743', '95 MB/s', '400 MB/s'],
  ['brotli 1.0.9 -0', '2.702', '395 MB/s', '450 MB/s'],
  ['zstd 1.5.1 --fast=1', '2.437', '600 MB/s', '2150 MB/s'],
  ['zstd 1.5.1 --fast=3', '2.239', '670 MB/s', '2250 MB/s'],
  ['quicklz 1.5.0 -1', '2.238', '540 MB/s', '760 MB/s'],
  ['zstd 1.5.1 --fast=4', '2.148', '710 MB/s', '2300 MB/s'],
  ['lzo1x 2.10 -1', '2.106', '660 MB/s', '845 MB/s'],
  ['lz4 1.9.3', '2.101', '740 MB/s', '4500 MB/s'],
  ['lzf 3.6 -1', '2.077', '410 MB/s', '830 MB/s'],
  ['snappy 1.1.9', '2.073', '550 MB/s', '1750 MB/s'],
];

function zstd(): Doc {
  const d = new Doc();
  const p = new Prose(31);
  d.heading('Zstandard', 1);
  d.p(p.paragraph(3));
  d.heading('Benchmarks', 2);
  d.p(p.paragraph(2));
  d.table(ZSTD_TABLE, { ruled: true, bold: (row) => row[0]?.startsWith('zstd') === true });
  d.p(p.paragraph(3));
  return d;
}

/** The LibreOffice documents of the set: name, flat-ODT source, truth. */
export function loDocuments(): { name: string; fodt: string; truth: Truth }[] {
  return [
    ['lo-prose', prose()],
    ['lo-columns', columns()],
    ['lo-tables', tables()],
    ['lo-zstd', zstd()],
  ].map(([name, doc]) => ({
    name: name as string,
    fodt: (doc as Doc).fodt(),
    truth: (doc as Doc).truth,
  }));
}
