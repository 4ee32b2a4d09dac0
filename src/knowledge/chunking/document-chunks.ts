/**
 * A document's chunks (markdown-chunker.ts) with the hashes of their embedding texts. A large
 * document is chunked in a worker thread (chunk-worker.ts), one per run, so that the event loop is
 * never held for the seconds a 30 MB text takes; a small one in line, where a thread would cost
 * more than the chunking.
 */
import { spawnWorkerModule } from '../../worker-threads.js';
import { chunkMarkdown, type Chunk, type ChunkOptions } from './markdown-chunker.js';
import { embeddingHashes } from './chunk-hashes.js';

/** Markdown longer than this (characters) is chunked off the event loop (~30 ms in line). */
export const OFF_THREAD_CHARS = 512 * 1024;

export interface Chunked {
  chunks: Chunk[];
  /** sha256 of each chunk's embedding text (chunk-hashes.ts). */
  hashes: string[];
}

type Message = { chunks: Chunk[]; hashes: string[] } | { done: true } | { error: string };

export async function chunkDocument(
  markdown: string,
  options: ChunkOptions,
  signal?: AbortSignal,
): Promise<Chunked> {
  if (markdown.length <= OFF_THREAD_CHARS) {
    const chunks = chunkMarkdown(markdown, options);
    return { chunks, hashes: embeddingHashes(chunks) };
  }
  signal?.throwIfAborted();
  const { worker } = spawnWorkerModule(import.meta.url, 'chunk-worker');
  const out: Chunked = { chunks: [], hashes: [] };
  try {
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        reject(signal?.reason as Error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const settle = (error?: Error) => {
        signal?.removeEventListener('abort', onAbort);
        if (error === undefined) resolve();
        else reject(error);
      };
      worker.on('message', (m: Message) => {
        if ('error' in m) settle(new Error(`chunking failed: ${m.error}`));
        else if ('done' in m) settle();
        else {
          // A loop, not push(...part): spreading thousands of arguments is slower.
          for (const chunk of m.chunks) out.chunks.push(chunk);
          for (const hash of m.hashes) out.hashes.push(hash);
        }
      });
      worker.once('error', (error) => {
        settle(error);
      });
      worker.once('exit', (code) => {
        settle(new Error(`the chunking thread exited (${code}) before it finished`));
      });
      worker.postMessage({ markdown, options });
    });
  } finally {
    void worker.terminate();
  }
  return out;
}
