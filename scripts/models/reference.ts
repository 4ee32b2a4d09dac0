/**
 * The Python reference embeddings (reference.py: fastembed on the same ONNX weights), for the
 * real-model tests and bench:models. `ensureReference()` makes its environment once per user.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ensureVenv } from './python-env.js';

const HERE = import.meta.dirname;

export interface ReferenceRequest {
  /** The model's folder (the layout of catalogue.ts). */
  model_dir: string;
  /** `onnx/model.onnx`, or `onnx/model_quantized.onnx` for the int8 model. */
  model_file: string;
  pooling: 'cls' | 'mean';
  /** Texts as the model reads them (prefixes included). */
  texts: string[];
  batch_size?: number;
  threads?: number | null;
  /** Embedded once more, after a warm-up, and timed. */
  timing_texts?: string[];
}

export interface ReferenceAnswer {
  vectors: number[][];
  timing?: { texts: number; seconds: number };
}

/** The python of the reference environment (made on first use: ~250 MB, a minute). */
export function ensureReference(): string {
  return ensureVenv('reference', join(HERE, 'reference-requirements.txt'));
}

/**
 * Runs a script of this folder in the reference environment with `request` as JSON on its stdin;
 * its stdout, parsed.
 */
export async function runReferenceScript<T>(
  script: string,
  request: unknown,
  env: NodeJS.ProcessEnv = {},
): Promise<T> {
  const python = ensureReference();
  const child = spawn(python, [join(HERE, script)], {
    env: { ...process.env, ...env, TOKENIZERS_PARALLELISM: 'false' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (b: Buffer) => out.push(b));
  child.stderr.on('data', (b: Buffer) => err.push(b));
  child.stdin.end(JSON.stringify(request));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) {
    throw new Error(`${script} failed (exit ${String(code)}): ${Buffer.concat(err).toString()}`);
  }
  return JSON.parse(Buffer.concat(out).toString()) as T;
}

/** Runs reference.py once on `request`. */
export function referenceEmbeddings(request: ReferenceRequest): Promise<ReferenceAnswer> {
  return runReferenceScript<ReferenceAnswer>('reference.py', request, { HF_HUB_OFFLINE: '1' });
}
