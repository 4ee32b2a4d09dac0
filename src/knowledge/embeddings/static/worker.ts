/**
 * Worker-thread entry: builds/loads the cache and embeds batches, so neither the one-off cache
 * build (seconds) nor bulk indexing runs on the server's event loop.
 */
import { parentPort, threadId } from 'node:worker_threads';
import { openStaticCacheIn, type StaticModel } from './cache.js';
import { embedText, queryCoverage } from './embed.js';
import type { FromWorker, ToWorker } from './protocol.js';

const port = parentPort;
if (port === null) throw new Error('worker.ts must run in a worker thread');

let model: StaticModel | null = null;
const reply = (message: FromWorker, transfer: ArrayBuffer[] = []): void => {
  port.postMessage(message, transfer);
};
const describe = (error: unknown): string =>
  error instanceof Error ? error.message : String(error);

async function init(message: Extract<ToWorker, { type: 'init' }>): Promise<void> {
  try {
    const onBuild = (cacheFile: string) => {
      reply({ type: 'building', cacheFile });
    };
    const options =
      message.vocabSize === undefined ? { onBuild } : { onBuild, vocabSize: message.vocabSize };
    const opened = await openStaticCacheIn(message.cacheDirs, message.sourcePath, options);
    model = opened.model;
    reply({
      type: 'ready',
      info: {
        threadId,
        dims: opened.model.dims,
        cacheFile: opened.file,
        vocabSize: opened.model.words.length,
        built: opened.built,
        skippedDirs: opened.skipped,
        buildMs: opened.buildMs,
        loadMs: opened.loadMs,
      },
    });
  } catch (error) {
    reply({ type: 'init-failed', message: describe(error) });
  }
}

function embed(id: number, texts: readonly string[], withCoverage: boolean): void {
  const loaded = model;
  if (loaded === null) {
    reply({ type: 'failed', id, message: 'embedding worker is not initialised' });
    return;
  }
  try {
    // One buffer per vector, transferred: no copy back, and callers get independent arrays.
    const vectors = texts.map((text) => embedText(loaded, text).buffer as ArrayBuffer);
    const coverage = withCoverage ? texts.map((text) => queryCoverage(loaded, text)) : undefined;
    reply(
      coverage === undefined
        ? { type: 'result', id, vectors }
        : { type: 'result', id, vectors, coverage },
      vectors,
    );
  } catch (error) {
    reply({ type: 'failed', id, message: describe(error) });
  }
}

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'init':
      void init(message);
      break;
    case 'embed':
      embed(message.id, message.texts, message.coverage === true);
      break;
    case 'crash':
      setImmediate(() => {
        throw new Error('simulated embedding worker crash');
      });
      break;
  }
});
