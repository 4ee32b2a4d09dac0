/** The configured reranker (rerank/index.ts), and what the transformers one says of a missing model. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { createRerankProvider } from '../../../src/knowledge/rerank/index.js';
import {
  rerankModelFiles,
  TransformersReranker,
} from '../../../src/knowledge/rerank/transformers-reranker.js';

const dir = mkdtempSync(join(tmpdir(), 'aps-rerank-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function rerankConfig(env: Record<string, string>) {
  const config = loadConfig({ DATA_DIR: dir, NODE_ENV: 'test', ...env }, dir);
  return { rerank: config.rerank, modelDir: config.embedding.modelDir };
}

describe('createRerankProvider', () => {
  it('none: no reranker; http and transformers: named by their model', () => {
    const none = rerankConfig({});
    expect(createRerankProvider(none.rerank, none.modelDir)).toBeNull();
    const http = rerankConfig({
      RERANK_PROVIDER: 'http',
      RERANK_BASE_URL: 'http://127.0.0.1:9/',
      RERANK_MODEL: 'jina-reranker-v2',
    });
    expect(createRerankProvider(http.rerank, http.modelDir)?.model).toBe('http:jina-reranker-v2');
    const local = rerankConfig({ RERANK_PROVIDER: 'transformers' });
    expect(createRerankProvider(local.rerank, local.modelDir)?.model).toBe(
      'transformers:ms-marco-MiniLM-L-12-v2',
    );
  });
});

describe('the transformers reranker’s model files', () => {
  it('says how to install a missing catalogue model', async () => {
    const reranker = new TransformersReranker({
      model: 'cross-encoder/ms-marco-MiniLM-L-12-v2',
      modelDir: join(dir, 'models'),
    });
    await expect(reranker.ready()).rejects.toThrow(
      /not installed: .*ms-marco-MiniLM-L-12-v2 lacks config\.json, tokenizer\.json, onnx\/model\.onnx; run `npm run models:install -- ms-marco-MiniLM-L-12-v2` in a checkout, or `aps models pull ms-marco-MiniLM-L-12-v2`/,
    );
    await reranker.close();
  });

  it('loads onnx/model.onnx, else the int8 onnx/model_quantized.onnx', () => {
    const model = join(dir, 'models', 'my-cross-encoder');
    mkdirSync(join(model, 'onnx'), { recursive: true });
    for (const f of ['config.json', 'tokenizer.json', 'onnx/model_quantized.onnx']) {
      writeFileSync(join(model, f), '{}');
    }
    const config = { model: 'my-cross-encoder', modelDir: join(dir, 'models') };
    expect(rerankModelFiles(config)).toEqual({
      folder: 'my-cross-encoder',
      dtype: 'q8',
      maxTokens: null,
    });
    writeFileSync(join(model, 'onnx/model.onnx'), '{}');
    expect(rerankModelFiles(config).dtype).toBe('fp32');
  });
});
