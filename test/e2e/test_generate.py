"""Triton's generate extension over HTTP: /generate and /generate_stream.

Every generate / generate_stream row of features.md section 4 (Triton 2.47's
recorded answers: status, content type, chunked transfer coding, body), with
one deliberate difference: where Triton answers 500 for a client's mistake (a
body that is not JSON, a wrong type, an array of more than one element) inferd
answers 400 with Triton's message. Then what the records do not cover: a stream
of 1,000 responses, a client that closes mid-stream (the server keeps serving),
requests pipelined behind a stream, an error response mid-stream, HTTP/1.0.

The decoupled models are the test backends repeat and square
(test/models/backends), served from a copy of test/models/decoupled_repo.
"""

import json
import shutil
import time

import pytest

import e2e_helpers as h

SSE = "text/event-stream; charset=utf-8"
TOO_MANY = ("generate expects model to produce exactly 1 response, use generate stream for model that "
            "generates various number of responses")
SHAPE = "Unable to parse 'data': Shape does not match true shape of 'data' field"
NOT_INT = "Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer"


DECOUPLED = ("square_int32", "repeat_int32", "identity_int32")


def decoupled_repo(repo):
    """A copy of test/models/decoupled_repo with the repeat and square backends in their models' folders."""
    shutil.copytree(h.REPO_ROOT / "test/models/decoupled_repo", repo)
    for b in ("repeat", "square"):
        so = h.build_dir() / "test/backends" / b / f"libtriton_{b}.so"
        if not so.is_file():
            pytest.skip(f"{so} not built")
        shutil.copy2(so, repo / f"{b}_int32" / so.name)
    return repo


@pytest.fixture(scope="module")
def dserver(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("inferd-generate")
    repo = decoupled_repo(tmp / "repo")
    srv = h.start_server(tmp, [repo], wait_models=DECOUPLED)
    try:
        yield srv
    finally:
        srv.stop(check=True)


def post(srv, path, body, version="HTTP/1.1"):
    if not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    with h.RawConn(srv.port) as c:
        c.send(h.http_request("POST", path, body, version=version))
        return c.read_response()


def events(body):
    """The JSON of each `data:` event of an SSE body (which must hold nothing else)."""
    text = body.decode()
    if text == "":
        return []
    assert text.endswith("\n\n"), text
    out = []
    for ev in text[:-2].split("\n\n"):
        assert ev.startswith("data: "), ev
        out.append(json.loads(ev[len("data: "):]))
    return out


def check_json(r, status, want):
    assert r.status == status, r
    assert r.headers["content-type"] == "application/json"
    assert r.json() == want
    if status == 200:  # once submitted the answer is chunked, as Triton's
        assert r.headers.get("transfer-encoding") == "chunked"
        assert "content-length" not in r.headers


def check_sse(r, want):
    assert r.status == 200, r
    assert r.headers["content-type"] == SSE
    assert r.headers.get("transfer-encoding") == "chunked"
    assert events(r.body) == want


# ---- the recorded rows (features.md section 4) ------------------------------

def test_generate_square_3_is_an_error(dserver):
    check_json(post(dserver, "/v2/models/square_int32/generate", {"IN": 3}), 200, {"error": TOO_MANY})


def test_generate_stream_square_3(dserver):
    r = post(dserver, "/v2/models/square_int32/generate_stream", {"IN": 3})
    ev = {"OUT": 3, "model_name": "square_int32", "model_version": "1"}
    check_sse(r, [ev, ev, ev])
    # Byte for byte as recorded (key order, compact JSON).
    assert r.body == b'data: {"OUT":3,"model_name":"square_int32","model_version":"1"}\n\n' * 3


def test_generate_square_1(dserver):
    r = post(dserver, "/v2/models/square_int32/generate", {"IN": 1})
    check_json(r, 200, {"OUT": 1, "model_name": "square_int32", "model_version": "1"})
    assert r.body == b'{"OUT":1,"model_name":"square_int32","model_version":"1"}'


def test_generate_square_0_is_an_error(dserver):
    check_json(post(dserver, "/v2/models/square_int32/generate", {"IN": 0}), 200, {"error": TOO_MANY})


def test_generate_stream_square_0_is_empty(dserver):
    r = post(dserver, "/v2/models/square_int32/generate_stream", {"IN": 0})
    check_sse(r, [])
    assert r.body == b""


@pytest.mark.parametrize("route", ["generate", "generate_stream"])
def test_generate_bad_input_type(dserver, route):
    # Triton: 500 with this message; a client's mistake is 400 here.
    check_json(post(dserver, f"/v2/models/square_int32/{route}", {"IN": "x"}), 400, {"error": NOT_INT})


@pytest.mark.parametrize("route", ["generate", "generate_stream"])
def test_generate_missing_input(dserver, route):
    msg = ("[request id: <id_unknown>] expected 1 inputs but got 0 inputs for model 'square_int32'. Got input(s) "
           "[], but missing required input(s) ['IN']. Please provide all required input(s).")
    check_json(post(dserver, f"/v2/models/square_int32/{route}", {"NOPE": 3}), 400, {"error": msg})


def test_generate_body_not_json(dserver):
    msg = "failed to parse the request JSON buffer: Missing a name for object member. at 1"
    check_json(post(dserver, "/v2/models/square_int32/generate", "{not json"), 400, {"error": msg})


@pytest.mark.parametrize("route", ["generate", "generate_stream"])
@pytest.mark.parametrize("body,dup", [
    ('{"IN": [5], "DELAY": [0], "WAIT": 0, "IN": [6]}', "IN"),
    ('{"IN": [5], "DELAY": [0], "WAIT": 0, "WAIT": 1}', "WAIT"),
    # Several: the first repeated in the text, as Triton adds inputs in order.
    ('{"IN": [5], "DELAY": [0], "WAIT": 0, "WAIT": 1, "IN": [6]}', "WAIT"),
    ('{"IN": [5], "DELAY": [0], "IN": [6], "WAIT": 0, "WAIT": 1}', "IN"),
    # A key escaped differently is the same key.
    ('{"IN": [5], "DELAY": [0], "WAIT": 0, "\\u0049N": [6]}', "IN"),
])
def test_generate_duplicate_input_is_refused(dserver, route, body, dup):
    """Triton adds each input member as it reads it: a second one of a name is
    the core's "input 'X' already exists in request" (400), not the last value
    silently (jansson's way)."""
    r = post(dserver, f"/v2/models/repeat_int32/{route}", body)
    check_json(r, 400, {"error": f"input '{dup}' already exists in request"})


def test_generate_duplicate_parameter_is_accepted(dserver):
    """Keys that are not inputs become parameters, which may repeat (Triton's
    request keeps a list of them)."""
    r = post(dserver, "/v2/models/square_int32/generate", '{"IN": 1, "color": "a", "color": "b"}')
    check_json(r, 200, {"OUT": 1, "model_name": "square_int32", "model_version": "1"})


def test_generate_parameter_beside_the_input(dserver):
    r = post(dserver, "/v2/models/square_int32/generate", {"IN": 1, "color": "blue"})
    check_json(r, 200, {"OUT": 1, "model_name": "square_int32", "model_version": "1"})


def test_generate_stream_repeat_one_element_arrays(dserver):
    r = post(dserver, "/v2/models/repeat_int32/generate_stream", {"IN": [5], "DELAY": [0], "WAIT": 0})
    check_sse(r, [{"IDX": 0, "OUT": 5, "model_name": "repeat_int32", "model_version": "1"}])
    assert r.body == b'data: {"IDX":0,"OUT":5,"model_name":"repeat_int32","model_version":"1"}\n\n'


def test_generate_stream_repeat_longer_arrays(dserver):
    r = post(dserver, "/v2/models/repeat_int32/generate_stream", {"IN": [1, 2, 3], "DELAY": [0, 0, 0], "WAIT": 0})
    check_json(r, 400, {"error": SHAPE})


def identity_answer(got):
    """identity_int32's answer; Triton's identity backend adds the response parameters param0..param3,
    ours may or may not: when present they must be Triton's."""
    params = {"param0": "an example string parameter", "param1": 42, "param2": False, "param3": 123.123}
    base = {"OUTPUT0": 7, "model_name": "identity_int32", "model_version": "1"}
    extra = {k: v for k, v in got.items() if k not in base}
    assert extra in ({}, params), got
    assert list(got)[:3] == list(base), got  # outputs, then model_name, model_version, then parameters
    return {**base, **extra}


def test_generate_identity_scalar(dserver):
    r = post(dserver, "/v2/models/identity_int32/generate", {"INPUT0": 7})
    check_json(r, 200, identity_answer(r.json()))


def test_generate_stream_identity_scalar(dserver):
    r = post(dserver, "/v2/models/identity_int32/generate_stream", {"INPUT0": 7})
    ev = events(r.body)
    assert len(ev) == 1
    check_sse(r, [identity_answer(ev[0])])


def test_generate_identity_three_elements(dserver):
    check_json(post(dserver, "/v2/models/identity_int32/generate", {"INPUT0": [1, 2, 3]}), 400, {"error": SHAPE})


def test_generate_unknown_model(dserver):
    r = post(dserver, "/v2/models/nope/generate", {"IN": 3})
    assert r.status == 404
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"error": "Request for unknown model: 'nope' is not found"}


# ---- beyond the records ----------------------------------------------------

def test_generate_with_version_in_url(dserver):
    r = post(dserver, "/v2/models/square_int32/versions/1/generate", {"IN": 1})
    check_json(r, 200, {"OUT": 1, "model_name": "square_int32", "model_version": "1"})
    r = post(dserver, "/v2/models/square_int32/versions/9/generate_stream", {"IN": 1})
    assert r.status == 404 and "error" in r.json()


def test_generate_stream_many_responses(dserver):
    r = post(dserver, "/v2/models/square_int32/generate_stream", {"IN": 1000})
    ev = events(r.body)
    assert len(ev) == 1000
    assert all(e == {"OUT": 1000, "model_name": "square_int32", "model_version": "1"} for e in ev)


def test_generate_stream_error_mid_stream(dserver):
    # square with a negative N answers one error response (a test hook of the backend).
    r = post(dserver, "/v2/models/square_int32/generate_stream", {"IN": -1})
    assert r.status == 200 and r.headers["content-type"] == SSE
    ev = events(r.body)
    assert len(ev) == 1 and list(ev[0]) == ["error"], ev


def test_generate_error_response(dserver):
    r = post(dserver, "/v2/models/square_int32/generate", {"IN": -1})
    assert r.status == 200
    assert list(r.json()) == ["error"]


def test_generate_stream_events_arrive_one_by_one(dserver):
    # repeat sends its one response, then waits WAIT ms before its FINAL flag
    # (from a thread of its own, after execute returned). The event must reach
    # the client as it is sent, not with the end of the stream: when the
    # first chunk arrives the last one ("0\r\n\r\n", WAIT ms later) is not
    # there yet. Were the answer held until the end, both would come in one
    # write.
    body = json.dumps({"IN": [6], "DELAY": [0], "WAIT": 3000})
    with h.RawConn(dserver.port) as c:
        c.send(h.http_request("POST", "/v2/models/repeat_int32/generate_stream", body))
        head = c._read_until(b"\r\n\r\n")
        assert b"Transfer-Encoding: chunked" in head
        size = int(c._read_until(b"\r\n"), 16)
        chunk = c._read_exact(size + 2)
        assert chunk == b'data: {"IDX":0,"OUT":6,"model_name":"repeat_int32","model_version":"1"}\n\n\r\n'
        assert b"0\r\n\r\n" not in c.buf
        assert c._read_until(b"0\r\n\r\n") == b"0\r\n\r\n"
        # The same connection serves the next request.
        c.send(h.http_request("POST", "/v2/models/square_int32/generate_stream", json.dumps({"IN": 2})))
        assert len(events(c.read_response().body)) == 2


def test_pipelined_requests_behind_a_stream(dserver):
    reqs = (h.http_request("POST", "/v2/models/square_int32/generate_stream", json.dumps({"IN": 300}))
            + h.http_request("GET", "/v2/health/ready")
            + h.http_request("POST", "/v2/models/square_int32/generate", json.dumps({"IN": 1}))
            + h.http_request("POST", "/v2/models/identity_int32/generate_stream", json.dumps({"INPUT0": 7})))
    with h.RawConn(dserver.port) as c:
        c.send(reqs)
        r1 = c.read_response()
        assert r1.status == 200 and len(events(r1.body)) == 300
        assert c.read_response().status == 200
        r3 = c.read_response()
        assert r3.json() == {"OUT": 1, "model_name": "square_int32", "model_version": "1"}
        r4 = c.read_response()
        assert events(r4.body)[0]["OUTPUT0"] == 7


def test_client_closes_mid_stream(dserver):
    # Many responses, the client reads the head and goes: the server drops the
    # rest and keeps serving.
    for _ in range(5):
        c = h.RawConn(dserver.port)
        c.send(h.http_request("POST", "/v2/models/square_int32/generate_stream", json.dumps({"IN": 2000})))
        c._read_until(b"\r\n\r\n")
        c.close()
    r = post(dserver, "/v2/models/square_int32/generate", {"IN": 1})
    check_json(r, 200, {"OUT": 1, "model_name": "square_int32", "model_version": "1"})
    # A slow repeat stream closed before its responses come.
    c = h.RawConn(dserver.port)
    c.send(h.http_request("POST", "/v2/models/repeat_int32/generate_stream",
                          json.dumps({"IN": [1], "DELAY": [300], "WAIT": 0})))
    c.close()
    time.sleep(0.5)
    assert dserver.alive()
    r = post(dserver, "/v2/models/repeat_int32/generate_stream", {"IN": [4], "DELAY": [0], "WAIT": 0})
    assert events(r.body)[0]["OUT"] == 4


def test_generate_stream_http10(dserver):
    # No chunked coding for HTTP/1.0: the body ends with the connection.
    r = post(dserver, "/v2/models/square_int32/generate_stream", {"IN": 2}, version="HTTP/1.0")
    assert r.status == 200 and r.headers["content-type"] == SSE
    assert "transfer-encoding" not in r.headers
    assert len(events(r.body)) == 2


def test_generate_parameters_object_and_types(dserver):
    body = {"IN": 1, "parameters": {"temperature": 0.5, "n": 3, "stream": False, "s": "x"}}
    r = post(dserver, "/v2/models/square_int32/generate", body)
    check_json(r, 200, {"OUT": 1, "model_name": "square_int32", "model_version": "1"})
    r = post(dserver, "/v2/models/square_int32/generate", {"IN": 1, "bad": [1, 2]})
    assert r.status == 400 and "bad" in r.json()["error"]


def test_generate_method_not_allowed(dserver):
    with h.RawConn(dserver.port) as c:
        c.send(h.http_request("GET", "/v2/models/square_int32/generate"))
        assert c.read_response().status == 405


def test_concurrent_streams(dserver):
    conns = [h.RawConn(dserver.port) for _ in range(8)]
    try:
        for i, c in enumerate(conns):
            c.send(h.http_request("POST", "/v2/models/square_int32/generate_stream", json.dumps({"IN": 50 + i})))
        for i, c in enumerate(conns):
            ev = events(c.read_response().body)
            assert len(ev) == 50 + i and ev[0]["OUT"] == 50 + i
    finally:
        for c in conns:
            c.close()


def test_stream_to_a_client_that_does_not_read_is_closed(dserver):
    # square sends 700,000 events (~45 MB) at once; the client reads nothing.
    # The server buffers at most IFD_HTTP_STREAM_MAX_QUEUED (32 MiB) for it,
    # then closes the connection and drops the rest; it keeps serving.
    import socket
    c = h.RawConn(dserver.port)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.send(h.http_request("POST", "/v2/models/square_int32/generate_stream", json.dumps({"IN": 700000})))
    deadline = time.monotonic() + 120
    while b"does not read its streamed answer" not in dserver.log_path.read_bytes():
        assert time.monotonic() < deadline, "the server never gave up on the stream"
        time.sleep(0.2)
    try:
        data = c.read_to_eof()
    except (ConnectionResetError, BrokenPipeError):
        data = b""
    c.close()
    assert data.count(b"data: ") < 700000
    r = post(dserver, "/v2/models/square_int32/generate", {"IN": 1})
    check_json(r, 200, {"OUT": 1, "model_name": "square_int32", "model_version": "1"})


def test_server_stop_with_a_stream_open(private_server, tmp_path):
    # SIGTERM while a stream is open: the stream still ends well-formed (its
    # last chunk; with cancellation the backend may end it early with an
    # error event) and the server exits 0 (private_server checks).
    import signal
    srv = private_server(repos=[decoupled_repo(tmp_path / "drepo")], wait_models=DECOUPLED)
    # Generate sends one element per input: one response, then the backend
    # waits WAIT ms before its FINAL flag.
    body = json.dumps({"IN": [1], "DELAY": [0], "WAIT": 1500})
    with h.RawConn(srv.port) as c:
        c.send(h.http_request("POST", "/v2/models/repeat_int32/generate_stream", body))
        head = c._read_until(b"\r\n\r\n")
        assert b" 200 " in head.split(b"\r\n")[0]
        size = int(c._read_until(b"\r\n"), 16)
        first = c._read_exact(size + 2)
        assert first.startswith(b'data: {"IDX":0,"OUT":1,')
        srv.proc.send_signal(signal.SIGTERM)
        rest = b""
        while True:
            size = int(c._read_until(b"\r\n"), 16)
            if size == 0:
                assert c._read_until(b"\r\n") == b"\r\n"
                break
            rest += c._read_exact(size)
            assert c._read_exact(2) == b"\r\n"
        for ev in events(rest):
            assert list(ev) == ["error"], ev
    assert srv.proc.wait(timeout=h.STOP_TIMEOUT_S) == 0


def test_generate_one_answer_larger_than_the_stream_cap(server):
    # The cap on queued stream bytes is for clients that stop reading: one
    # answer larger than it (33 MiB) still goes out whole.
    text = "x" * (33 << 20)
    r = server.post("/v2/models/identity_bytes/generate", data=json.dumps({"INPUT0": text}))
    assert r.status_code == 200
    assert r.headers.get("transfer-encoding") == "chunked"
    assert r.json()["OUTPUT0"] == text
