/**
 * Highlights of a retrieval hit: where in its `content` the query's words occur, after the same
 * tokenizing and stemming as the keyword index (a query "running" marks "runs" and "running";
 * the stop words the query drops are not marked; CJK and Thai words are cut as segment.ts cuts
 * them). Pure, given the lexer: the same content and query always give the same ranges.
 */
import { queryWordGroups } from '../search/query-terms.js';
import { wordSpans } from '../search/segment.js';
import { sharedLexer, type Fts5Lexer } from '../search/sqlite/keyword/fts5-lexer.js';

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
 * The lexeme id of each word of `content` at `spans` (wordSpans), -1 for one FTS5 would cut
 * otherwise (never marked). Remembered per word: a hit's words are mostly known, and asking the
 * lexer costs a few allocations per word. One look-up a word; the unknown ones are asked
 * together.
 */
function lexemeIds(
  content: string,
  spans: readonly (readonly [number, number])[],
  lexer: Fts5Lexer,
): Int32Array {
  if (cache.lexer !== lexer || cache.ids.size > WORDS_CACHE_MAX) {
    cache.lexer = lexer;
    cache.ids = new Map();
  }
  const ids = cache.ids;
  const out = new Int32Array(spans.length);
  /** Unknown words and the spans holding them. */
  const unknown = new Map<string, number[]>();
  spans.forEach(([start, end], i) => {
    const word = content.slice(start, end);
    const id = ids.get(word);
    if (id !== undefined) {
      out[i] = id;
      return;
    }
    const at = unknown.get(word);
    if (at === undefined) unknown.set(word, [i]);
    else at.push(i);
  });
  if (unknown.size > 0) {
    const words = [...unknown.keys()];
    lexer.tokenize(words).forEach((t, k) => {
      const word = words[k] ?? '';
      const id = t.length === 1 ? (t[0] ?? -1) : -1;
      ids.set(word, id);
      for (const i of unknown.get(word) ?? []) out[i] = id;
    });
  }
  return out;
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
  const lexemeOf = lexemeIds(content, spans, lexer);
  // The query's lexemes the content holds.
  const queried = new Set(groups.flat());
  const present = new Set<number>();
  for (const id of lexemeOf) if (queried.has(id)) present.add(id);
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
