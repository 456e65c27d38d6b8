#!/usr/bin/python3
"""Writes digits_postprocess, the last step of the `digits` ensemble, as ONNX.

digits_onnx answers the probability of every class and the most probable
class; the ensemble answers that class and its probability only. The step
that picks it is one ONNX node:

    probabilities FP32  [N, 10]
    label         INT64 [N, 1]
      -> GatherElements(probabilities, label, axis 1) = probability FP32 [N, 1]

It is an ONNX model run by the ONNX Runtime backend rather than a second
Python model: a Python step costs the server a round trip to its stub
process (a few hundred microseconds on the 2-core bench machine, more than
the client's own HTTP round trip the ensemble saves), an ONNX step a few
tens of microseconds in the server's process (bench/RESULTS.md, issue 27).

Before writing, the script checks the graph with onnx.checker and evaluates
it in numpy (np.take_along_axis) against digits_onnx's answers (numpy) on the
held-back split: the probability of the label, which is also the largest.
Writes examples/model_repository/digits_postprocess/1/model.onnx; the bytes
are deterministic, so `--check` compares them with the committed file.
Needs python3-onnx, python3-sklearn and python3-numpy; the server does not.
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import train_digits  # noqa: E402  (the split, the classifier, the numpy evaluation)

MODEL_PATH = train_digits.REPO_ROOT / "examples" / "model_repository" / "digits_postprocess" / "1" / "model.onnx"
OUTPUT_NAME = "probability"


def build():
    node = helper.make_node("GatherElements", [train_digits.PROB_NAME, train_digits.LABEL_NAME],
                            [OUTPUT_NAME], name="label_probability", axis=1)
    graph = helper.make_graph(
        [node], "digits_postprocess",
        inputs=[helper.make_tensor_value_info(train_digits.PROB_NAME, TensorProto.FLOAT, ["batch", 10]),
                helper.make_tensor_value_info(train_digits.LABEL_NAME, TensorProto.INT64, ["batch", 1])],
        outputs=[helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", 1])])
    model = helper.make_model(graph, producer_name="inferd examples/digits/make_postprocess.py",
                              opset_imports=[helper.make_opsetid("", train_digits.OPSET)])
    model.ir_version = train_digits.IR_VERSION
    model.doc_string = "the probability of the label: GatherElements(probabilities, label, axis 1)"
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="compare with the committed model.onnx instead of writing it")
    args = ap.parse_args()

    model = build()
    assert [n.op_type for n in model.graph.node] == ["GatherElements"]
    _, X_te, _, _, _ = train_digits.load_split()
    probs, labels, _ = train_digits.run_graph_numpy(onnx.load(str(train_digits.MODEL_PATH)), X_te)
    picked = np.take_along_axis(probs, labels, axis=1)
    assert picked.shape == (len(X_te), 1) and picked.dtype == np.float32
    assert np.array_equal(picked[:, 0], probs.max(axis=1)), "the label's probability is not the largest"

    blob = model.SerializeToString()
    if args.check:
        same = MODEL_PATH.read_bytes() == blob
        print(f"{MODEL_PATH.relative_to(train_digits.REPO_ROOT)} {'unchanged' if same else 'DIFFERS'}")
        return 0 if same else 1
    MODEL_PATH.parent.mkdir(parents=True, exist_ok=True)
    MODEL_PATH.write_bytes(blob)
    print(f"wrote {MODEL_PATH.relative_to(train_digits.REPO_ROOT)} ({len(blob)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
