/**
 * The worker thread of document-chunks.ts: chunks one large document off the event loop. In: one
 * `{markdown, options}` message. Out: `{chunks, hashes}` parts of PART chunks (so the main thread
 * deserialises a bounded amount per turn), then `{done: true}`; an error as `{error}`.
 */
import { parentPort } from 'node:worker_threads';
import { chunkMarkdown, type ChunkOptions } from './markdown-chunker.js';
import { embeddingHashes } from './chunk-hashes.js';

const PART = 2000;

parentPort?.once('message', (job: { markdown: string; options: ChunkOptions }) => {
  try {
    const chunks = chunkMarkdown(job.markdown, job.options);
    for (let at = 0; at < chunks.length; at += PART) {
      const part = chunks.slice(at, at + PART);
      parentPort?.postMessage({ chunks: part, hashes: embeddingHashes(part) });
    }
    parentPort?.postMessage({ done: true });
  } catch (error) {
    parentPort?.postMessage({ error: error instanceof Error ? error.message : String(error) });
  }
});
