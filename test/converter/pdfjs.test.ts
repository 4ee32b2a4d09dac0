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

/** A one-page PDF whose content stream is Flate-compressed (what real PDFs do). */
function flatePdf(text: string): Buffer {
  const content = deflateSync(Buffer.from(`BT /F1 12 Tf 72 700 Td (${text}) Tj ET`, 'latin1'));
  const objects = [
    Buffer.from('<< /Type /Catalog /Pages 2 0 R >>'),
    Buffer.from('<< /Type /Pages /Kids [3 0 R] /Count 1 >>'),
    Buffer.from(
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R' +
        ' /Resources << /Font << /F1 5 0 R >> >> >>',
    ),
    Buffer.concat([
      Buffer.from(`<< /Length ${content.length} /Filter /FlateDecode >>\nstream\n`),
      content,
      Buffer.from('\nendstream'),
    ]),
    Buffer.from('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'),
  ];
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
});
