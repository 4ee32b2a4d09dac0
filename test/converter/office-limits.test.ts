/**
 * Hostile office files: decompression bombs, lying headers, too many entries. Each must be refused
 * with TOO_LARGE quickly and without the process growing by the bomb's size.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/converter/contract.js';
import {
  DEFAULT_LIMITS,
  type BinaryConverter,
  type ConvertLimits,
} from '../../src/converter/formats/binary-types.js';
import { ConvertError } from '../../src/converter/formats/convert-error.js';
import { convertDocx, convertOds, convertXlsx } from '../../src/converter/formats/office.js';
import { docxParts } from './fixtures/office-docs.js';
import { zeroBomb, zip, type ZipPart } from './fixtures/office-zip.js';

const dir = mkdtempSync(join(tmpdir(), 'aps-office-limits-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

let counter = 0;
function file(bytes: Buffer, ext: string): string {
  const path = join(dir, `f${++counter}.${ext}`);
  writeFileSync(path, bytes);
  return path;
}

const MiB = 1024 * 1024;

/** Runs the conversion, sampling RSS meanwhile; returns the error, peak growth and time. */
async function refused(
  convert: BinaryConverter,
  path: string,
  limits: ConvertLimits = DEFAULT_LIMITS,
) {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 2);
  const started = performance.now();
  try {
    const error: unknown = await convert(path, { command: 'auto', lang: 'eng', limits }).then(
      () => null,
      (e: unknown) => e,
    );
    peak = Math.max(peak, process.memoryUsage().rss);
    expect(error).toBeInstanceOf(ConvertError);
    return {
      error: error as ConvertError,
      growthMiB: (peak - before) / MiB,
      ms: performance.now() - started,
    };
  } finally {
    clearInterval(sampler);
  }
}

/** The DOCX fixture with one part replaced. */
function docxWith(part: ZipPart | ReturnType<typeof zeroBomb>): Buffer {
  return zip([...docxParts().filter((p) => p.name !== part.name), part]);
}

describe('office zip limits', () => {
  it('refuses a 300 MiB zero bomb fast and with bounded memory', async () => {
    const bomb = docxWith(zeroBomb('word/document.xml', 300));
    expect(bomb.length).toBeLessThan(2 * MiB);
    const { error, growthMiB, ms } = await refused(convertDocx, file(bomb, 'docx'));
    expect(error.exitCode).toBe(EXIT_CODES.TOO_LARGE);
    expect(error.message).toMatch(/decompression bomb/);
    expect(growthMiB).toBeLessThan(200);
    expect(ms).toBeLessThan(2000);
  });

  it('stops inflating once an entry passes its declared size', async () => {
    // The header claims 1 KiB, so no check before inflating can object; the data is 64 MiB.
    const lie = { ...zeroBomb('word/document.xml', 64), size: 1024 };
    const { error, growthMiB } = await refused(convertDocx, file(docxWith(lie), 'docx'));
    expect(error.exitCode).toBe(EXIT_CODES.TOO_LARGE);
    expect(error.message).toMatch(/declared size/);
    expect(growthMiB).toBeLessThan(200);
  });

  it('stops a streamed sheet that is a bomb', async () => {
    const parts: (ZipPart | ReturnType<typeof zeroBomb>)[] = [
      {
        name: 'xl/workbook.xml',
        data: '<workbook xmlns:r="r"><sheets><sheet name="S" r:id="rId1"/></sheets></workbook>',
      },
      {
        name: 'xl/_rels/workbook.xml.rels',
        data: '<Relationships><Relationship Id="rId1" Type="x/worksheet" Target="worksheets/sheet1.xml"/></Relationships>',
      },
      // A modest declared size passes every check made before inflating; the stream must stop it.
      { ...zeroBomb('xl/worksheets/sheet1.xml', 200), size: 4 * MiB },
    ];
    const { error, growthMiB } = await refused(convertXlsx, file(zip(parts), 'xlsx'));
    expect(error.exitCode).toBe(EXIT_CODES.TOO_LARGE);
    expect(error.message).toMatch(/sheet1\.xml inflates beyond its declared size/);
    expect(growthMiB).toBeLessThan(200);
  });

  it('refuses an archive with more entries than maxZipEntries before reading any', async () => {
    const tiny: ZipPart[] = Array.from({ length: 20_000 }, (_, i) => ({
      name: `f/${i}.txt`,
      data: 'x',
      store: true,
    }));
    const { error, ms } = await refused(convertOds, file(zip(tiny), 'ods'));
    expect(error.exitCode).toBe(EXIT_CODES.TOO_LARGE);
    expect(error.message).toMatch(/20000 entries/);
    expect(ms).toBeLessThan(2000);
  });

  it('refuses content beyond maxUncompressedBytes', async () => {
    // Random text barely compresses, so only the total budget can stop it.
    const text = randomBytes(300 * 1024).toString('base64');
    const doc = `<w:document xmlns:w="w"><w:body><w:p><w:r><w:t>${text}</w:t></w:r></w:p></w:body></w:document>`;
    const limits = { ...DEFAULT_LIMITS, maxUncompressedBytes: 256 * 1024 };
    const path = file(docxWith({ name: 'word/document.xml', data: doc }), 'docx');
    const { error } = await refused(convertDocx, path, limits);
    expect(error.exitCode).toBe(EXIT_CODES.TOO_LARGE);
    expect(error.message).toMatch(/uncompressed/);
  });

  it('converts the same document under the default limits', async () => {
    const result = await convertDocx(file(zip(docxParts()), 'docx'), {
      command: 'auto',
      lang: 'eng',
      limits: DEFAULT_LIMITS,
    });
    expect(result.markdown).toContain('Quarterly Report');
  });
});
