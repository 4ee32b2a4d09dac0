/** What a chunk's vector is embedded from, and its sha256 (the key of a stored vector's reuse). */
import { createHash } from 'node:crypto';
import type { Chunk } from './markdown-chunker.js';
import { unescapeMarkdown } from './markdown-text.js';

/** The parts of a chunk its embedding text is made of. */
export type EmbeddedChunk = Pick<Chunk, 'sectionPath' | 'content'> & {
  metadata?: { kind?: string };
};

/**
 * What the embedder sees: the section trail gives a chunk the context its heading carries; the
 * content without markdown escapes (`XML_ParserCreate`, as a query types it). A table of contents
 * or an index is embedded as its trail alone: its entries name every section, so by meaning it
 * would come close to any question and crowd out the sections that answer it (keyword search
 * still finds its words).
 */
export function embeddingText(chunk: EmbeddedChunk): string {
  if (chunk.metadata?.kind === 'toc') return chunk.sectionPath || 'Contents';
  const content = unescapeMarkdown(chunk.content);
  return chunk.sectionPath === '' ? content : `${chunk.sectionPath}\n${content}`;
}

export function embeddingHashes(chunks: readonly Chunk[]): string[] {
  return chunks.map((c) => createHash('sha256').update(embeddingText(c)).digest('hex'));
}
