/**
 * End to end through the HTTP API for every converter format: upload, index, and retrieve a
 * sentence with its page (PDF page, slide, TIFF frame) or section (heading, sheet).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportPdf } from '../../converter/fixtures/documents.js';
import { manualPdf } from '../../converter/fixtures/manual-pdf.js';
import { encodeTiff, renderText, SAMPLE_LINES, toGray } from '../../converter/fixtures/images.js';
import { buildDocx, buildOdt, buildPptx, buildXlsx } from '../../converter/fixtures/office-docs.js';
import type { TestApp } from '../../helpers.js';
import { knowledgeApp, type KnowledgeClient } from '../helpers.js';

let t: TestApp;
let k: KnowledgeClient;
beforeAll(async () => {
  ({ t, k } = await knowledgeApp());
});
afterAll(() => t.close());

async function ingest(name: string, content: Buffer, project: string) {
  const doc = await k.uploadOk(name, content, { projectId: project });
  const result = await k.indexOk(doc.id);
  return { doc, result };
}

describe('formats end to end', () => {
  it('PDF: text pages and a scanned page come back with their page numbers', async () => {
    const { doc, result } = await ingest('report.pdf', reportPdf(), 'pdf');
    expect(doc.fileType).toBe('pdf');
    expect(result.document.converterMeta).toMatchObject({ pages: 4, ocrPages: [4] });
    const results = await k.hits({ query: 'operating margin improved', projectId: 'pdf', topK: 1 });
    expect(results[0]).toMatchObject({ page: 2 });
    expect(results[0]!.content).toContain('Revenue grew by twelve percent');
    const outlook = await k.hits({ query: 'right column closes', projectId: 'pdf', topK: 1 });
    expect(outlook[0]).toMatchObject({ page: 3 });
    const scanned = await k.hits({
      query: 'investment in research remained',
      projectId: 'pdf',
      topK: 1,
    });
    expect(scanned[0]).toMatchObject({ page: 4 });
    const chunks = (await k.get(`/documents/${doc.id}/chunks`)).json<{
      items: { content: string }[];
    }>().items;
    expect(chunks.map((c) => c.content).join('\n')).not.toContain('Annual Report 2024 |');
  }, 60_000); // OCR through a converter process started cold: ~10 s alone, 20 s+ on a loaded CI

  it('PDF manual: clean section trails, TOC and index marked, pageEnd where a chunk spans pages', async () => {
    const { doc } = await ingest('manual.pdf', manualPdf(), 'manual');
    const [hit] = await k.hits({
      query: 'fast option checksum pass',
      projectId: 'manual',
      topK: 1,
    });
    expect(hit).toMatchObject({
      page: 2,
      pageEnd: 3,
      sectionPath: 'The Frobnicator Reference Manual and Guide > 1 Introduction > 1.2 Options',
    });
    expect(hit!.content).toMatch(/^### 1\.2 Options\n+The --fast option/);
    const chunks = (await k.get(`/documents/${doc.id}/chunks`)).json<{
      items: { sectionPath: string; page: number; pageEnd: number; metadata: { kind?: string } }[];
    }>().items;
    expect(
      chunks.map((c) => [c.sectionPath.replace(/^.*> /, ''), c.page, c.pageEnd, c.metadata.kind]),
    ).toEqual([
      ['Contents', 1, 1, 'toc'],
      ['1 Introduction', 2, 2, undefined],
      ['1.1 Getting started', 2, 2, undefined],
      ['1.2 Options', 2, 3, undefined],
      ['Index', 3, 3, 'toc'],
    ]);
  }, 60_000);

  it('DOCX and ODT: headings become the section path', async () => {
    await ingest('quarterly.docx', buildDocx(), 'docx');
    const hit = (await k.hits({ query: 'Alpha shipped', projectId: 'docx', topK: 1 }))[0];
    expect(hit?.sectionPath).toMatch(/Highlights/);
    const odt = await ingest('notes.odt', buildOdt(), 'odt');
    expect(odt.result.chunkCount).toBeGreaterThan(0);
  });

  it('PPTX: a slide is a page', async () => {
    const { result } = await ingest('deck.pptx', buildPptx(), 'pptx');
    expect(result.document.converterMeta).toMatchObject({ pages: 2 });
    const hit = (await k.hits({ query: 'hire two engineers', projectId: 'pptx', topK: 1 }))[0];
    expect(hit).toMatchObject({ page: 1 });
    expect(hit?.sectionPath).toContain('Roadmap 2025');
    const notes = (await k.hits({ query: 'budget', projectId: 'pptx', topK: 1 }))[0];
    expect(notes).toMatchObject({ page: 1 });
  });

  it('XLSX: the sheet name is in the section path', async () => {
    await ingest('book.xlsx', await buildXlsx(50), 'xlsx');
    const hit = (await k.hits({ query: 'Licence', projectId: 'xlsx', topK: 1 }))[0];
    expect(hit?.sectionPath).toContain('Summary');
    expect(hit?.content).toContain('| Licence |');
  });

  it('images: PNG is OCR’d; a multi-page TIFF gives a page per frame', async () => {
    const png = await renderText(SAMPLE_LINES.slice(0, 2), {
      fontSize: 42,
      width: 2000,
      margin: 80,
    }).encode('png');
    const { result } = await ingest('scan.png', png, 'png');
    expect(result.document.converterMeta).toMatchObject({ ocrPages: [1] });
    const hit = (
      await k.hits({ query: 'quarterly report revenue grew', projectId: 'png', topK: 1 })
    )[0];
    expect(hit?.content.toLowerCase()).toContain('revenue grew');

    const frames = [SAMPLE_LINES.slice(0, 1), SAMPLE_LINES.slice(3, 4)].map((lines) =>
      toGray(renderText(lines, { fontSize: 42, width: 2000, margin: 80 })),
    );
    const tiff = await ingest('pages.tiff', encodeTiff(frames), 'tiff');
    expect(tiff.result.document.converterMeta).toMatchObject({ pages: 2 });
    const second = (
      await k.hits({ query: 'board expects further growth', projectId: 'tiff', topK: 1 })
    )[0];
    expect(second).toMatchObject({ page: 2 });
  }, 60_000);
});
