/**
 * The keyword side of a search on SQLite (sqlite-searches.ts asks it), from the query's text: its
 * words as the in-process keyword index's lexemes (keyword/keyword-index.ts), or FTS5 itself for a
 * phrase query (a word FTS5 cuts in several tokens); its largest attainable BM25; and the BM25 of
 * chosen chunks (a hybrid search's nearest ones). The scores are FTS5's either way.
 */
import { SEARCHABLE, type Candidate, type IndexScope } from '../chunk-store.js';
import { queryWordGroups } from '../query-terms.js';
import { sharedLexer } from './keyword/fts5-lexer.js';
import { buildFtsQuery, FTS5_BM25 } from './keyword/fts-query.js';
import { CURRENT, type InProcessCopies } from './copies/in-process-copies.js';
import type { Statements } from './statements.js';

/** `and …` conditions for the scope (documents `d`, chunks `c`). */
function scopeSql(scope: IndexScope, params: unknown[]): string {
  let where = '';
  if (scope.projectId !== undefined) {
    where += ' and d.project_id = ?';
    params.push(scope.projectId);
  }
  if (scope.documents !== undefined) {
    where += ' and c.document_id in (select value from json_each(?))';
    params.push(JSON.stringify([...scope.documents]));
  }
  return where;
}

/**
 * A query's text and its word groups as the in-process index's lexemes (one per word, -1 for a
 * lexeme no text had); 'phrase' when a word is one FTS5 cuts in several tokens (or none): FTS5
 * answers it. Parsed once per search.
 */
export interface KeywordQuery {
  text: string;
  lexemes: number[][] | 'phrase';
  /** Every token of its words, a word FTS5 cuts in several with all of them (for `max`). */
  tokens: number[];
}

export class KeywordQueries {
  constructor(
    private readonly indexes: InProcessCopies,
    private readonly statement: Statements,
  ) {}

  /** The query's text as the index's lexemes (`KeywordQuery`). */
  parse(text: string): KeywordQuery {
    const groups = queryWordGroups(text);
    const words = sharedLexer().tokenize(groups.flat());
    const tokens = words.flatMap((w) => Array.from(w));
    if (!words.every((w) => w.length === 1)) return { text, lexemes: 'phrase', tokens };
    let at = 0;
    return { text, lexemes: groups.map((g) => g.map(() => words[at++]?.[0] ?? -1)), tokens };
  }

  /** FTS5's best `limit` chunks for a phrase query, within the scope (searchable ones only). */
  phraseSearch(query: KeywordQuery, filter: IndexScope, limit: number): Candidate[] {
    const params: unknown[] = [buildFtsQuery(query.text)];
    const scope = scopeSql(filter, params);
    params.push(limit);
    return this.statement(
      `select f.chunk_id as chunkId, -${FTS5_BM25} as score
       from knowledge_chunks_fts f
       join knowledge_chunks c on c.id = f.chunk_id
       join knowledge_documents d on d.id = c.document_id
       where knowledge_chunks_fts match ? and ${SEARCHABLE} and ${CURRENT}${scope}
       order by ${FTS5_BM25} limit ?`,
    ).all(...params) as Candidate[];
  }

  /**
   * The BM25 of the given chunks for the query, by chunk id, of those that hold its words: the
   * number the keyword search gives each.
   */
  scoresOf(
    query: KeywordQuery,
    chunks: readonly { chunkId: string; documentId: string; place?: number }[],
  ): Map<string, number> {
    if (chunks.length === 0) return new Map();
    const { lexemes } = query;
    if (lexemes !== 'phrase') return this.indexes.keywordIndex().scoresOf(lexemes, chunks);
    const rows = this.statement(
      `select chunk_id, -${FTS5_BM25} from knowledge_chunks_fts
       where knowledge_chunks_fts match ? and chunk_id in (select value from json_each(?))`,
    )
      .raw()
      .all(buildFtsQuery(query.text), JSON.stringify(chunks.map((c) => c.chunkId))) as [
      string,
      number,
    ][];
    return new Map(rows);
  }

  /** The query's largest attainable BM25 (Evidence.keywordMax), from the in-process index. */
  max(query: KeywordQuery): number {
    return query.tokens.length === 0 ? 0 : this.indexes.keywordIndex().maxScore(query.tokens);
  }
}
