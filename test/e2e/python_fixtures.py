"""Shared pieces of the Python backend's e2e tests (test_python_decoupled.py,
test_python_features.py): a server over a copy of the models of
test/models/python_repo (a copy: some models write beside their model.py),
and one unary request over HTTP binary or gRPC."""

import shutil

import grpc
import numpy as np
import requests

import e2e_helpers as h
import grpc_helpers as gh

PY_REPO = h.REPO_ROOT / "test" / "models" / "python_repo"
HANG_S = 60


def start_python_server(tmp, models, wait_models, extra=()):
    """inferd over a copy of `models` from python_repo under `tmp`, once the
    Python backend is built and `wait_models` are ready."""
    h.require_binary()
    so = h.backend_dir() / "python" / "libtriton_python.so"
    assert so.is_file(), f"Python backend not built at {so}; run `make` first"
    repo = tmp / "repo"
    for m in models:
        shutil.copytree(PY_REPO / m, repo / m)
    return h.start_server(tmp / "srv", [repo], wait_models=wait_models, timeout=120, extra=list(extra))


class Failed(Exception):
    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


def infer(proto, srv, gc, model, inputs, request_id=None, timeout=HANG_S):
    """One unary request; inputs: [(name, datatype, shape, values)].
    Returns {output: ndarray or list of bytes}, or raises Failed."""
    inputs = [(n, d, s, v if d == "BYTES" else np.asarray(v, dtype=h.NP_DTYPES[d]).reshape(s))
              for n, d, s, v in inputs]
    if proto == "http":
        body, hlen = h.build_binary_request(inputs, parameters={"binary_data_output": True},
                                            request_id=request_id)
        r = requests.post(srv.url(f"/v2/models/{model}/infer"), data=body, timeout=timeout, headers={
            "Inference-Header-Content-Length": str(hlen), "Content-Type": "application/octet-stream"})
        if r.status_code != 200:
            raise Failed(r.status_code, h.error_of(r))
        return h.parse_infer_response(r)[1]
    req = gh.infer_request(gc.pb, model, inputs, request_id=request_id)
    try:
        resp = gc.model_infer(req, timeout=timeout)
    except grpc.RpcError as e:
        raise Failed(e.code().name, e.details())
    return gh.outputs_of(resp)
