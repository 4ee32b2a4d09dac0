/**
 * `npm run bench:models [-- --models bge-small-en-v1.5,all-MiniLM-L6-v2 --dtypes fp32,q8
 *  --docs 1000 --queries 200 --concurrency 8 --dir models]`: the `transformers` provider's speed
 * on real weights (`npm run models:install` first), beside the Python reference in one run.
 *
 * For each model and precision, on the first `--docs` SciFact abstracts (../shared/datasets,
 * read in place), chunked as the server chunks them (1,400 characters, 15 % overlap):
 * - python: the same chunk texts embedded by fastembed (onnxruntime + tokenizers, its default
 *   threads) on the same ONNX file (scripts/models/reference.py), chunks/s;
 * - provider: the same texts through TransformersEmbeddingProvider.embedDocuments, chunks/s;
 * - ingest: every abstract uploaded and indexed over HTTP (`--concurrency` clients) by a real
 *   server process with EMBEDDING_PROVIDER=transformers, chunks/s, while `/health` is asked every
 *   50 ms (its slowest answer: a stall of the event loop shows there);
 * - query: `--queries` SciFact questions embedded one at a time on an idle provider, p50 / p95 ms;
 * - memory: what the model added to the resident size when it loaded.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { referenceEmbeddings } from '../scripts/models/reference.js';
import { findEmbeddingModel } from '../src/knowledge/embeddings/catalogue.js';
import { TransformersEmbeddingProvider } from '../src/knowledge/embeddings/transformers/transformers-provider.js';
import { embeddingText } from '../src/knowledge/chunking/chunk-hashes.js';
import { chunkMarkdown } from '../src/knowledge/chunking/markdown-chunker.js';
import { BENCH_KEY, index, indexingDone, pooledRun, upload } from './ingest-client.js';
import { DEFAULT_EMBEDDING_CACHE } from './retrieval/harness.js';
import { scifactAbstracts, scifactSet } from './retrieval/sets.js';
import { startBenchServer, stopServerProcess } from './server-process.js';

const { values } = parseArgs({
  options: {
    models: { type: 'string', default: 'bge-small-en-v1.5,all-MiniLM-L6-v2' },
    dtypes: { type: 'string', default: 'fp32,q8' },
    docs: { type: 'string', default: '1000' },
    queries: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '8' },
    /** The server's QUEUE_KNOWLEDGE_INDEX_CONCURRENCY (default: its own). */
    'index-concurrency': { type: 'string' },
    dir: { type: 'string', default: 'models' },
  },
});
const CLI = resolve(import.meta.dirname, '../dist/cli.js');
const MODELS_DIR = resolve(values.dir);
const log = (line: string) => process.stderr.write(`${line}\n`);
const round = (n: number, d = 1) => Number(n.toFixed(d));

const abstracts = scifactAbstracts(Number(values.docs));
const texts = abstracts.flatMap((a) =>
  chunkMarkdown(a.text, { maxChars: 1400, overlapChars: 210 }).map((c) => embeddingText(c)),
);
const questions = scifactSet()
  .queries.slice(0, Number(values.queries))
  .map((q) => q.text);
log(`${abstracts.length} abstracts → ${texts.length} chunks; ${questions.length} questions`);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
}

/** Ingest over HTTP by a real server; chunks/s and the slowest `/health` answer meanwhile. */
async function ingest(model: string, quantized: boolean) {
  const dataDir = mkdtempSync(join(tmpdir(), 'aps-bench-models-'));
  const server = await startBenchServer(CLI, dataDir, BENCH_KEY, DEFAULT_EMBEDDING_CACHE, {
    EMBEDDING_PROVIDER: 'transformers',
    EMBEDDING_MODEL: model,
    EMBEDDING_MODEL_DIR: MODELS_DIR,
    EMBEDDING_QUANTIZED: String(quantized),
    ...(values['index-concurrency'] === undefined
      ? {}
      : { QUEUE_KNOWLEDGE_INDEX_CONCURRENCY: values['index-concurrency'] }),
  });
  try {
    // The model loads at start, in the background: a first document waits for it.
    const warm = await upload(server.base, { name: 'warm.md', text: '# Warm\n\nwarm up.\n' });
    await index(server.base, warm.id);
    let slowest = 0;
    const polling = new AbortController();
    const poller = (async () => {
      while (!polling.signal.aborted) {
        const t = performance.now();
        await fetch(`${server.base}/health`);
        slowest = Math.max(slowest, performance.now() - t);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    // Uploads (index=true) answer at once; the runs end when nothing is `indexing` any more.
    const started = performance.now();
    await pooledRun(abstracts, Number(values.concurrency), async (doc) => {
      await upload(server.base, doc, true);
    });
    await indexingDone(server.base);
    const total = (performance.now() - started) / 1000;
    polling.abort();
    await poller;
    return { total, slowest };
  } finally {
    await stopServerProcess(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const rows: string[] = [];
for (const name of values.models.split(',')) {
  const entry = findEmbeddingModel(name);
  if (entry === undefined) throw new Error(`${name} is not a catalogue embedding model`);
  for (const dtype of values.dtypes.split(',')) {
    const quantized = dtype === 'q8';
    log(`== ${name} ${dtype}`);
    const passages = texts.map((t) => entry.passagePrefix + t);
    const reference = await referenceEmbeddings({
      model_dir: join(MODELS_DIR, name),
      model_file: quantized ? 'onnx/model_quantized.onnx' : 'onnx/model.onnx',
      pooling: entry.pooling,
      texts: passages.slice(0, 2),
      batch_size: 32,
      timing_texts: passages,
    });
    const pythonRate = (reference.timing?.texts ?? 0) / (reference.timing?.seconds ?? Infinity);
    log(`python ${round(pythonRate)} chunks/s`);

    const provider = new TransformersEmbeddingProvider({
      model: name,
      modelDir: MODELS_DIR,
      allowDownload: false,
      batchSize: 64,
      quantized,
    });
    await provider.ready();
    await provider.embedDocuments(texts.slice(0, 32));
    let t = performance.now();
    await provider.embedDocuments(texts);
    const providerRate = texts.length / ((performance.now() - t) / 1000);
    log(`provider ${round(providerRate)} chunks/s`);
    const latencies: number[] = [];
    for (const q of questions) {
      t = performance.now();
      await provider.embedQuery(q);
      latencies.push(performance.now() - t);
    }
    latencies.sort((a, b) => a - b);
    const resident = provider.residentBytes ?? 0;
    await provider.close();

    const { total, slowest } = await ingest(name, quantized);
    const ingestRate = texts.length / total;
    log(`ingest ${round(ingestRate)} chunks/s, /health max ${round(slowest)} ms`);
    rows.push(
      `| ${name} | ${dtype} | ${round(pythonRate)} | ${round(providerRate)} (${round(providerRate / pythonRate, 2)}×) | ${round(ingestRate)} (${round(ingestRate / pythonRate, 2)}×) | ${round(slowest)} | ${round(percentile(latencies, 50))} / ${round(percentile(latencies, 95))} | ${Math.round(resident / 1e6)} |`,
    );
  }
}
console.log(
  `\n${abstracts.length} SciFact abstracts, ${texts.length} chunks; ${questions.length} queries\n`,
);
console.log(
  '| model | precision | python (fastembed) chunks/s | provider chunks/s | ingest over HTTP chunks/s | /health max ms | query p50 / p95 ms | model MB |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
