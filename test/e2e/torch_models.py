"""TorchScript models for the PyTorch backend's e2e tests (test_pytorch*.py),
scripted or traced at test time with Debian's python3-torch and saved with
torch.jit.save as <repo>/<name>/<version>/model.pt, with their config.pbtxt.

Every model is small and deterministic (fixed weights), so that the tests
compute the expected outputs with torch itself.
"""

from pathlib import Path
from typing import Dict, List, Tuple

import torch

import onnx_models as om

# Triton datatype -> torch dtype, for the types libtorch 1.13 has.
TORCH_TYPES = {
    "BOOL": torch.bool,
    "UINT8": torch.uint8,
    "INT8": torch.int8,
    "INT16": torch.int16,
    "INT32": torch.int32,
    "INT64": torch.int64,
    "FP16": torch.float16,
    "FP32": torch.float32,
    "FP64": torch.float64,
}


class AddSub(torch.nn.Module):
    """Triton's add/sub: (a + b, a - b)."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return a + b, a - b


class AddSubDict(torch.nn.Module):
    """The same, as a dictionary keyed by output name."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> Dict[str, torch.Tensor]:
        return {"sum": a + b, "diff": a - b}


class AddSubList(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> List[torch.Tensor]:
        return [a + b, a - b]


class DictInput(torch.nn.Module):
    """forward(Dict[str, Tensor]): inputs by configuration name."""

    def forward(self, d: Dict[str, torch.Tensor]) -> torch.Tensor:
        return d["x"] * 10 + d["y"]


class Identity(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clone()


class Raises(torch.nn.Module):
    """Doubles its input, and raises for any negative element."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool((x < 0).any()):
            raise RuntimeError("inferd-test: negative input")
        return x * 2


class ToDouble(torch.nn.Module):
    """FP32 in, FP64 out (a configuration saying FP32 for it is wrong)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.double()


class RowSum(torch.nn.Module):
    """One output per row: the row's sum, with the batch dim kept."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1, keepdim=True)


def linear():
    """A traced nn.Linear(4, 3) with fixed weights, then ReLU."""
    torch.manual_seed(7)
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    with torch.no_grad():
        return torch.jit.trace(m, torch.zeros(1, 4))


def scripted(module):
    return torch.jit.script(module)


def write(repo, name, model, config, version=1, filename="model.pt"):
    """Saves `model` (a ScriptModule, or raw bytes for broken files) and
    config.pbtxt; returns the model folder."""
    mdir = Path(repo) / name
    vdir = mdir / str(version)
    vdir.mkdir(parents=True, exist_ok=True)
    if isinstance(model, (bytes, bytearray)):
        (vdir / filename).write_bytes(bytes(model))
    else:
        torch.jit.save(model, str(vdir / filename))
    (mdir / "config.pbtxt").write_text(config)
    return mdir


def config(name, inputs, outputs, max_batch_size=0, platform=False, extra=""):
    backend = 'platform: "pytorch_libtorch"' if platform else 'backend: "pytorch"'
    return om.config(name, inputs, outputs, max_batch_size=max_batch_size, backend=backend,
                     extra=extra)


def parameters(**kv):
    """A parameters block: {key: string value}."""
    return "".join(f'parameters: {{ key: "{k}" value: {{ string_value: "{v}" }} }}\n'
                   for k, v in kv.items())


class Strings(torch.nn.Module):
    """BYTES in and out as List[str]: each string upper-cased, plus its
    length as an INT64 tensor."""

    def forward(self, s: List[str]) -> Tuple[List[str], torch.Tensor]:
        return [x.upper() for x in s], torch.tensor([len(x) for x in s], dtype=torch.int64)


class Accumulate(torch.nn.Module):
    """A stateful sequence model: the running sum of its inputs, restarted
    when the sequence batcher's START control (START__1) is 1."""

    def __init__(self):
        super().__init__()
        self.total = torch.zeros(1, dtype=torch.int32)

    def forward(self, x: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
        if bool(start.sum() > 0):
            self.total = torch.zeros(1, dtype=torch.int32)
        self.total = self.total + x.sum().to(torch.int32)
        return self.total.clone()


class RaggedSums(torch.nn.Module):
    """Ragged batching: x is the batch's elements in one flat tensor, count
    (BATCH_ELEMENT_COUNT) each request's element count and offs
    (BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO) where each one starts.
    Returns x doubled (scattered back by each request's shape), each
    request's sum (one row each) and its count (one row each)."""

    def forward(self, x: torch.Tensor, count: torch.Tensor,
                offs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        n = count.shape[0]
        sums = torch.zeros(n, 1, dtype=torch.float32)
        for i in range(n):
            sums[i, 0] = x[int(offs[i]):int(offs[i + 1])].sum()
        return x * 2.0, sums, count.reshape(n, 1)


class StateAdd(torch.nn.Module):
    """Implicit state: OUTPUT = INPUT + the sequence's state, which becomes
    the next state (returned twice: as the output and as the state)."""

    def forward(self, x: torch.Tensor, state: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        s = x + state
        return s, s.clone()
