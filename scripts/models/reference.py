"""Reference embeddings in Python: fastembed (onnxruntime + Hugging Face tokenizers) on the same
ONNX weights our transformers provider loads. Used by the real-model tests (vectors to compare
with ours) and by bench:models (its throughput beside ours).

Reads one JSON request on stdin:
  {"model_dir": …, "model_file": "onnx/model.onnx", "pooling": "cls"|"mean",
   "texts": [...], "batch_size": 32, "threads": null, "timing_texts": [...]?}
and writes one JSON answer on stdout:
  {"vectors": [[...], ...], "timing": {"texts": n, "seconds": s}?}
"""
import json
import sys
import time

from fastembed import TextEmbedding
from fastembed.common.model_description import ModelSource, PoolingType


def main() -> None:
    request = json.load(sys.stdin)
    name = "local/" + request["model_dir"].rstrip("/").split("/")[-1]
    TextEmbedding.add_custom_model(
        model=name,
        pooling=PoolingType.CLS if request["pooling"] == "cls" else PoolingType.MEAN,
        normalization=True,
        sources=ModelSource(hf=name),
        dim=request.get("dimensions", 384),
        model_file=request.get("model_file", "onnx/model.onnx"),
    )
    model = TextEmbedding(
        name, specific_model_path=request["model_dir"], threads=request.get("threads")
    )
    batch_size = request.get("batch_size", 32)
    answer = {
        "vectors": [
            [float(x) for x in v] for v in model.embed(request["texts"], batch_size=batch_size)
        ]
    }
    timing_texts = request.get("timing_texts")
    if timing_texts:
        list(model.embed(timing_texts[:batch_size], batch_size=batch_size))  # warm up
        start = time.perf_counter()
        for _ in model.embed(timing_texts, batch_size=batch_size):
            pass
        answer["timing"] = {"texts": len(timing_texts), "seconds": time.perf_counter() - start}
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
