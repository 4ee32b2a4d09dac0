/**
 * A hybrid search's vector side goes only as deep as the answer (`Ranking.fusedTop`, chunk-store.ts),
 * and it reads the cosines of only the keyword candidates that could enter it (`fusedScorer`,
 * fused-cosines.ts): the fused answer of length k is the same as with the full candidate lists,
 * on random chunks whose keyword evidence is weak enough that chunks the keyword search does not
 * rank do make the answers. Either way the nearest chunks that hold a query word are fused with
 * their BM25.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../../src/db/migrations/index.js';
import { migrate } from '../../../src/db/migrator.js';
import { openSqlite } from '../../../src/db/sqlite.js';
import { seededRandom } from '../../../src/knowledge/embeddings/static/sif.js';
import { fusedScorer, rank } from '../../../src/knowledge/retrieval/ranking.js';
import type { Candidate, Evidence } from '../../../src/knowledge/search/chunk-store.js';
import { SqliteChunkStore } from '../../../src/knowledge/search/sqlite/sqlite-chunk-store.js';
import { tempDir } from '../../helpers.js';
import { commitDocument } from '../helpers.js';

const DIMS = 16;
const MODEL = 'test-model';
const WORDS = ['amber', 'basalt', 'cobalt', 'dune', 'ember', 'fjord', 'garnet', 'heath'];
const random = seededRandom(5);
const pick = () => WORDS[Math.floor(random() * WORDS.length)] ?? 'amber';
const vectorOf = () => Float32Array.from({ length: DIMS }, () => random() * 2 - 1);

const database = openSqlite(join(tempDir(), 'aps.sqlite'));
afterAll(() => database.close());

describe('the depth of a hybrid search', () => {
  it('gives the answer of the full lists with only the answer’s length of nearest chunks', async () => {
    expect((await migrate(database, MIGRATIONS)).status).toBe('ok');
    const store = new SqliteChunkStore(database.native, {});
    await commitDocument(store, database.native, { model: MODEL, dimensions: DIMS }, () =>
      Array.from({ length: 400 }, (_, i) => ({
        id: randomUUID(),
        chunkIndex: i,
        sectionPath: 'section',
        page: null,
        // Common words in long chunks: BM25 far below what the query could score, so a close
        // vector without the words can outrank a match.
        content: Array.from({ length: 3 + Math.floor(random() * 60) }, pick).join(' '),
        tokenEstimate: 10,
        metadata: {},
        contentHash: `h${i}`,
        vector: vectorOf(),
      })),
    );
    await store.warm(MODEL);

    let meaningOnly = 0;
    let nearestMatched = 0;
    let skipped = 0;
    let candidates = 0;
    for (let q = 0; q < 40; q++) {
      const text = `${pick()} ${pick()}`;
      const vector = vectorOf();
      const topK = 1 + (q % 12);
      const body = { mode: 'hybrid' as const, topK, minScore: undefined };
      const embedding = { vector, coverage: 1 };
      const fusedScore = (keyword: readonly Candidate[], keywordMax: number) =>
        fusedScorer(keyword, { keywordMax, coverage: embedding.coverage });
      const answer = async (fusedTop?: number, prune = false) => {
        let seen: Evidence | undefined;
        const request = { text, vector, model: MODEL, filter: {}, limit: 100 };
        const hits = await store.search(request, {
          ...(fusedTop === undefined ? {} : { fusedTop }),
          ...(prune ? { fusedScorer: fusedScore } : {}),
          rank: (evidence) => {
            seen = evidence;
            return rank(body, embedding, evidence);
          },
        });
        return { hits: hits.map((h) => [h.chunk.id, h.score]), evidence: seen };
      };
      const full = await answer();
      const shallow = await answer(topK);
      const pruned = await answer(topK, true);
      expect(shallow.hits).toEqual(full.hits);
      expect(pruned.hits).toEqual(full.hits);
      // The keyword candidates whose cosine was not read (fused-cosines.ts).
      const unread = (e: Evidence | undefined) =>
        e?.keyword.filter((k) => !e.cosine.has(k.chunkId)).length ?? 0;
      expect(unread(shallow.evidence)).toBe(0);
      skipped += unread(pruned.evidence);
      candidates += pruned.evidence?.keyword.length ?? 0;
      expect(shallow.evidence?.semantic.length).toBe(topK);
      expect(full.evidence?.semantic.length).toBe(100);
      // The keyword search's own candidates; the others in the answer came by their vectors.
      const ranked = new Set(store.keywordSearch(text, {}, 100).map((k) => k.chunkId));
      meaningOnly += full.hits.filter(([chunkId]) => !ranked.has(chunkId as string)).length;
      // Nearest chunks below the keyword depth that hold a query word are fused with their BM25,
      // the one a deeper keyword search gives them.
      const deep = new Map(store.keywordSearch(text, {}, 1000).map((k) => [k.chunkId, k.score]));
      for (const k of pruned.evidence?.keyword ?? []) {
        if (ranked.has(k.chunkId)) continue;
        expect(k.score).toBe(deep.get(k.chunkId));
        nearestMatched++;
      }
    }
    // Not a vacuous check: chunks without a keyword match are in the answers.
    expect(meaningOnly).toBeGreaterThan(20);
    expect(nearestMatched).toBeGreaterThan(100);
    // …and most keyword candidates' cosines are never read.
    expect(skipped).toBeGreaterThan(candidates / 2);
    await store.close();
  });
});
