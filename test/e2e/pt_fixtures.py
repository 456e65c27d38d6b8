"""Shared pieces of the PyTorch backend's e2e tests (test_pytorch*.py).

The requests (HTTP JSON, HTTP binary, gRPC), the repository extension calls
and the concurrency helper are the ONNX Runtime tests' own (ort_fixtures);
this adds the server start over a repository of TorchScript models
(torch_models.py) once build/backends/pytorch/libtriton_pytorch.so exists.
"""

import e2e_helpers as h
import ort_fixtures as of

PROTOCOLS = of.PROTOCOLS
Failed = of.Failed
infer = of.infer
load_error = of.load_error
concurrently = of.concurrently
grpc_client = of.grpc_client
model_stats = of.model_stats

LOAD_TIMEOUT_S = 180


def backend_so():
    return h.backend_dir() / "pytorch" / "libtriton_pytorch.so"


def start(tmp, repo, wait_models=(), extra=()):
    """inferd over `repo`, waiting until every model of `wait_models` is
    ready and the start-up loading ended."""
    h.require_binary()
    so = backend_so()
    assert so.is_file(), f"PyTorch backend not built at {so}: install libtorch-dev and run `make`"
    srv = h.start_server(tmp, [repo], extra=list(extra), wait_models=tuple(wait_models),
                         timeout=LOAD_TIMEOUT_S)
    srv.wait_loading_finished(timeout=LOAD_TIMEOUT_S)
    return srv
