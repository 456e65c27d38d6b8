"""PyTorch backend: how a request's inputs become forward()'s tensors.

A small input is copied into the tensor the instance's previous run used,
when nothing holds that tensor any more (pt_exec.cc, input_tensor()). These
tests would fail if that reuse were wrong: a model that writes into its
input in place, one that keeps its input (or a view of it) in a module
attribute across requests, one whose output is its input, batches of
changing sizes, and an input read from system shared memory, which the
model's in-place write must not reach.
"""

import os
import uuid
from multiprocessing import shared_memory

import numpy as np
import pytest
import requests
import torch

import pt_fixtures as pf
import torch_models as tm

W = 4


class InPlace(torch.nn.Module):
    """Doubles its input in place, then returns it plus one."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2)
        return x + 1


class Stash(torch.nn.Module):
    """Returns the input of the previous request (zeros at first) and keeps
    this one's input itself in an attribute."""

    def __init__(self):
        super().__init__()
        self.last = torch.zeros(W)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        prev = self.last
        self.last = x
        return prev


class StashView(torch.nn.Module):
    """As Stash, keeping a view of its input (same storage, another tensor)."""

    def __init__(self):
        super().__init__()
        self.last = torch.zeros(W)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        prev = self.last
        self.last = x[:]
        return prev * 1


def _build_repo(repo):
    io = ([("INPUT__0", "FP32", [W])], [("OUTPUT__0", "FP32", [W])])
    tm.write(repo, "inplace", tm.scripted(InPlace()), tm.config("inplace", *io))
    tm.write(repo, "inplace_grad", tm.scripted(InPlace()),
             tm.config("inplace_grad", *io, extra=tm.parameters(INFERENCE_MODE="false")))
    tm.write(repo, "stash", tm.scripted(Stash()), tm.config("stash", *io))
    tm.write(repo, "stash_view", tm.scripted(StashView()), tm.config("stash_view", *io))
    tm.write(repo, "identity", tm.scripted(tm.Identity()),
             tm.config("identity", *io, max_batch_size=8, extra="dynamic_batching { }\n"))


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pt-inputs")
    repo = tmp / "repo"
    _build_repo(repo)
    s = pf.start(tmp / "srv", repo, wait_models=("inplace", "inplace_grad", "stash", "stash_view",
                                                 "identity"))
    yield s
    s.stop(check=True)


def _x(k, shape=(W,)):
    return (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 10 * k).astype(np.float32)


@pytest.mark.parametrize("model", ["inplace", "inplace_grad"])
@pytest.mark.parametrize("proto", ["binary", "json"])
def test_in_place_write_does_not_reach_the_next_request(srv, model, proto):
    for k in range(5):
        x = _x(k)
        out = pf.infer(proto, srv, model, [("INPUT__0", "FP32", x.shape, x)])
        np.testing.assert_array_equal(out["OUTPUT__0"], x * 2 + 1)


@pytest.mark.parametrize("model", ["stash", "stash_view"])
def test_an_input_the_model_keeps_is_not_refilled(srv, model):
    prev = np.zeros(W, dtype=np.float32)
    for k in range(5):
        x = _x(k)
        out = pf.infer("binary", srv, model, [("INPUT__0", "FP32", x.shape, x)])
        np.testing.assert_array_equal(out["OUTPUT__0"], prev)
        prev = x


def test_output_that_is_the_input_and_changing_batch_sizes(srv):
    for k, rows in enumerate([1, 3, 1, 8, 2, 1, 1]):
        x = _x(k, (rows, W))
        out = pf.infer("binary", srv, "identity", [("INPUT__0", "FP32", x.shape, x)])
        np.testing.assert_array_equal(out["OUTPUT__0"], x)
    xs = [_x(k, (1 + k % 3, W)) for k in range(12)]
    for _ in range(3):
        outs = pf.concurrently([
            (lambda x=x: pf.infer("binary", srv, "identity", [("INPUT__0", "FP32", x.shape, x)]))
            for x in xs])
        for x, out in zip(xs, outs):
            np.testing.assert_array_equal(out["OUTPUT__0"], x)


def test_in_place_write_leaves_shared_memory_input_alone(srv):
    name = f"inferd_t_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    shm = shared_memory.SharedMemory(name=name, create=True, size=4096)
    try:
        r = requests.post(srv.url("/v2/systemsharedmemory/region/pt_in/register"),
                          json={"key": "/" + name, "byte_size": 4096}, timeout=30)
        assert r.status_code == 200, r.text
        for k in range(3):
            x = _x(k)
            raw = x.tobytes()
            shm.buf[64:64 + len(raw)] = raw
            body = {"inputs": [{"name": "INPUT__0", "datatype": "FP32", "shape": [W],
                                "parameters": {"shared_memory_region": "pt_in",
                                               "shared_memory_byte_size": len(raw),
                                               "shared_memory_offset": 64}}]}
            r = requests.post(srv.url("/v2/models/inplace/infer"), json=body, timeout=30)
            assert r.status_code == 200, r.text
            np.testing.assert_array_equal(np.asarray(r.json()["outputs"][0]["data"], dtype=np.float32),
                                          x * 2 + 1)
            assert bytes(shm.buf[64:64 + len(raw)]) == raw
        r = requests.post(srv.url("/v2/systemsharedmemory/region/pt_in/unregister"), timeout=30)
        assert r.status_code == 200, r.text
    finally:
        shm.close()
        shm.unlink()
