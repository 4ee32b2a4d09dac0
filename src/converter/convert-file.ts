/**
 * One conversion, file in → markdown + meta out, without the command-line shell around it (the
 * CLI parses arguments and writes files; this decides what the file is and what it says).
 */
import { open, readFile, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CONVERTER_NAME, CONVERTER_VERSION, EXIT_CODES, type ConverterMeta } from './contract.js';
import { ConvertError } from './formats/convert-error.js';
import {
  describeUnsupported,
  detectFormat,
  SNIFF_BYTES,
  sniffSignature,
} from './formats/detect.js';
import { convertText } from './formats/index.js';

/** `auto`: detect and convert. `text`: text layer only, no OCR — the same for today's formats. */
export const COMMANDS = ['auto', 'text'] as const;
export type CommandName = (typeof COMMANDS)[number];

export const DEFAULT_MAX_INPUT_BYTES = 200 * 1024 * 1024;

export interface ConvertFileOptions {
  command: CommandName;
  maxInputBytes: number;
  rowsPerTable?: number;
}

export interface ConvertFileResult {
  markdown: string;
  meta: ConverterMeta;
}

const MiB = 1024 * 1024;

function mib(bytes: number): string {
  return `${(bytes / MiB).toFixed(1)} MiB`;
}

async function readHead(path: string): Promise<Uint8Array> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, SNIFF_BYTES, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** Milliseconds spent in `fn`, recorded under `stage`. */
async function timed<T>(timings: Record<string, number>, stage: string, fn: () => Promise<T>) {
  const start = performance.now();
  try {
    return await fn();
  } finally {
    timings[stage] = Math.round((performance.now() - start) * 10) / 10;
  }
}

/**
 * Detects the format of `path` from its content and name and converts it. Throws a ConvertError
 * (with the exit code to use) for every expected failure; anything else is a bug or an I/O error.
 */
export async function convertFile(
  path: string,
  options: ConvertFileOptions,
): Promise<ConvertFileResult> {
  const timings: Record<string, number> = {};
  const info = await stat(path).catch((error: unknown) => {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : `cannot read it (${code ?? 'error'})`;
    throw new ConvertError(EXIT_CODES.USAGE, `input ${path}: ${reason}`);
  });
  if (!info.isFile()) throw new ConvertError(EXIT_CODES.USAGE, `input ${path} is not a file`);
  if (info.size > options.maxInputBytes) {
    throw new ConvertError(
      EXIT_CODES.TOO_LARGE,
      `the file is ${mib(info.size)}; the converter accepts at most ${mib(options.maxInputBytes)}`,
    );
  }
  if (info.size === 0) throw new ConvertError(EXIT_CODES.NOTHING_EXTRACTABLE, 'the file is empty');

  const detection = await timed(timings, 'detect', async () =>
    detectFormat(basename(path), await readHead(path), await sniffSignature(path)),
  );
  if (detection.kind === 'unsupported') {
    throw new ConvertError(EXIT_CODES.UNSUPPORTED_FORMAT, describeUnsupported(detection));
  }

  const bytes = await timed(timings, 'read', () => readFile(path));
  const conversion = await timed(timings, 'convert', async () =>
    convertText(detection.format, bytes, { rowsPerTable: options.rowsPerTable }),
  );
  if (conversion.markdown.trim() === '') {
    throw new ConvertError(
      EXIT_CODES.NOTHING_EXTRACTABLE,
      `the ${detection.format} file contains no text`,
    );
  }
  return {
    markdown: conversion.markdown,
    meta: {
      converter: CONVERTER_NAME,
      converterVersion: CONVERTER_VERSION,
      command: options.command,
      format: detection.format,
      pages: null,
      ocrPages: [],
      ocrMeanConfidence: null,
      warnings: conversion.warnings,
      timings,
    },
  };
}
