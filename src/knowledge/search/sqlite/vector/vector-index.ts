/**
 * An in-process exact vector index of one vector table (one model): the table's vectors,
 * normalised, as int8 rows scanned by a WebAssembly SIMD kernel (the first pass). A search scans
 * the int8 rows, re-scores the best `candidates(limit)` exactly from their stored
 * float32 vectors (read from the table by chunk id: `VectorSource`, none kept in memory) and
 * returns the top `limit` by exact cosine: 100k × 100-d in ~1–2 ms.
 *
 * From `annMin` rows on, an HNSW graph (ann-graph.ts) gives the candidates instead of the scan
 * (rows not in the graph yet are scanned), re-scored the same way: sub-linear past the size
 * where a scan costs more than a graph search.
 *
 * The rows, and their graph, are a VectorStore's (vector-store.ts); this is their search. The
 * SQLite table stays the source of truth; the in-process copies (copies/in-process-copies.ts)
 * load this index from it and keep it current.
 */
import type { DocumentCandidate, IndexScope } from '../../chunk-store.js';
import type { AnnGraph } from './ann-graph.js';
import type {
  BoundedNearest,
  VectorIndexOptions,
  VectorSource,
  VectorState,
} from './vector-types.js';
import { VectorStore } from './vector-store.js';

/**
 * The candidates re-scored exactly (each read from the table) for `limit` results. The int8
 * order is close to the exact one: at 1M rows the int8 top 165 held all of the exact top 132
 * (docs/performance.md). A quarter more, and 16, for margin.
 */
function candidates(limit: number): number {
  return Math.max(Math.ceil(limit * 1.25) + 16, 64);
}
/** A document scope of at most this many rows (or a 16th of the index) is ranked row by row. */
const SCOPE_ROWS = 1024;

export type { IndexRow, VectorIndexOptions, VectorSource, VectorState } from './vector-types.js';

export class VectorIndex extends VectorStore {
  /**
   * An index holding a snapshot's rows: the arrays are copied into its own, or with `owned`
   * (arrays of exactly `count` rows that nothing else holds: a snapshot file's sections) kept as
   * they are. The int8 rows are copied either way (they live in the scan's WebAssembly memory).
   */
  static fromState(
    state: VectorState,
    source: VectorSource,
    options: VectorIndexOptions = {},
    owned = false,
  ): VectorIndex {
    const index = new VectorIndex(state.dims, source, options);
    index.restore(state, owned);
    return index;
  }

  /**
   * The rows a search for the best `limit` looks at (the graph's candidates, a scope's rows or the
   * scan's best by int8), with the normalised query; null when there are none.
   */
  private found(
    vector: Float32Array,
    filter: IndexScope,
    limit: number,
    fused: boolean,
  ): { query: Float32Array; rows: readonly number[] } | null {
    const query = this.vectors.normalise(vector);
    if (query === null || limit <= 0) return null;
    const documents = filter.documents;
    // The project's number; -1: any project, none known: no rows.
    let project = -1;
    if (filter.projectId !== undefined) {
      const number = this.projects.find(filter.projectId);
      if (number === undefined) return null;
      project = number;
    }
    let rows: Int32Array | number[] | null = null;
    let allowed: Uint8Array | null = null;
    if (documents !== undefined) {
      // A few documents' rows: ranked one by one, no scan.
      let total = 0;
      allowed = new Uint8Array(this.documents.size);
      for (const id of documents) {
        const document = this.documents.find(id);
        if (document === undefined) continue;
        allowed[document] = 1;
        total += this.rowsOf.get(document)?.length ?? 0;
      }
      if (total <= Math.max(SCOPE_ROWS, this.size / 16)) {
        const own = this.rowsOfDocuments(documents, project);
        rows = this.vectors.int8Top(query, own, candidates(limit));
      }
    }
    if (
      rows === null &&
      this.graph !== null &&
      this.graph.failed === null &&
      this.graph.covered > 0
    ) {
      rows = this.approximate(this.graph, query, limit, fused, project, allowed);
    }
    rows ??= this.scanTop(query, 0, candidates(limit), project, allowed);
    return { query, rows: Array.from(rows) };
  }

  /**
   * The `limit` rows nearest to `vector` by cosine similarity within the scope (project key,
   * documents), best first; `score` is the cosine similarity. `fused`: they will be fused with
   * keyword candidates whose cosines are exact (a hybrid search: the graph looks less far).
   */
  search(
    vector: Float32Array,
    filter: IndexScope,
    limit: number,
    fused = false,
  ): DocumentCandidate[] {
    const found = this.found(vector, filter, limit, fused);
    if (found === null) return [];
    const { query, rows } = found;
    // Only the rows that can make the top `limit` are read and scored exactly.
    const list = this.vectors.contenders(query, rows, limit);
    const ids = this.keys.idsOf(list);
    const scores = this.vectors.exactScores(query, list, ids, this.keys.rowidsOf(list));
    const scored = list.map((r, i) => ({ r, id: ids[i] ?? '', score: scores[i] as number }));
    scored.sort((a, b) => b.score - a.score);
    return scored.slice(0, limit).map((s) => ({
      chunkId: s.id,
      documentId: this.documents.id(this.documentOf[s.r] ?? 0),
      score: s.score,
    }));
  }

  /**
   * What `search` looks at before it reads: every row it would consider for the best `limit`,
   * with bounds of its exact cosine from the int8 row (nothing read), in no order. A hybrid search
   * reads only the ones that can reach its fused answer (fused-cosines.ts).
   */
  nearestBounds(
    vector: Float32Array,
    filter: IndexScope,
    limit: number,
    fused = false,
  ): BoundedNearest[] {
    const found = this.found(vector, filter, limit, fused);
    if (found === null) return [];
    const { rows } = found;
    const { lower, upper } = this.vectors.cosineBounds(found.query, rows);
    const ids = this.keys.idsOf(rows);
    return rows.map((r, i) => ({
      chunkId: ids[i] ?? '',
      documentId: this.documents.id(this.documentOf[r] ?? 0),
      lower: lower[i] as number,
      upper: upper[i] as number,
      place: this.rowsOf.get(this.documentOf[r] ?? 0)?.indexOf(r) ?? -1,
    }));
  }

  /**
   * The best `keep` rows from `from` on by the int8 scan, within the project (-1: any) and the
   * allowed documents (null: any).
   */
  private scanTop(
    query: Float32Array,
    from: number,
    keep: number,
    project: number,
    allowed: Uint8Array | null,
  ): Int32Array {
    const { keys, projectOf, documentOf } = this;
    return this.vectors.scanTop(query, from, this.count, keep, (r) => {
      if (!keys.has(r) || (project !== -1 && projectOf[r] !== project)) return false;
      return allowed === null || allowed[documentOf[r] as number] === 1;
    });
  }

  /**
   * Candidates from the graph plus the scanned rows it does not hold yet; null when a scope
   * leaves fewer than `limit` of the graph's (the caller scans instead).
   */
  private approximate(
    graph: AnnGraph,
    query: Float32Array,
    limit: number,
    fused: boolean,
    project: number,
    allowed: Uint8Array | null,
  ): number[] | null {
    const want = candidates(limit);
    const found = graph.search(query, want, fused);
    if (found === null) return null;
    const rows: number[] = [];
    for (const r of found) {
      if (!this.keys.has(r) || (project !== -1 && this.projectOf[r] !== project)) continue;
      if (allowed !== null && allowed[this.documentOf[r] as number] !== 1) continue;
      rows.push(r);
    }
    const scoped = project !== -1 || allowed !== null;
    if (scoped && rows.length < Math.min(limit, graph.size)) return null;
    if (graph.covered < this.count) {
      // Rows on their way to the graph may be in both.
      const seen = new Set(rows);
      for (const r of this.scanTop(query, graph.covered, want, project, allowed)) {
        if (!seen.has(r)) rows.push(r);
      }
    }
    return rows;
  }

  /**
   * Asks the graph now for the candidates `search(vector, filter, limit)` will take, so that it
   * looks for them while the caller does other work (sqlite-searches.ts ranks the keywords
   * meanwhile).
   */
  prefetch(vector: Float32Array, filter: IndexScope, limit: number, fused = false): void {
    const graph = this.graph;
    if (graph === null || graph.failed !== null || graph.covered === 0) return;
    if (filter.documents !== undefined) return;
    const query = this.vectors.normalise(vector);
    if (query !== null) graph.prefetch(query, candidates(limit), fused);
  }

  /** Cosine similarity of `vector` with each given chunk that has a row. */
  similarities(vector: Float32Array, chunkIds: readonly string[]): Map<string, number> {
    const { query, rows, ids } = this.chunkRows(vector, chunkIds);
    const scores =
      query === null ? null : this.vectors.exactScores(query, rows, ids, this.keys.rowidsOf(rows));
    return new Map(ids.map((id, i) => [id, scores?.[i] ?? 0]));
  }

  /**
   * Bounds of what `similarities` gives, from the int8 rows (nothing read); a chunk without a row
   * has none (its cosine counts as 0).
   */
  cosineBounds(
    vector: Float32Array,
    chunkIds: readonly string[],
  ): Map<string, { lower: number; upper: number }> {
    const { query, rows, ids } = this.chunkRows(vector, chunkIds);
    const bounds = query === null ? null : this.vectors.cosineBounds(query, rows);
    return new Map(
      ids.map((id, i) => [id, { lower: bounds?.lower[i] ?? 0, upper: bounds?.upper[i] ?? 0 }]),
    );
  }

  private chunkRows(vector: Float32Array, chunkIds: readonly string[]) {
    const query = this.vectors.normalise(vector);
    const rows: number[] = [];
    for (const id of chunkIds) {
      const r = this.keys.row(id);
      if (r !== undefined) rows.push(r);
    }
    return { query, rows, ids: this.keys.idsOf(rows) };
  }
}
