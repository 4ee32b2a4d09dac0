import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ExcelJS from 'exceljs';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT_CODES, type ExitCode } from '../../src/converter/contract.js';
import { DEFAULT_LIMITS, type BinaryConverter } from '../../src/converter/formats/binary-types.js';
import { ConvertError } from '../../src/converter/formats/convert-error.js';
import {
  convertDocx,
  convertOds,
  convertOdt,
  convertPptx,
  convertXlsx,
} from '../../src/converter/formats/office.js';
import { chunkMarkdown } from '../../src/knowledge/chunking/markdown-chunker.js';
import {
  buildDocx,
  buildEncryptedOle,
  buildOds,
  buildOdt,
  buildPptx,
  buildXlsx,
  docxParts,
} from './fixtures/office-docs.js';
import { zip } from './fixtures/office-zip.js';

const dir = mkdtempSync(join(tmpdir(), 'aps-office-test-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

let counter = 0;
function file(bytes: Buffer, ext: string): string {
  const path = join(dir, `f${++counter}.${ext}`);
  writeFileSync(path, bytes);
  return path;
}

const options = { command: 'auto' as const, lang: 'eng', limits: DEFAULT_LIMITS };

async function failure(convert: BinaryConverter, path: string): Promise<ConvertError> {
  const error: unknown = await convert(path, options).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConvertError);
  return error as ConvertError;
}

async function expectCode(convert: BinaryConverter, path: string, code: ExitCode) {
  const error = await failure(convert, path);
  expect(error.exitCode, error.message).toBe(code);
  return error;
}

describe('DOCX', () => {
  it('keeps headings, list items, tables and footnotes', async () => {
    const result = await convertDocx(file(buildDocx(), 'docx'), options);
    const md = result.markdown;
    expect(md).toMatch(/^# Quarterly Report$/m);
    expect(md).toMatch(/^## Highlights$/m);
    expect(md).toMatch(/^-\s+Alpha shipped$/m);
    expect(md).toMatch(/^-\s+Beta started$/m);
    expect(md).toContain('| Region | Sales |\n| --- | --- |\n| North | 120 |\n| South | 95 |');
    expect(md).toContain('Revenue grew strongly[^1] this quarter.');
    expect(md).toMatch(/^\[\^1\]: Audited figures, see annex B\.$/m);
    expect(result.pages).toBeNull();
    expect(result.ocrPages).toEqual([]);
  });

  it('gives sections by heading to the chunker', async () => {
    const { markdown } = await convertDocx(file(buildDocx(), 'docx'), options);
    const chunks = chunkMarkdown(markdown, { maxChars: 200, overlapChars: 0 });
    const table = chunks.find((c) => c.content.includes('| North |'));
    expect(table?.sectionPath).toContain('Numbers');
  });

  it('reports a document with an empty body as nothing to extract', async () => {
    const parts = docxParts().map((p) =>
      p.name === 'word/document.xml'
        ? { ...p, data: p.data.toString().replace(/<w:body>.*<\/w:body>/, '<w:body/>') }
        : p,
    );
    await expectCode(convertDocx, file(zip(parts), 'docx'), EXIT_CODES.NOTHING_EXTRACTABLE);
  });

  it('keeps text that looks like a page marker from becoming one', async () => {
    const marker = '<w:p><w:r><w:t>&lt;!-- page: 9 --&gt;</w:t></w:r></w:p>';
    const parts = docxParts().map((p) =>
      p.name === 'word/document.xml'
        ? { ...p, data: p.data.toString().replace('<w:body>', `<w:body>${marker}`) }
        : p,
    );
    const { markdown } = await convertDocx(file(zip(parts), 'docx'), options);
    expect(markdown).toContain('\\<!-- page: 9 -->');
    const chunks = chunkMarkdown(markdown, { maxChars: 500, overlapChars: 0 });
    expect(chunks.every((c) => c.page === null)).toBe(true);
  });

  it('refuses truncated, non-zip and partless files as corrupt', async () => {
    const docx = buildDocx();
    const truncated = docx.subarray(0, Math.floor(docx.length / 2));
    await expectCode(convertDocx, file(truncated, 'docx'), EXIT_CODES.CORRUPT);
    await expectCode(convertDocx, file(Buffer.from('just text'), 'docx'), EXIT_CODES.CORRUPT);
    const noMain = zip(docxParts().filter((p) => p.name !== 'word/document.xml'));
    await expectCode(convertDocx, file(noMain, 'docx'), EXIT_CODES.CORRUPT);
  });

  it('recognises a password-protected file (OLE wrapper) as encrypted', async () => {
    const error = await expectCode(
      convertDocx,
      file(buildEncryptedOle(), 'docx'),
      EXIT_CODES.ENCRYPTED,
    );
    expect(error.message).toMatch(/password/);
  });

  it('calls an OLE file without encryption a legacy format', async () => {
    const ole = buildEncryptedOle();
    ole.fill(0, 512); // wipe the directory names
    const error = await expectCode(convertDocx, file(ole, 'docx'), EXIT_CODES.CORRUPT);
    expect(error.message).toMatch(/legacy/);
  });
});

describe('ODT', () => {
  it('keeps headings, list items, tables and footnotes', async () => {
    const { markdown, pages } = await convertOdt(file(buildOdt(), 'odt'), options);
    expect(markdown).toMatch(/^# Project Plan$/m);
    expect(markdown).toMatch(/^## Tasks$/m);
    expect(markdown).toMatch(/^-\s+Write spec\n-\s+Review code$/m);
    expect(markdown).toContain('| Owner | Task |\n| --- | --- |\n| Ann | Spec |');
    expect(markdown).toContain('The plan[^1] is final.');
    expect(markdown).toMatch(/^\[\^1\]: Approved on 3 May\.$/m);
    expect(pages).toBeNull();
  });

  it('refuses an encrypted package', async () => {
    const path = file(buildOdt({ encrypted: true }), 'odt');
    await expectCode(convertOdt, path, EXIT_CODES.ENCRYPTED);
  });
});

describe('PPTX', () => {
  it('writes a page-marked section per slide with title, body and notes', async () => {
    const { markdown, pages } = await convertPptx(file(buildPptx(), 'pptx'), options);
    expect(pages).toBe(2);
    const [first = '', second = ''] = markdown.split(/(?=<!-- page: \d+ -->)/);
    expect(first).toMatch(/^<!-- page: 1 -->\n\n## Roadmap 2025\n/);
    expect(first).toMatch(/^-\s+Launch in Q2$/m);
    expect(first).toMatch(/^-\s+Hire two engineers$/m);
    expect(first).toMatch(/Notes:\n\nMention the budget\./);
    expect(second).toMatch(/^<!-- page: 2 -->\n\n## Slide 2\n\nThank you & goodbye\n$/);
  });

  it('derives the chunk page from the slide markers', async () => {
    const { markdown } = await convertPptx(file(buildPptx(), 'pptx'), options);
    const chunks = chunkMarkdown(markdown, { maxChars: 500, overlapChars: 0 });
    expect(chunks.find((c) => c.content.includes('Mention the budget'))?.page).toBe(1);
    expect(chunks.find((c) => c.content.includes('goodbye'))?.page).toBe(2);
  });

  it('refuses more slides than maxPages', async () => {
    const limits = { ...DEFAULT_LIMITS, maxPages: 1 };
    const promise = convertPptx(file(buildPptx(), 'pptx'), { ...options, limits });
    await expect(promise).rejects.toMatchObject({ exitCode: EXIT_CODES.TOO_LARGE });
  });
});

describe('XLSX', () => {
  it('writes a section per sheet with formatted values', async () => {
    const { markdown } = await convertXlsx(file(await buildXlsx(3), 'xlsx'), options);
    expect(markdown).toMatch(/^## Summary$/m);
    expect(markdown).toContain('| Item | Amount | Due | Paid | Share |');
    expect(markdown).toContain('| Licence | 1200.5 | 2024-03-15 | TRUE | 25% |');
    expect(markdown).toContain('| Support | 2401 |  | FALSE | 75% |'); // formula → cached value
    expect(markdown).toMatch(/^## Big Data$/m);
  });

  it('splits a large sheet by rows, repeating the header', async () => {
    const { markdown } = await convertXlsx(file(await buildXlsx(1200), 'xlsx'), options);
    const big = markdown.slice(markdown.indexOf('## Big Data'));
    expect(big.match(/^### Rows .*$/gm)).toEqual([
      '### Rows 1–500',
      '### Rows 501–1000',
      '### Rows 1001–1200',
    ]);
    expect(big.match(/^\| Id \| Name \|$/gm)).toHaveLength(3);
    expect(big).toContain('| 1200 | name 1200 |');
    const chunks = chunkMarkdown(markdown, { maxChars: 2000, overlapChars: 0 });
    const last = chunks.find((c) => c.content.includes('| 1200 | name 1200 |'));
    expect(last?.sectionPath).toContain('Big Data');
  });

  it('refuses more cells than maxCells', async () => {
    const limits = { ...DEFAULT_LIMITS, maxCells: 1000 };
    const promise = convertXlsx(file(await buildXlsx(1200), 'xlsx'), { ...options, limits });
    await expect(promise).rejects.toMatchObject({ exitCode: EXIT_CODES.TOO_LARGE });
  });

  it('reports a workbook without cells as nothing to extract', async () => {
    const book = new ExcelJS.Workbook();
    book.addWorksheet('Blank');
    const path = file(Buffer.from(await book.xlsx.writeBuffer()), 'xlsx');
    await expectCode(convertXlsx, path, EXIT_CODES.NOTHING_EXTRACTABLE);
  });
});

describe('ODS', () => {
  it('writes a section per sheet, skipping empty sheets and repeated empty rows', async () => {
    const { markdown, pages } = await convertOds(file(buildOds(), 'ods'), options);
    expect(pages).toBeNull();
    expect(markdown).toBe(
      '## Cities\n\n| City | Population |\n| --- | --- |\n| Oslo | 709000 |\n\n' +
        '## Notes\n\n| Note |\n| --- |\n| a & b |\n',
    );
  });
});
