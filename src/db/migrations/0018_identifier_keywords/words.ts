/**
 * Frozen copy, as of migration 0018, of indexWords in knowledge/search/postgres/keyword/words.ts:
 * the words of a text as SQLite's FTS5 `unicode61 remove_diacritics 2` tokenizer sees the text
 * its keyword columns hold (./identifiers.ts keywordText): runs of letters, digits and private-use
 * characters, lower-cased, diacritics of Latin letters removed. Do not edit to follow the live
 * code; new words are a new migration.
 */
import { keywordText } from './keyword-text.js';

const WORD = /[\p{L}\p{N}\p{Co}]+/gu;
const LATIN_MARKS = /(\p{Script=Latin})\p{Mn}+/gu;

export function indexWords(text: string, where: 'text' | 'path' = 'text'): string[] {
  const folded = keywordText(text, where)
    .toLowerCase()
    .normalize('NFD')
    .replace(LATIN_MARKS, '$1')
    .normalize('NFC');
  return folded.match(WORD) ?? [];
}
