"""Inference over JSON and the binary tensor data extension."""

import json

import numpy as np
import pytest

import e2e_helpers as h
import grpc
import grpc_helpers as g
from grpc_helpers import grpc_client, grpc_stubs  # noqa: F401  (fixtures)

FP32_ROW = [float(i) * 0.5 - 3.0 for i in range(16)]  # exactly representable in float32


def _ok(r):
    assert r.status_code == 200, f"{r.status_code}: {r.text[:1000]}"
    return r


def _only_output(body, name="OUTPUT0"):
    outs = body["outputs"]
    assert [o["name"] for o in outs] == [name], outs
    return outs[0]


# ------------------------------------------------------------------ JSON ---

def test_json_fp32(server):
    r = _ok(h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [1, 16], FP32_ROW)]))
    assert r.headers.get("Content-Type", "").startswith("application/json")
    assert "Inference-Header-Content-Length" not in r.headers
    body = r.json()
    assert body["model_name"] == "identity_fp32"
    assert body["model_version"] == "1"
    out = _only_output(body)
    assert out["datatype"] == "FP32"
    assert out["shape"] == [1, 16]
    assert out["data"] == FP32_ROW


def test_json_fp32_not_exact_values(server):
    vals = [0.1 * i for i in range(16)]
    r = _ok(h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [1, 16], vals)]))
    got = np.array(_only_output(r.json())["data"], dtype=np.float32)
    np.testing.assert_array_equal(got, np.array(vals, dtype=np.float32))


def test_json_batch_3(server):
    data = [v + 100 * b for b in range(3) for v in FP32_ROW]
    r = _ok(h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [3, 16], data)]))
    out = _only_output(r.json())
    assert out["shape"] == [3, 16]
    assert out["data"] == data


def test_json_nested_data(server):
    rows = [[v + 10 * b for v in FP32_ROW] for b in range(2)]
    r = _ok(h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [2, 16], rows)]))
    out = _only_output(r.json())
    assert out["shape"] == [2, 16]
    assert np.array(out["data"], dtype=np.float32).flatten().tolist() == [v for row in rows for v in row]


def test_json_int64_full_range(server):
    data = [2 ** 62 + 1, -(2 ** 63), 2 ** 63 - 1, 0, 1, -1, 9007199254740993, -123456789012345]
    r = _ok(h.infer_json(server, "identity_int64", [("INPUT0", "INT64", [2, 4], data)]))
    out = _only_output(r.json())
    assert out["datatype"] == "INT64"
    assert out["shape"] == [2, 4]
    assert out["data"] == data  # exact: no round trip through double


def test_json_int32_variable_dim(server):
    data = [2 ** 31 - 1, -(2 ** 31), 0, 7, -7, 42]
    r = _ok(h.infer_json(server, "identity_int32", [("INPUT0", "INT32", [2, 3], data)]))
    out = _only_output(r.json())
    assert out == {"name": "OUTPUT0", "datatype": "INT32", "shape": [2, 3], "data": data}


def test_json_bool(server):
    data = [True, False, False, True, True]
    r = _ok(h.infer_json(server, "identity_bool", [("INPUT0", "BOOL", [5], data)]))
    out = _only_output(r.json())
    assert out["datatype"] == "BOOL"
    assert out["shape"] == [5]
    assert out["data"] == data
    assert all(isinstance(x, bool) for x in out["data"])


def test_json_bytes(server):
    data = ["one", "two", "", "with space", "ünïcödé", "a\"quote\\"]
    r = _ok(h.infer_json(server, "identity_bytes", [("INPUT0", "BYTES", [len(data)], data)]))
    out = _only_output(r.json())
    assert out["datatype"] == "BYTES"
    assert out["shape"] == [len(data)]
    assert out["data"] == data


def test_request_id_echoed(server):
    r = _ok(h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [1, 16], FP32_ROW)],
                         request_id="my-request-42"))
    assert r.json()["id"] == "my-request-42"
    r = _ok(h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [1, 16], FP32_ROW)]))
    assert "id" not in r.json() or r.json()["id"] == ""


def test_multi_io_all_outputs(server):
    r = _ok(h.infer_json(server, "identity_multi", [
        ("INPUT0", "FP32", [2, 2], [1.5, 2.5, 3.5, 4.5]),
        ("INPUT1", "INT32", [2, 3], [1, 2, 3, 4, 5, 6]),
    ]))
    outs = {o["name"]: o for o in r.json()["outputs"]}
    assert set(outs) == {"OUTPUT0", "OUTPUT1"}
    assert outs["OUTPUT0"]["datatype"] == "FP32" and outs["OUTPUT0"]["shape"] == [2, 2]
    assert outs["OUTPUT0"]["data"] == [1.5, 2.5, 3.5, 4.5]
    assert outs["OUTPUT1"]["datatype"] == "INT32" and outs["OUTPUT1"]["shape"] == [2, 3]
    assert outs["OUTPUT1"]["data"] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("wanted", [["OUTPUT1"], ["OUTPUT0"], ["OUTPUT1", "OUTPUT0"]])
def test_multi_io_requested_subset(server, wanted):
    r = _ok(h.infer_json(server, "identity_multi", [
        ("INPUT0", "FP32", [1, 2], [1.5, 2.5]),
        ("INPUT1", "INT32", [1, 3], [7, 8, 9]),
    ], outputs=[{"name": n} for n in wanted]))
    outs = r.json()["outputs"]
    assert sorted(o["name"] for o in outs) == sorted(wanted)
    for o in outs:
        assert o["data"] == ([1.5, 2.5] if o["name"] == "OUTPUT0" else [7, 8, 9])


@pytest.mark.parametrize("model,version", [
    ("batched", "1"), ("batched", "2"), ("versioned", "2"), ("versioned", "3"),
    ("specific_version", "1"), ("specific_version", "3"), ("all_versions", "1"),
])
def test_versioned_infer(server, model, version):
    r = _ok(h.infer_json(server, model, [("INPUT0", "INT32", [2, 2], [1, 2, 3, int(version)])],
                         version=version))
    body = r.json()
    assert body["model_name"] == model
    assert body["model_version"] == version
    assert _only_output(body)["data"] == [1, 2, 3, int(version)]


@pytest.mark.parametrize("model,version", [("versioned", "1"), ("specific_version", "2"), ("batched", "9")])
def test_unloaded_version_infer_fails(server, model, version):
    r = h.infer_json(server, model, [("INPUT0", "INT32", [1, 2], [1, 2])], version=version)
    # tritonserver answers NOT_FOUND/UNAVAILABLE/INVALID_ARG here depending on the case.
    assert r.status_code in (400, 404, 503), r.text
    h.error_of(r)


def test_execute_delay_parameter(server):
    import time
    t0 = time.monotonic()
    r = _ok(h.infer_json(server, "identity_delay", [("INPUT0", "INT32", [3], [1, 2, 3])]))
    elapsed = time.monotonic() - t0
    assert _only_output(r.json())["data"] == [1, 2, 3]
    # Lower bound only (the backend sleeps 200 ms per execute); never an upper bound.
    assert elapsed >= 0.19, elapsed


def test_sleep_backend_from_model_folder(server):
    r = _ok(h.infer_json(server, "sleep", [("IN", "INT32", [1], [5])]))
    out = _only_output(r.json(), "OUT")
    assert out["datatype"] == "INT32"
    assert out["data"] == [5]


# ---------------------------------------------------------------- binary ---

def _bin_ok(r):
    _ok(r)
    return h.parse_infer_response(r)


def test_binary_fp32_all_outputs(server):
    x = np.arange(16, dtype=np.float32).reshape(1, 16) * 1.25
    r = h.infer_binary(server, "identity_fp32", [("INPUT0", "FP32", [1, 16], x)],
                       parameters={"binary_data_output": True})
    assert "Inference-Header-Content-Length" in r.headers
    header, vals = _bin_ok(r)
    out = _only_output(header)
    assert out["datatype"] == "FP32" and out["shape"] == [1, 16]
    assert out["parameters"]["binary_data_size"] == 64
    assert "data" not in out
    np.testing.assert_array_equal(vals["OUTPUT0"], x)


def test_binary_fp32_batch_3(server):
    x = (np.arange(48, dtype=np.float32).reshape(3, 16) - 20.0) / 3.0
    r = h.infer_binary(server, "identity_fp32", [("INPUT0", "FP32", [3, 16], x)],
                       outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": True}}])
    header, vals = _bin_ok(r)
    assert _only_output(header)["shape"] == [3, 16]
    np.testing.assert_array_equal(vals["OUTPUT0"], x)  # bit-exact through binary


def test_binary_in_json_out(server):
    x = np.array([FP32_ROW], dtype=np.float32)
    r = h.infer_binary(server, "identity_fp32", [("INPUT0", "FP32", [1, 16], x)])
    _ok(r)
    assert "Inference-Header-Content-Length" not in r.headers
    assert _only_output(r.json())["data"] == FP32_ROW


def test_json_in_binary_out(server):
    r = _ok(h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [1, 16], FP32_ROW)],
                         parameters={"binary_data_output": True}))
    header, vals = h.parse_infer_response(r)
    np.testing.assert_array_equal(vals["OUTPUT0"], np.array([FP32_ROW], dtype=np.float32))


def test_binary_int64(server):
    x = np.array([[2 ** 62 + 1, -(2 ** 63), 2 ** 63 - 1, 0], [1, -1, 3, 4]], dtype=np.int64)
    r = h.infer_binary(server, "identity_int64", [("INPUT0", "INT64", [2, 4], x)],
                       parameters={"binary_data_output": True})
    header, vals = _bin_ok(r)
    assert _only_output(header)["parameters"]["binary_data_size"] == 64
    np.testing.assert_array_equal(vals["OUTPUT0"], x)


def test_binary_int32(server):
    x = np.array([[1, -2, 3, 2 ** 31 - 1, -(2 ** 31)]], dtype=np.int32)
    r = h.infer_binary(server, "identity_int32", [("INPUT0", "INT32", [1, 5], x)],
                       parameters={"binary_data_output": True})
    header, vals = _bin_ok(r)
    assert _only_output(header)["shape"] == [1, 5]
    np.testing.assert_array_equal(vals["OUTPUT0"], x)


def test_binary_bool(server):
    x = np.array([True, False, True, True, False, False, True], dtype=bool)
    r = h.infer_binary(server, "identity_bool", [("INPUT0", "BOOL", [7], x)],
                       parameters={"binary_data_output": True})
    header, vals = _bin_ok(r)
    out = _only_output(header)
    assert out["datatype"] == "BOOL" and out["shape"] == [7]
    assert out["parameters"]["binary_data_size"] == 7
    np.testing.assert_array_equal(vals["OUTPUT0"], x)


def test_binary_bool_json_out(server):
    x = np.array([True, False, True], dtype=bool)
    r = _ok(h.infer_binary(server, "identity_bool", [("INPUT0", "BOOL", [3], x)]))
    assert _only_output(r.json())["data"] == [True, False, True]


def test_binary_bytes(server):
    items = [b"one", b"", b"\x00\xff\x01binary\r\n", "ünï".encode(), b"x" * 1000]
    r = h.infer_binary(server, "identity_bytes", [("INPUT0", "BYTES", [len(items)], items)],
                       parameters={"binary_data_output": True})
    header, vals = _bin_ok(r)
    out = _only_output(header)
    assert out["datatype"] == "BYTES" and out["shape"] == [len(items)]
    assert out["parameters"]["binary_data_size"] == len(h.encode_bytes_tensor(items))
    assert vals["OUTPUT0"] == items


def test_binary_bytes_json_out(server):
    items = [b"alpha", b"beta", b""]
    r = _ok(h.infer_binary(server, "identity_bytes", [("INPUT0", "BYTES", [3], items)]))
    assert _only_output(r.json())["data"] == ["alpha", "beta", ""]


def test_binary_fp16(server):
    x = np.array([1.0, -2.5, 65504.0, 0.000061035156], dtype=np.float16)
    r = h.infer_binary(server, "identity_fp16", [("INPUT0", "FP16", [4], x)],
                       parameters={"binary_data_output": True})
    header, vals = _bin_ok(r)
    out = _only_output(header)
    assert out["datatype"] == "FP16" and out["shape"] == [4]
    assert out["parameters"]["binary_data_size"] == 8
    assert vals["OUTPUT0"].tobytes() == x.tobytes()


def test_binary_per_output_mix(server):
    """OUTPUT0 binary, OUTPUT1 JSON, chosen per output."""
    a = np.array([[0.25, -8.0]], dtype=np.float32)
    b = np.array([[10, 20, 30]], dtype=np.int32)
    r = h.infer_binary(server, "identity_multi",
                       [("INPUT0", "FP32", [1, 2], a), ("INPUT1", "INT32", [1, 3], b)],
                       outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": True}},
                                {"name": "OUTPUT1", "parameters": {"binary_data": False}}])
    header, vals = _bin_ok(r)
    outs = {o["name"]: o for o in header["outputs"]}
    assert set(outs) == {"OUTPUT0", "OUTPUT1"}
    assert outs["OUTPUT0"]["parameters"]["binary_data_size"] == 8
    assert "data" not in outs["OUTPUT0"]
    assert outs["OUTPUT1"]["data"] == [10, 20, 30]
    np.testing.assert_array_equal(vals["OUTPUT0"], a)


def test_binary_requested_subset(server):
    a = np.array([[0.25, -8.0]], dtype=np.float32)
    b = np.array([[10, 20, 30]], dtype=np.int32)
    r = h.infer_binary(server, "identity_multi",
                       [("INPUT0", "FP32", [1, 2], a), ("INPUT1", "INT32", [1, 3], b)],
                       outputs=[{"name": "OUTPUT1", "parameters": {"binary_data": True}}])
    header, vals = _bin_ok(r)
    assert [o["name"] for o in header["outputs"]] == ["OUTPUT1"]
    np.testing.assert_array_equal(vals["OUTPUT1"], b)


def test_binary_two_inputs_two_outputs(server):
    a = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    b = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)
    r = h.infer_binary(server, "identity_multi",
                       [("INPUT0", "FP32", [2, 2], a), ("INPUT1", "INT32", [2, 3], b)],
                       parameters={"binary_data_output": True}, request_id="bin-7")
    header, vals = _bin_ok(r)
    assert header.get("id") == "bin-7"
    np.testing.assert_array_equal(vals["OUTPUT0"], a)
    np.testing.assert_array_equal(vals["OUTPUT1"], b)


def test_mixed_json_and_binary_inputs(server):
    b = np.array([[4, 5, 6]], dtype=np.int32)
    raw = b.tobytes()
    header = {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 2], "data": [0.5, 1.5]},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 3], "parameters": {"binary_data_size": len(raw)}},
    ]}
    hdr = json.dumps(header).encode()
    r = _ok(server.post("/v2/models/identity_multi/infer", data=hdr + raw,
                        headers={"Inference-Header-Content-Length": str(len(hdr)),
                                 "Content-Type": "application/octet-stream"}))
    outs = {o["name"]: o["data"] for o in r.json()["outputs"]}
    assert outs == {"OUTPUT0": [0.5, 1.5], "OUTPUT1": [4, 5, 6]}


# ----------------------------------------------------------- conformance ---

def _conformance_cases():
    cases = []
    for i, ex in enumerate(h.load_reference()):
        req, resp = ex["request"], ex["response"]
        if req["method"] == "POST" and req["path"].endswith("/infer") and resp["status"] == 200:
            cases.append(pytest.param(ex, id=f"{i}-{req['path'].split('/')[3]}"))
    return cases


def _strip(body):
    body = {k: v for k, v in body.items() if k != "parameters"}
    return body


@pytest.mark.parametrize("ex", _conformance_cases())
def test_conformance_infer(server, ex):
    req, ref = ex["request"], ex["response"]
    r = _ok(server.post(req["path"], json=req["body"]))
    if ref["inference_header_content_length"] is None:
        assert "Inference-Header-Content-Length" not in r.headers
        assert _strip(r.json()) == _strip(ref["body_json"])
        return
    # Binary response: the reference keeps the JSON header; the raw bytes in
    # body_text were mangled by text decoding, so compare values with the request.
    ref_header, _ = json.JSONDecoder().raw_decode(ref["body_text"])
    header, vals = h.parse_infer_response(r)
    assert _strip(header) == _strip(ref_header)
    for inp, out in zip(req["body"]["inputs"], header["outputs"]):
        want = np.array(inp["data"], dtype=h.NP_DTYPES[inp["datatype"]]).reshape(inp["shape"])
        np.testing.assert_array_equal(vals[out["name"]], want)


# --------------------------------------------------- classification ---

def test_classification_answers_top_n(server, grpc_client):  # noqa: F811
    """The classification extension (test_classification.py has the rest):
    the top-N BYTES tensor, not the plain one, over HTTP and gRPC."""
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16],
                        "data": list(range(16))}],
            "outputs": [{"name": "OUTPUT0", "parameters": {"classification": 2}}]}
    r = server.post("/v2/models/identity_fp32/infer", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["outputs"] == [{"name": "OUTPUT0", "datatype": "BYTES", "shape": [1, 2],
                                    "data": ["15.000000:15", "14.000000:14"]}], r.text
    pb = grpc_client.pb
    req = pb.ModelInferRequest(model_name="identity_fp32")
    t = req.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 16])
    t.contents.fp32_contents.extend(float(i) for i in range(16))
    o = req.outputs.add(name="OUTPUT0")
    o.parameters["classification"].int64_param = 2
    resp = grpc_client.model_infer(req)
    assert g.outputs_of(resp)["OUTPUT0"] == [b"15.000000:15", b"14.000000:14"]
