/**
 * Small plain-text and markdown files converted in the server's own process. Their conversion is
 * a UTF-8 decode and a newline normalisation, linear in at most 64 KiB, with no parser that could
 * crash, hang or grow: nothing the worker pool's isolation is there for. Skipping the worker round
 * trip (IPC both ways, the worker's CPU) is most of what indexing a small note costs.
 *
 * Anything else — a larger file, HTML, CSV, JSON, a binary format, a file the converter would
 * refuse — answers null, and the pool converts it (and reports any failure).
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { basename } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ConverterResult } from './runner.js';

/** Largest file converted in process: the converter's sniff window (detect.ts SNIFF_BYTES). */
export const IN_PROCESS_MAX_BYTES = 64 * 1024;

/**
 * The whole file when it is a regular file of 1..`max` bytes, else null. Synchronous: one read of
 * at most 64 KiB from the local disk costs microseconds, four thread-pool round trips more than
 * that.
 */
function readSmallFile(path: string, max: number): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile() || info.size === 0 || info.size > max) return null;
    const buffer = Buffer.alloc(info.size);
    const read = readSync(fd, buffer, 0, info.size, 0);
    return read === info.size ? buffer : null;
  } finally {
    closeSync(fd);
  }
}

/**
 * The bundled converter's result for `input` computed here, or null when the worker pool must
 * convert it. `maxOutputBytes` is the run's limit on markdown; `maxInputBytes` the converter's
 * own limit on its input (APS_CONVERT_MAX_INPUT_BYTES; null: its default, above ours).
 */
export async function convertInProcess(
  input: string,
  command: string,
  limits: { maxOutputBytes: number; maxInputBytes: number | null },
): Promise<ConverterResult | null> {
  const start = performance.now();
  const max = Math.min(limits.maxInputBytes ?? IN_PROCESS_MAX_BYTES, IN_PROCESS_MAX_BYTES);
  const bytes = readSmallFile(input, max);
  if (bytes === null) return null;
  // Loaded on first use: the server that never sees a text file never loads the converter's code.
  const { COMMANDS, convertSmallText } = await import('../../../converter/convert-file.js');
  const name = COMMANDS.find((c) => c === command);
  if (name === undefined) return null;
  const converted = await convertSmallText(basename(input), bytes, name);
  if (converted === null || Buffer.byteLength(converted.markdown) > limits.maxOutputBytes) {
    return null;
  }
  const durationMs = performance.now() - start;
  converted.meta.timings.total = Math.round(durationMs * 10) / 10;
  return {
    markdown: converted.markdown.replace(/^\uFEFF/, ''),
    meta: converted.meta,
    stderr: '',
    durationMs,
  };
}
