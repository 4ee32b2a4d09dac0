/**
 * Reads a document's converted markdown (the file the last successful index stored): whole, a
 * page range (by the converter's page markers) or a chunk range (by the chunks' offsets into that
 * same markdown), cut to a character budget. Lets an agent read around a retrieval hit.
 */
import { AppError } from '../../errors.js';
import type { DocumentsService } from '../documents/documents.service.js';
import { cutToBudget, pageIndex, pageRange } from './markdown-range.js';
import type { MarkdownQuery, MarkdownResult } from './markdown.schemas.js';
import type { FileStorage } from '../storage/storage.js';

function offsetsOf(metadata: Record<string, unknown>): { start: number; end: number } | null {
  const { startOffset, endOffset } = metadata;
  return typeof startOffset === 'number' && typeof endOffset === 'number'
    ? { start: startOffset, end: endOffset }
    : null;
}

export class DocumentMarkdownService {
  constructor(
    private readonly documents: DocumentsService,
    private readonly storage: FileStorage,
  ) {}

  async read(id: string, query: MarkdownQuery): Promise<MarkdownResult> {
    const byPage = query.fromPage !== undefined || query.toPage !== undefined;
    const byChunk = query.fromChunk !== undefined || query.toChunk !== undefined;
    if (byPage && byChunk) {
      throw new AppError('VALIDATION_ERROR', 'Give a page range or a chunk range, not both.');
    }
    const document = await this.documents.get(id);
    if (document.markdownPath === null) {
      throw new AppError(
        'KNOWLEDGE_DOCUMENT_NOT_INDEXED',
        `Knowledge document ${id} has no converted markdown yet (status ${document.status}): index it first.`,
      );
    }
    const markdown = await this.storage.readText(document.markdownPath);
    const index = pageIndex(markdown);
    let range = { start: 0, end: markdown.length };
    let pages: { from: number; to: number } | null = null;
    let chunks: { from: number; to: number; count: number } | null = null;

    if (byPage) {
      if (index.pages === null) {
        throw new AppError(
          'BAD_REQUEST',
          `${document.name} has no pages: read it whole or by chunks (fromChunk, toChunk).`,
        );
      }
      const from = query.fromPage ?? 1;
      const to = Math.min(query.toPage ?? from, index.pages);
      if (from > index.pages) {
        throw new AppError('BAD_REQUEST', `${document.name} has ${index.pages} pages.`);
      }
      if (to < from) throw new AppError('BAD_REQUEST', 'toPage must not be before fromPage.');
      pages = { from, to };
      range = pageRange(index, markdown.length, from, to);
    } else if (byChunk) {
      const list = await this.documents.chunks(id);
      const from = query.fromChunk ?? 0;
      const to = Math.min(query.toChunk ?? from, list.length - 1);
      if (from >= list.length) {
        throw new AppError('BAD_REQUEST', `${document.name} has ${list.length} chunks.`);
      }
      if (to < from) throw new AppError('BAD_REQUEST', 'toChunk must not be before fromChunk.');
      const first = list.find((c) => c.chunkIndex === from);
      const last = list.find((c) => c.chunkIndex === to);
      const a = first === undefined ? null : offsetsOf(first.metadata);
      const b = last === undefined ? null : offsetsOf(last.metadata);
      if (a === null || b === null) {
        throw new AppError('CONFLICT', `Re-index ${document.name} to read it by chunks.`);
      }
      chunks = { from, to, count: list.length };
      range = { start: a.start, end: b.end };
    }

    const text = markdown.slice(range.start, range.end);
    const cut = cutToBudget(text, query.maxChars);
    return {
      documentId: document.id,
      name: document.name,
      version: document.version,
      pages: index.pages,
      chunkCount: chunks?.count ?? null,
      fromPage: pages?.from ?? null,
      toPage: pages?.to ?? null,
      fromChunk: chunks?.from ?? null,
      toChunk: chunks?.to ?? null,
      markdown: cut.text,
      totalChars: text.length,
      truncated: cut.truncated,
    };
  }
}
