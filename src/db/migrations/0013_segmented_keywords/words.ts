/**
 * Frozen copy, as of migration 0013, of how text becomes lexemes on PostgreSQL, from
 * knowledge/search/postgres/keyword/words.ts (indexWords, fitsTsvector, the Stemmer's lexemes).
 * Migrations import nothing from knowledge/: editing the live code must never change what an old
 * migration writes. Do not edit to follow the live code; new lexemes are a new migration.
 *
 * Words are split here, in JavaScript, word for word as SQLite's FTS5 table tokenizes them
 * (`porter unicode61 remove_diacritics 2`); stems come from the database.
 */
import type { PoolClient } from 'pg';
import { segmentWords } from './segment.js';

/**
 * The stemmer (a dictionary of migration 0002): Snowball's Porter stemmer, the algorithm of
 * FTS5's `porter` tokenizer, without stop words.
 */
const STEMMER = 'aps_porter';

/**
 * SQL for the lexeme of a word: its stem, or the word itself when it has under 3 or over 64
 * bytes (FTS5's porter tokenizer leaves those alone: `is` stays `is`, not `i`).
 */
const stemSql = (word: string) =>
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
 * runs of letters and digits, lower-cased, diacritics of Latin letters removed.
 */
export function indexWords(text: string): string[] {
  // Runs of CJK and Thai cut into words first, as on SQLite (segment.ts).
  const folded = segmentWords(text)
    .toLowerCase()
    .normalize('NFD')
    .replace(LATIN_MARKS, '$1')
    .normalize('NFC');
  return folded.match(WORD) ?? [];
}

/** Word → lexeme, remembered: stemming is deterministic, and a commit's words are mostly known. */
export class Stemmer {
  private readonly stems = new Map<string, string>();

  /**
   * The lexeme of every given word: stems from the cache, the others from PostgreSQL's stemmer
   * in one query.
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
}
