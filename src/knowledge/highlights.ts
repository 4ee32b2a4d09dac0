/**
 * Highlights of a retrieval hit: where in its `content` the query's words occur, after the same
 * tokenizing and stemming as the keyword index (a query "running" marks "runs" and "running";
 * the stop words the query drops are not marked; CJK and Thai words are cut as segment.ts cuts
 * them). Pure, given the lexer: the same content and query always give the same ranges.
 */
import { queryWordGroups } from './search/query-terms.js';
import { wordSpans } from './search/segment.js';
import { sharedLexer, type Fts5Lexer } from './search/sqlite/fts5-lexer.js';

/** A range of UTF-16 code units of a hit's content, `end` exclusive. */
export interface Highlight {
  start: number;
  end: number;
}

/**
 * The lexeme ids of the query's word groups (queryWordGroups), as the keyword index reads them: a
 * group of several (a segmented CJK word) is highlighted only where all of them occur.
 */
export function queryLexemes(query: string, lexer: Fts5Lexer = sharedLexer()): number[][] {
  const groups = queryWordGroups(query);
  const ids = lexer.tokenize(groups.flat());
  let at = 0;
  return groups
    .map((g) => g.flatMap(() => Array.from(ids[at++] ?? [])))
    .filter((g) => g.length > 0);
}

/** Words remembered with their lexeme id at most (then the cache starts over). */
const WORDS_CACHE_MAX = 200_000;
const cache = { lexer: null as Fts5Lexer | null, ids: new Map<string, number>() };

/**
 * The lexeme id of each word (a span of wordSpans), -1 for one FTS5 would cut otherwise (never
 * marked). Remembered per word: a hit's words are mostly known, and asking the lexer costs a
 * few allocations per word.
 */
function lexemeIds(words: readonly string[], lexer: Fts5Lexer): number[] {
  if (cache.lexer !== lexer || cache.ids.size > WORDS_CACHE_MAX) {
    cache.lexer = lexer;
    cache.ids = new Map();
  }
  const ids = cache.ids;
  const missing = [...new Set(words.filter((w) => !ids.has(w)))];
  if (missing.length > 0) {
    lexer.tokenize(missing).forEach((t, i) => {
      ids.set(missing[i] ?? '', t.length === 1 ? (t[0] ?? -1) : -1);
    });
  }
  return words.map((w) => ids.get(w) ?? -1);
}

/**
 * The ranges of `content` holding a lexeme of the query groups `groups` (queryLexemes): sorted,
 * non-overlapping, adjacent ones merged (the words of "训练数据" make one range). A group of
 * several lexemes counts only if the content holds all of them. Empty when nothing matches.
 */
export function highlightRanges(
  content: string,
  groups: readonly (readonly number[])[],
  lexer: Fts5Lexer = sharedLexer(),
): Highlight[] {
  if (groups.length === 0 || content.length === 0) return [];
  const spans = wordSpans(content);
  if (spans.length === 0) return [];
  const words = spans.map(([start, end]) => content.slice(start, end));
  const lexemeOf = lexemeIds(words, lexer);
  const present = new Set(lexemeOf);
  const wanted = new Set<number>();
  for (const group of groups) {
    if (group.every((id) => present.has(id))) for (const id of group) wanted.add(id);
  }
  if (wanted.size === 0) return [];
  const ranges: Highlight[] = [];
  spans.forEach(([start, end], i) => {
    if (!wanted.has(lexemeOf[i] ?? -1)) return;
    const last = ranges[ranges.length - 1];
    if (last !== undefined && last.end >= start) last.end = Math.max(last.end, end);
    else ranges.push({ start, end });
  });
  return ranges;
}
