/**
 * Converter commands: what `GET …/knowledge/commands` lists and what indexing runs. Built in: the
 * bundled `aps-convert` (`auto`, `text`, `ocr`). More come from KNOWLEDGE_COMMANDS_FILE as argv
 * templates with `{input}` / `{outputDir}` placeholders — run without a shell, so no quoting rules
 * apply.
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, type Config } from '../../../config.js';
import { convertibleFormats } from '../../../converter/formats/detect.js';

/** A command indexing can run: an id to pick it by, and how to start it. */
export interface ConverterCommand {
  id: string;
  description: string;
  /** argv template; `{input}` and `{outputDir}` are replaced inside each element. */
  argv: string[];
  /**
   * True for commands that speak the aps-convert contract (exit codes, `document.md`,
   * `meta.json`): the built-ins, also when KNOWLEDGE_CONVERTER_PATH swaps the binary. Other
   * tools' exit codes mean something else, so the runner only maps codes when this is set.
   */
  builtin?: boolean;
}

interface ConverterStatus {
  installed: boolean;
  path: string | null;
}

const PLACEHOLDERS = ['{input}', '{outputDir}'] as const;
const ID_PATTERN = /^[a-z0-9._-]+$/;
const MAX_ID_LENGTH = 64;

/**
 * The bundled CLI, `dist/converter/cli.js`: compiled, this module is
 * `dist/knowledge/indexing/converting/`, three levels below `dist/`. Under vitest it runs from
 * `src/knowledge/indexing/converting/`, where there is no `cli.js`, so the compiled one in `dist/`
 * is used (`npm test` builds it first).
 */
export function bundledConverterPath(): string {
  const here = fileURLToPath(import.meta.url);
  const dir = dirname(here);
  if (here.endsWith('.ts')) return resolve(dir, '../../../..', 'dist', 'converter', 'cli.js');
  return resolve(dir, '../../..', 'converter', 'cli.js');
}

/** The configured converter, else the bundled one (absolute either way). */
function converterBinary(config: Config['knowledge']): string {
  return resolve(config.converterPath ?? bundledConverterPath());
}

/** JavaScript is run with this Node binary: a `.js` file need not be executable or on PATH. */
function isScript(path: string): boolean {
  return /\.(?:c|m)?js$/i.test(path);
}

/** The argv prefix that starts the converter binary. */
function converterInvocation(config: Config['knowledge']): string[] {
  const binary = converterBinary(config);
  return isScript(binary) ? [process.execPath, binary] : [binary];
}

function builtinCommands(config: Config['knowledge']): ConverterCommand[] {
  const run = (command: string) => [
    ...converterInvocation(config),
    '{input}',
    '--output-dir',
    '{outputDir}',
    '--command',
    command,
  ];
  // Each description tells a user when to pick the command: it is all the listing shows.
  return [
    {
      id: 'auto',
      description:
        `Default: detects the format and converts it: ${convertibleFormats().join(', ')}. ` +
        'PDF pages with a text layer are read directly; scanned pages and images are OCR’d. ' +
        'Right for almost every document.',
      argv: run('auto'),
      builtin: true,
    },
    {
      id: 'text',
      description:
        'Text layer only, never OCR: much faster on large PDFs, but scanned pages come out ' +
        'empty and images cannot be converted. Pick it for digital PDFs when speed matters.',
      argv: run('text'),
      builtin: true,
    },
    {
      id: 'ocr',
      description:
        'OCR every PDF page, ignoring its text layer: slow (seconds per page). Pick it when a ' +
        'PDF’s text layer is garbled or incomplete, e.g. a scan with a poor embedded OCR layer.',
      argv: run('ocr'),
      builtin: true,
    },
  ];
}

function describe(value: unknown): string {
  return value === undefined ? 'nothing' : JSON.stringify(value);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/**
 * Validates the contents of a commands file; `taken` holds ids already in use (the built-ins).
 * Every problem is collected, so one start-up attempt shows them all.
 */
export function parseCommandsFile(
  data: unknown,
  taken: ReadonlySet<string> = new Set(),
): { commands: ConverterCommand[]; problems: string[] } {
  const problems: string[] = [];
  const list = (data as { commands?: unknown } | null)?.commands;
  if (typeof data !== 'object' || data === null || Array.isArray(data) || !Array.isArray(list)) {
    return { commands: [], problems: ['must be an object with a "commands" array'] };
  }
  const ids = new Set(taken);
  const commands: ConverterCommand[] = [];
  list.forEach((entry: unknown, i) => {
    const at = `commands[${i}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      problems.push(`${at} must be an object`);
      return;
    }
    const { id, description, argv, ...rest } = entry as Record<string, unknown>;
    const before = problems.length;
    for (const key of Object.keys(rest)) problems.push(`${at} has an unknown key "${key}"`);
    if (typeof id !== 'string' || !ID_PATTERN.test(id) || id.length > MAX_ID_LENGTH) {
      problems.push(
        `${at}.id must match [a-z0-9._-]+ (at most 64 characters), got ${describe(id)}`,
      );
    } else if (ids.has(id)) {
      problems.push(`${at}.id "${id}" is already used${taken.has(id) ? ' by a built-in' : ''}`);
    }
    if (typeof description !== 'string' || description.trim() === '') {
      problems.push(`${at}.description must be a non-empty string`);
    }
    if (!isStringArray(argv) || argv.length === 0) {
      problems.push(`${at}.argv must be a non-empty array of strings`);
    } else {
      const args = argv;
      if (args[0]?.trim() === '') problems.push(`${at}.argv[0] (the program) must not be empty`);
      if (!args.some((a) => a.includes('{input}'))) {
        problems.push(`${at}.argv must contain the {input} placeholder`);
      }
      for (const a of args) {
        // A misspelt placeholder ({output}, {file}) would be passed literally and fail obscurely.
        for (const m of a.matchAll(/\{[A-Za-z_]+\}/g)) {
          if (!(PLACEHOLDERS as readonly string[]).includes(m[0])) {
            problems.push(
              `${at}.argv has an unknown placeholder ${m[0]} (known: {input}, {outputDir})`,
            );
          }
        }
      }
    }
    if (problems.length === before) {
      ids.add(id as string);
      commands.push({
        id: id as string,
        description: (description as string).trim(),
        argv: argv as string[],
      });
    }
  });
  return { commands, problems };
}

/**
 * The built-in commands (`auto` first: the default) plus those of KNOWLEDGE_COMMANDS_FILE. An
 * unreadable or invalid file throws a ConfigError naming every problem, so the server refuses to
 * start rather than failing later on the first indexing job.
 */
export function loadCommands(config: Config['knowledge']): ConverterCommand[] {
  const builtins = builtinCommands(config);
  if (config.commandsFile === null) return builtins;
  const file = config.commandsFile;
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError([`KNOWLEDGE_COMMANDS_FILE ${file} cannot be read as JSON: ${reason}`]);
  }
  const { commands, problems } = parseCommandsFile(data, new Set(builtins.map((c) => c.id)));
  if (problems.length > 0) {
    throw new ConfigError(problems.map((p) => `KNOWLEDGE_COMMANDS_FILE ${file}: ${p}`));
  }
  return [...builtins, ...commands];
}

/**
 * Whether the converter binary is there and can run: a `.js` file must be readable (Node runs it),
 * anything else executable. `path` is absolute, or null when nothing exists at that path.
 */
export function converterStatus(config: Config['knowledge']): ConverterStatus {
  const path = converterBinary(config);
  try {
    if (!statSync(path).isFile()) return { installed: false, path };
  } catch {
    return { installed: false, path: null };
  }
  try {
    accessSync(path, isScript(path) ? constants.R_OK : constants.X_OK);
    return { installed: true, path };
  } catch {
    return { installed: false, path };
  }
}
