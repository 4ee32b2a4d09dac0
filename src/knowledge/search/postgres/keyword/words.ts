/**
 * How text becomes lexemes on PostgreSQL, word for word as SQLite's FTS5 table tokenizes it
 * (`porter unicode61 remove_diacritics 2`), so that both engines count the same lexemes and
 * give the same BM25 scores. Words are split here, in JavaScript; stems come from the database.
 */
import type { PoolClient } from 'pg';
import { queryWordGroups } from '../../query-terms.js';
import { keywordText } from '../../keyword-text.js';

/**
 * The stemmer (a dictionary of the migration): Snowball's Porter stemmer, the algorithm of FTS5's
 * `porter` tokenizer, without stop words. With the same words (indexWords) it gives the same
 * lexemes as SQLite, hence the same BM25 scores. PostgreSQL's `english` configuration differs:
 * its parser keeps `a@b.com` or `/usr/bin` whole, and its stemmer (Porter2) and stop words
 * change the counts.
 */
const STEMMER = 'aps_porter';

/**
 * SQL for the lexeme of a word: its stem, or the word itself when it has under 3 or over 64
 * bytes (FTS5's porter tokenizer leaves those alone: `is` stays `is`, not `i`).
 */
export const stemSql = (word: string) =>
  `case when octet_length(${word}) between 3 and 64
     then coalesce((ts_lexize('${STEMMER}', ${word}))[1], ${word}) else ${word} end`;

/** The longest lexeme a tsvector holds, in bytes. */
const MAX_LEXEME_BYTES = 2046;

/** Whether a word (or its lexeme) fits a tsvector: a UTF-16 unit takes at most 3 UTF-8 bytes. */
export const fitsTsvector = (word: string) =>
  word.length <= MAX_LEXEME_BYTES / 3 || Buffer.byteLength(word) <= MAX_LEXEME_BYTES;

/** Words stemmed in memory at most (then the cache starts over). */
const STEM_CACHE_MAX = 200_000;

const WORD = /[\p{L}\p{N}\p{Co}]+/gu;
const LATIN_MARKS = /(\p{Script=Latin})\p{Mn}+/gu;

/**
 * The words of a text as SQLite's FTS5 `unicode61 remove_diacritics 2` tokenizer sees them:
 * runs of letters and digits, lower-cased, diacritics of Latin letters removed. The keyword
 * index is built from these words joined by spaces, so PostgreSQL's parser never sees
 * punctuation (it would keep `foo@bar.com` or `/usr/bin` as one token where FTS5 splits them).
 */
export function indexWords(text: string, where: 'text' | 'path' = 'text'): string[] {
  // The text as SQLite's keyword columns hold it: CJK and Thai cut into words, identifiers whole.
  return foldWords(keywordText(text, where));
}

/** The words of a text already in keyword form, folded as unicode61 folds them. */
function foldWords(text: string): string[] {
  const folded = text.toLowerCase().normalize('NFD').replace(LATIN_MARKS, '$1').normalize('NFC');
  return folded.match(WORD) ?? [];
}

/**
 * The query word groups, chosen as SQLite's keyword search chooses them (queryWordGroups):
 * distinct, stop words dropped unless every word is one, at most 64; each group's words
 * normalised like the indexed text. A group with a word too long for a tsvector is dropped: that
 * word is in no chunk's lexemes, so the group matches nothing.
 */
export function keywordQueryWords(text: string, maxTerms = 64): string[][] {
  return queryWordGroups(text, maxTerms)
    .map((group) => group.flatMap((w) => foldWords(w)))
    .filter((group) => group.length > 0 && group.every(fitsTsvector));
}

/** Word → lexeme, remembered: stemming is deterministic, and a commit's words are mostly known. */
export class Stemmer {
  private readonly stems = new Map<string, string>();

  /**
   * The lexeme of every given word: stems from the cache, the others from PostgreSQL's stemmer
   * in one query (the same SQL the keyword query uses, so index and query always agree).
   */
  async lexemes(
    client: PoolClient,
    lists: readonly (readonly string[])[],
  ): Promise<(word: string) => string> {
    const known = new Map<string, string>();
    const missing = new Set<string>();
    for (const words of lists) {
      for (const word of words) {
        if (known.has(word) || missing.has(word)) continue;
        const lexeme = this.stems.get(word);
        if (lexeme === undefined) missing.add(word);
        else known.set(word, lexeme);
      }
    }
    if (missing.size > 0) {
      const { rows } = await client.query<{ word: string; lexeme: string }>(
        `select w.word, ${stemSql('w.word')} as lexeme from unnest($1::text[]) as w(word)`,
        [[...missing]],
      );
      if (this.stems.size + rows.length > STEM_CACHE_MAX) this.stems.clear();
      for (const r of rows) {
        known.set(r.word, r.lexeme);
        this.stems.set(r.word, r.lexeme);
      }
    }
    return (word) => known.get(word) ?? word;
  }

  /** The lexeme of `word` if it was stemmed before (no query). */
  known(word: string): string | undefined {
    return this.stems.get(word);
  }

  /** Remembers the lexeme of `word` found by a query with the same SQL (keyword-statements.ts). */
  remember(word: string, lexeme: string): void {
    if (this.stems.has(word)) return;
    if (this.stems.size >= STEM_CACHE_MAX) this.stems.clear();
    this.stems.set(word, lexeme);
  }
}
