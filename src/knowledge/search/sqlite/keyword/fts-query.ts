/**
 * FTS5 query text and ranking SQL. Every term is quoted, so no user input can be read as FTS5
 * syntax (operators, column filters, unbalanced quotes): the query never throws.
 */
import { COLUMN_WEIGHTS } from '../../bm25.js';
import { queryWordGroups } from '../../query-terms.js';

/**
 * FTS5's bm25() of `knowledge_chunks_fts` with the shared column weights, in column order:
 * chunk_id and document_id (unindexed), document_name, section_path, content.
 */
export const FTS5_BM25 = `bm25(knowledge_chunks_fts, 0, 0, ${COLUMN_WEIGHTS.name}, ${COLUMN_WEIGHTS.section}, ${COLUMN_WEIGHTS.content})`;

/**
 * OR of the query's word groups (queryWordGroups), each word quoted; the words of one group
 * (a segmented CJK or Thai word) AND-ed: `("训练" AND "数据") OR "model"`. Null when the text
 * has no word at all.
 */
export function buildFtsQuery(text: string, maxTerms = 64): string | null {
  const groups = queryWordGroups(text, maxTerms);
  if (groups.length === 0) return null;
  return groups
    .map((g) => (g.length === 1 ? `"${g[0] ?? ''}"` : `(${g.map((w) => `"${w}"`).join(' AND ')})`))
    .join(' OR ');
}
