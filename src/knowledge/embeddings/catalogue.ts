/**
 * The models the server knows by a short name (`EMBEDDING_MODEL=bge-small-en-v1.5`,
 * `RERANK_MODEL=ms-marco-MiniLM-L-12-v2`): how their model cards say to use them, and where
 * `aps models pull` finds them on a Hugging Face compatible hub. A model the catalogue does not
 * know still loads from its directory, with the pooling its files or family name say and no
 * prefixes.
 *
 * A model directory has the layout of a Hugging Face repository as transformers.js reads it:
 * `config.json`, `tokenizer.json`, `tokenizer_config.json`, `onnx/model.onnx` and, where one
 * exists, `onnx/model_quantized.onnx` (int8, EMBEDDING_QUANTIZED); an embedding model may add
 * sentence-transformers' `1_Pooling/config.json`.
 */

export type Pooling = 'mean' | 'cls';

/** What ranking profile a model's cosines call for (retrieval/ranking.ts FUSION_PROFILES). */
export type FusionProfile = 'word-vectors' | 'sentence';

interface CatalogueEntry {
  /** The short name: EMBEDDING_MODEL, RERANK_MODEL, the directory under the models folder. */
  name: string;
  /** The hub repository `aps models pull` downloads from (ONNX weights in `onnx/`). */
  hubRepo: string;
  /** Other names users give it (the original repository, e.g. `BAAI/bge-small-en-v1.5`). */
  aliases: readonly string[];
  license: string;
  /** One line for `aps models list`. */
  summary: string;
  /** Most tokens the model reads; longer texts are cut (with their closing special token kept). */
  maxTokens: number;
}

export interface EmbeddingModelEntry extends CatalogueEntry {
  kind: 'embedding';
  dimensions: number;
  pooling: Pooling;
  /** Put before a search query, as the model card prescribes ('' for none). */
  queryPrefix: string;
  /** Put before a passage (a chunk's text) ('' for none). */
  passagePrefix: string;
  /**
   * Where its cosines sit for hybrid fusion (retrieval/ranking.ts fusionFor): the cosine read as
   * no evidence, and the one read as full evidence. Measured on SciFact and realdocs.
   */
  cosineFloor?: number;
  cosineCeiling?: number;
}

export interface RerankModelEntry extends CatalogueEntry {
  kind: 'reranker';
}

export type ModelEntry = EmbeddingModelEntry | RerankModelEntry;

export const MODEL_CATALOGUE: readonly ModelEntry[] = [
  {
    kind: 'embedding',
    name: 'bge-small-en-v1.5',
    hubRepo: 'Xenova/bge-small-en-v1.5',
    aliases: ['BAAI/bge-small-en-v1.5'],
    license: 'MIT',
    summary: 'English, 384 dimensions, 33M parameters (BAAI)',
    dimensions: 384,
    pooling: 'cls',
    maxTokens: 512,
    queryPrefix: 'Represent this sentence for searching relevant passages: ',
    passagePrefix: '',
    cosineFloor: 0.4,
    cosineCeiling: 0.9,
  },
  {
    kind: 'embedding',
    name: 'all-MiniLM-L6-v2',
    hubRepo: 'Xenova/all-MiniLM-L6-v2',
    aliases: ['sentence-transformers/all-MiniLM-L6-v2'],
    license: 'Apache-2.0',
    summary: 'English, 384 dimensions, 22M parameters, reads 256 tokens (sentence-transformers)',
    dimensions: 384,
    pooling: 'mean',
    maxTokens: 256,
    queryPrefix: '',
    passagePrefix: '',
    cosineFloor: 0.1,
    cosineCeiling: 0.8,
  },
  {
    kind: 'embedding',
    name: 'e5-small-v2',
    hubRepo: 'Xenova/e5-small-v2',
    aliases: ['intfloat/e5-small-v2'],
    license: 'MIT',
    summary: 'English, 384 dimensions, 33M parameters (intfloat)',
    dimensions: 384,
    pooling: 'mean',
    maxTokens: 512,
    queryPrefix: 'query: ',
    passagePrefix: 'passage: ',
    // Its cosines are narrow: unrelated passages ~0.8, answers ~0.87.
    cosineFloor: 0.72,
    cosineCeiling: 0.95,
  },
  {
    kind: 'embedding',
    name: 'multilingual-e5-small',
    hubRepo: 'Xenova/multilingual-e5-small',
    aliases: ['intfloat/multilingual-e5-small'],
    license: 'MIT',
    summary: '~100 languages, 384 dimensions, 118M parameters (intfloat)',
    dimensions: 384,
    pooling: 'mean',
    maxTokens: 512,
    queryPrefix: 'query: ',
    passagePrefix: 'passage: ',
  },
  {
    kind: 'reranker',
    name: 'ms-marco-MiniLM-L-12-v2',
    hubRepo: 'Xenova/ms-marco-MiniLM-L-12-v2',
    aliases: ['cross-encoder/ms-marco-MiniLM-L-12-v2'],
    license: 'Apache-2.0',
    summary: 'English cross-encoder (query, passage) → relevance, 33M parameters',
    maxTokens: 512,
  },
];

/** The catalogue entry a configured name means: its short name, hub repository or an alias. */
export function findModel(name: string): ModelEntry | undefined {
  const key = name.toLowerCase();
  return MODEL_CATALOGUE.find(
    (m) =>
      m.name.toLowerCase() === key ||
      m.hubRepo.toLowerCase() === key ||
      m.aliases.some((a) => a.toLowerCase() === key),
  );
}

/** The catalogue's embedding model of that name, if it is one. */
export function findEmbeddingModel(name: string): EmbeddingModelEntry | undefined {
  const entry = findModel(name);
  return entry?.kind === 'embedding' ? entry : undefined;
}
