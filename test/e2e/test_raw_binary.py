"""Triton's raw binary request (binary tensor data extension): an infer
request with `Inference-Header-Content-Length: 0` whose whole body is the
tensor bytes of a model's only input. Name, datatype and shape come from the
model configuration (a leading 1 when the model batches, the one `-1` dim
from the byte count, a BYTES input of shape [1] gets the 4-byte length
prepended), and the outputs come back as binary data. Triton's errors for
models that do not fit (several inputs, several `-1` dims, BYTES not [1]).
"""

import json
import struct

import numpy as np
import pytest
import requests

import e2e_helpers as h

RAW = {"Inference-Header-Content-Length": "0"}


def _model(repo, name, dtype, dims, max_batch=0):
    d = repo / name
    (d / "1").mkdir(parents=True)
    dims_s = ", ".join(str(x) for x in dims)
    (d / "config.pbtxt").write_text(
        f'name: "{name}"\nbackend: "identity"\nmax_batch_size: {max_batch}\n'
        f'input [ {{ name: "INPUT0" data_type: {dtype} dims: [ {dims_s} ] }} ]\n'
        f'output [ {{ name: "OUTPUT0" data_type: {dtype} dims: [ {dims_s} ] }} ]\n')


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("raw")
    repo = h.copy_repo(tmp / "repo", models=["identity_int32", "identity_fp32", "identity_multi",
                                             "identity_bytes"])
    _model(repo, "bytes_one", "TYPE_STRING", [1])
    _model(repo, "two_wild", "TYPE_FP16", [-1, -1])
    _model(repo, "nobatch_fp32", "TYPE_FP32", [-1])
    s = h.start_server(tmp, [repo], wait_models=("identity_int32", "bytes_one", "two_wild"))
    try:
        yield s
    finally:
        s.stop(check=True)


def _post(srv, model, data, headers=RAW):
    return requests.post(srv.url(f"/v2/models/{model}/infer"), data=data, headers=headers,
                         timeout=30)


def _split(r):
    n = int(r.headers["Inference-Header-Content-Length"])
    return json.loads(r.content[:n]), r.content[n:]


def test_raw_batched_wildcard(srv):
    x = np.arange(4, dtype=np.int32)
    r = _post(srv, "identity_int32", x.tobytes())
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/octet-stream"
    head, tail = _split(r)
    assert head["outputs"] == [{"name": "OUTPUT0", "datatype": "INT32", "shape": [1, 4],
                                "parameters": {"binary_data_size": 16}}], head
    assert tail == x.tobytes()


def test_raw_fixed_shape_and_wrong_size(srv):
    x = np.arange(16, dtype=np.float32)
    r = _post(srv, "identity_fp32", x.tobytes())
    assert r.status_code == 200, r.text
    head, tail = _split(r)
    assert head["outputs"][0]["shape"] == [1, 16] and tail == x.tobytes()
    r = _post(srv, "identity_fp32", x.tobytes()[:60])
    assert r.status_code == 400, r.text
    assert "input byte size mismatch for input 'INPUT0' for model 'identity_fp32'. " \
           "Expected 64, got 60" in r.json()["error"], r.text


def test_raw_not_batching_and_empty(srv):
    x = np.arange(5, dtype=np.float32)
    r = _post(srv, "nobatch_fp32", x.tobytes())
    assert r.status_code == 200, r.text
    head, tail = _split(r)
    assert head["outputs"][0]["shape"] == [5] and tail == x.tobytes()
    # No bytes at all: a zero-sized tensor (Triton appends 0 bytes).
    r = _post(srv, "nobatch_fp32", b"")
    assert r.status_code == 200, r.text
    head, tail = _split(r) if "Inference-Header-Content-Length" in r.headers else (r.json(), b"")
    assert head["outputs"][0]["shape"] == [0] and tail == b""


def test_raw_bytes_of_shape_one(srv):
    r = _post(srv, "bytes_one", b"427")
    assert r.status_code == 200, r.text
    head, tail = _split(r)
    assert head["outputs"][0]["shape"] == [1] and head["outputs"][0]["datatype"] == "BYTES"
    # The 4-byte length Triton prepends, then the bytes.
    assert tail == struct.pack("<I", 3) + b"427"


def test_raw_errors(srv):
    r = _post(srv, "identity_multi", np.arange(5, dtype=np.float32).tobytes())
    assert r.status_code == 400, r.text
    assert r.json()["error"] == (
        "[request id: <id_unknown>] Raw request must only have 1 input (found 1) to be "
        "deduced but got 2 inputs in 'identity_multi' model configuration")
    r = _post(srv, "two_wild", np.ones(4, dtype=np.float16).tobytes())
    assert r.status_code == 400, r.text
    assert r.json()["error"] == (
        "[request id: <id_unknown>] The shape of the raw input 'INPUT0' can not be deduced "
        "because there are more than one variable-sized dimension")
    r = _post(srv, "identity_bytes", b"427")
    assert r.status_code == 400, r.text
    assert r.json()["error"] == (
        "[request id: <id_unknown>] For BYTE datatype raw input 'INPUT0', the model must "
        "have input shape [1]")
    r = _post(srv, "nope", b"1234")
    assert r.status_code == 404, r.text
    assert "nope" in r.json()["error"], r.text


def test_json_requests_are_unchanged(srv):
    """A JSON request (no header, or the header giving the JSON's length)
    is not raw."""
    body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 2],
                                   "data": [1, 2]}]}).encode()
    r = _post(srv, "identity_int32", body, headers={})
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [1, 2], r.text
    r = _post(srv, "identity_int32", body,
              headers={"Inference-Header-Content-Length": str(len(body))})
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [1, 2], r.text
