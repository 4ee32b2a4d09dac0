/** Picks the configured reranking provider; RERANK_PROVIDER=none: null (no reranking). */
import type { Config } from '../../config.js';
import { HttpReranker } from './http-reranker.js';
import type { RerankProvider } from './provider.js';
import { TransformersReranker } from './transformers-reranker.js';

export type { RerankProvider } from './provider.js';

export function createRerankProvider(
  config: Config['rerank'],
  modelDir: string,
): RerankProvider | null {
  switch (config.provider) {
    case 'none':
      return null;
    case 'transformers':
      return new TransformersReranker({ model: config.model, modelDir });
    case 'http':
      if (config.baseUrl === null)
        throw new Error('RERANK_BASE_URL is required for RERANK_PROVIDER=http');
      return new HttpReranker({
        baseUrl: config.baseUrl,
        model: config.model,
        apiKey: config.apiKey,
        timeoutMs: config.timeoutMs,
      });
    default:
      throw new Error(`Unknown reranking provider: ${String(config.provider)}`);
  }
}
