#!/usr/bin/python3
"""Trains the digits example classifier and exports it to ONNX.

The model is a small multilayer perceptron (scikit-learn's MLPClassifier, one
hidden layer of 32 ReLU units) trained on the 8x8 handwritten digits that
Debian's python3-sklearn ships (sklearn.datasets.load_digits). A fixed quarter
of the data is held back (stratified, random_state 0) and never trained on.

The ONNX graph is written by hand with onnx.helper from the trained weights:

    pixels FP32 [N, 64]  (raw pixel value / 16, so 0..1)
      -> MatMul W1 -> Add b1 -> Relu -> MatMul W2 -> Add b2 = logits [N, 10]
    probabilities = Softmax(logits, axis 1)            FP32  [N, 10]
    label         = ArgMax(logits, axis 1, keepdims)   INT64 [N, 1]

Before writing anything the script re-evaluates that graph in numpy (float32,
from the initializers it is about to write) on the held-back split and checks
that it agrees with sklearn's predict_proba and predict. It writes:

    examples/model_repository/digits_onnx/1/model.onnx
    examples/digits/heldback.json   (split parameters, held-back indices,
                                     the model's class for each, accuracy)

Needs python3-sklearn, python3-onnx (1.12) and python3-numpy; the server does
not. Run from anywhere: `python3 examples/digits/train_digits.py`. The output
is deterministic (same Debian packages -> same bytes), so a re-run shows up in
`git diff` only when something really changed.
"""

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
MODEL_PATH = REPO_ROOT / "examples" / "model_repository" / "digits_onnx" / "1" / "model.onnx"
HELDBACK_PATH = HERE / "heldback.json"

# The split and the training run; heldback.json records the split so a test
# can rebuild it with sklearn and compare sample by sample.
SPLIT = {"test_size": 0.25, "random_state": 0, "stratify": "y"}
HIDDEN = 32
TRAIN_SEED = 0
MAX_ITER = 400
PIXEL_SCALE = 16.0  # load_digits pixels are integers 0..16

# Opset 13 (Softmax over one axis) and IR version 8: both Debian's onnx 1.12
# and ONNX Runtime 1.30 accept them.
OPSET = 13
IR_VERSION = 8

# Names shared with the model configuration and with the later TorchScript
# twin and ensemble (issue 27).
INPUT_NAME = "pixels"
PROB_NAME = "probabilities"
LABEL_NAME = "label"


def load_split():
    """(X_train, X_test, y_train, y_test, idx_test): pixels already scaled to 0..1."""
    digits = load_digits()
    X = (digits.data / PIXEL_SCALE).astype(np.float32)
    y = digits.target.astype(np.int64)
    idx = np.arange(len(y))
    X_tr, X_te, y_tr, y_te, _, idx_te = train_test_split(
        X, y, idx, test_size=SPLIT["test_size"], random_state=SPLIT["random_state"], stratify=y)
    return X_tr, X_te, y_tr, y_te, idx_te


def train(X_tr, y_tr):
    clf = MLPClassifier(hidden_layer_sizes=(HIDDEN,), activation="relu", solver="adam",
                        random_state=TRAIN_SEED, max_iter=MAX_ITER)
    with warnings.catch_warnings():
        # A few hundred epochs are plenty for this data; whether adam's
        # tolerance was reached does not matter, the checks below do.
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X_tr.astype(np.float64), y_tr)
    assert list(clf.classes_) == list(range(10)), clf.classes_
    assert clf.out_activation_ == "softmax", clf.out_activation_
    return clf


def weights_of(clf):
    """The network as float32 arrays: (W1 [64,H], b1 [H], W2 [H,10], b2 [10])."""
    (w1, w2), (b1, b2) = clf.coefs_, clf.intercepts_
    return tuple(np.ascontiguousarray(a, dtype=np.float32) for a in (w1, b1, w2, b2))


def build_onnx(weights):
    w1, b1, w2, b2 = weights
    inits = [numpy_helper.from_array(a, name) for a, name in
             ((w1, "W1"), (b1, "b1"), (w2, "W2"), (b2, "b2"))]
    nodes = [
        helper.make_node("MatMul", [INPUT_NAME, "W1"], ["h_mm"], name="fc1_matmul"),
        helper.make_node("Add", ["h_mm", "b1"], ["h_pre"], name="fc1_add"),
        helper.make_node("Relu", ["h_pre"], ["h"], name="fc1_relu"),
        helper.make_node("MatMul", ["h", "W2"], ["o_mm"], name="fc2_matmul"),
        helper.make_node("Add", ["o_mm", "b2"], ["logits"], name="fc2_add"),
        helper.make_node("Softmax", ["logits"], [PROB_NAME], name="softmax", axis=1),
        helper.make_node("ArgMax", ["logits"], [LABEL_NAME], name="argmax", axis=1, keepdims=1),
    ]
    graph = helper.make_graph(
        nodes, "digits_mlp",
        inputs=[helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, ["batch", 64])],
        outputs=[helper.make_tensor_value_info(PROB_NAME, TensorProto.FLOAT, ["batch", 10]),
                 helper.make_tensor_value_info(LABEL_NAME, TensorProto.INT64, ["batch", 1])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="inferd examples/digits/train_digits.py",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    model.doc_string = ("8x8 handwritten digit classifier (sklearn load_digits), "
                        "input pixels = raw / 16")
    onnx.checker.check_model(model)
    return model


def run_graph_numpy(model, X):
    """Evaluates the exported graph in float32 numpy, reading the weights back
    from the model's initializers (not from sklearn), node by node."""
    env = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    env[INPUT_NAME] = np.asarray(X, dtype=np.float32)
    for node in model.graph.node:
        a = [env[n] for n in node.input]
        attrs = {at.name: helper.get_attribute_value(at) for at in node.attribute}
        if node.op_type == "MatMul":
            r = a[0] @ a[1]
        elif node.op_type == "Add":
            r = a[0] + a[1]
        elif node.op_type == "Relu":
            r = np.maximum(a[0], np.float32(0))
        elif node.op_type == "Softmax":
            z = a[0] - a[0].max(axis=attrs["axis"], keepdims=True)
            e = np.exp(z)
            r = e / e.sum(axis=attrs["axis"], keepdims=True)
        elif node.op_type == "ArgMax":
            r = np.argmax(a[0], axis=attrs["axis"]).astype(np.int64)
            if attrs.get("keepdims", 1):
                r = np.expand_dims(r, attrs["axis"])
        else:
            raise ValueError(f"no numpy evaluation for {node.op_type}")
        env[node.output[0]] = r.astype(np.float32) if r.dtype.kind == "f" else r
    return env[PROB_NAME], env[LABEL_NAME], env["logits"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="retrain and compare with the committed files instead of writing them")
    args = ap.parse_args()

    X_tr, X_te, y_tr, y_te, idx_te = load_split()
    clf = train(X_tr, y_tr)
    model = build_onnx(weights_of(clf))
    onnx.checker.check_model(onnx.load_from_string(model.SerializeToString()))

    probs, labels, logits = run_graph_numpy(model, X_te)
    sk_probs = clf.predict_proba(X_te.astype(np.float64))
    sk_labels = clf.predict(X_te.astype(np.float64))
    max_diff = float(np.abs(probs - sk_probs).max())
    assert max_diff < 1e-5, f"exported graph and sklearn differ by {max_diff} in probability"
    assert np.array_equal(labels[:, 0], sk_labels), "exported graph and sklearn disagree on a class"
    # The class is decided by a clear margin everywhere, so float32 rounding in
    # any runtime cannot flip it.
    top2 = np.sort(logits, axis=1)[:, -2:]
    min_margin = float((top2[:, 1] - top2[:, 0]).min())
    assert min_margin > 1e-3, f"a held-back sample is a near tie (logit margin {min_margin})"

    correct = int((labels[:, 0] == y_te).sum())
    record = {
        "dataset": "sklearn.datasets.load_digits",
        "pixels": "raw value / 16, FP32, 64 per sample (row-major 8x8)",
        "split": {"function": "sklearn.model_selection.train_test_split", **SPLIT},
        "samples": int(len(y_te)),
        "correct": correct,
        "accuracy": correct / len(y_te),
        "indices": [int(i) for i in idx_te],
        "predicted": [int(c) for c in labels[:, 0]],
        "min_logit_margin": round(min_margin, 4),
        "max_prob_diff_vs_sklearn": max_diff,
    }
    blob = model.SerializeToString()
    # One key a line, each value compact: the lists stay one line each.
    text = "{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in record.items()) + "\n}\n"

    if args.check:
        same_model = MODEL_PATH.read_bytes() == blob
        same_record = HELDBACK_PATH.read_text() == text
        print(f"model.onnx {'unchanged' if same_model else 'DIFFERS'}, "
              f"heldback.json {'unchanged' if same_record else 'DIFFERS'}")
        return 0 if same_model and same_record else 1

    MODEL_PATH.parent.mkdir(parents=True, exist_ok=True)
    MODEL_PATH.write_bytes(blob)
    HELDBACK_PATH.write_text(text)
    print(f"held-back accuracy {correct}/{len(y_te)} = {correct / len(y_te):.4f}; "
          f"max |p - sklearn| {max_diff:.2e}; wrote {MODEL_PATH.relative_to(REPO_ROOT)} "
          f"({len(blob)} bytes) and {HELDBACK_PATH.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
