/**
 * The Python reference scores of a cross-encoder (rerank_reference.py: onnxruntime and
 * `tokenizers` on the same ONNX file), in the reference environment of reference.ts (made once
 * per user under the per-user cache: onnxruntime, tokenizers and numpy are in it).
 */
import { runReferenceScript } from './reference.js';

export interface RerankReferenceRequest {
  /** The model's folder (the layout of catalogue.ts). */
  model_dir: string;
  /** `onnx/model.onnx`, or `onnx/model_quantized.onnx` for the int8 model. */
  model_file: string;
  max_length?: number;
  /** Pairs per inference, in order (as our reranker batches them). */
  batch_size: number;
  threads?: number | null;
  requests: { query: string; passages: string[] }[];
  /** Scored `runs` more times after a warm-up, each timed. */
  timing?: { query: string; passages: string[]; runs?: number };
}

export interface RerankReferenceAnswer {
  /** One logit per passage, per request. */
  logits: number[][];
  timing_ms?: number[];
}

/** Runs rerank_reference.py once on `request`. */
export function rerankReference(request: RerankReferenceRequest): Promise<RerankReferenceAnswer> {
  return runReferenceScript<RerankReferenceAnswer>('rerank_reference.py', request);
}
