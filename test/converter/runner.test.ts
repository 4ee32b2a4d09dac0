/** The runner with real child processes: output files, meta, error mapping, argv handling. */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadCommands } from '../../src/knowledge/indexing/converting/commands.js';
import { runConverter, substituteArgv } from '../../src/knowledge/indexing/converting/runner.js';
import {
  fakeConverter,
  knowledgeConfig,
  rejection,
  runnerSetup as setup,
  WRITE_MD,
} from './helpers.js';

const opts = { timeoutMs: 10_000, maxOutputBytes: 64 * 1024 * 1024 };

const failure = rejection;

describe('runConverter', () => {
  it('returns the markdown, the parsed meta and the stderr tail', async () => {
    const { dir, input, out } = setup();
    const command = fakeConverter(
      dir,
      'ok.mjs',
      `${WRITE_MD}
      writeFileSync(out + '/document.md', '\\uFEFF# Converted\\n');
      writeFileSync(out + '/meta.json', JSON.stringify({ converter: 'fake', format: 'text', pages: 'x', warnings: ['w', 3], timings: { a: 1, b: 'no' } }));
      console.error('fake: warning: something odd');`,
    );
    const result = await runConverter(command, input, out, opts);
    expect(result.markdown).toBe('# Converted\n');
    expect(result.meta).toEqual({
      converter: 'fake',
      converterVersion: '',
      command: '',
      format: 'text',
      pages: null,
      ocrPages: [],
      ocrMeanConfidence: null,
      warnings: ['w'],
      timings: { a: 1 },
    });
    expect(result.stderr).toBe('fake: warning: something odd\n');
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('ignores a broken meta.json and removes stale output before running', async () => {
    const { dir, input, out } = setup();
    const command = fakeConverter(
      dir,
      'meta.mjs',
      `${WRITE_MD}
      writeFileSync(out + '/document.md', 'text');
      writeFileSync(out + '/meta.json', '{ not json');`,
    );
    expect((await runConverter(command, input, out, opts)).meta).toBeNull();
    const silent = fakeConverter(dir, 'silent.mjs', 'process.exit(0);', { builtin: true });
    const error = await failure(runConverter(silent, input, out, opts));
    expect(error.code).toBe('KNOWLEDGE_CONVERTER_NO_MARKDOWN');
    expect(error.message).toBe('The converter finished but wrote no markdown.');
  });

  it('refuses markdown above maxOutputBytes, and empty markdown', async () => {
    const { dir, input, out } = setup();
    const big = fakeConverter(
      dir,
      'big.mjs',
      `${WRITE_MD}\nwriteFileSync(out + '/document.md', 'a'.repeat(2 * 1024 * 1024));`,
    );
    const error = await failure(
      runConverter(big, input, out, { ...opts, maxOutputBytes: 1024 * 1024 }),
    );
    expect(error.code).toBe('KNOWLEDGE_CONVERTER_FAILED');
    expect(error.message).toBe(
      'The converter output is too large (2.0 MiB; the limit is 1.0 MiB).',
    );
    const blank = fakeConverter(
      dir,
      'blank.mjs',
      `${WRITE_MD}\nwriteFileSync(out + '/document.md', ' \\n\\t\\n');`,
    );
    expect((await failure(runConverter(blank, input, out, opts))).code).toBe(
      'KNOWLEDGE_CONVERTER_NO_MARKDOWN',
    );
  });

  it('reports a missing or non-executable binary', async () => {
    const { dir, input, out } = setup();
    const missing = { id: 'x', description: 'x', argv: [join(dir, 'no-such-binary'), '{input}'] };
    const error = await failure(runConverter(missing, input, out, opts));
    expect(error.code).toBe('KNOWLEDGE_CONVERTER_BINARY_MISSING');
    expect(error.message).toBe(
      `The converter program ${join(dir, 'no-such-binary')} was not found.`,
    );
    const plain = join(dir, 'not-executable');
    writeFileSync(plain, '#!/bin/sh\necho hi\n', { mode: 0o644 });
    const denied = await failure(
      runConverter({ ...missing, argv: [plain, '{input}'] }, input, out, opts),
    );
    expect(denied.code).toBe('KNOWLEDGE_CONVERTER_BINARY_MISSING');
    expect(denied.message).toContain('cannot be started (EACCES)');
    // A configured .js converter runs with Node, which starts fine even if the script is missing.
    const [auto] = loadCommands(knowledgeConfig({ converterPath: join(dir, 'gone.js') }));
    const gone = await failure(runConverter(auto!, input, out, opts));
    expect(gone.code).toBe('KNOWLEDGE_CONVERTER_BINARY_MISSING');
    expect(gone.message).toBe(`The converter program ${join(dir, 'gone.js')} was not found.`);
  });

  it('maps aps-convert exit codes to error codes with the last stderr line', async () => {
    const { dir, input, out } = setup();
    const cases: [number, string, string, string][] = [
      [
        3,
        'unsupported file format: image/png (PNG image)',
        'KNOWLEDGE_UNSUPPORTED_FORMAT',
        'The converter does not support this file format: image/png (PNG image).',
      ],
      [
        4,
        'encrypted: the PDF needs a password',
        'KNOWLEDGE_DOCUMENT_UNREADABLE',
        'The file is encrypted or password-protected: the PDF needs a password.',
      ],
      [
        5,
        'corrupt file: broken xref table',
        'KNOWLEDGE_DOCUMENT_UNREADABLE',
        'The file is corrupt: broken xref table.',
      ],
      [
        6,
        'nothing to extract: the text file contains no text',
        'KNOWLEDGE_CONVERTER_NO_MARKDOWN',
        'The converter found no text to extract from this file: the text file contains no text.',
      ],
      [
        7,
        'file too large: the file is 300.0 MiB',
        'KNOWLEDGE_CONVERTER_FAILED',
        'The file is too large for the converter: the file is 300.0 MiB.',
      ],
      [
        2,
        'usage: unknown option',
        'KNOWLEDGE_CONVERTER_FAILED',
        'The converter was started with invalid arguments: unknown option.',
      ],
      [1, 'error: EIO', 'KNOWLEDGE_CONVERTER_FAILED', 'The converter failed (exit code 1): EIO.'],
    ];
    for (const [code, line, appCode, message] of cases) {
      const command = fakeConverter(
        dir,
        `exit${code}.mjs`,
        `console.error('aps-convert: warning: odd');
        console.error(${JSON.stringify(`aps-convert: ${line}`)}); process.exit(${code});`,
        { builtin: true },
      );
      const error = await failure(runConverter(command, input, out, opts));
      expect({ code: error.code, message: error.message }).toEqual({ code: appCode, message });
    }
  });

  it('does not interpret the exit codes of other tools', async () => {
    const { dir, input, out } = setup();
    const command = fakeConverter(
      dir,
      'tool.mjs',
      `console.error('pandoc: Unknown reader: foo'); process.exit(3);`,
    );
    const error = await failure(runConverter(command, input, out, opts));
    expect(error.code).toBe('KNOWLEDGE_CONVERTER_FAILED');
    expect(error.message).toBe(
      'The converter command "fake" failed (exit code 3): pandoc: Unknown reader: foo.',
    );
  });

  it('takes the largest .md file an external tool wrote', async () => {
    const { dir, input, out } = setup();
    const command = fakeConverter(
      dir,
      'ext.mjs',
      `${WRITE_MD}
      writeFileSync(out + '/small.md', 'small');
      writeFileSync(out + '/report.md', 'the whole report');`,
    );
    expect((await runConverter(command, input, out, opts)).markdown).toBe('the whole report');
  });

  it('passes file names verbatim, never through a shell', async () => {
    const { dir, input, out } = setup(
      'a;rm -rf x $(touch pwned) `touch pwned2` {outputDir} $&.txt',
    );
    const command = fakeConverter(
      dir,
      'argv.mjs',
      `${WRITE_MD}\nwriteFileSync(out + '/document.md', JSON.stringify({ argv: process.argv.slice(2), cwd: process.cwd(), env: Object.keys(process.env) }));`,
    );
    command.argv.push('--out={outputDir}/document.md');
    process.env.APS_TEST_JWT_SECRET = 'hidden';
    try {
      const result = JSON.parse((await runConverter(command, input, out, opts)).markdown) as {
        argv: string[];
        cwd: string;
        env: string[];
      };
      expect(result.argv).toEqual([input, out, `--out=${out}/document.md`]);
      expect(result.cwd).toBe(out);
      expect(result.env).not.toContain('APS_TEST_JWT_SECRET');
    } finally {
      delete process.env.APS_TEST_JWT_SECRET;
    }
    for (const where of [dir, out, process.cwd()]) {
      expect(readdirSync(where).filter((f) => f.startsWith('pwned'))).toEqual([]);
    }
    expect(existsSync(input)).toBe(true);
  });
});

describe('substituteArgv', () => {
  it('replaces placeholders inside arguments in one pass', () => {
    expect(
      substituteArgv(['{input}', '{outputDir}/x.md', '-i={input}', '{other}'], {
        input: '/in/{outputDir}$&.txt',
        outputDir: '/out',
      }),
    ).toEqual(['/in/{outputDir}$&.txt', '/out/x.md', '-i=/in/{outputDir}$&.txt', '{other}']);
  });
});
