/**
 * How a retrieval hit's score is made, in one place (pure): the score of each mode, the fusion of
 * keyword and vector evidence for hybrid, the stand-out factor, the merge of the cosines, and the
 * final order, `minScore` and `topK`. A store gathers the candidates and calls the `Ranking` this
 * module makes (rankingFor) inside its read snapshot (chunk-store.ts).
 *
 *   keyword  = 0.1 + 0.9 × BM25 / (BM25 + 16)                                 (keywordScore)
 *   semantic = the cosine
 *   hybrid   = a passage's keyword evidence, plus its dense evidence in the room that the
 *              query's best keyword evidence leaves, scaled by how much of the query the
 *              embedding model understood:
 *
 *   r     = BM25 / M                    M = the query's largest attainable BM25 (bm25.ts maxBm25)
 *   K     = T × x / (1 + x), x = (r / keywordHalf)^steepness        (0 without a keyword match)
 *   T     = 1 − exp(−M / trustScale)    (how much any match of this query can say)
 *   fused = K + denseWeight × coverage × (1 − K*) × clamp(cosine, 0, 1)   K* = the best K
 *   score = fused × S,  S = 1 − standOutWeight × (1 − min(1, gap / standOutGap))
 *   gap   = (best BM25 − the next lower BM25 among the candidates) / M      (the best alone: its own)
 *
 * Why relative: a query's BM25 grows with its words and their rarity, so one absolute half
 * (such as BM25 16) reads a single rare identifier matched in full (BM25 5–13) as weak evidence
 * and lets a noisy cosine overtake it; r says how much of what this query could score a passage
 * holds, whatever the query's length. T lets the cosine rank where every query word is common (a
 * tiny collection, where FTS5's idf collapses to ~0): there M is ~0, so even a "full" match says
 * nothing.
 * Why coverage: the static model has no vector for identifiers (`BZ_NO_STDIO`, `CrcWordByWord`);
 * a query made of them gets a vector from its few known words, so its cosine is noise. Coverage
 * (EmbeddingProvider.embedSearchQuery: the informative share of the query the model knows; 1 for
 * subword models) shrinks the cosine's room accordingly.
 *
 * Why S (the stand-out factor, one per query, so it never changes the order): it makes the score's
 * level say whether the corpus answers at all, which `minScore` reads. A passage that answers
 * usually stands out from the other keyword matches; when the best match scores like the next one,
 * the query's words are merely common to the topic (on-topic questions that the documents do not
 * answer: realdocs' unanswerable set, docs/knowledge-base.md) and every score of the query is lowered by up to
 * standOutWeight. Exact duplicates (equal BM25) do not count as the next match.
 *
 * Invariants (property tests in test/unit/knowledge/ranking.test.ts): scores in [0, 1); the order
 * is the order without S; a score never falls when the passage's own cosine rises, nor its score
 * before S when its BM25 rises, and raising one passage's BM25 never lowers its rank (it can only
 * shrink the others' room); a score is at least S × the passage's keyword evidence K; with
 * coverage 0 the order is the keyword order (the cosine only ranks meaning-only passages among
 * themselves, below every match); the score never rises when coverage falls.
 * Comparable across queries: where a query has a strong keyword match, scores ≈ K; where it has
 * none, scores ≈ denseWeight × coverage × cosine.
 */
import { findEmbeddingModel, type FusionProfile } from '../embeddings/catalogue.js';
import type { QueryEmbedding } from '../embeddings/provider.js';
import { MODEL_NAME as STATIC_MODEL } from '../embeddings/static/cache.js';
import type { Candidate, Evidence, Ranking } from '../search/chunk-store.js';
import type { RetrieveBody } from './retrieval.schemas.js';

export interface FusionOptions {
  /** Share r of the query's largest attainable BM25 at which keyword evidence is half-strong. */
  keywordHalf: number;
  /** Steepness p of the calibration of r ((r/half)^p). */
  steepness: number;
  /** Weight (0..1) of the cosine in the room 1 − K* that the best keyword evidence leaves. */
  denseWeight: number;
  /** Scale of the query's largest attainable BM25 below which its matches count less (T). */
  trustScale: number;
  /** Most that S lowers a query's scores when its best keyword match does not stand out (0..1). */
  standOutWeight: number;
  /** Lead of the best match over the next (share of M) from which S is 1. */
  standOutGap: number;
  /** Cosine read as no evidence (the level of unrelated passages); 0 for word vectors. */
  cosineFloor: number;
  /** Cosine read as full evidence; 1 for word vectors. */
  cosineCeiling: number;
  /**
   * How much of the best keyword evidence K* the cosine's room gives up: room = denseWeight ×
   * coverage × (1 − roomShrink × K*). 1: a full keyword match leaves the cosine no room (word
   * vectors); below 1, a sentence model's cosine still counts beside a strong keyword match.
   */
  roomShrink: number;
  /** Divide each score by 1 + room, which keeps it in [0, 1) for any denseWeight. */
  normalize: boolean;
}

/** What the fusion knows of the query itself. */
export interface QueryEvidence {
  /** The query's largest attainable BM25 (Evidence.keywordMax). */
  keywordMax: number;
  /** How much of the query the embedding model understood, 0..1 (QueryEmbedding.coverage). */
  coverage: number;
}

/**
 * The defaults: keyword evidence half-strong at a fifth of what the query could score, steepness 3,
 * trust scale 4, the cosine's weight 0.9; the stand-out factor lowers by at most 0.15 below a lead
 * of a tenth. Chosen by `bench/fusion-sweep.ts` on realdocs, SciFact and the paraphrase set, each
 * target met with a margin (docs/performance.md, "Fusion: how its constants were chosen").
 */
export const DEFAULT_FUSION: FusionOptions = {
  keywordHalf: 0.2,
  steepness: 3,
  denseWeight: 0.9,
  trustScale: 4,
  standOutWeight: 0.15,
  standOutGap: 0.1,
  cosineFloor: 0,
  cosineCeiling: 1,
  roomShrink: 1,
  normalize: false,
};

/**
 * A sentence model's cosine (bge, MiniLM, e5; an OpenAI-compatible endpoint): it finds answers
 * that share no word with the question, so it keeps room beside a strong keyword match
 * (roomShrink 0.75) and weighs more (1.2); keyword evidence is read more gently (half-strong at
 * half of what the query could score). Where a model's cosines sit differs (bge: unrelated
 * passages ~0.6, answers ~0.8; MiniLM: ~0.3 and ~0.55), so the catalogue gives each model its
 * floor and ceiling (fusionFor). Chosen by `bench/fusion-sweep.ts` on bge-small-en-v1.5's and
 * all-MiniLM-L6-v2's evidence: a setting that meets "hybrid ≥ keyword and ≥ semantic" on every
 * set and question type for both (docs/performance.md, "Fusion for sentence models").
 */
export const SENTENCE_FUSION: FusionOptions = {
  keywordHalf: 0.5,
  steepness: 3,
  denseWeight: 1.2,
  trustScale: 4,
  standOutWeight: 0.15,
  standOutGap: 0.1,
  cosineFloor: 0.25,
  cosineCeiling: 0.85,
  roomShrink: 0.75,
  normalize: true,
};

/** The fusion of each kind of embedding model, one table (catalogue.ts FusionProfile). */
export const FUSION_PROFILES: Record<FusionProfile, FusionOptions> = {
  'word-vectors': DEFAULT_FUSION,
  sentence: SENTENCE_FUSION,
};

/** The fusion profile of an embedding model id: word vectors for the static model. */
export function fusionProfileOf(model: string): FusionProfile {
  return model === STATIC_MODEL ? 'word-vectors' : 'sentence';
}

/**
 * The fusion of an embedding model id (`transformers:bge-small-en-v1.5@q8`, `openai:…`): its
 * profile's, with the cosine floor and ceiling the catalogue measured for the model, if it knows it.
 */
export function fusionFor(model: string): FusionOptions {
  const profile = FUSION_PROFILES[fusionProfileOf(model)];
  const name = model.replace(/^[a-z]+:/, '').replace(/@[^@/]*$/, '');
  const entry = profile.normalize ? findEmbeddingModel(name) : undefined;
  return entry?.cosineFloor === undefined
    ? profile
    : {
        ...profile,
        cosineFloor: entry.cosineFloor,
        cosineCeiling: entry.cosineCeiling ?? profile.cosineCeiling,
      };
}

/** The largest score: keeps [0, 1) where BM25 is so large (~20,000 at the defaults) that K is 1. */
const MAX_SCORE = 1 - 2 ** -52;

/**
 * BM25 (≥ 0, unbounded) → [0, 1), monotonic, comparable across queries: x / (1 + x) with
 * x = (score / half)^steepness; 0.5 at `half`. Stays above 0 for any positive BM25.
 */
export function calibrateBm25(score: number, half: number, steepness = 1): number {
  if (!(score > 0)) return 0;
  const x = (score / half) ** steepness;
  return x === Infinity ? MAX_SCORE : Math.min(x / (1 + x), MAX_SCORE);
}

/** Lowest score of a match in `keyword` mode. */
const KEYWORD_FLOOR = 0.1;

/**
 * The score of a match in `keyword` mode: KEYWORD_FLOOR + 0.9 × BM25 / (BM25 + 16), in [0.1, 1).
 * The floor keeps a match visible where SQLite's BM25 IDF collapses to ~0 (words in half of a small
 * collection's chunks).
 */
export function keywordScore(bm25: number, half = 16): number {
  return Math.min(KEYWORD_FLOOR + (1 - KEYWORD_FLOOR) * calibrateBm25(bm25, half), MAX_SCORE);
}

/** K of a passage (see the formula above): in [0, 1), 0 without a match. */
export function keywordEvidence(
  bm25: number,
  keywordMax: number,
  options: FusionOptions = DEFAULT_FUSION,
): number {
  if (!(bm25 > 0) || !(keywordMax > 0)) return 0;
  const trust = 1 - Math.exp(-keywordMax / options.trustScale);
  return trust * calibrateBm25(bm25 / keywordMax, options.keywordHalf, options.steepness);
}

/**
 * S of a query (see the formula above): in [1 − standOutWeight, 1], 1 when the best keyword match
 * leads the next lower one by standOutGap × M or more; 1 − standOutWeight without a match.
 */
export function standOutFactor(
  keyword: readonly Candidate[],
  keywordMax: number,
  options: FusionOptions = DEFAULT_FUSION,
): number {
  let best = 0;
  for (const k of keyword) best = Math.max(best, k.score);
  let next = 0;
  for (const k of keyword) if (k.score < best) next = Math.max(next, k.score);
  const gap = best > 0 && keywordMax > 0 ? (best - next) / keywordMax : 0;
  return 1 - options.standOutWeight * (1 - Math.min(1, gap / options.standOutGap));
}

/**
 * Fuses keyword candidates (raw BM25) and semantic candidates (cosine) into one list ordered by
 * score, ties by chunk id. `cosine` holds the similarity of every candidate that has a vector of
 * the active model; a keyword candidate without one (a stale document) scores K alone.
 */
export function fuse(
  keyword: readonly Candidate[],
  semantic: readonly Candidate[],
  cosine: ReadonlyMap<string, number>,
  query: QueryEvidence,
  options: FusionOptions = DEFAULT_FUSION,
): Candidate[] {
  const evidence = new Map<string, number>();
  let best = 0;
  for (const k of keyword) {
    const K = keywordEvidence(k.score, query.keywordMax, options);
    evidence.set(k.chunkId, Math.max(K, evidence.get(k.chunkId) ?? 0));
    best = Math.max(best, K);
  }
  const score = scoreWith(best, keyword, query, options);
  const scores = new Map<string, number>();
  for (const [id, K] of evidence) scores.set(id, score(K, cosine.get(id) ?? 0));
  for (const s of semantic) {
    if (!scores.has(s.chunkId)) scores.set(s.chunkId, score(0, cosine.get(s.chunkId) ?? s.score));
  }
  return [...scores]
    .map(([chunkId, score]) => ({ chunkId, score }))
    .sort(
      (a, b) => b.score - a.score || (a.chunkId < b.chunkId ? -1 : a.chunkId > b.chunkId ? 1 : 0),
    );
}

/**
 * A passage's score for one query, as `fuse` gives it, from its raw BM25 (0 without a keyword
 * match) and its cosine; `keyword` (the query's keyword candidates) fixes the room and S.
 * Non-decreasing in both, so bounds of a cosine bound the score: a hybrid search reads the exact
 * cosine only of the candidates that could still enter the answer (search/sqlite/fused-cosines.ts).
 */
export function fusedScorer(
  keyword: readonly Candidate[],
  query: QueryEvidence,
  options: FusionOptions = DEFAULT_FUSION,
): (bm25: number, cosine: number) => number {
  let best = 0;
  for (const k of keyword) {
    best = Math.max(best, keywordEvidence(k.score, query.keywordMax, options));
  }
  const score = scoreWith(best, keyword, query, options);
  return (bm25, cosine) => score(keywordEvidence(bm25, query.keywordMax, options), cosine);
}

/** S × (K + room × cosine), the cosine clamped to [0, 1], for a query whose best K is `best`. */
function scoreWith(
  best: number,
  keyword: readonly Candidate[],
  query: QueryEvidence,
  options: FusionOptions,
): (K: number, cosine: number) => number {
  const coverage = Math.min(1, Math.max(0, query.coverage));
  const room = options.denseWeight * coverage * (1 - options.roomShrink * best);
  const S = standOutFactor(keyword, query.keywordMax, options) / (options.normalize ? 1 + room : 1);
  const { cosineFloor: floor, cosineCeiling: ceiling } = options;
  const evidence = (cosine: number) =>
    Math.min(1, Math.max(0, (cosine - floor) / (ceiling - floor)));
  return (K, cosine) => Math.min((K + room * evidence(cosine)) * S, MAX_SCORE);
}

/** What a ranking needs of the request. */
export type RankOptions = Pick<RetrieveBody, 'mode' | 'minScore' | 'topK'>;

/**
 * The share of the best hit's evidence below which a hit is padding, dropped when the request
 * sets no `minScore` (PADDING below).
 */
export const PADDING_FRACTION = 0.1;

/**
 * The answer from the evidence (pure): each candidate scored by the mode (hybrid without a query
 * vector: by keywords), ordered by score (ties by chunk id), `minScore` applied, cut to `topK`.
 *
 * Without a `minScore`, no padding: a hit whose evidence is under PADDING_FRACTION of the best
 * hit's is dropped, the evidence being the mode's own: BM25 (keyword), the cosine read between
 * the model's floor and ceiling (semantic), the fused score (hybrid: where a strong keyword match
 * leaves the cosine no room, a passage that only resembles the query scores ~0.02 beside ~0.98).
 * Only scores of one query are compared, so a weak best hit keeps its weak neighbours: telling a
 * query the corpus cannot answer is minScore's job (docs/knowledge-base.md).
 */
export function rank(
  options: RankOptions,
  embedding: QueryEmbedding | null,
  evidence: Evidence,
  fusion: FusionOptions = DEFAULT_FUSION,
): Candidate[] {
  let ranked: Candidate[];
  /** The evidence of a ranked hit that the padding rule compares. */
  let strength: (c: Candidate, i: number) => number = (c) => c.score;
  if (options.mode === 'semantic') {
    ranked = evidence.semantic;
    const { cosineFloor: floor, cosineCeiling: ceiling } = fusion;
    strength = (c) => Math.min(1, Math.max(0, (c.score - floor) / (ceiling - floor)));
  } else if (options.mode === 'hybrid' && embedding !== null) {
    // A nearest chunk's cosine is its semantic score: it joins the keyword candidates' cosines.
    const cosine = new Map(evidence.cosine);
    for (const s of evidence.semantic) cosine.set(s.chunkId, s.score);
    ranked = fuse(
      evidence.keyword,
      evidence.semantic,
      cosine,
      { keywordMax: evidence.keywordMax, coverage: embedding.coverage },
      fusion,
    );
  } else {
    const keyword = evidence.keyword;
    ranked = keyword.map((c) => ({ chunkId: c.chunkId, score: keywordScore(c.score) }));
    strength = (_, i) => keyword[i]?.score ?? 0;
  }
  const min = options.minScore;
  if (min !== undefined) return ranked.filter((c) => c.score >= min).slice(0, options.topK);
  // Without an explicit minScore: hits with no evidence at all (score ≤ 0) and padding dropped.
  const best = ranked.reduce((m, c, i) => Math.max(m, strength(c, i)), 0);
  return ranked
    .filter((c, i) => c.score > 0 && strength(c, i) >= PADDING_FRACTION * best)
    .slice(0, options.topK);
}

/**
 * The ranking of one retrieval, as a store calls it: a hybrid answer is fused (its length is
 * `topK`, and with a query vector each passage's fused score is known from its BM25 and cosine),
 * and `rank` makes the answer.
 */
export function rankingFor(
  options: RankOptions,
  embedding: QueryEmbedding | null,
  fusion: FusionOptions = DEFAULT_FUSION,
): Ranking {
  const ranking: Ranking = { rank: (evidence) => rank(options, embedding, evidence, fusion) };
  if (options.mode !== 'hybrid') return ranking;
  if (embedding === null) return { ...ranking, fusedTop: options.topK };
  const query = { coverage: embedding.coverage };
  return {
    ...ranking,
    fusedTop: options.topK,
    fusedScorer: (keyword, keywordMax) => fusedScorer(keyword, { ...query, keywordMax }, fusion),
  };
}
