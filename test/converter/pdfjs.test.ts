/**
 * How pdf.js is loaded into the converter (formats/pdfjs.ts): the natives core-js replaces are
 * back, and Flate streams are inflated without `DecompressionStream` while a PDF is converted.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';

// Captured before pdf.js is loaded (the import below is dynamic for that reason).
const nativePush = Array.prototype.push;
const nativeParse = JSON.parse;
const { getDocument, withSyncInflate } = await import('../../src/converter/formats/pdfjs.js');
const { convertPdf } = await import('../../src/converter/formats/pdf.js');
const { DEFAULT_LIMITS } = await import('../../src/converter/formats/binary-types.js');

/** A PDF of these objects (object 1 is the catalog), with its cross-reference table. */
function pdfOf(objects: Buffer[]): Buffer {
  const chunks = [Buffer.from('%PDF-1.4\n')];
  const offsets: number[] = [];
  let length = chunks[0]!.length;
  objects.forEach((body, i) => {
    offsets.push(length);
    const chunk = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), body, Buffer.from('\nendobj\n')]);
    chunks.push(chunk);
    length += chunk.length;
  });
  const xref = [
    'xref',
    `0 ${objects.length + 1}`,
    '0000000000 65535 f ',
    ...offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n `),
    `trailer << /Size ${objects.length + 1} /Root 1 0 R >>`,
    'startxref',
    String(length),
    '%%EOF',
  ];
  chunks.push(Buffer.from(`${xref.join('\n')}\n`));
  return Buffer.concat(chunks);
}

function stream(data: Buffer, filter = ''): Buffer {
  return Buffer.concat([
    Buffer.from(`<< /Length ${data.length}${filter} >>\nstream\n`),
    data,
    Buffer.from('\nendstream'),
  ]);
}

const FONT = Buffer.from('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');

/** A one-page PDF whose content stream is Flate-compressed (what real PDFs do). */
function flatePdf(text: string): Buffer {
  const content = deflateSync(Buffer.from(`BT /F1 12 Tf 72 700 Td (${text}) Tj ET`, 'latin1'));
  return pdfOf([
    Buffer.from('<< /Type /Catalog /Pages 2 0 R >>'),
    Buffer.from('<< /Type /Pages /Kids [3 0 R] /Count 1 >>'),
    Buffer.from(
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R' +
        ' /Resources << /Font << /F1 5 0 R >> >> >>',
    ),
    stream(content, ' /Filter /FlateDecode'),
    FONT,
  ]);
}

/**
 * Two pages, the second listing `titles` as lines, and an outline of one entry per title, each
 * pointing at page 2 through a named destination (`/Dests`); `missing` names one that is absent.
 */
function outlinePdf(titles: string[], missing: string): Buffer {
  const page = (contents: number) =>
    Buffer.from(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${contents} 0 R` +
        ' /Resources << /Font << /F1 3 0 R >> >> >>',
    );
  const lines = titles.map(
    (t, i) =>
      `BT /F1 11 Tf 72 ${750 - i * 34} Td (${t}) Tj ET\n` +
      `BT /F1 11 Tf 72 ${736 - i * 34} Td (Body text of this part, long enough to be prose.) Tj ET`,
  );
  // Objects: 1 catalog, 2 pages, 3 font, 4-5 pages, 6 page 2's text, 7 /Dests, 8 outline root,
  // 9… its items, then page 1's text.
  const first = 9; // the first outline item's object number
  const items = titles.map((t, i) => {
    const links = [
      i > 0 ? ` /Prev ${first + i - 1} 0 R` : '',
      i < titles.length - 1 ? ` /Next ${first + i + 1} 0 R` : '',
    ].join('');
    const name = t === missing ? 'nowhere' : `d${i}`;
    return Buffer.from(`<< /Title (${t}) /Parent 8 0 R /Dest /${name}${links} >>`);
  });
  const dests = titles.map((_, i) => `/d${i} [5 0 R /XYZ 0 792 0]`).join(' ');
  return pdfOf([
    Buffer.from('<< /Type /Catalog /Pages 2 0 R /Outlines 8 0 R /Dests 7 0 R >>'),
    Buffer.from('<< /Type /Pages /Kids [4 0 R 5 0 R] /Count 2 >>'),
    FONT,
    page(first + titles.length),
    page(6),
    stream(Buffer.from(lines.join('\n'), 'latin1')),
    Buffer.from(`<< ${dests} >>`),
    Buffer.from(
      `<< /Type /Outlines /First ${first} 0 R /Last ${first + titles.length - 1} 0 R` +
        ` /Count ${titles.length} >>`,
    ),
    ...items,
    stream(Buffer.from('BT /F1 11 Tf 72 740 Td (A first page of body text.) Tj ET')),
  ]);
}

/** Counts the DecompressionStreams constructed while `fn` runs. */
async function countDecompressionStreams(fn: () => Promise<unknown>): Promise<number> {
  const original = globalThis.DecompressionStream;
  let count = 0;
  globalThis.DecompressionStream = class extends original {
    constructor(format: ConstructorParameters<typeof original>[0]) {
      super(format);
      count++;
    }
  };
  try {
    await fn();
  } finally {
    globalThis.DecompressionStream = original;
  }
  return count;
}

const dir = mkdtempSync(join(tmpdir(), 'aps-pdfjs-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('pdf.js in the converter', () => {
  it('leaves the native push and JSON.parse that its bundled core-js replaces on Node 20', () => {
    expect(Array.prototype.push).toBe(nativePush);
    expect(JSON.parse).toBe(nativeParse);
    const list: number[] = [];
    expect(list.push(1, 2)).toBe(2);
    expect(list).toEqual([1, 2]);
  });

  it('inflates Flate content streams itself while converting, and restores DecompressionStream', async () => {
    const file = join(dir, 'flate.pdf');
    writeFileSync(file, flatePdf('Inflated without web streams'));
    // Control: pdf.js on its own reaches for DecompressionStream for this file.
    const plain = await countDecompressionStreams(async () => {
      const doc = await getDocument({ data: new Uint8Array(flatePdf('x')), verbosity: 0 }).promise;
      await (await doc.getPage(1)).getTextContent();
      await doc.destroy();
    });
    expect(plain).toBeGreaterThan(0);

    const original = globalThis.DecompressionStream;
    let markdown = '';
    const during = await countDecompressionStreams(async () => {
      ({ markdown } = await convertPdf(file, {
        command: 'text',
        lang: 'eng',
        limits: DEFAULT_LIMITS,
      }));
    });
    expect(during).toBe(0);
    expect(markdown).toContain('Inflated without web streams');
    expect(globalThis.DecompressionStream).toBe(original);
  });

  it('hides DecompressionStream once for nested and concurrent reads, and brings it back after a failure', async () => {
    const original = globalThis.DecompressionStream;
    const seen: boolean[] = [];
    const look = () => seen.push('DecompressionStream' in globalThis);
    await Promise.all([
      withSyncInflate(async () => {
        look();
        await withSyncInflate(async () => {
          await new Promise((r) => setTimeout(r, 5));
          look();
        });
        look();
      }),
      withSyncInflate(async () => {
        await new Promise((r) => setTimeout(r, 10));
        look();
      }),
    ]);
    expect(seen).toEqual([false, false, false, false]);
    expect(globalThis.DecompressionStream).toBe(original);
    await expect(withSyncInflate(() => Promise.reject(new Error('broken page')))).rejects.toThrow(
      'broken page',
    );
    expect(globalThis.DecompressionStream).toBe(original);
  });

  it('reads an outline of many named destinations at once, a missing one costing its entry only', async () => {
    const titles = Array.from({ length: 20 }, (_, i) => `Chapter ${i + 1} Title`);
    const file = join(dir, 'outline.pdf');
    writeFileSync(file, outlinePdf(titles, 'Chapter 7 Title'));
    const { markdown } = await convertPdf(file, {
      command: 'text',
      lang: 'eng',
      limits: DEFAULT_LIMITS,
    });
    // Chapter 7's destination is missing; the others still come from the outline. (Chapter 20,
    // the page's last line, is left out: whether it becomes a heading is the layout's decision.)
    for (const title of titles.slice(0, 19).filter((t) => t !== 'Chapter 7 Title')) {
      expect(markdown).toMatch(new RegExp(`^# ${title}$`, 'm'));
    }
  });
});
