/**
 * Keyword search on PostgreSQL: BM25 exactly as FTS5's bm25() scores it (../bm25.ts), from the
 * statistics tables kept by keyword-rows.ts, ranked by MaxScore rounds in SQL.
 */
import type { PoolClient } from 'pg';
import { B, idf, K1, maxBm25 } from '../bm25.js';
import { SEARCHABLE, type Candidate, type SearchFilter } from '../chunk-store.js';
import { RANK_SCALE, RANK_WEIGHTS } from './keyword-rows.js';
import { stemSql } from './words.js';

/** A MaxScore round takes words while they match at most this many chunks together. */
const ROUND_POSTINGS = 5000;

/** A query lexeme for BM25: `weight` = its idf times the number of query words it stems from. */
interface Bm25Term {
  lexeme: string;
  df: number;
  idf: number;
  weight: number;
}

interface ScoredChunk {
  chunkId: string;
  seq: number;
  score: number;
}

/** A tsquery matching any of the lexemes (quoted: no lexeme is read as tsquery syntax). */
function tsqueryOr(terms: readonly Bm25Term[]): string {
  return terms
    .map((t) => `'${t.lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`)
    .join(' | ');
}

export class KeywordSearch {
  /**
   * @param roundPostings Postings a MaxScore round takes at most (default 5,000); tests force
   *   rounds with 1.
   */
  constructor(private readonly roundPostings = ROUND_POSTINGS) {}

  /**
   * Keyword candidates of the query words (keywordQueryWords) ranked by BM25, with N, n and the
   * average length over every chunk in the index (the statistics tables); and `max`, the largest
   * BM25 a chunk could score for these words (bm25.ts maxBm25: every word, also one in no chunk,
   * with its idf), as the SQLite store computes it.
   *
   * Every chunk matching a word must be scored, but not those that cannot reach the top (MaxScore):
   * the rarest words first, then the commoner ones only while a chunk holding nothing else could
   * still beat the current `limit`-th score (a word adds less than idf · (k1 + 1)).
   */
  async search(
    client: PoolClient,
    words: string[],
    filter: SearchFilter,
    limit: number,
  ): Promise<{ candidates: Candidate[]; max: number }> {
    const { rows } = await client.query<{ lexeme: string; df: number; n: number; tokens: number }>(
      `select l.lexeme, coalesce(t.chunks, 0)::float8 as df, s.chunks::float8 as n,
         s.tokens::float8 as tokens
       from unnest($1::text[]) with ordinality as w(word, ord)
         cross join lateral (select ${stemSql('w.word')} as lexeme) as l
         left join knowledge_fts_terms t on t.lexeme = l.lexeme
         cross join knowledge_fts_stats s
       order by w.ord`,
      [words],
    );
    const stats = rows[0];
    if (stats === undefined || stats.n === 0) return { candidates: [], max: 0 };
    const max = maxBm25(rows.map((r) => idf(stats.n, r.df)));
    // As on SQLite, where the project filter compares the documents' project_id.
    if (filter.projectId === '') return { candidates: [], max };
    // One term per lexeme; a lexeme of several words counts once per word, as FTS5 phrases do.
    const byLexeme = new Map<string, Bm25Term>();
    for (const r of rows) {
      if (r.df === 0) continue; // in no chunk: it matches and scores nothing
      const term = byLexeme.get(r.lexeme);
      if (term !== undefined) {
        term.weight += term.idf;
        continue;
      }
      const weight = idf(stats.n, r.df);
      byLexeme.set(r.lexeme, { lexeme: r.lexeme, df: r.df, idf: weight, weight });
    }
    const terms = [...byLexeme.values()];
    if (terms.length === 0) return { candidates: [], max };
    const avgdl = stats.tokens / stats.n;
    const fast = await this.bm25TopK(client, terms, avgdl, filter, limit + 32, false);
    // The status of the documents is checked on the ranked rows: unsearchable chunks (of failed
    // re-indexes) are rare. Too many of them to be sure of the top `limit`: rank again, joined.
    const searchable = await this.searchableChunks(
      client,
      fast.map((c) => c.chunkId),
    );
    const kept = fast.filter((c) => searchable.has(c.chunkId));
    if (kept.length >= limit || fast.length < limit + 32) {
      return { candidates: kept.slice(0, limit), max };
    }
    return { candidates: await this.bm25TopK(client, terms, avgdl, filter, limit, true), max };
  }

  /** The `fetch` best-scoring chunks (ties in index order), by MaxScore rounds. */
  private async bm25TopK(
    client: PoolClient,
    terms: Bm25Term[],
    avgdl: number,
    filter: SearchFilter,
    fetch: number,
    joined: boolean,
  ): Promise<Candidate[]> {
    // Rarest first: they bound the score of a chunk most, and match the fewest chunks.
    const order = [...terms].sort((a, b) => b.weight - a.weight);
    const bound = (from: number) =>
      order.slice(from).reduce((sum, t) => sum + t.weight * (K1 + 1), 0);
    let best: ScoredChunk[] = [];
    let done = 0;
    while (done < order.length) {
      // This round's words: the next one, and more while they match few chunks together.
      let end = done + 1;
      let postings = order[done]?.df ?? 0;
      while (end < order.length && postings + (order[end]?.df ?? 0) <= this.roundPostings) {
        postings += order[end]?.df ?? 0;
        end++;
      }
      const threshold = best.length < fetch ? null : (best[fetch - 1]?.score ?? null);
      const round = await this.bm25Round(client, {
        terms,
        avgdl,
        round: order.slice(done, end),
        before: order.slice(0, done),
        prune: threshold === null ? null : { threshold, rest: bound(end) },
        filter,
        fetch,
        joined,
      });
      best = [...best, ...round].sort((a, b) => b.score - a.score || a.seq - b.seq).slice(0, fetch);
      done = end;
      // A chunk with none of the words scored so far scores less than the rest's bounds together.
      if (best.length === fetch && bound(done) <= (best[fetch - 1]?.score ?? 0)) break;
    }
    return best.map((c) => ({ chunkId: c.chunkId, score: c.score }));
  }

  /**
   * One MaxScore round: the chunks matching one of `round`'s words and none of `before`'s, best
   * `fetch` first. With `prune`, a chunk is scored in full only if its score on the round's words
   * plus the bounds of the words after them (`rest`) can reach `threshold`. Scope filters apply
   * on the keyword rows themselves; `joined` checks the documents' status inside.
   */
  private async bm25Round(
    client: PoolClient,
    round: {
      terms: Bm25Term[];
      avgdl: number;
      round: Bm25Term[];
      before: Bm25Term[];
      prune: { threshold: number; rest: number } | null;
      filter: SearchFilter;
      fetch: number;
      joined: boolean;
    },
  ): Promise<ScoredChunk[]> {
    const { terms, filter } = round;
    const params: unknown[] = [round.avgdl, round.fetch, tsqueryOr(round.round)];
    const param = (value: unknown) => {
      params.push(value);
      return `$${params.length}`;
    };
    // Weighted occurrences of a lexeme: ts_rank_cd of a one-lexeme query sums the weights of its
    // positions (RANK_WEIGHTS).
    const frequency = (t: Bm25Term) =>
      `${RANK_SCALE} * ts_rank_cd('${RANK_WEIGHTS}', f.terms, ${param(tsqueryOr([t]))}::tsquery)::float8`;
    const k = `${K1}::float8 * (${1 - B}::float8 + ${B}::float8 * f.token_count / $1::float8)`;
    let where = 'f.terms @@ $3::tsquery';
    if (round.before.length > 0) {
      where += ` and not f.terms @@ ${param(tsqueryOr(round.before))}::tsquery`;
    }
    if (filter.projectId !== undefined) where += ` and f.project_key = ${param(filter.projectId)}`;
    if (filter.documentId !== undefined) {
      where += ` and f.document_id = ${param(filter.documentId)}`;
    }
    if (round.prune !== null) {
      // w·f·(k1+1)/(f+K) written as w·(k1+1)·(1 − K/(f+K)): f computed once. A bound only (the
      // score below is FTS5's formula), hence the margin.
      const partial = round.round
        .map(
          (t) => `${param(t.weight * (K1 + 1))}::float8 * (1 - (${k}) / (${frequency(t)} + ${k}))`,
        )
        .join(' + ');
      where += ` and ${partial} >= ${param(round.prune.threshold - round.prune.rest - 1e-9)}::float8`;
    }
    // The chunks hold none of the earlier words: those score 0 and are left out of the sum.
    const scored = terms.map((t, i) => ({ t, i })).filter(({ t }) => !round.before.includes(t));
    const frequencies = scored.map(({ t, i }) => `${frequency(t)} as f${i}`).join(', ');
    const score = scored
      .map(
        ({ t, i }) =>
          `${param(t.weight)}::float8 * (x.f${i} * ${K1 + 1}::float8) / (x.f${i} + x.k)`,
      )
      .join(' + ');
    const { rows } = await client.query<ScoredChunk>(
      `select f.chunk_id as "chunkId", f.seq::float8 as seq, ${score} as score
       from knowledge_chunks_fts f
         ${round.joined ? 'join knowledge_documents d on d.id = f.document_id' : ''}
         -- offset 0: each frequency computed once per chunk, not once per use
         cross join lateral (select ${frequencies}, ${k} as k offset 0) as x
       where ${where}${round.joined ? ` and ${SEARCHABLE}` : ''}
       order by score desc, f.seq
       limit $2`,
      params,
    );
    return rows;
  }

  /** Which of the chunks belong to searchable documents. */
  private async searchableChunks(client: PoolClient, chunkIds: string[]): Promise<Set<string>> {
    if (chunkIds.length === 0) return new Set();
    const { rows } = await client.query<{ id: string }>(
      `select f.chunk_id as id from knowledge_chunks_fts f
       join knowledge_documents d on d.id = f.document_id
       where f.chunk_id = any($1::text[]) and ${SEARCHABLE}`,
      [chunkIds],
    );
    return new Set(rows.map((r) => r.id));
  }
}
