"""gRPC ModelStreamInfer: many requests on one bidirectional stream, errors
reported in-stream (error_message) without ending it, clean end after the
client half-closes."""

import threading
import time

import grpc
import numpy as np
import pytest

import grpc_helpers as g
from grpc_helpers import grpc_client, grpc_stubs  # noqa: F401  (fixtures)

N = 100


def _req(pb, i, model="identity_fp32", input_name="INPUT0"):
    x = np.full((1, 16), i, dtype=np.float32) + np.arange(16, dtype=np.float32) / 16
    return g.infer_request(pb, model, [(input_name, "FP32", [1, 16], x)], request_id=f"r{i}"), x


def _drain(call, timeout=30):
    """All responses of a stream call (the call must end within timeout)."""
    out = []
    done = threading.Event()
    timer = threading.Timer(timeout, lambda: None if done.is_set() else call.cancel())
    timer.start()
    try:
        for resp in call:
            out.append(resp)
    finally:
        done.set()
        timer.cancel()
    return out


def test_stream_100_requests(grpc_client):
    pb = grpc_client.pb
    reqs = [_req(pb, i) for i in range(N)]
    call = grpc_client.model_stream_infer(iter([r for r, _ in reqs]), timeout=60)
    resps = _drain(call)
    assert call.code() == grpc.StatusCode.OK, (call.code(), call.details())
    assert len(resps) == N, len(resps)
    seen = {}
    for r in resps:
        assert r.error_message == "", r.error_message
        ir = r.infer_response
        assert ir.model_name == "identity_fp32"
        assert ir.id not in seen, f"response for {ir.id} twice"
        seen[ir.id] = ir
    assert sorted(seen) == sorted(f"r{i}" for i in range(N))
    for i, (_, x) in enumerate(reqs):
        outs = g.outputs_of(seen[f"r{i}"])
        np.testing.assert_array_equal(outs["OUTPUT0"], x)


def test_stream_bad_request_in_the_middle(grpc_client):
    pb = grpc_client.pb
    bad = 50
    reqs = []
    for i in range(N):
        if i == bad:
            reqs.append(_req(pb, i, input_name="INPUTX"))
        else:
            reqs.append(_req(pb, i))
    call = grpc_client.model_stream_infer(iter([r for r, _ in reqs]), timeout=60)
    resps = _drain(call)
    assert call.code() == grpc.StatusCode.OK, (call.code(), call.details())
    assert len(resps) == N, len(resps)
    errors = [r for r in resps if r.error_message]
    assert len(errors) == 1, [r.error_message for r in errors]
    assert "INPUTX" in errors[0].error_message, errors[0].error_message
    good = {r.infer_response.id: r.infer_response for r in resps if not r.error_message}
    assert sorted(good) == sorted(f"r{i}" for i in range(N) if i != bad)
    for i, (_, x) in enumerate(reqs):
        if i != bad:
            np.testing.assert_array_equal(g.outputs_of(good[f"r{i}"])["OUTPUT0"], x)


def test_stream_unknown_model_in_stream(grpc_client):
    pb = grpc_client.pb
    reqs = [_req(pb, 0)[0], _req(pb, 1, model="nope")[0], _req(pb, 2)[0]]
    call = grpc_client.model_stream_infer(iter(reqs), timeout=30)
    resps = _drain(call)
    assert call.code() == grpc.StatusCode.OK, (call.code(), call.details())
    assert len(resps) == 3
    errs = [r.error_message for r in resps if r.error_message]
    assert len(errs) == 1 and "nope" in errs[0], errs
    assert sorted(r.infer_response.id for r in resps if not r.error_message) == ["r0", "r2"]


def test_stream_mixed_models_and_interleaving(grpc_client):
    """Requests sent one at a time, each answered before the next is sent
    (the stream is really bidirectional, not collect-then-answer)."""
    pb = grpc_client.pb
    cond = threading.Condition()
    got = []
    sent = []

    def gen():
        for i in range(10):
            if i % 2:
                x = np.array([i, -i, 2 * i], dtype=np.int32)
                r = g.infer_request(pb, "identity_int32", [("INPUT0", "INT32", [1, 3], x.reshape(1, 3))],
                                    request_id=f"m{i}")
            else:
                r = _req(pb, i)[0]
                r.id = f"m{i}"
            sent.append(r.id)
            yield r
            with cond:
                assert cond.wait_for(lambda: len(got) > i, timeout=10), f"no response to m{i} before the next request"

    call = grpc_client.model_stream_infer(gen(), timeout=60)
    for resp in call:
        assert resp.error_message == "", resp.error_message
        with cond:
            got.append(resp.infer_response.id)
            cond.notify_all()
    assert call.code() == grpc.StatusCode.OK, (call.code(), call.details())
    assert got == sent


def test_stream_half_close_waits_for_in_flight(grpc_client):
    """The client half-closes right after sending requests that take 200 ms:
    every response still comes, then the stream ends with OK."""
    pb = grpc_client.pb
    reqs = [g.infer_request(pb, "identity_delay", [("INPUT0", "INT32", [2], np.array([i, i + 1], np.int32))],
                            request_id=f"d{i}") for i in range(3)]
    t0 = time.monotonic()
    call = grpc_client.model_stream_infer(iter(reqs), timeout=30)
    resps = _drain(call)
    assert call.code() == grpc.StatusCode.OK, (call.code(), call.details())
    assert time.monotonic() - t0 >= 0.19
    assert sorted(r.infer_response.id for r in resps) == ["d0", "d1", "d2"]
    for r in resps:
        i = int(r.infer_response.id[1:])
        np.testing.assert_array_equal(g.outputs_of(r.infer_response)["OUTPUT0"], [i, i + 1])


def test_stream_empty(grpc_client):
    call = grpc_client.model_stream_infer(iter(()), timeout=10)
    assert _drain(call) == []
    assert call.code() == grpc.StatusCode.OK, (call.code(), call.details())


def test_stream_cancel_mid_stream(grpc_client):
    """The client cancels a stream with requests in flight; the server serves on."""
    pb = grpc_client.pb
    stop = threading.Event()

    def gen():
        for i in range(4):
            yield g.infer_request(pb, "identity_delay", [("INPUT0", "INT32", [1], np.array([i], np.int32))],
                                  request_id=f"c{i}")
        stop.wait(10)   # keep the stream open (no half-close)

    call = grpc_client.model_stream_infer(gen(), timeout=30)
    time.sleep(0.05)
    call.cancel()
    stop.set()
    with pytest.raises(grpc.RpcError) as ei:
        for _ in call:
            pass
    assert ei.value.code() == grpc.StatusCode.CANCELLED
    # Server still fine: a new stream and a unary call.
    req, x = _req(pb, 7)
    resps = _drain(grpc_client.model_stream_infer(iter([req]), timeout=10))
    assert len(resps) == 1
    np.testing.assert_array_equal(g.outputs_of(resps[0].infer_response)["OUTPUT0"], x)
    np.testing.assert_array_equal(g.outputs_of(grpc_client.model_infer(req))["OUTPUT0"], x)


def test_concurrent_streams(server, grpc_stubs):
    """8 streams at once, on 8 channels, 20 requests each."""
    pb = grpc_stubs.pb
    errors = []

    def work(k):
        try:
            with g.Client(grpc_stubs, g.grpc_target(server)) as c:
                reqs = [_req(pb, 1000 * k + i) for i in range(20)]
                call = c.model_stream_infer(iter([r for r, _ in reqs]), timeout=30)
                resps = {r.infer_response.id: r for r in _drain(call)}
                assert call.code() == grpc.StatusCode.OK, call.code()
                assert len(resps) == 20
                for r, x in reqs:
                    assert resps[r.id].error_message == ""
                    np.testing.assert_array_equal(g.outputs_of(resps[r.id].infer_response)["OUTPUT0"], x)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"stream {k}: {e!r}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a stream thread hung"
    assert not errors, "\n".join(errors)
