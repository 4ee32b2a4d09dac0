#!/usr/bin/env node
/**
 * `aps-convert <file> --output-dir <dir> [--command auto|text|ocr] [--lang eng]`
 *
 * Converts one file to markdown: writes `<dir>/document.md` and `<dir>/meta.json` and exits with
 * one of EXIT_CODES (see contract.ts). The server runs it as a separate process, so a crash or a
 * hang here can never take the server down. stderr carries one line per problem:
 * `aps-convert: <label>: <message>` for the failure, `aps-convert: warning: <message>` otherwise.
 *
 * Environment (the converter is its own program, so it reads its own environment rather than the
 * server's config): APS_CONVERT_MAX_INPUT_BYTES (default 200 MiB) — larger inputs exit TOO_LARGE;
 * APS_CONVERT_MAX_PAGES (default 2000) — PDFs and TIFFs with more pages exit TOO_LARGE;
 * APS_CONVERT_MAX_PIXELS (default 40 million) — larger images exit TOO_LARGE, larger PDF pages
 * are rendered at a lower resolution.
 *
 * `aps-convert --worker`: the server's converter pool
 * (knowledge/indexing/converting/worker-pool.ts) starts it with an IPC channel and sends it job
 * after job; see worker.ts for the protocol.
 */
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Command, CommanderError, Option } from 'commander';
import {
  CONVERTER_NAME,
  CONVERTER_VERSION,
  EXIT_CODES,
  EXIT_LABELS,
  type ExitCode,
} from './contract.js';
import { COMMANDS, type CommandName } from './convert-file.js';
import { ConvertError } from './formats/convert-error.js';
import { convertToDir, exitCodeOf } from './job.js';
import { resolveLanguages } from './formats/ocr.js';

function report(label: string, message: string): void {
  process.stderr.write(`${CONVERTER_NAME}: ${label}: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
}

interface Parsed {
  file: string;
  outputDir: string;
  command: CommandName;
  lang: string;
}

/** Parses argv; usage errors come back as a ConvertError(USAGE), help/version as null. */
function parseArgs(argv: string[]): Parsed | null {
  const program = new Command(CONVERTER_NAME)
    .description('Convert a document to markdown (document.md + meta.json in the output dir).')
    .argument('<file>', 'the file to convert')
    .requiredOption('-o, --output-dir <dir>', 'where document.md and meta.json are written')
    .addOption(
      new Option('-c, --command <command>', 'conversion to run').choices(COMMANDS).default('auto'),
    )
    .option(
      '-l, --lang <languages>',
      'OCR languages, e.g. eng or eng+deu (each needs its @tesseract.js-data/<lang> package)',
      'eng',
    )
    .version(CONVERTER_VERSION)
    .exitOverride()
    .configureOutput({
      outputError: (text, write) => {
        write(
          `${CONVERTER_NAME}: ${EXIT_LABELS[EXIT_CODES.USAGE]}: ${text.replace(/^error: /, '')}`,
        );
      },
    });
  try {
    program.parse(argv, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return null;
      throw new ConvertError(EXIT_CODES.USAGE, error.message, { reported: true });
    }
    throw error;
  }
  const options = program.opts<{ outputDir: string; command: CommandName; lang: string }>();
  if (!/^[A-Za-z_]+(?:\+[A-Za-z_]+)*$/.test(options.lang)) {
    throw new ConvertError(EXIT_CODES.USAGE, `--lang must look like eng or eng+deu`);
  }
  // Checked up front, also when no page ends up OCR'd: a typo should not pass unnoticed.
  resolveLanguages(options.lang);
  const [file] = program.args;
  if (file === undefined) throw new ConvertError(EXIT_CODES.USAGE, 'missing <file>');
  return {
    file: resolve(file),
    outputDir: resolve(options.outputDir),
    command: options.command,
    lang: options.lang,
  };
}

async function main(argv: string[]): Promise<ExitCode> {
  const started = performance.now();
  const args = parseArgs(argv);
  if (args === null) return EXIT_CODES.OK;
  await convertToDir(args, { report }, started);
  return EXIT_CODES.OK;
}

if (process.argv[2] === '--worker') {
  // Worker mode: jobs over the IPC channel of the server that started it (worker.ts).
  void import('./worker.js').then((worker) => {
    worker.runWorker();
  });
} else {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.exitCode = exitCodeOf(error, report);
    },
  );
}
