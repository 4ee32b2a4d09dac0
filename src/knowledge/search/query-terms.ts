/**
 * The words of a query that keyword search looks for, chosen the same way by both engines.
 * User text never reaches either engine as syntax: each engine quotes the chosen words itself.
 */
import { identifierGroups, identifierWords } from './identifiers.js';
import { koreanNouns } from './korean.js';
import { segmentWords } from './segment.js';

/** Common English function words: they match nearly every passage and only add noise to BM25. */
export const STOP_WORDS = new Set(
  `a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she should
so some such than that the their theirs them themselves then there these they this those through to
too under until up very was we were what when where which while who whom why will with would you
your yours yourself yourselves`.split(/\s+/),
);

/** Lower-cased word tokens (Unicode letters and digits). */
export function queryTerms(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/**
 * The query words that are searched: the distinct non-stop-word terms (all terms if every one is
 * a stop word), at most `maxTerms`.
 */
export function chooseQueryTerms(text: string, maxTerms = 64): string[] {
  const terms = [...new Set(queryTerms(text))];
  const content = terms.filter((t) => !STOP_WORDS.has(t));
  return (content.length > 0 ? content : terms).slice(0, maxTerms);
}

/** A query word as typed: letters and digits with the marks that follow them. */
const QUERY_WORD = /[\p{L}\p{N}\p{Co}][\p{L}\p{N}\p{Co}\p{M}]*/gu;
/** The tokens of a word, as unicode61 cuts it (a combining mark separates). */
const TOKEN = /[\p{L}\p{N}\p{Co}]+/gu;

/**
 * The query as both engines search it: the chosen query words (distinct, stop words dropped
 * unless every word is one, at most `maxTerms`), each as the tokens the keyword indexes hold for
 * it, then the whole identifiers of the query (identifiers.ts) and the nouns of its Korean words
 * with a particle (korean.ts). A word in a script without spaces
 * ("训练数据") is cut into its segmenter words (segment.ts), and so is a word a combining mark
 * splits (Thai, Devanagari): such a group matches a chunk only if all of its tokens occur there
 * (all-of); the groups are OR-ed, as words are. A word inside an identifier is never a stop
 * word (`is_valid`, `state-of-the-art`): the identifier explains nothing away.
 */
export function queryWordGroups(text: string, maxTerms = 64): string[][] {
  const words = [...new Set(text.toLowerCase().match(QUERY_WORD) ?? [])];
  const kept = identifierWords(text);
  const content = words.filter((w) => !STOP_WORDS.has(w) || kept.has(w));
  const groups: string[][] = (content.length > 0 ? content : words)
    .map((w) => segmentWords(w).match(TOKEN) ?? [])
    .filter((group) => group.length > 0);
  const seen = new Set(groups.map((g) => g.join(' ')));
  const nouns: string[] = [];
  koreanNouns(text, nouns);
  for (const group of [...identifierGroups(text), ...nouns.map((noun) => [noun])]) {
    const key = group.join(' ');
    if (seen.has(key)) continue;
    seen.add(key);
    groups.push(group);
  }
  return groups.slice(0, maxTerms);
}
