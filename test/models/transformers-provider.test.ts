/**
 * The `transformers` provider on real weights (bge-small-en-v1.5, all-MiniLM-L6-v2): its vectors
 * are those of a Python reference (fastembed, onnxruntime + Hugging Face tokenizers) on the same
 * ONNX files, with the model card's pooling and prefixes, also for texts longer than the model
 * reads (cut with the closing [SEP] kept), in full precision and int8; and they mean something:
 * a question is closer to its answer than to unrelated passages.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { referenceEmbeddings } from '../../scripts/models/reference.js';
import { findEmbeddingModel } from '../../src/knowledge/embeddings/catalogue.js';
import { TransformersEmbeddingProvider } from '../../src/knowledge/embeddings/transformers/transformers-provider.js';
import { installedModel, MODELS_DIR } from './models.js';

const QUERIES = [
  'How do I reset the pump controller after a power failure?',
  'what is the maximum operating temperature',
];
const PASSAGES = [
  'After a power outage, hold the RESET button on the controller for five seconds until the green light blinks.',
  'The unit operates between 5 °C and 40 °C; above that the compressor shuts down to protect itself.',
  'Die Pumpe wird jährlich gewartet. La bomba se revisa cada año.',
];
/** Longer than either model reads (MiniLM: 256 tokens, bge: 512). */
const LONG = Array.from(
  { length: 140 },
  (_, i) => `Step ${i}: check valve ${i % 7} and record the pressure.`,
).join(' ');

const providers: TransformersEmbeddingProvider[] = [];
afterAll(async () => {
  await Promise.all(providers.map((p) => p.close()));
});

function provider(model: string, quantized: boolean): TransformersEmbeddingProvider {
  const p = new TransformersEmbeddingProvider({
    model,
    modelDir: MODELS_DIR,
    allowDownload: false,
    batchSize: 64,
    quantized,
  });
  providers.push(p);
  return p;
}

const cosine = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += (a[i] ?? 0) * (b[i] ?? 0);
  return dot;
};

describe.each(['bge-small-en-v1.5', 'all-MiniLM-L6-v2'])('%s', (name) => {
  const entry = findEmbeddingModel(name)!;
  const dir = installedModel(name);

  it('gives the reference vectors in full precision, long texts included', async () => {
    const p = provider(name, false);
    const ours = [
      ...(await Promise.all(QUERIES.map((q) => p.embedQuery(q)))),
      ...(await p.embedDocuments([...PASSAGES, LONG])),
    ];
    expect(p.model).toBe(`transformers:${name}`);
    expect(p.dimensions).toBe(entry.dimensions);
    const reference = await referenceEmbeddings({
      model_dir: dir,
      model_file: 'onnx/model.onnx',
      pooling: entry.pooling,
      texts: [
        ...QUERIES.map((q) => entry.queryPrefix + q),
        ...[...PASSAGES, LONG].map((t) => entry.passagePrefix + t),
      ],
    });
    ours.forEach((vector, i) => {
      expect(cosine(vector, reference.vectors[i]!), `text ${i}`).toBeGreaterThan(0.999);
    });
  });

  it('gives the reference vectors of the int8 model, batched alike', async () => {
    // Dynamic int8 quantization scales each batch by its own range: the same texts in one batch.
    const p = provider(name, true);
    expect(p.model).toBe(`transformers:${name}@q8`);
    const ours = await p.embedDocuments(PASSAGES);
    const reference = await referenceEmbeddings({
      model_dir: dir,
      model_file: 'onnx/model_quantized.onnx',
      pooling: entry.pooling,
      texts: PASSAGES.map((t) => entry.passagePrefix + t),
      batch_size: 64,
    });
    ours.forEach((vector, i) => {
      expect(cosine(vector, reference.vectors[i]!), `passage ${i}`).toBeGreaterThan(0.999);
    });
  });

  it('puts each question nearest its own answer', async () => {
    const p = provider(name, false);
    const [reset, temperature] = await Promise.all(QUERIES.map((q) => p.embedQuery(q)));
    const [resetAnswer, temperatureAnswer, other] = await p.embedDocuments(PASSAGES);
    expect(cosine(reset!, resetAnswer!)).toBeGreaterThan(cosine(reset!, temperatureAnswer!));
    expect(cosine(reset!, resetAnswer!)).toBeGreaterThan(cosine(reset!, other!));
    expect(cosine(temperature!, temperatureAnswer!)).toBeGreaterThan(
      cosine(temperature!, resetAnswer!),
    );
  });
});
