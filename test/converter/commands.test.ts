/** Converter commands: built-ins, the JSON commands file, and the converter's status. */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.js';
import {
  bundledConverterPath,
  converterStatus,
  loadCommands,
  parseCommandsFile,
} from '../../src/knowledge/indexing/converting/commands.js';
import { knowledgeConfig, ROOT, tempDir } from './helpers.js';

function commandsFile(content: unknown): string {
  const path = join(tempDir(), 'commands.json');
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

const pandoc = {
  id: 'pandoc',
  description: 'Convert with pandoc',
  argv: ['pandoc', '{input}', '-t', 'gfm', '-o', '{outputDir}/document.md'],
};

describe('loadCommands', () => {
  it('has the built-ins, running the bundled CLI with Node', () => {
    const commands = loadCommands(knowledgeConfig());
    expect(commands.map((c) => c.id)).toEqual(['auto', 'text', 'ocr']);
    expect(commands[0]).toEqual({
      id: 'auto',
      description: expect.any(String),
      argv: [
        process.execPath,
        join(ROOT, 'dist', 'converter', 'cli.js'),
        '{input}',
        '--output-dir',
        '{outputDir}',
        '--command',
        'auto',
      ],
      builtin: true,
    });
    expect(commands[1]?.argv.at(-1)).toBe('text');
  });

  it('resolves the bundled CLI to dist/ when running from src/', () => {
    expect(bundledConverterPath()).toBe(join(ROOT, 'dist', 'converter', 'cli.js'));
  });

  it('runs KNOWLEDGE_CONVERTER_PATH instead: directly, or with Node for a .js/.mjs file', () => {
    const [binary] = loadCommands(knowledgeConfig({ converterPath: '/opt/conv/aps-convert' }));
    expect(binary?.argv.slice(0, 2)).toEqual(['/opt/conv/aps-convert', '{input}']);
    const [script] = loadCommands(knowledgeConfig({ converterPath: '/opt/conv/convert.mjs' }));
    expect(script?.argv.slice(0, 3)).toEqual([
      process.execPath,
      '/opt/conv/convert.mjs',
      '{input}',
    ]);
  });

  it('appends valid commands from KNOWLEDGE_COMMANDS_FILE', () => {
    const file = commandsFile({ commands: [pandoc] });
    const commands = loadCommands(knowledgeConfig({ commandsFile: file }));
    expect(commands.map((c) => c.id)).toEqual(['auto', 'text', 'ocr', 'pandoc']);
    expect(commands[3]).toEqual(pandoc);
  });

  it('refuses an unreadable or malformed file with a clear error', () => {
    expect(
      problems(() => loadCommands(knowledgeConfig({ commandsFile: '/nope/commands.json' }))),
    ).toEqual([
      expect.stringMatching(
        /^KNOWLEDGE_COMMANDS_FILE \/nope\/commands\.json cannot be read as JSON: ENOENT/,
      ),
    ]);
    const bad = commandsFile('{"commands": [');
    expect(problems(() => loadCommands(knowledgeConfig({ commandsFile: bad })))).toEqual([
      expect.stringContaining('cannot be read as JSON'),
    ]);
    const notList = commandsFile({ commands: {} });
    expect(problems(() => loadCommands(knowledgeConfig({ commandsFile: notList })))).toEqual([
      `KNOWLEDGE_COMMANDS_FILE ${notList}: must be an object with a "commands" array`,
    ]);
  });
});

describe('parseCommandsFile', () => {
  const check = (entries: unknown[]) =>
    parseCommandsFile({ commands: entries }, new Set(['auto', 'text'])).problems;

  it('lists every problem of every entry', () => {
    expect(
      check([
        'pandoc',
        { ...pandoc, id: 'Pandoc' },
        { ...pandoc, id: 'auto' },
        pandoc,
        { ...pandoc, id: 'p2' },
        { ...pandoc, id: 'p2', description: 'same id' },
        { ...pandoc, id: 'p3', description: ' ' },
        { ...pandoc, id: 'p4', argv: [] },
        { ...pandoc, id: 'p5', argv: ['', '{input}'] },
        { ...pandoc, id: 'p6', argv: ['pandoc', 'x.docx'] },
        { ...pandoc, id: 'p7', argv: ['pandoc', '{input}', '-o', '{output}/x.md'] },
        { ...pandoc, id: 'p8', argv: ['pandoc', '{input}', 3] },
        { ...pandoc, id: 'p9', shell: true },
      ]),
    ).toEqual([
      'commands[0] must be an object',
      'commands[1].id must match [a-z0-9._-]+ (at most 64 characters), got "Pandoc"',
      'commands[2].id "auto" is already used by a built-in',
      'commands[5].id "p2" is already used',
      'commands[6].description must be a non-empty string',
      'commands[7].argv must be a non-empty array of strings',
      'commands[8].argv[0] (the program) must not be empty',
      'commands[9].argv must contain the {input} placeholder',
      'commands[10].argv has an unknown placeholder {output} (known: {input}, {outputDir})',
      'commands[11].argv must be a non-empty array of strings',
      'commands[12] has an unknown key "shell"',
    ]);
  });

  it('accepts placeholders embedded in arguments and JSON-looking arguments', () => {
    const result = parseCommandsFile({
      commands: [
        {
          id: 'docling',
          description: 'Docling',
          argv: ['docling', '--to', 'md', '--output', '{outputDir}', '--opts={"a":1}', '{input}'],
        },
      ],
    });
    expect(result.problems).toEqual([]);
    expect(result.commands.map((c) => c.id)).toEqual(['docling']);
  });
});

describe('converterStatus', () => {
  it('reports a readable .js converter as installed, with its absolute path', () => {
    const path = join(tempDir(), 'convert.js');
    writeFileSync(path, '');
    expect(converterStatus(knowledgeConfig({ converterPath: path }))).toEqual({
      installed: true,
      path,
    });
  });

  it('needs a binary to be executable', () => {
    const path = join(tempDir(), 'aps-convert');
    writeFileSync(path, '#!/bin/sh\n');
    chmodSync(path, 0o644);
    expect(converterStatus(knowledgeConfig({ converterPath: path }))).toEqual({
      installed: false,
      path,
    });
    chmodSync(path, 0o755);
    expect(converterStatus(knowledgeConfig({ converterPath: path }))).toEqual({
      installed: true,
      path,
    });
  });

  it('reports a missing converter with a null path', () => {
    const path = join(tempDir(), 'missing');
    expect(converterStatus(knowledgeConfig({ converterPath: path }))).toEqual({
      installed: false,
      path: null,
    });
  });
});
