"""HTTP/1.1 transport behaviour, checked over raw sockets."""

import json
import socket
import struct

import numpy as np

import e2e_helpers as h

INT32_INFER = "/v2/models/identity_int32/infer"


def _infer_int32_body(vals):
    return h.json_infer_body([("INPUT0", "INT32", [1, len(vals)], vals)])


def _assert_int32_response(resp, vals):
    assert resp.status == 200, resp
    body = resp.json()
    assert body["model_name"] == "identity_int32"
    assert body["outputs"][0]["data"] == vals, body
    assert body["outputs"][0]["shape"] == [1, len(vals)]


def _live_ok(port):
    with h.RawConn(port) as c:
        c.send(h.http_request("GET", "/v2/health/live"))
        r = c.read_response()
        assert r.status == 200, r


def test_keep_alive_three_requests(server):
    with h.RawConn(server.port) as c:
        c.send(h.http_request("GET", "/v2/health/live"))
        r = c.read_response()
        assert r.status == 200 and r.body == b"", r
        assert r.headers.get("connection", "").lower() != "close"
        c.send(h.http_request("POST", INT32_INFER, _infer_int32_body([1, 2, 3])))
        r = c.read_response()
        _assert_int32_response(r, [1, 2, 3])
        assert r.headers.get("connection", "").lower() != "close"
        c.send(h.http_request("GET", "/v2/models/identity_fp32"))
        r = c.read_response()
        assert r.status == 200, r
        assert r.json()["name"] == "identity_fp32"


def test_pipelining_ten_requests(server):
    reqs, expect = [], []
    for i in range(10):
        if i % 3 == 0:
            reqs.append(h.http_request("GET", "/v2/models/identity_fp32/ready"))
            expect.append(("ready", None))
        elif i % 3 == 1:
            vals = [i, i * 10, -i, i * 1000]
            reqs.append(h.http_request("POST", INT32_INFER, _infer_int32_body(vals)))
            expect.append(("infer", vals))
        else:
            reqs.append(h.http_request("GET", "/v2/models/identity_multi"))
            expect.append(("meta", "identity_multi"))
    with h.RawConn(server.port) as c:
        c.send(b"".join(reqs))
        for i, (kind, arg) in enumerate(expect):
            r = c.read_response()
            if kind == "ready":
                assert r.status == 200 and r.body == b"", (i, r)
            elif kind == "infer":
                _assert_int32_response(r, arg)
            else:
                assert r.status == 200, (i, r)
                assert r.json()["name"] == arg
        # and the connection is still usable afterwards
        c.send(h.http_request("POST", INT32_INFER, _infer_int32_body([77])))
        _assert_int32_response(c.read_response(), [77])


def test_pipelined_infers_keep_order(server):
    """Ten infers in one write; each response carries its own data, in order."""
    with h.RawConn(server.port) as c:
        c.send(b"".join(h.http_request("POST", INT32_INFER, _infer_int32_body([i] * (i + 1)))
                        for i in range(10)))
        for i in range(10):
            _assert_int32_response(c.read_response(), [i] * (i + 1))


def test_chunked_request_body(server):
    body = _infer_int32_body([5, 6, 7, 8, 9])
    parts = [body[:7], body[7:20], body[20:]]
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
    with h.RawConn(server.port) as c:
        c.send(h.http_request("POST", INT32_INFER, chunked, content_length=False,
                              headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json"}))
        _assert_int32_response(c.read_response(), [5, 6, 7, 8, 9])
        # keep-alive after a chunked request
        c.send(h.http_request("GET", "/v2/health/live"))
        assert c.read_response().status == 200


def test_chunked_binary_request_body(server):
    x = np.arange(32, dtype=np.float32).reshape(2, 16)
    body, hlen = h.build_binary_request([("INPUT0", "FP32", [2, 16], x)],
                                        parameters={"binary_data_output": True})
    parts = [body[i:i + 50] for i in range(0, len(body), 50)]
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
    with h.RawConn(server.port) as c:
        c.send(h.http_request("POST", "/v2/models/identity_fp32/infer", chunked, content_length=False,
                              headers={"Transfer-Encoding": "chunked",
                                       "Inference-Header-Content-Length": str(hlen)}))
        r = c.read_response()
    assert r.status == 200, r
    n = int(r.headers["inference-header-content-length"])
    header = json.loads(r.body[:n])
    assert header["outputs"][0]["parameters"]["binary_data_size"] == 128
    np.testing.assert_array_equal(np.frombuffer(r.body[n:], dtype="<f4").reshape(2, 16), x)


def test_http10_closes(server):
    with h.RawConn(server.port) as c:
        c.send(b"GET /v2/health/live HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        r = c.read_response()
        assert r.status == 200, r
        assert c.wait_closed(timeout=10) is True, "HTTP/1.0 connection without keep-alive left open"


def test_http10_post_infer(server):
    with h.RawConn(server.port) as c:
        c.send(h.http_request("POST", INT32_INFER, _infer_int32_body([3, 1, 4]), version="HTTP/1.0"))
        _assert_int32_response(c.read_response(), [3, 1, 4])
        assert c.wait_closed(timeout=10) is True


def test_connection_close_header(server):
    with h.RawConn(server.port) as c:
        c.send(h.http_request("GET", "/v2/health/live", headers={"Connection": "close"}))
        assert c.read_response().status == 200
        assert c.wait_closed(timeout=10) is True


def test_expect_100_continue(server):
    body = _infer_int32_body([10, 20, 30])
    with h.RawConn(server.port, timeout=10) as c:
        head = h.http_request("POST", INT32_INFER, b"", content_length=False, headers={
            "Content-Length": str(len(body)), "Expect": "100-continue", "Content-Type": "application/json"})
        c.send(head)
        r = c.read_response()
        assert r.status == 100, r
        c.send(body)
        _assert_int32_response(c.read_response(), [10, 20, 30])


def test_garbage_then_new_connection(server):
    for garbage in (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n",
                    b"NOT HTTP AT ALL\r\n\r\n",
                    b"\x00\x01\x02\x03\r\n\r\n",
                    b"GET /v2/health/live HTTP/1.1\r\nContent-Length: -5\r\n\r\n"):
        with h.RawConn(server.port, timeout=10) as c:
            try:
                c.send(garbage)
                data = c.read_to_eof()  # socket.timeout (a failure) if the server never closes
            except (ConnectionResetError, BrokenPipeError):
                data = b""
            except socket.timeout:
                raise AssertionError(f"server kept the connection open after {garbage!r}")
            if data:
                # A response before the close is fine if it is an error status.
                assert data.startswith(b"HTTP/1."), data[:200]
                status = int(data.split(b" ", 2)[1])
                assert 400 <= status < 500, data[:200]
        _live_ok(server.port)


def test_body_over_max_input_size(private_server):
    srv = private_server(models=["identity_int32"], extra=["--http-max-input-size=1024"],
                         wait_models=("identity_int32",))
    small = _infer_int32_body(list(range(10)))
    assert len(small) < 1024
    with h.RawConn(srv.port) as c:
        c.send(h.http_request("POST", INT32_INFER, small))
        _assert_int32_response(c.read_response(), list(range(10)))
    big = _infer_int32_body(list(range(1000, 2000)))
    assert len(big) > 4096
    with h.RawConn(srv.port) as c:
        status = None
        try:
            c.send(h.http_request("POST", INT32_INFER, big))
            status = c.read_response().status
        except (EOFError, ConnectionResetError, BrokenPipeError):
            status = None  # closed without a response: acceptable
        assert status is None or 400 <= status < 500, status
    # the server still works
    with h.RawConn(srv.port) as c:
        c.send(h.http_request("POST", INT32_INFER, small))
        _assert_int32_response(c.read_response(), list(range(10)))


def test_many_sequential_connections(server):
    for i in range(50):
        with h.RawConn(server.port) as c:
            c.send(h.http_request("POST", INT32_INFER, _infer_int32_body([i])))
            _assert_int32_response(c.read_response(), [i])


def test_client_closes_before_response(server):
    """Clients disappearing mid-request (here: during a 200 ms execute) do not hurt the server."""
    for _ in range(3):
        c = h.RawConn(server.port)
        c.send(h.http_request("POST", "/v2/models/identity_delay/infer",
                              h.json_infer_body([("INPUT0", "INT32", [2], [1, 2])])))
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()  # RST
    with h.RawConn(server.port) as c:
        c.send(h.http_request("POST", "/v2/models/identity_delay/infer",
                              h.json_infer_body([("INPUT0", "INT32", [2], [1, 2])])))
        r = c.read_response()
        assert r.status == 200, r
        assert r.json()["outputs"][0]["data"] == [1, 2]
