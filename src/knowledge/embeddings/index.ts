/** Picks the configured embedding provider. */
import type { Config } from '../../config.js';
import { OpenAIEmbeddingProvider } from './openai-provider.js';
import type { EmbeddingProvider } from './provider.js';
import { StaticEmbeddingProvider, type CacheLog } from './static/static-provider.js';
import { TransformersEmbeddingProvider } from './transformers-provider.js';

export function createEmbeddingProvider(
  config: Config['embedding'],
  log?: CacheLog,
): EmbeddingProvider {
  switch (config.provider) {
    case 'static':
      return new StaticEmbeddingProvider({
        cacheDir: config.cacheDir,
        fallbackCacheDir: config.cacheFallbackDir,
        ...(log === undefined ? {} : { log }),
      });
    case 'openai':
      return new OpenAIEmbeddingProvider(config);
    case 'transformers':
      return new TransformersEmbeddingProvider(config);
    default:
      throw new Error(`Unknown embedding provider: ${String(config.provider)}`);
  }
}
