"""The Python backend, second slice (issue 15): decoupled models, the
response sender in a default model, and BLS, end to end.

Models (test/models/python_repo, written the way Triton's Python backend
docs write them):
  * py_repeat: decoupled, one response per IN element sent from a thread
    after execute returned (DELAY ms before each), then a flags-only FINAL;
    a negative element is an error response in its place; a send after the
    FINAL raises Triton's "Response sender has been closed" (logged);
  * py_decoupled_return: decoupled, execute wrongly returns a list;
  * py_sender: a default model answering through the response sender
    (inside execute, from a thread later, and Triton's refusals);
  * py_bls: exec() on the identity C backend (py_identity_step) and on a
    model that does not exist;
  * py_bls_decoupled: exec(decoupled=True) on py_repeat, iterating;
  * py_bls_async: async def execute with async_exec(), plain and decoupled;
  * py_bls_stream: a decoupled model calling exec() inside execute and
    sending each answer;
  * py_bls_fields: a BLS request's id, correlation id, parameters and
    requested outputs as the callee sees them, and BYTES both ways;
  * py_bls_self: a model calling itself on its only instance (Triton: a
    documented hang; inferd: an error response).

What is asserted, as Triton does it: decoupled models answer only over gRPC
streaming (HTTP 501, unary UNIMPLEMENTED, with Triton's texts); every
response arrives in order with its request's id; the empty final response
when asked for; error responses mid-stream; several requests interleaved on
one stream; a stream cancelled by the client is seen by the sender's
is_cancelled() after execute returned; the request's statistics once its
FINAL was sent; Triton's
error texts for wrong uses of the sender; BLS results and errors. Every wait
is bounded (HANG_S, python_fixtures.py); no assertion is about time.
"""

import concurrent.futures as cf
import threading
import time

import grpc
import numpy as np
import pytest

import grpc_helpers as gh
import python_fixtures as pf
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

MODELS = ("py_repeat", "py_decoupled_return", "py_sender", "py_bls", "py_bls_decoupled", "py_bls_async",
          "py_bls_stream", "py_bls_fields", "py_bls_self", "py_identity_step", "introspect", "bytes_echo")
PROTOCOLS = ("http", "grpc")

DECOUPLED_HTTP = "HTTP end point doesn't support models with decoupled transaction policy"
DECOUPLED_UNARY = "ModelInfer RPC doesn't support models with decoupled transaction policy"
SENDER_CLOSED = "Unable to send response. Response sender has been closed."
FINAL_FIRST = ("Unable to send response. Non-decoupled model cannot send complete final before sending a "
               "response.")
MORE_THAN_ONE = "Unable to send response. Non-decoupled model cannot send more than one response."
MUST_RETURN_NONE = "using the decoupled mode and the execute function must return None"


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = pf.start_python_server(tmp_path_factory.mktemp("pydecoupled"), MODELS, MODELS)
    try:
        yield s
    finally:
        s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = gh.connect(srv, grpc_stubs)
    yield c
    c.close()


def set_params(req, params):
    for k, v in (params or {}).items():
        p = req.parameters[k]
        if isinstance(v, bool):
            p.bool_param = v
        elif isinstance(v, int):
            p.int64_param = v
        else:
            p.string_param = v


def repeat_req(pb, rid, values, delay=None, params=None, model="py_repeat"):
    inputs = [("IN", "INT32", [len(values)], np.array(values, dtype=np.int32))]
    if delay is not None:
        inputs.append(("DELAY", "UINT32", [len(delay)], np.array(delay, dtype=np.uint32)))
    req = gh.infer_request(pb, model, inputs, request_id=rid)
    set_params(req, params)
    return req


def stream(gc, reqs, timeout=pf.HANG_S):
    """Sends reqs on one stream, half-closes, returns (messages, code)."""
    call = gc.model_stream_infer(iter(list(reqs)), timeout=timeout)
    out = list(call)
    return out, call.code()


def final_flag(ir):
    p = ir.parameters["triton_final_response"]
    assert p.WhichOneof("parameter_choice") == "bool_param", p
    return p.bool_param


def check_repeat(msgs, rid, values):
    assert len(msgs) == len(values), [str(m)[:300] for m in msgs[:6]]
    for i, (m, v) in enumerate(zip(msgs, values)):
        assert m.error_message == "", m.error_message
        ir = m.infer_response
        assert ir.id == rid and ir.model_name == "py_repeat" and ir.model_version == "1", ir
        assert final_flag(ir) is False, ir
        o = gh.outputs_of(ir)
        assert o["OUT"].tolist() == [v] and o["IDX"].tolist() == [i], (i, o)


def wait_log(srv, text, timeout=pf.HANG_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in srv.log_path.read_text(errors="replace"):
            return
        assert srv.alive(), srv.log_tail()
        time.sleep(0.05)
    raise AssertionError(f"no {text!r} in the server log\n--- log tail ---\n{srv.log_tail()}")


def stats(srv, model):
    r = srv.get(f"/v2/models/{model}/stats")
    assert r.status_code == 200, r.text
    return r.json()["model_stats"][0]


# ---------------------------------------------------------- decoupled ---

def test_config_is_decoupled(srv):
    c = srv.get("/v2/models/py_repeat/config").json()
    assert c["model_transaction_policy"] == {"decoupled": True}, c


def test_http_infer_refused(srv):
    body = {"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [1]}]}
    r = srv.post("/v2/models/py_repeat/infer", json=body)
    assert r.status_code == 501, (r.status_code, r.text)
    assert r.json() == {"error": DECOUPLED_HTTP}


def test_grpc_unary_refused(gc):
    e = gh.rpc_error(gc.model_infer, repeat_req(gc.pb, "u", [1]))
    assert e.code() == grpc.StatusCode.UNIMPLEMENTED
    assert e.details() == DECOUPLED_UNARY


def test_stream_repeat(srv, gc):
    before = stats(srv, "py_repeat")["inference_stats"]["success"]["count"]
    msgs, code = stream(gc, [repeat_req(gc.pb, "rep-1", [4, 5, 6], delay=[0, 20, 0])])
    assert code == grpc.StatusCode.OK
    check_repeat(msgs, "rep-1", [4, 5, 6])
    # The model's thread tried a send after its FINAL: Triton's text.
    wait_log(srv, f"py_repeat: request 'rep-1' send after final raised: {SENDER_CLOSED}")
    # The request was released after its FINAL and counted once.
    deadline = time.monotonic() + pf.HANG_S
    while stats(srv, "py_repeat")["inference_stats"]["success"]["count"] != before + 1:
        assert time.monotonic() < deadline, stats(srv, "py_repeat")
        time.sleep(0.05)


def test_stream_repeat_empty_final(gc):
    msgs, code = stream(gc, [repeat_req(gc.pb, "rep-2", [7, 8],
                                        params={"triton_enable_empty_final_response": True})])
    assert code == grpc.StatusCode.OK
    assert len(msgs) == 3, [str(m)[:300] for m in msgs]
    check_repeat(msgs[:2], "rep-2", [7, 8])
    last = msgs[2]
    assert last.error_message == ""
    assert last.infer_response.id == "rep-2" and final_flag(last.infer_response) is True
    assert len(last.infer_response.outputs) == 0


def test_stream_zero_responses(gc):
    # No element: no data message; only the empty final when asked for.
    msgs, code = stream(gc, [repeat_req(gc.pb, "rep-0", [])])
    assert code == grpc.StatusCode.OK
    assert msgs == [], [str(m)[:300] for m in msgs]
    msgs, code = stream(gc, [repeat_req(gc.pb, "rep-0f", [], params={"triton_enable_empty_final_response": True})])
    assert code == grpc.StatusCode.OK
    assert len(msgs) == 1 and final_flag(msgs[0].infer_response) is True, msgs


def test_stream_error_response_mid_stream(gc):
    msgs, code = stream(gc, [repeat_req(gc.pb, "rep-e", [1, -1, 2])])
    assert code == grpc.StatusCode.OK
    assert len(msgs) == 3, [str(m)[:300] for m in msgs]
    assert msgs[1].error_message == "py_repeat: negative value -1 at 1", msgs[1]
    for m, (v, i) in ((msgs[0], (1, 0)), (msgs[2], (2, 2))):
        assert m.error_message == "", m.error_message
        o = gh.outputs_of(m.infer_response)
        assert o["OUT"].tolist() == [v] and o["IDX"].tolist() == [i], o


def test_stream_interleaved_requests(gc):
    # Three requests on one stream, each answered from its own thread: the
    # responses of one request stay in order and carry its id.
    reqs = [repeat_req(gc.pb, "a", [1, 2, 3, 4], delay=[30, 30, 30, 30]),
            repeat_req(gc.pb, "b", [10, 20], delay=[10, 50]),
            repeat_req(gc.pb, "c", [100, 200, 300], delay=[0, 0, 0])]
    msgs, code = stream(gc, reqs)
    assert code == grpc.StatusCode.OK
    by = {}
    for m in msgs:
        by.setdefault(m.infer_response.id, []).append(m)
    check_repeat(by.get("a", []), "a", [1, 2, 3, 4])
    check_repeat(by.get("b", []), "b", [10, 20])
    check_repeat(by.get("c", []), "c", [100, 200, 300])


def test_many_streams_at_once(srv, gc):
    def one(i):
        vals = list(range(i, i + 5))
        msgs, code = stream(gc, [repeat_req(gc.pb, f"s{i}", vals)])
        assert code == grpc.StatusCode.OK
        check_repeat(msgs, f"s{i}", vals)
        return True

    with cf.ThreadPoolExecutor(8) as ex:
        assert all(f.result(timeout=pf.HANG_S) for f in [ex.submit(one, i) for i in range(16)])


def test_stream_cancelled_by_client(srv, gc):
    """The client cancels the stream while py_repeat's thread waits before
    its second response: the sender's is_cancelled() turns true (a request
    still open after execute returned) and the model stops early."""
    req = repeat_req(gc.pb, "rep-cancel", [1, 2, 3], delay=[0, 30000, 0])
    gate = threading.Event()

    def requests_then_wait():
        yield req
        gate.wait(pf.HANG_S)  # keep the stream open until the test cancels it

    call = gc.model_stream_infer(requests_then_wait(), timeout=pf.HANG_S)
    try:
        first = next(call)
        assert first.error_message == "" and gh.outputs_of(first.infer_response)["OUT"].tolist() == [1]
        call.cancel()
    finally:
        gate.set()
    wait_log(srv, "py_repeat: request 'rep-cancel' cancelled before response 1")
    msgs, code = stream(gc, [repeat_req(gc.pb, "after-cancel", [9])])
    assert code == grpc.StatusCode.OK
    check_repeat(msgs, "after-cancel", [9])


def test_bls_inside_decoupled_execute(gc):
    req = gh.infer_request(gc.pb, "py_bls_stream", [("IN", "FP32", [3], np.array([1, 2, 3], dtype=np.float32))],
                           request_id="bs")
    msgs, code = stream(gc, [req])
    assert code == grpc.StatusCode.OK
    assert [m.error_message for m in msgs] == ["", "", ""], [str(m)[:300] for m in msgs]
    assert [gh.outputs_of(m.infer_response)["OUT"].tolist() for m in msgs] == [[1, 2, 3], [2, 4, 6], [3, 6, 9]]


def test_decoupled_execute_must_return_none(srv, gc):
    req = gh.infer_request(gc.pb, "py_decoupled_return", [("IN", "INT32", [1], np.array([3], dtype=np.int32))],
                           request_id="ret")
    msgs, code = stream(gc, [req])
    assert code == grpc.StatusCode.OK
    errs = [m.error_message for m in msgs if m.error_message]
    assert len(errs) == 1 and MUST_RETURN_NONE in errs[0], [str(m)[:300] for m in msgs]
    # The stub lives on: the next request fails the same way, not with a crash.
    msgs, code = stream(gc, [req])
    assert code == grpc.StatusCode.OK
    assert any(MUST_RETURN_NONE in m.error_message for m in msgs), msgs


# -------------------------------------- the sender in a default model ---

def sender_inputs(x, mode):
    return [("IN", "FP32", [len(x)], x), ("MODE", "INT32", [1], [mode])]


@pytest.mark.parametrize("proto", PROTOCOLS)
@pytest.mark.parametrize("mode", [0, 1])
def test_sender_one_response(srv, gc, proto, mode):
    out = pf.infer(proto, srv, gc, "py_sender", sender_inputs([1.0, -2.5], mode))
    assert np.asarray(out["OUT"]).tolist() == [2.0, -5.0]
    assert [bytes(x) for x in out["MSG"]] == [b""]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_sender_final_before_response_refused(srv, gc, proto):
    out = pf.infer(proto, srv, gc, "py_sender", sender_inputs([3.0], 2))
    assert np.asarray(out["OUT"]).tolist() == [6.0]
    assert [bytes(x).decode() for x in out["MSG"]] == [FINAL_FIRST]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_sender_second_response_refused(srv, gc, proto):
    rid = f"two-{proto}"
    out = pf.infer(proto, srv, gc, "py_sender", sender_inputs([1.0], 3), request_id=rid)
    assert np.asarray(out["OUT"]).tolist() == [2.0]
    wait_log(srv, f"py_sender: request '{rid}' second send raised: {MORE_THAN_ONE}")


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_sender_after_final_refused(srv, gc, proto):
    rid = f"closed-{proto}"
    out = pf.infer(proto, srv, gc, "py_sender", sender_inputs([4.0], 4), request_id=rid)
    assert np.asarray(out["OUT"]).tolist() == [8.0]
    wait_log(srv, f"py_sender: request '{rid}' send after final raised: {SENDER_CLOSED}")


def test_sender_over_stream(gc):
    # A default model on ModelStreamInfer: one response, flagged final.
    req = gh.infer_request(gc.pb, "py_sender", [("IN", "FP32", [2], np.array([1, 2], dtype=np.float32)),
                                                ("MODE", "INT32", [1], np.array([1], dtype=np.int32))],
                           request_id="st")
    msgs, code = stream(gc, [req])
    assert code == grpc.StatusCode.OK
    assert len(msgs) == 1 and msgs[0].error_message == "", msgs
    assert final_flag(msgs[0].infer_response) is True
    assert gh.outputs_of(msgs[0].infer_response)["OUT"].tolist() == [2.0, 4.0]


# ---------------------------------------------------------------- BLS ---

@pytest.mark.parametrize("proto", PROTOCOLS)
def test_bls_exec(srv, gc, proto):
    before = stats(srv, "py_identity_step")["inference_stats"]["success"]["count"]
    out = pf.infer(proto, srv, gc, "py_bls", [("INPUT0", "FP32", [3], [1.0, 2.0, -4.0])], request_id="b1")
    assert np.asarray(out["OUTPUT0"]).tolist() == [2.0, 4.0, -8.0]
    err = bytes(out["ERR"][0]).decode()
    assert err != "no error" and "py_no_such_model" in err, err
    assert stats(srv, "py_identity_step")["inference_stats"]["success"]["count"] == before + 1


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_bls_request_fields_and_bytes(srv, gc, proto):
    import json
    items = [b"abc", b"", "\u00e9t\u00e9".encode(), b"\x00\xff" * 1000]
    out = pf.infer(proto, srv, gc, "py_bls_fields", [("TEXT", "BYTES", [len(items)], items)])
    info = json.loads(bytes(out["INFO"][0]))
    assert info["request_id"] == "bls-rid", info
    assert info["correlation_id"] == 42, info
    assert info["parameters"] == {"s": "v", "n": 5, "b": True}, info
    assert info["requested"] == ["INFO"], info
    assert [bytes(x) for x in out["ECHO"]] == [x[::-1] for x in items]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_bls_self_call_refused(srv, gc, proto):
    out = pf.infer(proto, srv, gc, "py_bls_self", [("N", "INT32", [1], [0])])
    assert [bytes(x) for x in out["ERR"]] == [b""]
    out = pf.infer(proto, srv, gc, "py_bls_self", [("N", "INT32", [1], [1])])
    err = bytes(out["ERR"][0]).decode()
    assert err not in ("", "no error") and "py_bls_self" in err, err
    # The instance is free again.
    assert [bytes(x) for x in pf.infer(proto, srv, gc, "py_bls_self", [("N", "INT32", [1], [0])])["ERR"]] == [b""]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_bls_large_tensor(srv, gc, proto):
    # 8 MiB each way through the BLS call (inline in the socket messages).
    x = np.arange(1 << 21, dtype=np.float32)
    out = pf.infer(proto, srv, gc, "py_bls", [("INPUT0", "FP32", [len(x)], x)])
    assert np.array_equal(np.asarray(out["OUTPUT0"]).reshape(-1), x * 2)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_bls_exec_concurrent(srv, gc, proto):
    def one(i):
        x = np.arange(i + 1, dtype=np.float32)
        out = pf.infer(proto, srv, gc, "py_bls", [("INPUT0", "FP32", [i + 1], x)])
        assert np.asarray(out["OUTPUT0"]).tolist() == (x * 2).tolist(), i
        return True

    with cf.ThreadPoolExecutor(6) as ex:
        assert all(f.result(timeout=pf.HANG_S) for f in [ex.submit(one, i) for i in range(12)])


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_bls_decoupled(srv, gc, proto):
    out = pf.infer(proto, srv, gc, "py_bls_decoupled", [("N", "INT32", [1], [4])])
    assert np.asarray(out["OUT"]).tolist() == [0, 10, 20, 30]
    assert np.asarray(out["IDX"]).tolist() == [0, 1, 2, 3]
    assert list(out["ERRORS"]) == []


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_bls_decoupled_zero_and_error(srv, gc, proto):
    out = pf.infer(proto, srv, gc, "py_bls_decoupled", [("N", "INT32", [1], [0])])
    assert np.asarray(out["OUT"]).tolist() == [] and list(out["ERRORS"]) == []
    out = pf.infer(proto, srv, gc, "py_bls_decoupled", [("N", "INT32", [1], [-2])])
    assert np.asarray(out["OUT"]).tolist() == [0, 10]
    errs = [bytes(e).decode() for e in out["ERRORS"]]
    assert len(errs) == 1 and "py_repeat: negative value -1 at 2" in errs[0], errs


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_bls_async_exec(srv, gc, proto):
    out = pf.infer(proto, srv, gc, "py_bls_async", [("INPUT0", "FP32", [2], [1.5, -1.0])])
    assert np.asarray(out["OUTPUT0"]).tolist() == [6.0, -4.0]
    assert np.asarray(out["NREP"]).tolist() == [3]


def test_all_ready_after(srv):
    for m in MODELS:
        assert srv.get(f"/v2/models/{m}/ready").status_code == 200, m
