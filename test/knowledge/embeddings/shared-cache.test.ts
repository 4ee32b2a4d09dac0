/**
 * The static model's cache is built once per machine: every data directory uses the per-user
 * cache folder, a log line says when it is being built and how long that took, and a folder that
 * cannot be written falls back to the data directory.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import {
  StaticEmbeddingProvider,
  type CacheLog,
} from '../../../src/knowledge/embeddings/static/static-provider.js';
import { writeSyntheticSource } from './static-cache-dir.js';

class Lines implements CacheLog {
  readonly lines: { level: string; message: string; fields: object }[] = [];
  info(fields: object, message: string): void {
    this.lines.push({ level: 'info', message, fields });
  }
  warn(fields: object, message: string): void {
    this.lines.push({ level: 'warn', message, fields });
  }
}

describe('the static embedding cache is shared by data directories', () => {
  const root = mkdtempSync(join(tmpdir(), 'aps-shared-cache-'));
  const source = join(root, 'source.json');
  beforeAll(() => {
    writeSyntheticSource(
      source,
      100,
      Array.from({ length: 300 }, (_, i) => `word${i}y`),
    );
  });
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  async function open(dataDir: string, env: Record<string, string>) {
    const config = loadConfig({ DATA_DIR: dataDir, NODE_ENV: 'test', ...env }, root);
    const log = new Lines();
    const provider = new StaticEmbeddingProvider({
      cacheDir: config.embedding.cacheDir,
      fallbackCacheDir: config.embedding.cacheFallbackDir,
      sourcePath: source,
      log,
    });
    await provider.ready();
    const info = provider.workerInfo!;
    await provider.close();
    return { config, info, log };
  }

  it('two fresh data directories: the first builds (and says so), the second reuses', async () => {
    const xdg = join(root, 'xdg');
    const first = await open(join(root, 'data-1'), { XDG_CACHE_HOME: xdg });
    expect(first.config.embedding.cacheDir).toBe(join(xdg, 'agent-platform-server'));
    expect(first.info.built).toBe(true);
    expect(first.info.cacheFile.startsWith(join(xdg, 'agent-platform-server'))).toBe(true);
    expect(first.log.lines.map((l) => l.message)).toEqual([
      'building the embedding model cache (once per machine, ~15 s)…',
      expect.stringMatching(/^embedding model cache built in \d+\.\d s$/) as string,
    ]);
    expect(existsSync(join(root, 'data-1', 'models'))).toBe(false);

    const second = await open(join(root, 'data-2'), { XDG_CACHE_HOME: xdg });
    expect(second.info.built).toBe(false);
    expect(second.info.cacheFile).toBe(first.info.cacheFile);
    expect(second.log.lines).toEqual([]);
  });

  it('an unwritable cache folder falls back to DATA_DIR/models, with a warning', async () => {
    const notADir = join(root, 'a-file');
    writeFileSync(notADir, 'x');
    const data = join(root, 'data-3');
    const opened = await open(data, { XDG_CACHE_HOME: notADir });
    expect(opened.info.built).toBe(true);
    expect(opened.info.cacheFile.startsWith(join(data, 'models'))).toBe(true);
    expect(opened.log.lines.map((l) => l.level)).toEqual(['info', 'warn', 'info']);
    expect(opened.log.lines[1]!.fields).toEqual({ dir: join(notADir, 'agent-platform-server') });
  });

  it('EMBEDDING_CACHE_DIR, when set, is used as is (no fallback)', () => {
    const config = loadConfig({ DATA_DIR: 'd', EMBEDDING_CACHE_DIR: 'c' }, root);
    expect(config.embedding).toMatchObject({ cacheDir: join(root, 'c'), cacheFallbackDir: null });
  });
});
