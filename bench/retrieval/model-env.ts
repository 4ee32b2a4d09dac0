/**
 * The embedding model a quality or speed bench runs with: `--model static` (the default, the
 * offline word vectors) or a `transformers` model installed under `--models-dir` (default
 * `./models`, `npm run models:install`), `--quantized` for its int8 file; `--rerank N` reranks the
 * best N hits with the installed cross-encoder.
 */
import { resolve } from 'node:path';

/** parseArgs options of every bench that can run another model. */
export const MODEL_OPTIONS = {
  model: { type: 'string', default: 'static' },
  'models-dir': { type: 'string', default: 'models' },
  quantized: { type: 'boolean', default: false },
  /** Rerank with this many candidates (RERANK_PROVIDER=transformers, its default model); 0: none. */
  rerank: { type: 'string', default: '0' },
} as const;

/** The server settings of the chosen model. */
export function modelEnv(values: {
  model?: string;
  'models-dir'?: string;
  quantized?: boolean;
  rerank?: string;
}): Record<string, string> {
  const model = values.model ?? 'static';
  const candidates = Number(values.rerank ?? '0');
  const rerank: Record<string, string> =
    candidates > 0
      ? {
          RERANK_PROVIDER: 'transformers',
          RERANK_CANDIDATES: String(candidates),
          RERANK_TIMEOUT_MS: '60000',
          EMBEDDING_MODEL_DIR: resolve(values['models-dir'] ?? 'models'),
        }
      : {};
  if (model === 'static') return rerank;
  return {
    ...rerank,
    EMBEDDING_PROVIDER: 'transformers',
    EMBEDDING_MODEL: model,
    EMBEDDING_MODEL_DIR: resolve(values['models-dir'] ?? 'models'),
    EMBEDDING_QUANTIZED: String(values.quantized === true),
  };
}
