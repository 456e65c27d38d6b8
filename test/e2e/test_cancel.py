"""Request cancellation end to end (issue 11).

The `sleep` test backend with the model parameter poll_cancel polls
TRITONBACKEND_RequestIsCancelled while it sleeps and logs what it saw
("sleep: request '<id>' sleeping <n> ms", "... cancelled after <n> ms").
A model with one instance sleeping a minute makes every check plain: a
second request is answered only if the first one stopped early, and queued
requests that were dropped never reach execution_count.
"""
import json
import shutil
import threading
import time

import grpc
import numpy as np
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as gh
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

LONG_MS = 60000  # far longer than any wait below: only a cancel ends it early
WAIT_S = 30


def config(name, extra=""):
    return (
        f'name: "{name}"\nbackend: "sleep"\nmax_batch_size: 0\n'
        'input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
        'output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
        'instance_group [ { count: 1 kind: KIND_CPU } ]\n'
        'parameters { key: "poll_cancel" value: { string_value: "1" } }\n' + extra)


def make_srv(private_server, tmp_path, extra=()):
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    so = h.sleep_backend_so()
    if not so.is_file():
        pytest.skip(f"{so} not built")
    d = repo / "sleep_poll"
    (d / "1").mkdir(parents=True)
    (d / "config.pbtxt").write_text(config("sleep_poll"))
    shutil.copy2(so, d / so.name)
    return private_server(repos=[repo], extra=extra, wait_models=("identity_fp32", "sleep_poll"))


@pytest.fixture
def srv(private_server, tmp_path):
    return make_srv(private_server, tmp_path)


def infer_body(ms, rid):
    return json.dumps({"id": rid, "inputs": [
        {"name": "IN", "datatype": "INT32", "shape": [1], "data": [ms]}]}).encode()


def send_infer(conn, ms, rid, model="sleep_poll"):
    conn.send(h.http_request("POST", f"/v2/models/{model}/infer", infer_body(ms, rid),
                             headers={"Content-Type": "application/json"}))


def wait_log(srv, text, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in srv.log_path.read_text(errors="replace"):
            return
        assert srv.alive(), srv.log_tail()
        time.sleep(0.05)
    raise AssertionError(f"no {text!r} in the server log\n--- log tail ---\n{srv.log_tail()}")


def stats(srv, model="sleep_poll"):
    r = srv.get(f"/v2/models/{model}/stats")
    assert r.status_code == 200, r.text
    return r.json()["model_stats"][0]


def wait_stats(srv, pred, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while True:
        st = stats(srv)
        if pred(st):
            return st
        if time.monotonic() > deadline:
            raise AssertionError(f"statistics never got there: {st}\n{srv.log_tail()}")
        time.sleep(0.05)


def wait_pending(srv, n, model="sleep_poll", timeout=WAIT_S):
    """Until the model has n requests waiting for an instance (Triton's
    pending gauge: executing ones are not counted)."""
    key = f'nv_inference_pending_request_count{{model="{model}",version="1"}} {n}'
    deadline = time.monotonic() + timeout
    while True:
        text = requests.get(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=WAIT_S).text
        if key in text.splitlines():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"never {n} pending\n{text}")
        time.sleep(0.05)


def check_serving(srv):
    """The single instance is free again: a cheap request is answered."""
    r = h.infer_json(srv, "sleep_poll", [("IN", "INT32", [1], [0])], request_id="after")
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == [0]


def test_http_close_cancels_running_request(srv):
    with h.RawConn(srv.port) as c:
        send_infer(c, LONG_MS, "running")
        wait_log(srv, "sleep: request 'running' sleeping")
    # The client closed: the backend sees IsCancelled and stops early.
    wait_log(srv, "sleep: request 'running' cancelled after")
    st = wait_stats(srv, lambda s: s["inference_stats"]["fail"]["count"] == 1)
    assert st["inference_stats"]["success"]["count"] == 0, st
    check_serving(srv)


def test_http_close_drops_queued_requests(srv):
    first = h.RawConn(srv.port)
    try:
        send_infer(first, LONG_MS, "head")
        wait_log(srv, "sleep: request 'head' sleeping")
        # Two requests pipelined on another connection wait for the one
        # instance; their client leaves before they run.
        with h.RawConn(srv.port) as c:
            send_infer(c, LONG_MS, "queued1")
            send_infer(c, LONG_MS, "queued2")
            wait_until(lambda: h_pending(srv) >= 2, srv)
    finally:
        first.close()
    wait_log(srv, "sleep: request 'head' cancelled after")
    st = wait_stats(srv, lambda s: s["inference_stats"]["fail"]["count"] == 3)
    # Only 'head' ever executed: the queued ones were dropped, never run.
    assert st["execution_count"] == 1, st
    assert st["inference_stats"]["success"]["count"] == 0, st
    log = srv.log_path.read_text(errors="replace")
    assert "request 'queued1' sleeping" not in log, srv.log_tail()
    assert "request 'queued2' sleeping" not in log, srv.log_tail()
    check_serving(srv)
    assert stats(srv)["execution_count"] == 2


def wait_until(pred, srv, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, srv.log_tail()
        time.sleep(0.05)


def h_pending(srv):
    """Requests of sleep_poll waiting for an instance (the metrics endpoint)."""
    import requests
    r = requests.get(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=10)
    n = 0
    for line in r.text.splitlines():
        if line.startswith("nv_inference_pending_request_count") and 'model="sleep_poll"' in line:
            n += int(float(line.rsplit(" ", 1)[1]))
    return n


def grpc_req(client, ms, rid):
    return gh.infer_request(client.pb, "sleep_poll", [("IN", "INT32", [1], np.array([ms], dtype=np.int32))],
                            request_id=rid)


def test_grpc_deadline_cancels(srv, grpc_stubs):  # noqa: F811
    client = gh.connect(srv, grpc_stubs)
    try:
        with pytest.raises(grpc.RpcError) as ei:
            client.model_infer(grpc_req(client, LONG_MS, "deadline"), timeout=1.0)
        assert ei.value.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED), ei.value
        wait_log(srv, "sleep: request 'deadline' cancelled after")
        r = client.model_infer(grpc_req(client, 0, "after"), timeout=WAIT_S)
        assert r.id == "after"
    finally:
        client.close()
    wait_stats(srv, lambda s: s["inference_stats"]["fail"]["count"] == 1)


def test_grpc_client_cancel(srv, grpc_stubs):  # noqa: F811
    client = gh.connect(srv, grpc_stubs)
    try:
        fut = client.model_infer_future(grpc_req(client, LONG_MS, "unary"), timeout=120)
        wait_log(srv, "sleep: request 'unary' sleeping")
        fut.cancel()
        wait_log(srv, "sleep: request 'unary' cancelled after")
        r = client.model_infer(grpc_req(client, 0, "after"), timeout=WAIT_S)
        assert r.id == "after"
    finally:
        client.close()


def test_grpc_stream_closed_cancels(srv, grpc_stubs):  # noqa: F811
    client = gh.connect(srv, grpc_stubs)
    stop = threading.Event()
    try:
        def gen():
            yield grpc_req(client, LONG_MS, "streamed")
            yield grpc_req(client, LONG_MS, "streamed2")  # queued behind it
            stop.wait(120)

        call = client.model_stream_infer(gen(), timeout=120)
        wait_log(srv, "sleep: request 'streamed' sleeping")
        # The second request reached the server too (it waits for the one
        # instance) before the client goes.
        wait_pending(srv, 1)
        call.cancel()
        wait_log(srv, "sleep: request 'streamed' cancelled after")
        st = wait_stats(srv, lambda s: s["inference_stats"]["fail"]["count"] == 2)
        assert st["execution_count"] == 1, st
        assert "request 'streamed2' sleeping" not in srv.log_path.read_text(errors="replace")
        r = client.model_infer(grpc_req(client, 0, "after"), timeout=WAIT_S)
        assert r.id == "after"
    finally:
        stop.set()
        client.close()


def test_server_stop_cancels_in_flight(private_server, tmp_path):
    srv = make_srv(private_server, tmp_path, extra=["--exit-timeout-secs=2"])
    c = h.RawConn(srv.port)
    try:
        send_infer(c, LONG_MS, "at_stop")
        wait_log(srv, "sleep: request 'at_stop' sleeping")
        t0 = time.monotonic()
        srv.stop(check=True)  # SIGTERM: must exit 0 without waiting a minute
        assert time.monotonic() - t0 < LONG_MS / 1000 / 2, srv.log_tail()
        # Past --exit-timeout-secs the request in flight was cancelled.
        assert "sleep: request 'at_stop' cancelled after" in srv.log_path.read_text(errors="replace")
    finally:
        c.close()


def test_decoupled_stream_closed_stops_backend(private_server, tmp_path, grpc_stubs):  # noqa: F811
    """A decoupled model's stream closed by the client mid-way: the repeat
    backend asks TRITONBACKEND_ResponseFactoryIsCancelled before each
    response and stops. Its request is in flight until then, so a graceful
    stop (which waits for in-flight requests, --exit-timeout-secs=120) ends
    quickly only if it stopped: 3,000 responses 20 ms apart would take a
    minute."""
    src = h.REPO_ROOT / "test" / "models" / "decoupled_repo" / "repeat_int32"
    so = h.build_dir() / "test" / "backends" / "repeat" / "libtriton_repeat.so"
    if not so.is_file():
        pytest.skip(f"{so} not built")
    repo = tmp_path / "drepo"
    shutil.copytree(src, repo / "repeat_int32")
    shutil.copy2(so, repo / "repeat_int32" / so.name)
    srv = private_server(repos=[repo], extra=["--exit-timeout-secs=120"], wait_models=("repeat_int32",))
    client = gh.connect(srv, grpc_stubs)
    stop = threading.Event()
    n = 3000
    req = gh.infer_request(client.pb, "repeat_int32", [
        ("IN", "INT32", [n], np.arange(n, dtype=np.int32)),
        ("DELAY", "UINT32", [n], np.full(n, 20, dtype=np.uint32)),
        ("WAIT", "UINT32", [1], np.array([0], dtype=np.uint32)),
    ], request_id="long")

    def gen():
        yield req
        stop.wait(120)

    try:
        call = client.model_stream_infer(gen(), timeout=120)
        first = next(iter(call))
        assert first.error_message == "", first
        call.cancel()
    finally:
        stop.set()
        client.close()
    t0 = time.monotonic()
    srv.stop(check=True)  # within the helper's stop bound, far below a minute
    assert time.monotonic() - t0 < 30, srv.log_tail()


def seq_body(ms, rid, seq, start=False, end=False):
    params = {"sequence_id": seq}
    if start:
        params["sequence_start"] = True
    if end:
        params["sequence_end"] = True
    return json.dumps({"id": rid, "parameters": params, "inputs": [
        {"name": "IN", "datatype": "INT32", "shape": [1], "data": [ms]}]}).encode()


def send_seq(conn, ms, rid, seq, **flags):
    conn.send(h.http_request("POST", "/v2/models/sleep_seq/infer", seq_body(ms, rid, seq, **flags),
                             headers={"Content-Type": "application/json"}))


def test_cancel_ends_the_sequence(private_server, tmp_path):
    """Cancelling one queued request of a sequence (its client left) ends
    the sequence, as in Triton's sequence batcher: the requests queued
    behind it are answered CANCELLED without running, the slot is free for
    the next sequence, and a later request of the ID without START is
    refused. Before, the rest of the sequence ran on."""
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    so = h.sleep_backend_so()
    if not so.is_file():
        pytest.skip(f"{so} not built")
    d = repo / "sleep_seq"
    (d / "1").mkdir(parents=True)
    (d / "config.pbtxt").write_text(config("sleep_seq", "sequence_batching { }\n"))
    shutil.copy2(so, d / so.name)
    srv = private_server(repos=[repo], wait_models=("sleep_seq",))
    conns = [h.RawConn(srv.port) for _ in range(4)]
    try:
        send_seq(conns[0], 2000, "s0", 7, start=True)
        wait_log(srv, "sleep: request 's0' sleeping")
        send_seq(conns[1], 0, "s1", 7)
        send_seq(conns[2], 0, "s2", 7)
        send_seq(conns[3], 0, "s3", 7, end=True)
        wait_pending(srv, 3, model="sleep_seq")
        conns[1].close()  # s1's client leaves: s1 is cancelled
        r0 = conns[0].read_response()
        assert r0.status == 200, r0.body
        for c in conns[2:]:
            r = c.read_response()
            assert r.status != 200, r.body
            assert json.loads(r.body)["error"] == "Request was cancelled", r.body
        st = stats(srv, "sleep_seq")
        assert st["execution_count"] == 1, st  # only s0 ran
        log = srv.log_path.read_text(errors="replace")
        for rid in ("s1", "s2", "s3"):
            assert f"request '{rid}' sleeping" not in log, srv.log_tail()
        # The sequence is over: its ID needs a START again.
        r = srv.post("/v2/models/sleep_seq/infer", data=seq_body(0, "s4", 7))
        assert r.status_code == 400, r.text
        assert "must specify the START flag" in r.json()["error"], r.text
        r = srv.post("/v2/models/sleep_seq/infer", data=seq_body(0, "n0", 7, start=True, end=True))
        assert r.status_code == 200, r.text
    finally:
        for c in conns:
            c.close()
