/**
 * Re-indexing without re-converting. A conversion is identified by its key: the command id, the
 * exact argv template it runs (so a changed KNOWLEDGE_CONVERTER_PATH or commands-file entry
 * counts as a change), the bundled converter's version (contract.ts CONVERTER_VERSION, bumped
 * whenever its markdown changes) and the source file's checksum. Each run records the key in
 * `converter_meta.conversionKey`; a later run whose key is the same reuses the stored markdown
 * (`markdown_path`) instead of running the converter — switching the embedding model or the
 * chunk size does not redo the OCR of every scanned page. `converter_meta.markdownReused` says
 * that it did. Documents indexed before keys were recorded are converted once more.
 */
import { createHash } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { CONVERTER_VERSION } from '../../../converter/contract.js';
import type { DocumentRow } from '../../../db/schema.js';
import type { FileStorage } from '../../storage/storage.js';
import type { ConverterCommand } from './commands.js';
import { parseMeta } from './meta.js';
import type { ConverterResult } from './runner.js';

/** The key of converting a file with checksum `checksum` by `command` (a sha256, hex). */
export function conversionKey(command: ConverterCommand, checksum: string): string {
  const parts = {
    commandId: command.id,
    argv: command.argv,
    converterVersion: command.builtin === true ? CONVERTER_VERSION : null,
    checksum,
  };
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** The key a document's stored markdown was converted with, if it recorded one. */
function storedKey(doc: DocumentRow): string | null {
  if (doc.converter_meta === null) return null;
  try {
    const meta = JSON.parse(doc.converter_meta) as { conversionKey?: unknown };
    return typeof meta.conversionKey === 'string' ? meta.conversionKey : null;
  } catch {
    return null;
  }
}

/** The result of converting, with its key recorded (it ends up in `converter_meta`). */
export function withConversionKey(converted: ConverterResult, key: string): ConverterResult {
  if (converted.meta === null) {
    // A tool that wrote no meta.json: only the key is recorded (the commit adds the rest).
    return { ...converted, meta: { conversionKey: key } as unknown as ConverterResult['meta'] };
  }
  return {
    ...converted,
    meta: { ...converted.meta, conversionKey: key } as ConverterResult['meta'],
  };
}

/**
 * The stored markdown as a conversion result when it was converted with `key`; null when it
 * must be converted (no markdown, another key, or the stored file cannot be read).
 */
export async function reusableMarkdown(
  doc: DocumentRow,
  key: string,
  storage: FileStorage,
  log: FastifyBaseLogger,
): Promise<ConverterResult | null> {
  if (doc.markdown_path === null || storedKey(doc) !== key) return null;
  let markdown: string;
  try {
    markdown = await storage.readText(doc.markdown_path);
  } catch (error) {
    log.warn({ err: error, documentId: doc.id }, 'stored markdown unreadable; converting again');
    return null;
  }
  if (markdown.trim() === '') return null;
  const stored = parseMeta(JSON.parse(doc.converter_meta ?? '{}'));
  // The chunking warnings of the previous run are the new run's to add again.
  const warnings = stored?.warnings.filter((w) => !w.startsWith('overlapChars ')) ?? [];
  const meta =
    stored === null ? null : { ...stored, warnings, conversionKey: key, markdownReused: true };
  return { markdown, meta: meta as ConverterResult['meta'], stderr: '', durationMs: 0 };
}
