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

/** A lexeme of a query group: `weight` = its idf times the number of identical groups. */
interface Bm25Part {
  lexeme: string;
  df: number;
  weight: number;
}

/**
 * A query group for BM25: one lexeme (a word), or several that must all occur (a segmented CJK
 * or Thai word; FTS5's `("a" AND "b")`).
 */
interface Bm25Term {
  parts: Bm25Part[];
  /** The group's weight: the sum of its parts'. */
  weight: number;
  /** Chunks that can match it at most: its rarest part's. */
  df: number;
}

interface ScoredChunk {
  chunkId: string;
  seq: number;
  score: number;
}

/** A lexeme quoted for a tsquery (never read as tsquery syntax). */
const quoted = (lexeme: string) => `'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;

/** A tsquery matching any of the groups (a group: all of its lexemes). */
function tsqueryOr(terms: readonly Bm25Term[]): string {
  return terms
    .map((t) =>
      t.parts.length === 1
        ? quoted(t.parts[0]?.lexeme ?? '')
        : `(${t.parts.map((p) => quoted(p.lexeme)).join(' & ')})`,
    )
    .join(' | ');
}

export class KeywordSearch {
  /**
   * @param roundPostings Postings a MaxScore round takes at most (default 5,000); tests force
   *   rounds with 1.
   */
  constructor(private readonly roundPostings = ROUND_POSTINGS) {}

  /**
   * Keyword candidates of the query word groups (keywordQueryWords) ranked by BM25, with N, n and
   * the average length over every chunk in the index (the statistics tables); and `max`, the
   * largest BM25 a chunk could score for these words (bm25.ts maxBm25: every word, also one in no
   * chunk, with its idf), as the SQLite store computes it.
   *
   * Every chunk matching a word must be scored, but not those that cannot reach the top (MaxScore):
   * the rarest words first, then the commoner ones only while a chunk holding nothing else could
   * still beat the current `limit`-th score (a word adds less than idf · (k1 + 1)).
   */
  async search(
    client: PoolClient,
    groups: string[][],
    filter: SearchFilter,
    limit: number,
  ): Promise<{ candidates: Candidate[]; max: number }> {
    const words = groups.flat();
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
    // One term per distinct group; a group of several words counts once per word, as FTS5
    // phrases do (`run running` counts the lexeme `run` twice).
    const byKey = new Map<string, Bm25Term>();
    let at = 0;
    for (const group of groups) {
      const lexemes = group.map(() => rows[at++] ?? { lexeme: '', df: 0 });
      // A lexeme in no chunk: the group matches and scores nothing.
      if (lexemes.some((r) => r.df === 0)) continue;
      const single = lexemes.length === 1;
      const key = single
        ? (lexemes[0]?.lexeme ?? '')
        : JSON.stringify(lexemes.map((r) => r.lexeme));
      const term = byKey.get(key);
      if (term !== undefined) {
        for (const p of term.parts) p.weight += idf(stats.n, p.df);
        term.weight = term.parts.reduce((sum, p) => sum + p.weight, 0);
        continue;
      }
      const parts = lexemes.map((r) => ({
        lexeme: r.lexeme,
        df: r.df,
        weight: idf(stats.n, r.df),
      }));
      byKey.set(key, {
        parts,
        weight: parts.reduce((sum, p) => sum + p.weight, 0),
        df: Math.min(...parts.map((p) => p.df)),
      });
    }
    const terms = [...byKey.values()];
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
    const frequency = (p: Bm25Part) =>
      `${RANK_SCALE} * ts_rank_cd('${RANK_WEIGHTS}', f.terms, ${param(quoted(p.lexeme))}::tsquery)::float8`;
    const k = `${K1}::float8 * (${1 - B}::float8 + ${B}::float8 * f.token_count / $1::float8)`;
    let where = 'f.terms @@ $3::tsquery';
    if (round.before.length > 0) {
      where += ` and not f.terms @@ ${param(tsqueryOr(round.before))}::tsquery`;
    }
    if (filter.projectId !== undefined) where += ` and f.project_key = ${param(filter.projectId)}`;
    if (filter.documentId !== undefined) {
      where += ` and f.document_id = ${param(filter.documentId)}`;
    }
    if (filter.documentIds !== undefined) {
      where += ` and f.document_id = any(${param(filter.documentIds)}::text[])`;
    }
    if (round.prune !== null) {
      // w·f·(k1+1)/(f+K) written as w·(k1+1)·(1 − K/(f+K)): f computed once. A bound only (the
      // score below is FTS5's formula; a group's parts counted even where it does not match),
      // hence the margin.
      const partial = round.round
        .flatMap((t) => t.parts)
        .map(
          (p) => `${param(p.weight * (K1 + 1))}::float8 * (1 - (${k}) / (${frequency(p)} + ${k}))`,
        )
        .join(' + ');
      where += ` and ${partial} >= ${param(round.prune.threshold - round.prune.rest - 1e-9)}::float8`;
    }
    // The chunks hold none of the earlier groups: those score 0 and are left out of the sum.
    const scored = terms.filter((t) => !round.before.includes(t));
    const columns: string[] = [];
    const score = scored
      .map((t) => {
        const parts = t.parts.map((p) => {
          const f = `x.f${columns.length}`;
          columns.push(`${frequency(p)} as f${columns.length}`);
          return {
            f,
            sum: `${param(p.weight)}::float8 * (${f} * ${K1 + 1}::float8) / (${f} + x.k)`,
          };
        });
        const sum = parts.map((p) => p.sum).join(' + ');
        // A group scores only where all its lexemes occur, as FTS5's AND.
        return parts.length === 1
          ? sum
          : `(case when ${parts.map((p) => `${p.f} > 0`).join(' and ')} then ${sum} else 0 end)`;
      })
      .join(' + ');
    const frequencies = columns.join(', ');
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
