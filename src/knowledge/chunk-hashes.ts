/** What a chunk's vector is embedded from, and its sha256 (the key of a stored vector's reuse). */
import { createHash } from 'node:crypto';
import type { Chunk } from './chunker.js';

/** What the embedder sees: the section trail gives a chunk the context its heading carries. */
export function embeddingText(sectionPath: string, content: string): string {
  return sectionPath === '' ? content : `${sectionPath}\n${content}`;
}

export function embeddingHashes(chunks: readonly Chunk[]): string[] {
  return chunks.map((c) =>
    createHash('sha256').update(embeddingText(c.sectionPath, c.content)).digest('hex'),
  );
}
