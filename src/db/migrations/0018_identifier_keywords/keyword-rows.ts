/**
 * Frozen copy, as of migration 0018, of keywordRows in
 * knowledge/search/postgres/keyword/keyword-rows.ts: a chunk's words (now with its identifier
 * tokens, ./words.ts) as a weighted tsvector and a word count. Migrations import nothing from
 * knowledge/: editing the live code must never change what an old migration writes. Do not edit
 * to follow the live code; new keyword rows are a new migration. The statistics (deleteKeywordRows,
 * updateStatistics) and the stemmer are migration 0013's: they did not change.
 */
import type { PoolClient } from 'pg';
import { sliceTurn } from '../../../event-loop-turns.js';
import { fitsTsvector, type Stemmer } from '../0013_segmented_keywords/words.js';
import { indexWords } from './words.js';

/** FTS5 and tsvector both stop counting positions at some point; tsvector at 16383. */
const MAX_POSITION = 16_383;

/** A word's position carries its column's label: section path A, document name B, text D (none). */
const LABEL = { section: 'A', name: 'B', content: '' } as const;

/** A tsvector literal: `'lexeme':1A,4 …`. */
function tsvectorLiteral(positions: Map<string, string[]>): string {
  let literal = '';
  for (const [lexeme, list] of positions) {
    literal += `${literal === '' ? '' : ' '}'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}':${list.join(',')}`;
  }
  return literal;
}

/** Chunks turned into keyword rows per slice (a few milliseconds of work). */
const KEYWORD_SLICE = 256;

/**
 * The weighted tsvector and word count of each chunk of a document named `name`, in slices that
 * yield to the event loop between them.
 */
export async function keywordRows(
  client: PoolClient,
  stemmer: Stemmer,
  name: string,
  chunks: readonly { sectionPath: string; content: string }[],
): Promise<{ terms: string[]; tokenCounts: number[] }> {
  const nameWords = indexWords(name);
  const rows = { terms: [] as string[], tokenCounts: [] as number[] };
  for (let from = 0; from < chunks.length; from += KEYWORD_SLICE) {
    if (from > 0) await sliceTurn(); // requests waiting for a turn go first (event-loop-turns.ts)
    const slice = chunks.slice(from, from + KEYWORD_SLICE);
    const sectionWords = slice.map((c) => indexWords(c.sectionPath, 'path'));
    const contentWords = slice.map((c) => indexWords(c.content));
    const stem = await stemmer.lexemes(client, [nameWords, ...sectionWords, ...contentWords]);
    for (let i = 0; i < slice.length; i++) {
      const positions = new Map<string, string[]>();
      let at = 0;
      const add = (words: readonly string[], label: string) => {
        for (const word of words) {
          at = Math.min(at + 1, MAX_POSITION);
          const lexeme = stem(word);
          // Counted in the length, but not indexed: no query can name it.
          if (!fitsTsvector(lexeme)) continue;
          const list = positions.get(lexeme);
          if (list === undefined) positions.set(lexeme, [`${at}${label}`]);
          else list.push(`${at}${label}`);
        }
      };
      add(nameWords, LABEL.name);
      add(sectionWords[i] ?? [], LABEL.section);
      add(contentWords[i] ?? [], LABEL.content);
      rows.terms.push(tsvectorLiteral(positions));
      rows.tokenCounts.push(
        nameWords.length + (sectionWords[i]?.length ?? 0) + (contentWords[i]?.length ?? 0),
      );
    }
  }
  return rows;
}
