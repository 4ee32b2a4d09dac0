/** `aps-convert` on PDFs, as a real process, on PDFs built by fixtures/pdf-writer.ts. */
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/converter/contract.js';
import {
  cer,
  convert,
  encryptedPdf,
  posterPdf,
  reportPdf,
  scanOnlyPdf,
  shortTextPdf,
} from './fixtures/documents.js';
import { SAMPLE_LINES } from './fixtures/images.js';
import { ensureConverterBuilt } from './helpers.js';

beforeAll(() => {
  ensureConverterBuilt();
}, 180_000);

/** What the text layer of reportPdf() must become: headings, joined paragraphs, no furniture. */
const TEXT_PAGES = [
  [
    '# Annual Report',
    '## Introduction',
    'This report describes the year of the organization in numbers and words. It covers revenue, ' +
      'costs and the outlook for the coming year.',
    'A second paragraph starts after a blank line and ends on its second line.',
  ],
  [
    '## Results',
    'Revenue grew by twelve percent while costs stayed flat, so the operating margin improved again.',
  ],
  [
    '## Outlook',
    'Left column first line, left column second line, left column ends here.',
    'Right column opens, right column goes on, right column closes.',
  ],
].map((blocks) => blocks.join('\n\n'));

/** Markdown → the text after each page marker (index 0 = page 1). */
function pages(markdown: string): string[] {
  return markdown
    .split(/^<!-- page: \d+ -->$/m)
    .slice(1)
    .map((p) => p.trim());
}

const SAMPLE = SAMPLE_LINES.join(' ');

describe('aps-convert on PDFs', () => {
  it('auto: lays out the text layer and OCRs the scanned page', async () => {
    const run = await convert('report.pdf', reportPdf());
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const markdown = run.markdown ?? '';
    expect(markdown.match(/^<!-- page: \d+ -->$/gm)).toEqual(
      [1, 2, 3, 4].map((n) => `<!-- page: ${n} -->`),
    );
    const [p1, p2, p3, p4] = pages(markdown);
    expect([p1, p2, p3]).toEqual(TEXT_PAGES);
    expect(markdown).not.toMatch(/ACME|Page \d of 4/);
    const error = cer(SAMPLE, p4 ?? '');
    console.log(`OCR character error rate, scanned PDF page: ${(error * 100).toFixed(2)} %`);
    expect(error).toBeLessThanOrEqual(0.02);
    expect(run.meta).toMatchObject({ format: 'pdf', pages: 4, ocrPages: [4], warnings: [] });
    expect(run.meta?.ocrMeanConfidence).toBeGreaterThan(80);
    expect(Object.keys(run.meta?.timings ?? {})).toEqual(
      expect.arrayContaining(['detect', 'open', 'text', 'render', 'ocrInit', 'ocr', 'layout']),
    );
  }, 60_000);

  it('text: never OCRs — a scanned page stays empty with a warning', async () => {
    // Named .txt: the content decides, not the name.
    const run = await convert('report.txt', reportPdf(), ['--command', 'text']);
    expect(run.code).toBe(0);
    expect(pages(run.markdown ?? '')).toEqual([...TEXT_PAGES, '']);
    expect(run.meta).toMatchObject({ command: 'text', ocrPages: [], ocrMeanConfidence: null });
    expect(run.meta?.warnings).toEqual([
      "no text layer on page 4 (scanned?): not OCR'd with --command text",
    ]);
    expect(run.stderr).toContain('aps-convert: warning: no text layer on page 4');
    expect(run.meta?.timings).not.toHaveProperty('ocr');
  });

  it('text: a scan-only PDF has nothing to extract', async () => {
    const run = await convert('scan.pdf', scanOnlyPdf(), ['--command', 'text']);
    expect(run.code).toBe(EXIT_CODES.NOTHING_EXTRACTABLE);
    expect(run.stderr).toMatch(/^aps-convert: nothing to extract: the PDF has no text layer/);
    expect(run.markdown).toBeNull();
  });

  it('ocr: OCRs a page even though it has a text layer', async () => {
    const run = await convert('short.pdf', shortTextPdf(), ['--command', 'ocr']);
    expect(run.code).toBe(0);
    expect(run.meta).toMatchObject({ command: 'ocr', pages: 1, ocrPages: [1] });
    const [page] = pages(run.markdown ?? '');
    expect(cer(SAMPLE_LINES.slice(0, 2).join(' '), page ?? '')).toBeLessThanOrEqual(0.02);
  }, 30_000);

  it('renders a page too large for APS_CONVERT_MAX_PIXELS at a lower resolution, with a warning', async () => {
    const run = await convert('poster.pdf', posterPdf(), ['--command', 'ocr'], {
      APS_CONVERT_MAX_PIXELS: '1500000',
    });
    expect(run.code).toBe(0);
    const [page] = pages(run.markdown ?? '');
    expect(cer(SAMPLE_LINES.slice(0, 2).join(' '), page ?? '')).toBeLessThanOrEqual(0.02);
    expect(run.meta?.warnings).toEqual([
      'OCR at reduced resolution (APS_CONVERT_MAX_PIXELS) on page 1',
    ]);
    expect(run.meta?.ocrPages).toEqual([1]);
  }, 30_000);

  it('refuses more pages than APS_CONVERT_MAX_PAGES before converting any', async () => {
    const run = await convert('report.pdf', reportPdf(), [], { APS_CONVERT_MAX_PAGES: '3' });
    expect(run.code).toBe(EXIT_CODES.TOO_LARGE);
    expect(run.stderr).toBe(
      'aps-convert: file too large: the PDF has 4 pages; the converter accepts at most 3 ' +
        '(APS_CONVERT_MAX_PAGES)\n',
    );
  });

  it('exits ENCRYPTED for a password-protected PDF', async () => {
    const pdf = encryptedPdf();
    // The fixture is really encrypted: with the password pdf.js reads it.
    const doc = await getDocument({ data: new Uint8Array(pdf), password: 'secret', verbosity: 0 })
      .promise;
    const { items } = await (await doc.getPage(1)).getTextContent();
    expect(items.map((i) => ('str' in i ? i.str : '')).join(' ')).toContain('Annual Report');
    await doc.destroy();

    const run = await convert('secret.pdf', pdf);
    expect(run.code).toBe(EXIT_CODES.ENCRYPTED);
    expect(run.stderr).toBe('aps-convert: encrypted: the PDF is password-protected\n');
  });

  it('exits CORRUPT for a truncated PDF', async () => {
    const pdf = reportPdf();
    const run = await convert('cut.pdf', pdf.subarray(0, pdf.length >> 1));
    expect(run.code).toBe(EXIT_CODES.CORRUPT);
    expect(run.stderr).toMatch(/^aps-convert: corrupt file: the PDF cannot be read/);
  });
});
