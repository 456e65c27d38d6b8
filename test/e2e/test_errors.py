"""Bad inference requests: each gets a 4xx with {"error": ...}, and the server
keeps serving afterwards (checked at the end of this module)."""

import json
import socket

import numpy as np
import pytest

import e2e_helpers as h

ZEROS16 = [0.0] * 16
INFER = "/v2/models/identity_fp32/infer"


def _post_raw(server, body, headers=None):
    hdrs = {"Content-Type": "application/json"}
    hdrs.update(headers or {})
    return server.post(INFER, data=body, headers=hdrs)


def test_unknown_model(server):
    r = h.infer_json(server, "nope", [("INPUT0", "FP32", [1, 16], ZEROS16)])
    assert r.status_code == 404, r.text
    assert "nope" in h.error_of(r)


def test_wrong_datatype(server):
    r = h.infer_json(server, "identity_fp32", [("INPUT0", "INT32", [1, 16], list(range(16)))])
    assert r.status_code == 400, r.text
    err = h.error_of(r)
    assert "INPUT0" in err and "FP32" in err, err


@pytest.mark.parametrize("shape,n", [([1, 15], 15), ([16], 16), ([1, 1, 16], 16)])
def test_wrong_shape(server, shape, n):
    r = h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", shape, [0.0] * n)])
    assert r.status_code == 400, r.text
    assert "INPUT0" in h.error_of(r)


def test_batch_over_max(server):
    r = h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [9, 16], [0.0] * 144)])
    assert r.status_code == 400, r.text
    assert "8" in h.error_of(r)


def test_batch_at_max_is_fine(server):
    r = h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [8, 16], [1.0] * 128)])
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["shape"] == [8, 16]


def test_unknown_input(server):
    r = h.infer_json(server, "identity_fp32", [("INPUTX", "FP32", [1, 16], ZEROS16)])
    assert r.status_code == 400, r.text
    assert "INPUTX" in h.error_of(r)


def test_missing_input(server):
    r = h.infer_json(server, "identity_multi", [("INPUT0", "FP32", [1, 2], [1.0, 2.0])])
    assert r.status_code == 400, r.text
    h.error_of(r)


def test_duplicate_input(server):
    r = h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [1, 16], ZEROS16),
                                               ("INPUT0", "FP32", [1, 16], ZEROS16)])
    assert r.status_code == 400, r.text
    h.error_of(r)


def test_unknown_output(server):
    r = h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [1, 16], ZEROS16)],
                     outputs=[{"name": "NOPE"}])
    assert r.status_code == 400, r.text
    assert "NOPE" in h.error_of(r)


@pytest.mark.parametrize("n", [10, 17, 0])
def test_data_count_mismatch(server, n):
    r = h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [1, 16], [0.0] * n)])
    assert r.status_code == 400, r.text
    h.error_of(r)


def test_data_wrong_json_type(server):
    r = h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [1, 16], ["x"] * 16)])
    assert r.status_code == 400, r.text
    h.error_of(r)


@pytest.mark.parametrize("body", [
    b"{not json",
    b"",
    b"[]",
    b"{\"inputs\": [",
    b"\xff\xfe\x00garbage",
    b"{\"inputs\": [{\"name\": \"INPUT0\", \"datatype\": \"FP32\", \"shape\": [1, 16]}]}",  # no data
    b"{\"inputs\": [{\"name\": \"INPUT0\", \"datatype\": \"FP32\", \"data\": [1]}]}",  # no shape
    b"{\"inputs\": [{\"name\": \"INPUT0\", \"datatype\": \"NOPE\", \"shape\": [1, 16], \"data\": [1]}]}",
], ids=["syntax", "empty", "array", "truncated", "binary", "no-data", "no-shape", "bad-datatype"])
def test_malformed_json(server, body):
    r = _post_raw(server, body)
    assert r.status_code == 400, r.text
    h.error_of(r)


def test_inputs_not_an_array(server):
    r = _post_raw(server, b'{"inputs": "x"}')
    assert r.status_code == 400, r.text
    h.error_of(r)


def test_binary_body_shorter_than_declared(server):
    body, hlen = h.build_binary_request([("INPUT0", "FP32", [1, 16], np.zeros((1, 16), np.float32))])
    r = server.post(INFER, data=body[:-32], headers={"Inference-Header-Content-Length": str(hlen)})
    assert r.status_code == 400, r.text
    h.error_of(r)


def test_binary_size_wrong_for_shape(server):
    raw = np.zeros(8, np.float32).tobytes()
    hdr = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16],
                                  "parameters": {"binary_data_size": len(raw)}}]}).encode()
    r = server.post(INFER, data=hdr + raw, headers={"Inference-Header-Content-Length": str(len(hdr))})
    assert r.status_code == 400, r.text
    h.error_of(r)


@pytest.mark.parametrize("hlen", ["100000", "-1", "abc"])
def test_bad_inference_header_length(server, hlen):
    body, _ = h.build_binary_request([("INPUT0", "FP32", [1, 16], np.zeros((1, 16), np.float32))])
    r = server.post(INFER, data=body, headers={"Inference-Header-Content-Length": hlen})
    assert r.status_code == 400, r.text
    h.error_of(r)


def test_truncated_body_then_close(server):
    """Content-Length larger than what is sent, then the client closes."""
    for _ in range(3):
        with h.RawConn(server.port) as c:
            c.send(h.http_request("POST", INFER, b'{"inputs": [', headers={"Content-Length": "5000"}))
    with h.RawConn(server.port) as c:
        c.send(h.http_request("POST", INFER, b'{"inputs"', headers={"Content-Length": "5000"}))
        c.sock.shutdown(socket.SHUT_WR)  # half-close: the server must not wait forever
        got = c.wait_closed(timeout=15)
        assert got is not False, "server kept a half-closed, truncated request open"
    r = h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [1, 16], ZEROS16)])
    assert r.status_code == 200, r.text


def test_errors_do_not_break_server(server):
    assert server.alive(), server.log_tail()
    vals = [float(i) for i in range(16)]
    r = h.infer_json(server, "identity_fp32", [("INPUT0", "FP32", [1, 16], vals)], request_id="after")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["id"] == "after"
    assert body["outputs"][0]["data"] == vals
    r = server.get("/v2/health/live")
    assert r.status_code == 200
