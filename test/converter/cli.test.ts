/** `aps-convert` end to end, as a real process (dist/converter/cli.js), alone and via the runner. */
import { execFile } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadCommands } from '../../src/knowledge/indexing/converting/commands.js';
import { EXIT_CODES } from '../../src/converter/contract.js';
import { runConverter } from '../../src/knowledge/indexing/converting/runner.js';
import { AppError } from '../../src/errors.js';
import { convert } from './fixtures/documents.js';
import { CLI, ensureConverterBuilt, knowledgeConfig, SAMPLES, tempDir } from './helpers.js';

beforeAll(() => {
  ensureConverterBuilt();
}, 180_000);

describe('aps-convert', () => {
  it('converts text: CRLF and BOM normalised, meta.json complete, no temp files left', async () => {
    const run = await convert('notes.txt', '\uFEFFline one\r\nline two\r\n');
    expect(run).toMatchObject({ code: 0, stderr: '', markdown: 'line one\nline two\n' });
    expect(run.meta).toEqual({
      converter: 'aps-convert',
      converterVersion: expect.any(String),
      command: 'auto',
      format: 'text',
      pages: null,
      ocrPages: [],
      ocrMeanConfidence: null,
      warnings: [],
      timings: {
        detect: expect.any(Number),
        read: expect.any(Number),
        convert: expect.any(Number),
        write: expect.any(Number),
        total: expect.any(Number),
      },
    });
    expect(readdirSync(run.out).sort()).toEqual(['document.md', 'meta.json']);
  });

  it('converts HTML, CSV, TSV and JSON', async () => {
    const html = await convert(
      'page.html',
      '<h1>T</h1><table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>',
    );
    expect(html.markdown).toBe('# T\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n');
    expect((await convert('data.csv', 'a,b\n"1,5",x|y\n')).markdown).toBe(
      '| a | b |\n| --- | --- |\n| 1,5 | x\\|y |\n',
    );
    expect((await convert('data.tsv', 'a\tb\n1\t2\n')).meta?.format).toBe('tsv');
    const json = await convert('rows.json', '[{"id":1},{"id":2}]', ['--command', 'text']);
    expect(json.markdown).toBe('| id |\n| --- |\n| 1 |\n| 2 |\n');
    expect(json.meta).toMatchObject({ command: 'text', format: 'json' });
    expect((await convert('readme.md', '# Hi\r\n')).markdown).toBe('# Hi\n');
  });

  it('converts an HTML page named .txt as HTML', async () => {
    const run = await convert(
      'saved.txt',
      '<!DOCTYPE html><html><body><h2>Saved</h2><script>x()</script></body></html>',
    );
    expect(run).toMatchObject({ code: 0, markdown: '## Saved\n' });
    expect(run.meta?.format).toBe('html');
  });

  it('refuses binary formats, whatever their name, naming the format', async () => {
    const zip = await convert('archive.txt', SAMPLES.zip);
    expect(zip.code).toBe(EXIT_CODES.UNSUPPORTED_FORMAT);
    expect(zip.stderr).toBe(
      'aps-convert: unsupported file format: application/zip (ZIP archive)\n',
    );
    expect(zip.markdown).toBeNull();
    expect((await convert('a.csv', SAMPLES.zip)).stderr).toContain('application/zip (ZIP archive)');
    // A PNG named .txt is still a PNG: the image converter gets it (this sample has no pixels).
    expect((await convert('photo.txt', SAMPLES.png)).code).toBe(EXIT_CODES.CORRUPT);
    const garbage = await convert(
      'x.txt',
      new Uint8Array(512).map((_, i) => (i * 131 + 7) % 256),
    );
    expect(garbage).toMatchObject({ code: EXIT_CODES.UNSUPPORTED_FORMAT });
    expect(garbage.stderr).toContain('binary data, not text');
  });

  it('warns about invalid UTF-8 but converts', async () => {
    const run = await convert('latin1.txt', new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    expect(run).toMatchObject({ code: 0, markdown: 'caf\uFFFD\n' });
    expect(run.stderr).toMatch(/^aps-convert: warning: the file is not valid UTF-8: 1 invalid/);
    expect(run.meta?.warnings).toHaveLength(1);
  });

  it('exits NOTHING_EXTRACTABLE for empty and blank files', async () => {
    for (const content of ['', '  \r\n\t\n', '{}']) {
      const run = await convert(content === '{}' ? 'e.json' : 'e.txt', content);
      expect(run.code, JSON.stringify(content)).toBe(EXIT_CODES.NOTHING_EXTRACTABLE);
      expect(run.stderr).toMatch(/^aps-convert: nothing to extract: /);
      expect(run.markdown).toBeNull();
    }
  });

  it('exits TOO_LARGE above APS_CONVERT_MAX_INPUT_BYTES', async () => {
    const run = await convert('big.txt', 'x'.repeat(2048), [], {
      APS_CONVERT_MAX_INPUT_BYTES: '1024',
    });
    expect(run.code).toBe(EXIT_CODES.TOO_LARGE);
    expect(run.stderr).toMatch(/^aps-convert: file too large: /);
  });

  it('exits USAGE for bad arguments and missing input', async () => {
    const badCommand = await convert('a.txt', 'x', ['--command', 'bogus']);
    expect(badCommand.code).toBe(EXIT_CODES.USAGE);
    expect(badCommand.stderr).toMatch(/^aps-convert: usage: .*'bogus' is invalid/);
    const noOut = await new Promise<number | string | null | undefined>((resolve) => {
      execFile(process.execPath, [CLI, 'a.txt'], (error) => {
        resolve(error?.code);
      });
    });
    expect(noOut).toBe(EXIT_CODES.USAGE);
    const missing = await new Promise<{ code: number | string | null | undefined; stderr: string }>(
      (resolve) => {
        execFile(
          process.execPath,
          [CLI, '/no/such/file.txt', '-o', tempDir()],
          (error, _o, stderr) => {
            resolve({ code: error?.code, stderr });
          },
        );
      },
    );
    expect(missing).toEqual({
      code: EXIT_CODES.USAGE,
      stderr: 'aps-convert: usage: input /no/such/file.txt: no such file\n',
    });
  });

  it('handles shell metacharacters in file names', async () => {
    const run = await convert('-a;rm -rf x $(touch pwned).txt', 'safe');
    expect(run).toMatchObject({ code: 0, markdown: 'safe\n' });
  });
});

describe('runConverter with the bundled CLI', () => {
  const [auto] = loadCommands(knowledgeConfig());
  const opts = { timeoutMs: 30_000, maxOutputBytes: 1024 * 1024 };

  it('converts a file', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'source.csv'), 'name,qty\nTea,3\n');
    const result = await runConverter(auto!, join(dir, 'source.csv'), join(dir, 'out'), opts);
    expect(result.markdown).toBe('| name | qty |\n| --- | --- |\n| Tea | 3 |\n');
    expect(result.meta).toMatchObject({ converter: 'aps-convert', format: 'csv', command: 'auto' });
  });

  it('turns an unsupported file into KNOWLEDGE_UNSUPPORTED_FORMAT with a plain message', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'source.txt'), SAMPLES.zip);
    const error = await runConverter(auto!, join(dir, 'source.txt'), join(dir, 'out'), opts).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({
      code: 'KNOWLEDGE_UNSUPPORTED_FORMAT',
      message: 'The converter does not support this file format: application/zip (ZIP archive).',
    });
  });

  it('passes a hostile file name through untouched', async () => {
    const dir = tempDir();
    const name = 'a;rm -rf x $(touch pwned) `touch pwned2`.txt';
    writeFileSync(join(dir, name), 'still text');
    const result = await runConverter(auto!, join(dir, name), join(dir, 'out'), opts);
    expect(result.markdown).toBe('still text\n');
    expect(readdirSync(dir).filter((f) => f.startsWith('pwned'))).toEqual([]);
    expect(readdirSync(join(dir, 'out')).filter((f) => f.startsWith('pwned'))).toEqual([]);
  });
});
