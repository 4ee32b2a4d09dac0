/** Starts the embedding model's worker thread (worker.ts next to this module). */
import { spawnWorkerModule } from '../../../worker-threads.js';
import { EmbeddingError } from '../provider.js';

export function spawnEmbeddingWorker(): ReturnType<typeof spawnWorkerModule> {
  try {
    return spawnWorkerModule(import.meta.url, 'worker');
  } catch (cause) {
    throw new EmbeddingError(`embedding worker: ${(cause as Error).message}`, { cause });
  }
}
