"""Reference cross-encoder scores in Python: onnxruntime and Hugging Face's `tokenizers` on the same
ONNX file our transformers reranker loads (the pipeline of the model card, without torch). Used by
test/models/rerank.test.ts to compare our logits with these.

Reads one JSON request on stdin:
  {"model_dir": …, "model_file": "onnx/model_quantized.onnx", "max_length": 512,
   "batch_size": 1, "threads": 2, "requests": [{"query": …, "passages": [...]}, ...],
   "timing": {"query": …, "passages": [...], "runs": 10}?}
and writes one JSON answer on stdout:
  {"logits": [[...], ...], "timing_ms": [...]?}

Each request's passages are scored in batches of `batch_size`, in order, each padded to its
longest pair: the way our reranker batches them. It matters to the last digits: the int8 model
quantizes its activations per batch.
"""
import json
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


def main() -> None:
    request = json.load(sys.stdin)
    model_dir = request["model_dir"]
    tokenizer = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    # LongestFirst, the library's default: the longer text is cut first, [SEP] kept.
    tokenizer.enable_truncation(request.get("max_length", 512))
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    options = ort.SessionOptions()
    if request.get("threads"):
        options.intra_op_num_threads = request["threads"]
    session = ort.InferenceSession(
        f"{model_dir}/{request['model_file']}", options, providers=["CPUExecutionProvider"]
    )
    names = {i.name for i in session.get_inputs()}
    batch_size = request.get("batch_size", 1)

    def score(query: str, passages: list) -> list:
        out = []
        for start in range(0, len(passages), batch_size):
            encoded = tokenizer.encode_batch([(query, p) for p in passages[start : start + batch_size]])
            feed = {
                "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
            }
            logits = session.run(None, {k: v for k, v in feed.items() if k in names})[0]
            out.extend(float(x) for x in logits[:, 0])
        return out

    answer = {"logits": [score(r["query"], r["passages"]) for r in request["requests"]]}
    timing = request.get("timing")
    if timing:
        score(timing["query"], timing["passages"])  # warm up
        runs = []
        for _ in range(timing.get("runs", 10)):
            start = time.perf_counter()
            score(timing["query"], timing["passages"])
            runs.append((time.perf_counter() - start) * 1000)
        answer["timing_ms"] = runs
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
