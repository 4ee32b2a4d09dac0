# Rewrites a BERT cross-encoder's ONNX graph so that it computes token_type_ids from input_ids
# itself (1 after the first [SEP], times attention_mask) instead of taking them as an input.
# Why: infinity-emb's optimum engine feeds a sequence-classification model only input_ids and
# attention_mask, so a graph that needs token_type_ids fails to run, and feeding zeros scores a
# pair as if the passage were part of the query (logits off by ~2). With the types computed
# in-graph, infinity's scores equal the reference pipeline's (scripts/models/infinity.ts).
#
#   python infinity_tti_graph.py SRC.onnx DST.onnx [SEP_ID]
import sys

import onnx
from onnx import TensorProto, helper


def main() -> None:
    src, dst = sys.argv[1], sys.argv[2]
    sep_id = int(sys.argv[3]) if len(sys.argv) > 3 else 102
    model = onnx.load(src)
    graph = model.graph
    inputs = [i for i in graph.input if i.name == "token_type_ids"]
    if not inputs:
        raise SystemExit(f"{src} has no token_type_ids input: nothing to rewrite")
    graph.input.remove(inputs[0])
    graph.initializer.extend(
        [
            helper.make_tensor("tti_sep", TensorProto.INT64, [], [sep_id]),
            helper.make_tensor("tti_axis", TensorProto.INT64, [], [1]),
        ]
    )
    nodes = [
        helper.make_node("Equal", ["input_ids", "tti_sep"], ["tti_is_sep"]),
        helper.make_node("Cast", ["tti_is_sep"], ["tti_is_sep_i"], to=TensorProto.INT64),
        # Exclusive: the first [SEP] still belongs to the query (type 0), what follows it is 1…
        helper.make_node("CumSum", ["tti_is_sep_i", "tti_axis"], ["tti_cum"], exclusive=1),
        # …capped at 1 (a "[SEP]" written in the passage counts again) and 0 on padding.
        helper.make_node("Min", ["tti_cum", "attention_mask"], ["token_type_ids"]),
    ]
    # Producers before consumers: the graph's nodes are in topological order.
    for node in reversed(nodes):
        graph.node.insert(0, node)
    onnx.checker.check_model(model)
    onnx.save(model, dst)


if __name__ == "__main__":
    main()
