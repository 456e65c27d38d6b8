"""Triton's classification extension over HTTP and gRPC: an output asked for
with "classification": N comes back as a BYTES tensor of its top-N elements,
"<value>:<index>[:<label>]" (the value as C++'s std::to_string prints it),
shape [batch, min(N, classes)] for a batching model, labels from the
output's label_filename (one per line, in the model's folder). Non-numeric
outputs are refused with Triton's text; the server lists "classification"
among its extensions.
"""

import json
import struct

import grpc
import numpy as np
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as g
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

LABELS = "zero\none\n\nthree\n"  # index 2 has an empty label: none printed


def _model(repo, name, dtype, dims, max_batch, label=None):
    d = repo / name
    (d / "1").mkdir(parents=True)
    dims_s = ", ".join(str(x) for x in dims)
    lab = f' label_filename: "{label}"' if label else ""
    (d / "config.pbtxt").write_text(
        f'name: "{name}"\nbackend: "identity"\nmax_batch_size: {max_batch}\n'
        f'input [ {{ name: "INPUT0" data_type: {dtype} dims: [ {dims_s} ] }} ]\n'
        f'output [ {{ name: "OUTPUT0" data_type: {dtype} dims: [ {dims_s} ]{lab} }} ]\n')
    if label:
        (d / label).write_text(LABELS)


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("cls")
    repo = h.copy_repo(tmp / "repo", models=["identity_bytes"])
    _model(repo, "cls_fp32", "TYPE_FP32", [4], 8, "labels.txt")
    _model(repo, "cls_int8", "TYPE_INT8", [-1], 0)
    _model(repo, "cls_u64", "TYPE_UINT64", [3], 0)
    _model(repo, "cls_bool", "TYPE_BOOL", [2], 0)
    # A label_filename that is not there: the load fails, as in Triton.
    _model(repo, "cls_nolabels", "TYPE_FP32", [2], 0, "labels.txt")
    (repo / "cls_nolabels" / "labels.txt").unlink()
    s = h.start_server(tmp, [repo], wait_models=("cls_fp32", "cls_int8", "cls_u64", "cls_bool"))
    try:
        yield s
    finally:
        s.stop(check=True)


def _infer(srv, model, dtype, shape, data, count, binary=None):
    params = {"classification": count}
    if binary is not None:
        params["binary_data"] = binary
    body = {"inputs": [{"name": "INPUT0", "datatype": dtype, "shape": shape, "data": data}],
            "outputs": [{"name": "OUTPUT0", "parameters": params}]}
    return requests.post(srv.url(f"/v2/models/{model}/infer"), json=body, timeout=30)


def test_http_top2_with_labels_per_batch_entry(srv):
    r = _infer(srv, "cls_fp32", "FP32", [2, 4], [1.1, 3.3, 0.5, 2.4, 4, 3, 2, 1], 2)
    assert r.status_code == 200, r.text
    assert r.json()["outputs"] == [{
        "name": "OUTPUT0", "datatype": "BYTES", "shape": [2, 2],
        "data": ["3.300000:1:one", "2.400000:3:three", "4.000000:0:zero", "3.000000:1:one"]}]


def test_http_more_classes_than_elements_empty_label_and_ties(srv):
    r = _infer(srv, "cls_fp32", "FP32", [1, 4], [1, 1, 5, 1], 10)
    assert r.status_code == 200, r.text
    out = r.json()["outputs"][0]
    # The class dim is min(N, classes); an empty label line prints no label;
    # equal values keep index order.
    assert out["shape"] == [1, 4], out
    assert out["data"] == ["5.000000:2", "1.000000:0:zero", "1.000000:1:one",
                           "1.000000:3:three"], out


def test_http_integers_not_batching_binary(srv):
    r = _infer(srv, "cls_int8", "INT8", [5], [3, -7, 9, 0, 127], 3, binary=True)
    assert r.status_code == 200, r.text
    n = int(r.headers["Inference-Header-Content-Length"])
    head = json.loads(r.content[:n])
    out = head["outputs"][0]
    assert out["datatype"] == "BYTES" and out["shape"] == [3], out
    tail = r.content[n:]
    want = b"".join(struct.pack("<I", len(s)) + s for s in (b"127:4", b"9:2", b"3:0"))
    assert tail == want and out["parameters"]["binary_data_size"] == len(want)
    r = _infer(srv, "cls_u64", "UINT64", [3], [1, 2 ** 64 - 1, 5], 1)
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == ["18446744073709551615:1"]


def test_http_zero_is_the_plain_tensor(srv):
    r = _infer(srv, "cls_int8", "INT8", [2], [1, 2], 0)
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0] == {"name": "OUTPUT0", "datatype": "INT8", "shape": [2],
                                      "data": [1, 2]}


@pytest.mark.parametrize("model,dtype,data", [("identity_bytes", "BYTES", ["a", "b"]),
                                              ("cls_bool", "BOOL", [True, False])])
def test_http_non_numeric_output_is_refused(srv, model, dtype, data):
    r = _infer(srv, model, dtype, [2], data, 1)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == (
        f"class result not available for output due to unsupported type '{dtype}'")


def test_server_lists_classification(srv):
    ext = requests.get(srv.url("/v2"), timeout=10).json()["extensions"]
    assert ext[0] == "classification", ext


def test_grpc_top_n(srv, grpc_stubs):
    with g.connect(srv, grpc_stubs) as c:
        pb = c.pb
        x = np.array([[1.1, 3.3, 0.5, 2.4]], dtype=np.float32)
        req = g.infer_request(pb, "cls_fp32", [("INPUT0", "FP32", [1, 4], x)])
        o = req.outputs.add(name="OUTPUT0")
        o.parameters["classification"].int64_param = 3
        resp = c.model_infer(req)
        out = resp.outputs[0]
        assert out.datatype == "BYTES" and list(out.shape) == [1, 3], out
        assert g.outputs_of(resp)["OUTPUT0"] == [b"3.300000:1:one", b"2.400000:3:three",
                                                 b"1.100000:0:zero"]
        assert list(c.server_metadata().extensions)[0] == "classification"
        # Non-numeric: Triton's text, INVALID_ARGUMENT.
        req = g.infer_request(pb, "identity_bytes", [("INPUT0", "BYTES", [1], [b"a"])])
        o = req.outputs.add(name="OUTPUT0")
        o.parameters["classification"].int64_param = 1
        e = g.rpc_error(c.model_infer, req)
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, g.describe(e)
        assert e.details() == "class result not available for output due to unsupported type 'BYTES'"


def test_missing_label_file_fails_the_load(srv):
    r = requests.post(srv.url("/v2/repository/index"), json={}, timeout=10)
    entry = [m for m in r.json() if m["name"] == "cls_nolabels"]
    assert entry and entry[0]["state"] == "UNAVAILABLE", entry
    assert "failed to open text file for read" in entry[0]["reason"], entry
    assert "cls_nolabels/labels.txt: No such file or directory" in entry[0]["reason"], entry
