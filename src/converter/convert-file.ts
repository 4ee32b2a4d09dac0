/**
 * One conversion, file in → markdown + meta out, without the command-line shell around it (the
 * CLI parses arguments and writes files; this decides what the file is and what it says).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  CONVERTER_NAME,
  CONVERTER_VERSION,
  EXIT_CODES,
  PAGE_MARKER_PATTERN,
  type ConverterMeta,
} from './contract.js';
import { loadBinaryConverter } from './formats/binary.js';
import {
  DEFAULT_LIMITS,
  type BinaryConversion,
  type ConvertLimits,
} from './formats/binary-types.js';
import { ConvertError } from './formats/convert-error.js';
import {
  describeUnsupported,
  detectFormat,
  SNIFF_BYTES,
  sniffHead,
  sniffSignature,
  type TextFormat,
} from './formats/detect.js';
import { convertText } from './formats/index.js';
import { looksBinary } from './formats/text.js';

/**
 * `auto`: detect and convert, OCR'ing only pages without a text layer. `text`: text layer only,
 * never OCR. `ocr`: OCR every page of a PDF, even one with text. Text formats ignore the choice.
 */
export const COMMANDS = ['auto', 'text', 'ocr'] as const;
export type CommandName = (typeof COMMANDS)[number];

export const DEFAULT_MAX_INPUT_BYTES = 200 * 1024 * 1024;

interface ConvertFileOptions {
  command: CommandName;
  maxInputBytes: number;
  rowsPerTable?: number;
  /** Tesseract languages, e.g. `eng+deu` (default `eng`). */
  lang?: string;
  /** Page and pixel limits of binary formats (default DEFAULT_LIMITS). */
  limits?: ConvertLimits;
  /** Pages done / page count of paged formats (PDF pages, image frames), after each page. */
  onProgress?: (done: number, total: number) => void;
}

interface ConvertFileResult {
  markdown: string;
  meta: ConverterMeta;
}

const MiB = 1024 * 1024;

function mib(bytes: number): string {
  return `${(bytes / MiB).toFixed(1)} MiB`;
}

/**
 * The first SNIFF_BYTES of the file. Synchronous: a few kilobytes, in a process that converts one
 * file at a time, where four thread-pool round trips cost more than the read.
 */
function readHead(path: string): Buffer {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(SNIFF_BYTES);
    return buffer.subarray(0, readSync(fd, buffer, 0, SNIFF_BYTES, 0));
  } finally {
    closeSync(fd);
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
 * Whether markdown says nothing. A binary format's page markers are set aside (an empty page still
 * gets its marker); in a text format a line that looks like one is the file's own text.
 */
function saysNothing(markdown: string, kind: 'binary' | 'text'): boolean {
  return markdown
    .split('\n')
    .every((line) => line.trim() === '' || (kind === 'binary' && PAGE_MARKER_PATTERN.test(line)));
}

/**
 * A conversion's markdown and meta; markdown that says nothing is NOTHING_EXTRACTABLE. Binary
 * converters report "nothing found" themselves, with a reason; this catches one that does not.
 */
function conversionResult(
  kind: 'binary' | 'text',
  format: string,
  conversion: BinaryConversion,
  command: CommandName,
  timings: Record<string, number>,
): ConvertFileResult {
  if (saysNothing(conversion.markdown, kind)) {
    throw new ConvertError(EXIT_CODES.NOTHING_EXTRACTABLE, `the ${format} file contains no text`);
  }
  return {
    markdown: conversion.markdown,
    meta: {
      converter: CONVERTER_NAME,
      converterVersion: CONVERTER_VERSION,
      command,
      format,
      pages: conversion.pages,
      ocrPages: conversion.ocrPages,
      ocrMeanConfidence: conversion.ocrMeanConfidence,
      warnings: conversion.warnings,
      // The converter's stages (open, text, render, ocr, …) next to detect and convert.
      timings: { ...timings, ...conversion.timings },
    },
  };
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

  const head = readHead(path);
  const detection = await timed(timings, 'detect', async () =>
    detectFormat(
      basename(path),
      head,
      looksBinary(head) ? await sniffSignature(path) : await sniffHead(head),
    ),
  );
  if (detection.kind === 'unsupported') {
    throw new ConvertError(EXIT_CODES.UNSUPPORTED_FORMAT, describeUnsupported(detection));
  }
  if (detection.kind === 'binary') {
    const convert = await loadBinaryConverter(detection.format);
    const conversion = await timed(timings, 'convert', () =>
      convert(path, {
        command: options.command,
        lang: options.lang ?? 'eng',
        limits: options.limits ?? DEFAULT_LIMITS,
        onProgress: options.onProgress,
      }),
    );
    return conversionResult('binary', detection.format, conversion, options.command, timings);
  }

  // A small file is all in its head already.
  const bytes = await timed(timings, 'read', async () =>
    head.length === info.size && head.length < SNIFF_BYTES ? head : readFile(path),
  );
  return textResult(detection.format, bytes, options, timings);
}

/** A text format's markdown and meta; blank text is NOTHING_EXTRACTABLE. */
async function textResult(
  format: TextFormat,
  bytes: Uint8Array,
  options: Pick<ConvertFileOptions, 'command' | 'rowsPerTable'>,
  timings: Record<string, number>,
): Promise<ConvertFileResult> {
  const conversion = await timed(timings, 'convert', async () =>
    convertText(format, bytes, { rowsPerTable: options.rowsPerTable }),
  );
  // A text format has no pages, no OCR and no stages of its own.
  const textConversion: BinaryConversion = {
    markdown: conversion.markdown,
    pages: null,
    ocrPages: [],
    ocrMeanConfidence: null,
    warnings: conversion.warnings,
    timings: {},
  };
  return conversionResult('text', format, textConversion, options.command, timings);
}

/** The formats `convertSmallText` converts: a decode and a normalisation, linear in the size. */
const SMALL_TEXT_FORMATS: ReadonlySet<TextFormat> = new Set(['text', 'markdown']);

/**
 * What convertFile answers for a small plain-text or markdown file named `name` whose whole
 * content is `bytes` (at most SNIFF_BYTES); null for any other format, which needs a parser, and
 * for a file convertFile would refuse. The server converts such files in its own process instead
 * of a worker round trip (knowledge/indexing/converting/in-process.ts).
 */
export async function convertSmallText(
  name: string,
  bytes: Uint8Array,
  command: CommandName,
): Promise<ConvertFileResult | null> {
  if (bytes.length === 0 || bytes.length > SNIFF_BYTES || looksBinary(bytes)) return null;
  const timings: Record<string, number> = {};
  const detection = await timed(timings, 'detect', async () =>
    detectFormat(name, bytes, await sniffHead(bytes)),
  );
  if (detection.kind !== 'text' || !SMALL_TEXT_FORMATS.has(detection.format)) return null;
  return textResult(detection.format, bytes, { command }, timings).catch(() => null);
}
