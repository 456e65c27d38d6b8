#!/usr/bin/python3
"""Exports the digits example classifier as TorchScript (digits_torchscript).

The network is the one of examples/model_repository/digits_onnx/1/model.onnx
(examples/digits/train_digits.py): its four initializers W1, b1, W2, b2 are
read from the committed ONNX file and put into the same multilayer perceptron
written in torch, which is scripted (torch.jit.script) and saved for Triton's
PyTorch backend (`platform: "pytorch_libtorch"`):

    INPUT__0  FP32  [N, 64]  (raw pixel value / 16, so 0..1)
      -> Linear(64, 32) -> ReLU -> Linear(32, 10) = logits [N, 10]
    OUTPUT__0 = softmax(logits, dim 1)               FP32  [N, 10]
    OUTPUT__1 = argmax(logits, dim 1, keepdim)       INT64 [N, 1]

Before writing, and again after loading the saved file back with
torch.jit.load, it runs the module on every sample of the held-back split and
checks it against the ONNX graph evaluated in numpy
(train_digits.run_graph_numpy): the same class everywhere, probabilities
within PROB_ATOL. It writes

    examples/model_repository/digits_torchscript/1/model.pt

(the folder also holds the model's config.pbtxt; the model moves into
examples/model_repository when inferd's PyTorch backend lands).

`--check` writes nothing: it loads the committed model.pt and runs the same
comparison (what test/e2e/test_digits_ensemble.py runs). Needs Debian's
python3-torch, python3-onnx, python3-sklearn and python3-numpy; the server
does not.
"""

import argparse
import io
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import train_digits  # noqa: E402  (the split, the ONNX file, the numpy evaluation)

OUT_DIR = HERE.parent / "model_repository" / "digits_torchscript"
MODEL_PT = OUT_DIR / "1" / "model.pt"
# float32 matmuls in torch and in numpy sum in different orders; the
# probabilities agree to a few ulps, the classes exactly.
PROB_ATOL = 1e-6


class DigitsMLP(torch.nn.Module):
    """The digits MLP: 64 -> 32 (ReLU) -> 10, returning (probabilities, label)."""

    def __init__(self, w1, b1, w2, b2):
        super().__init__()
        self.fc1 = torch.nn.Linear(w1.shape[0], w1.shape[1])
        self.fc2 = torch.nn.Linear(w2.shape[0], w2.shape[1])
        with torch.no_grad():
            # ONNX's MatMul takes x @ W; torch's Linear stores W transposed.
            self.fc1.weight.copy_(torch.from_numpy(np.ascontiguousarray(w1.T)))
            self.fc1.bias.copy_(torch.from_numpy(np.array(b1)))
            self.fc2.weight.copy_(torch.from_numpy(np.ascontiguousarray(w2.T)))
            self.fc2.bias.copy_(torch.from_numpy(np.array(b2)))

    def forward(self, x: torch.Tensor):
        logits = self.fc2(torch.relu(self.fc1(x)))
        return torch.softmax(logits, dim=1), torch.argmax(logits, dim=1, keepdim=True)


def onnx_weights(model):
    init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return tuple(np.asarray(init[n], dtype=np.float32) for n in ("W1", "b1", "W2", "b2"))


def compare(module, X, want_probs, want_labels, what):
    """Runs `module` on X and checks it against the numpy graph's answers;
    returns the largest probability difference."""
    with torch.no_grad():
        probs, labels = module(torch.from_numpy(X))
    assert probs.dtype == torch.float32 and tuple(probs.shape) == (len(X), 10), probs.shape
    assert labels.dtype == torch.int64 and tuple(labels.shape) == (len(X), 1), labels.shape
    wrong = np.flatnonzero(labels.numpy()[:, 0] != want_labels[:, 0])
    assert wrong.size == 0, f"{what}: classes differ from the ONNX graph at samples {wrong[:10]}"
    diff = float(np.abs(probs.numpy() - want_probs).max())
    assert diff <= PROB_ATOL, f"{what}: probabilities differ from the ONNX graph by {diff}"
    return diff


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="compare the committed model.pt with the ONNX graph; write nothing")
    args = ap.parse_args()

    torch.manual_seed(0)
    model = onnx.load(str(train_digits.MODEL_PATH))
    _, X_te, _, y_te, _ = train_digits.load_split()
    want_probs, want_labels, _ = train_digits.run_graph_numpy(model, X_te)
    n = len(X_te)

    if args.check:
        loaded = torch.jit.load(str(MODEL_PT))
        loaded.eval()
        diff = compare(loaded, X_te, want_probs, want_labels, str(MODEL_PT))
        correct = int((want_labels[:, 0] == y_te).sum())
        print(f"{MODEL_PT.relative_to(train_digits.REPO_ROOT)} agrees with model.onnx on all {n} "
              f"held-back samples (max |p - onnx| {diff:.2e}; {correct}/{n} correct)")
        return 0

    module = DigitsMLP(*onnx_weights(model)).eval()
    compare(module, X_te, want_probs, want_labels, "the torch module")
    scripted = torch.jit.script(module)
    compare(scripted, X_te, want_probs, want_labels, "the scripted module")
    buf = io.BytesIO()
    torch.jit.save(scripted, buf)
    buf.seek(0)
    diff = compare(torch.jit.load(buf), X_te, want_probs, want_labels, "the saved module")

    MODEL_PT.parent.mkdir(parents=True, exist_ok=True)
    MODEL_PT.write_bytes(buf.getvalue())
    print(f"torch {torch.__version__}: wrote {MODEL_PT.relative_to(train_digits.REPO_ROOT)} "
          f"({len(buf.getvalue())} bytes); agrees with model.onnx on all {n} held-back samples "
          f"(max |p - onnx| {diff:.2e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
