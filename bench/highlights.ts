/**
 * The cost of highlights (src/knowledge/retrieval/highlights.ts): per hit, for SciFact abstracts as
 * hits and SciFact train queries, as retrieval computes them for its topK hits. And what segmenting
 * (segment.ts) adds to indexing English text: segmentWords next to the lexer's own tokenizing.
 *
 *   npx tsx bench/highlights.ts [--queries 300] [--top 10]
 *
 * Needs ../shared/datasets/scifact (corpus.jsonl, queries-train.jsonl), not shipped.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { highlightRanges, queryLexemes } from '../src/knowledge/retrieval/highlights.js';
import { segmentWords } from '../src/knowledge/search/segment.js';
import { sharedLexer } from '../src/knowledge/search/sqlite/keyword/fts5-lexer.js';

const { values } = parseArgs({
  options: { queries: { type: 'string', default: '300' }, top: { type: 'string', default: '10' } },
});
const dir = join(import.meta.dirname, '..', '..', 'shared', 'datasets', 'scifact');
const lines = (file: string) =>
  readFileSync(join(dir, file), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { title?: string; text: string });
const corpus = lines('corpus.jsonl').map((d) => d.text);
const queries = lines('queries-train.jsonl')
  .map((q) => q.text)
  .slice(0, Number(values.queries));
const top = Number(values.top);

/** Wall and CPU time (the CPU time is what a busy machine does not inflate). */
function run(): { hits: number; ranges: number; ms: number; cpuMs: number } {
  let hits = 0;
  let ranges = 0;
  const start = performance.now();
  const cpu = process.cpuUsage();
  queries.forEach((q, i) => {
    const lexemes = queryLexemes(q);
    for (let j = 0; j < top; j++) {
      ranges += highlightRanges(
        corpus[(i * 7919 + j * 104729) % corpus.length] ?? '',
        lexemes,
      ).length;
      hits++;
    }
  });
  const used = process.cpuUsage(cpu);
  return { hits, ranges, ms: performance.now() - start, cpuMs: (used.user + used.system) / 1000 };
}

run(); // warm: the lexer's caches, as a running server has them
const { hits, ranges, ms, cpuMs } = run();
const chars = corpus.reduce((n, t) => n + t.length, 0) / corpus.length;
console.log(
  `highlights: ${hits} hits (SciFact abstracts, mean ${Math.round(chars)} chars) for ${queries.length} queries × top ${top}: ` +
    `${((ms * 1000) / hits).toFixed(1)} µs per hit (CPU ${((cpuMs * 1000) / hits).toFixed(1)} µs), ` +
    `${(ranges / hits).toFixed(2)} ranges per hit`,
);

/** CPU milliseconds of `work`. */
function cpuTime(work: () => void): number {
  const cpu = process.cpuUsage();
  work();
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / 1000;
}
const lexer = sharedLexer();
lexer.tokenize(corpus); // warm, as a running server is
let segmented: string[] = [];
const segmentMs = cpuTime(() => {
  segmented = corpus.map(segmentWords);
});
const lexMs = cpuTime(() => lexer.tokenize(segmented));
console.log(
  `indexing ${corpus.length} SciFact abstracts (CPU): segmentWords ${((segmentMs * 1000) / corpus.length).toFixed(2)} µs per abstract, ` +
    `the lexer's tokenize ${((lexMs * 1000) / corpus.length).toFixed(1)} µs per abstract`,
);
