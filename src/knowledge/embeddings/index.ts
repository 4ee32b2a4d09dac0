/** Picks the configured embedding provider, or the provider of a stored model id. */
import type { Config } from '../../config.js';
import { OpenAIEmbeddingProvider } from './openai-provider.js';
import type { EmbeddingProvider } from './provider.js';
import { MODEL_NAME as STATIC_MODEL } from './static/cache.js';
import { StaticEmbeddingProvider, type CacheLog } from './static/static-provider.js';
import { TransformersEmbeddingProvider } from './transformers/transformers-provider.js';

function staticProvider(config: Config['embedding'], log?: CacheLog): StaticEmbeddingProvider {
  return new StaticEmbeddingProvider({
    cacheDir: config.cacheDir,
    fallbackCacheDir: config.cacheFallbackDir,
    ...(log === undefined ? {} : { log }),
  });
}

export function createEmbeddingProvider(
  config: Config['embedding'],
  log?: CacheLog,
): EmbeddingProvider {
  switch (config.provider) {
    case 'static':
      return staticProvider(config, log);
    case 'openai':
      return new OpenAIEmbeddingProvider(config);
    case 'transformers':
      return new TransformersEmbeddingProvider(config);
    default:
      throw new Error(`Unknown embedding provider: ${String(config.provider)}`);
  }
}

/**
 * The provider that embeds as `model` (an id stored with the chunks: `glove-sif-100d`,
 * `transformers:<name>[@q8]`, `openai:<name>[@<dimensions>]`), built from the same settings
 * (model folder, endpoint and key); null when none can be (another provider's id).
 */
export function providerForModel(
  model: string,
  config: Config['embedding'],
  log?: CacheLog,
): EmbeddingProvider | null {
  if (model === STATIC_MODEL) {
    return staticProvider(config, log);
  }
  const match = /^(transformers|openai):(.+?)(?:@(q8|\d+))?$/.exec(model);
  if (match === null) return null;
  const [, provider, name = '', suffix] = match;
  if (provider === 'transformers') {
    return new TransformersEmbeddingProvider({
      ...config,
      model: name,
      quantized: suffix === 'q8',
    });
  }
  const dimensions = suffix === undefined ? null : Number(suffix);
  return new OpenAIEmbeddingProvider({ ...config, model: name, dimensions });
}
