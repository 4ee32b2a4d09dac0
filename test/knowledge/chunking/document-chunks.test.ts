/**
 * document-chunks.ts: a large document is chunked in a worker thread with the same result as in line,
 * the event loop stays free meanwhile, and a failure or an abort ends the run with an error.
 */
import { describe, expect, it } from 'vitest';
import { embeddingHashes } from '../../../src/knowledge/chunking/chunk-hashes.js';
import { chunkMarkdown } from '../../../src/knowledge/chunking/markdown-chunker.js';
import {
  chunkDocument,
  OFF_THREAD_CHARS,
} from '../../../src/knowledge/chunking/document-chunks.js';

/** About `chars` characters of sections, paragraphs, a table, code and page markers. */
function document(chars: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < chars; i++) {
    const part =
      (i % 50 === 0 ? `<!-- page: ${String(i / 50 + 1)} -->\n` : '') +
      `## Section ${String(i)}\n\n${`Sentence ${String(i)} about tides and harbours. `.repeat(12)}\n\n` +
      (i % 7 === 0 ? '| a | b |\n|---|---|\n| 1 | 2 |\n\n' : '') +
      (i % 11 === 0 ? '```\nconst x = 1;\n```\n\n' : '');
    parts.push(part);
    size += part.length;
  }
  return parts.join('');
}

const OPTIONS = { maxChars: 600, overlapChars: 90 };

describe('chunking off the event loop', () => {
  it('gives a large document the same chunks and hashes as chunking in line', async () => {
    const markdown = document(OFF_THREAD_CHARS * 3);
    const inLine = chunkMarkdown(markdown, OPTIONS);
    const result = await chunkDocument(markdown, OPTIONS);
    expect(result.chunks).toEqual(inLine);
    expect(result.hashes).toEqual(embeddingHashes(inLine));
    expect(inLine.length).toBeGreaterThan(2000); // several parts came back
  });

  it('keeps the event loop free while a large document is chunked', async () => {
    const markdown = document(16 * 1024 * 1024);
    let last = performance.now();
    let maxLag = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      maxLag = Math.max(maxLag, now - last);
      last = now;
    }, 5);
    const start = performance.now();
    const result = await chunkDocument(markdown, OPTIONS);
    const took = performance.now() - start;
    await new Promise((resolve) => setTimeout(resolve, 20)); // the timer's next turn
    clearInterval(timer);
    expect(result.chunks.length).toBeGreaterThan(10_000);
    // In line the loop would be held for the whole pass; a generous bound against that.
    expect(maxLag).toBeLessThan(Math.max(100, took / 2));
  });

  it('a failure in the thread rejects the run; an abort ends it', async () => {
    const markdown = document(OFF_THREAD_CHARS + 1000);
    await expect(chunkDocument(markdown, { maxChars: 100, overlapChars: 0 })).rejects.toThrow(
      /chunking failed: maxChars must be/,
    );
    const controller = new AbortController();
    const run = chunkDocument(document(16 * 1024 * 1024), OPTIONS, controller.signal);
    setTimeout(() => {
      controller.abort(new Error('deleted meanwhile'));
    }, 20);
    await expect(run).rejects.toThrow(/deleted meanwhile/);
  });
});
