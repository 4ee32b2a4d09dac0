/**
 * Text bytes of a detected format → markdown. Pure (no I/O), so it is tested without processes;
 * new formats (PDF, office, OCR) add a module and a case here.
 */
import { csvToMarkdown } from './csv.js';
import type { TextFormat } from './detect.js';
import { htmlToMarkdown } from './html.js';
import { jsonLinesToMarkdown, jsonToMarkdown } from './json.js';
import { decodeText, normalizeText, passThrough } from './text.js';
import type { Conversion } from './types.js';

export type { Conversion } from './types.js';
export type { Detection, TextFormat } from './detect.js';

interface ConvertOptions {
  rowsPerTable?: number;
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] ?? message;
}

/**
 * Converts one file. A CSV or JSON file that does not parse is indexed as plain text with a
 * warning rather than rejected: its words are still worth finding, and the name was only a hint.
 */
export function convertText(
  format: TextFormat,
  bytes: Uint8Array,
  options: ConvertOptions = {},
): Conversion {
  const decoded = decodeText(bytes, { htmlCharset: format === 'html' });
  const text = normalizeText(decoded.text);
  const result = (conversion: Conversion): Conversion => ({
    markdown: conversion.markdown,
    warnings: [...decoded.warnings, ...conversion.warnings],
  });
  const asText = (what: string, error: unknown): Conversion =>
    result({
      markdown: passThrough(text),
      warnings: [
        `the file is not valid ${what} (${firstLine(error)}); it was indexed as plain text`,
      ],
    });

  switch (format) {
    case 'text':
    case 'markdown':
      return result({ markdown: passThrough(text), warnings: [] });
    case 'html':
      return result(htmlToMarkdown(text));
    case 'csv':
    case 'tsv':
      try {
        const delimiter = format === 'tsv' ? '\t' : undefined;
        return result(csvToMarkdown(text, { delimiter, rowsPerTable: options.rowsPerTable }));
      } catch (error) {
        return asText(format.toUpperCase(), error);
      }
    case 'json':
    case 'jsonl':
      try {
        const render = format === 'json' ? jsonToMarkdown : jsonLinesToMarkdown;
        return result(render(text, { rowsPerTable: options.rowsPerTable }));
      } catch (error) {
        if (!(error instanceof SyntaxError)) throw error;
        return asText(format === 'json' ? 'JSON' : 'JSON Lines', error);
      }
  }
}
