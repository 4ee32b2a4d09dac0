/**
 * Checks the quotes of test-data/identifiers/queries.jsonl against the text the product makes of
 * each document: the document is fetched (identifiers.ts), converted by `aps-convert` and chunked
 * by the product's chunker with the default settings (maxChars 1400, overlap 15 %), and each quote,
 * normalized like the bench does (normalizeText), must
 *
 * - be found in at least one chunk (else MISSING, or SPLIT when only the whole text has it),
 * - occur once in the document, so no cousin's passage holds it (else REPEATED),
 * - lie in chunks of one section only, consecutive ones (the overlap), (else SPREAD).
 *
 *   npx tsx bench/retrieval/identifiers-check.ts [--converter src|dist] [--fresh] [--verbose]
 *                                                [--queries FILE] [--grep TEXT [--doc FILE]]
 *
 * `--verbose` prints every quote's chunks, and the chunks of its section that hold no quote (a section
 * split by pages or by length: a dedicated section may want a quote in each). `--converter src` (default) runs src/converter/cli.ts through tsx, `dist` the built
 * dist/converter/cli.js the bench's server runs. The markdown is kept in
 * bench/.cache/identifiers/markdown-<converter>/ (`--fresh` converts again). `--grep TEXT` prints
 * the chunks that hold TEXT (normalized) with their section paths, to choose quotes; `--queries`
 * checks another file than test-data/identifiers/queries.jsonl. Exits 1 when
 * a quote has a problem.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { chunkMarkdown, type Chunk } from '../../src/knowledge/chunking/markdown-chunker.js';
import { PAGE_MARKER_PATTERN } from '../../src/converter/contract.js';
import {
  fetchIdentifierDocs,
  loadIdentifierQueries,
  SOURCES,
  validateIdentifierQueries,
} from './identifiers.js';
import { normalizeText } from './realdocs.js';

const { values } = parseArgs({
  options: {
    converter: { type: 'string', default: 'src' },
    fresh: { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
    grep: { type: 'string' },
    doc: { type: 'string' },
    queries: { type: 'string' },
  },
});
const converter = values.converter;
if (converter !== 'src' && converter !== 'dist')
  throw new Error(`unknown --converter ${converter}`);

const ROOT = resolve(import.meta.dirname, '../..');
const CHUNKING = { maxChars: 1400, overlapChars: 210 };

const corpus = fetchIdentifierDocs();
const markdownDir = join(corpus.dir, `markdown-${converter}`);
mkdirSync(markdownDir, { recursive: true });

/** The markdown aps-convert makes of a fetched file (cached). */
function convert(file: string): string {
  const cached = join(markdownDir, `${file}.md`);
  if (existsSync(cached) && !values.fresh) return readFileSync(cached, 'utf8');
  const out = mkdtempSync(join(tmpdir(), 'aps-identifiers-'));
  try {
    const cli =
      converter === 'src'
        ? ['--import', 'tsx', join(ROOT, 'src/converter/cli.ts')]
        : [join(ROOT, 'dist/converter/cli.js')];
    execFileSync(process.execPath, [...cli, join(corpus.dir, file), '--output-dir', out], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const markdown = readFileSync(join(out, 'document.md'), 'utf8');
    writeFileSync(cached, markdown);
    return markdown;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

interface Doc {
  chunks: { chunk: Chunk; text: string }[];
  /** The whole text without page markers, normalized. */
  text: string;
}

const docs = new Map<string, Doc>();
function doc(file: string): Doc {
  let d = docs.get(file);
  if (d === undefined) {
    const markdown = convert(file);
    const body = markdown
      .split('\n')
      .filter((line) => !PAGE_MARKER_PATTERN.test(line))
      .join('\n');
    d = {
      chunks: chunkMarkdown(markdown, CHUNKING).map((chunk) => ({
        chunk,
        text: normalizeText(chunk.content),
      })),
      text: normalizeText(body),
    };
    docs.set(file, d);
  }
  return d;
}

function occurrences(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) n++;
  return n;
}

const where = (c: Chunk) =>
  `#${c.chunkIndex} ${c.sectionPath === '' ? '(no heading)' : c.sectionPath}`;

if (values.grep !== undefined) {
  const needle = normalizeText(values.grep);
  const files = values.doc === undefined ? [...corpus.files] : [values.doc];
  for (const file of files) {
    const d = doc(file);
    for (const { chunk, text } of d.chunks) {
      const at = text.indexOf(needle);
      if (at < 0) continue;
      console.log(`${file} ${where(chunk)} (${chunk.content.length} chars)`);
      console.log(`    …${text.slice(Math.max(0, at - 150), at + needle.length + 150)}…`);
    }
  }
  process.exit(0);
}

const queries = loadIdentifierQueries(values.queries);
const problems = validateIdentifierQueries(queries);
for (const p of problems) console.log(`INVALID ${p}`);
let bad = problems.length;
const counts = new Map<string, number>();
for (const q of queries) {
  counts.set(q.kind, (counts.get(q.kind) ?? 0) + 1);
  if (!corpus.files.has(q.doc)) {
    console.log(`SKIPPED ${q.id}: ${q.doc} not fetched`);
    continue;
  }
  const d = doc(q.doc);
  const answering = new Set<number>();
  for (const quote of q.quotes) {
    const needle = normalizeText(quote);
    const holding = d.chunks.filter((c) => c.text.includes(needle)).map((c) => c.chunk);
    for (const c of holding) answering.add(c.chunkIndex);
    const paths = new Set(holding.map((c) => c.sectionPath));
    const indexes = holding.map((c) => c.chunkIndex);
    const consecutive = indexes.every((x, i) => i === 0 || x === (indexes[i - 1] ?? x) + 1);
    const n = occurrences(d.text, needle);
    let status = 'ok';
    if (holding.length === 0) status = n > 0 ? 'SPLIT' : 'MISSING';
    else if (n > 1) status = 'REPEATED';
    else if (paths.size > 1 || !consecutive) status = 'SPREAD';
    if (status !== 'ok') bad++;
    if (status !== 'ok' || values.verbose)
      console.log(
        `${status.padEnd(8)} ${q.id} ${JSON.stringify(q.question)} ${JSON.stringify(quote)}` +
          (holding.length === 0 ? '' : ` → ${holding.map(where).join(' | ')}`) +
          (n > 1 ? ` (${n} times in the document)` : ''),
      );
  }
  // Informative: chunks of the answer's section that no quote answers (a section split by pages or
  // by length), so that a dedicated section can get a quote in each of its chunks. Sections of many
  // chunks (a page of options, a Python module page) are shared: not listed.
  const sections = new Set(
    d.chunks.filter((c) => answering.has(c.chunk.chunkIndex)).map((c) => c.chunk.sectionPath),
  );
  const others = d.chunks.filter(
    (c) => sections.has(c.chunk.sectionPath) && !answering.has(c.chunk.chunkIndex),
  );
  if (values.verbose && others.length > 0 && others.length <= 3)
    console.log(
      `  note: ${q.id}: ${others.length} other chunk(s) of its section hold no quote: ${others
        .map((c) => `#${c.chunk.chunkIndex}`)
        .join(' ')}`,
    );
}
const versions = [...corpus.versions].map(([pkg, v]) => `${pkg} ${v}`).join(', ');
console.log(
  `\n${queries.length} queries (${[...counts].map(([k, n]) => `${k} ${n}`).join(', ')}); ` +
    `${bad} problem(s); converter ${converter}; packages: ${versions}`,
);
const unused = SOURCES.filter((s) => !queries.some((q) => q.doc === s.file)).map((s) => s.file);
if (unused.length > 0) console.log(`documents without queries: ${unused.join(', ')}`);
process.exit(bad > 0 ? 1 : 0);
