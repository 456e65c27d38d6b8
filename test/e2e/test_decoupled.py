"""Decoupled models over gRPC ModelStreamInfer (and their refusal elsewhere),
as features.md section 4 records Triton 2.47.

The models live in test/models/decoupled_repo and run on two test backends:
`repeat` (test/models/backends/repeat: one response per IN element, OUT and
IDX, sent from a thread of its own after execute returned, DELAY ms before
each, then a flags-only FINAL) and `square` (N responses OUT=N sent from
execute, none for 0, then a flags-only FINAL; a negative N is an error
response). Each backend's .so is copied into its model's folder.
"""

import concurrent.futures as cf
import shutil
import threading

import grpc
import numpy as np
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as gh
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

REPO_SRC = h.REPO_ROOT / "test" / "models" / "decoupled_repo"
MODELS = ("repeat_int32", "square_int32", "identity_int32")
# Only there so that nothing hangs; never a claim about speed.
HANG_S = 60

DECOUPLED_HTTP = "HTTP end point doesn't support models with decoupled transaction policy"
DECOUPLED_UNARY = "ModelInfer RPC doesn't support models with decoupled transaction policy"


def backend_so(name):
    return h.build_dir() / "test" / "backends" / name / f"libtriton_{name}.so"


def copy_repo(dst):
    dst.mkdir(parents=True, exist_ok=True)
    for m in MODELS:
        shutil.copytree(REPO_SRC / m, dst / m)
    for m, b in (("repeat_int32", "repeat"), ("square_int32", "square")):
        so = backend_so(b)
        if not so.is_file():
            raise AssertionError(f"test backend not built at {so}; run `make` first")
        shutil.copy2(so, dst / m / so.name)
    return dst


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("decoupled")
    repo = copy_repo(tmp / "repo")
    s = h.start_server(tmp / "srv", [repo], extra=["--exit-timeout-secs=10"], wait_models=MODELS)
    try:
        yield s
    finally:
        s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = gh.connect(srv, grpc_stubs)
    yield c
    c.close()


# ----------------------------------------------------------- requests ---

def repeat_req(pb, rid, values, delay=None, wait=0, params=None):
    values = list(values)
    delay = [0] * len(values) if delay is None else list(delay)
    req = gh.infer_request(pb, "repeat_int32", [
        ("IN", "INT32", [len(values)], np.array(values, dtype=np.int32)),
        ("DELAY", "UINT32", [len(delay)], np.array(delay, dtype=np.uint32)),
        ("WAIT", "UINT32", [1], np.array([wait], dtype=np.uint32)),
    ], request_id=rid)
    set_params(req, params)
    return req


def square_req(pb, rid, n, params=None):
    req = gh.infer_request(pb, "square_int32", [("IN", "INT32", [1], np.array([n], dtype=np.int32))],
                           request_id=rid)
    set_params(req, params)
    return req


def identity_req(pb, rid, params=None):
    req = gh.infer_request(pb, "identity_int32",
                           [("INPUT0", "INT32", [1, 2], np.array([[5, 6]], dtype=np.int32))], request_id=rid)
    set_params(req, params)
    return req


def set_params(req, params):
    for k, v in (params or {}).items():
        p = req.parameters[k]
        if isinstance(v, bool):
            p.bool_param = v
        elif isinstance(v, int):
            p.int64_param = v
        else:
            p.string_param = v


def stream(gc, reqs, timeout=HANG_S):
    """Sends reqs on one stream, half-closes, returns (messages, code, details)."""
    call = gc.model_stream_infer(iter(list(reqs)), timeout=timeout)
    out = list(call)
    return out, call.code(), call.details()


def final_flag(ir):
    assert "triton_final_response" in ir.parameters, ir
    p = ir.parameters["triton_final_response"]
    assert p.WhichOneof("parameter_choice") == "bool_param", p
    return p.bool_param


def data_msg(m, rid, model="repeat_int32"):
    """Checks a data message of request rid; returns its outputs."""
    assert m.error_message == "", m.error_message
    ir = m.infer_response
    assert ir.id == rid and ir.model_name == model and ir.model_version == "1", ir
    assert final_flag(ir) is (model == "identity_int32"), ir
    return gh.outputs_of(ir)


def empty_final(m, rid, model):
    assert m.error_message == ""
    ir = m.infer_response
    assert ir.id == rid and ir.model_name == model, ir
    assert ir.model_version == "", "the empty final message has no model_version"
    assert len(ir.outputs) == 0 and len(ir.raw_output_contents) == 0, ir
    assert final_flag(ir) is True


def check_repeat(msgs, rid, values):
    assert len(msgs) == len(values), [str(m)[:200] for m in msgs[:5]]
    for i, (m, v) in enumerate(zip(msgs, values)):
        o = data_msg(m, rid)
        assert o["OUT"].tolist() == [v] and o["IDX"].tolist() == [i], (i, o)


# ------------------------------------------------------- features.md 4 ---

def test_config_is_decoupled(srv):
    c = requests.get(srv.url("/v2/models/repeat_int32/config"), timeout=10).json()
    assert c["model_transaction_policy"] == {"decoupled": True}
    assert c["max_batch_size"] == 0


@pytest.mark.parametrize("model", ["repeat_int32", "square_int32"])
def test_http_infer_refused(srv, model):
    body = {"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [1]}]}
    r = requests.post(srv.url(f"/v2/models/{model}/infer"), json=body, timeout=10)
    assert r.status_code == 501, (r.status_code, r.text)
    assert r.headers["Content-Type"].startswith("text/plain"), r.headers
    assert r.json() == {"error": DECOUPLED_HTTP}


def test_http_infer_triton_parameter_refused(srv):
    body = {"parameters": {"triton_enable_empty_final_response": True},
            "inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 2], "data": [5, 6]}]}
    r = requests.post(srv.url("/v2/models/identity_int32/infer"), json=body, timeout=10)
    assert r.status_code == 400, (r.status_code, r.text)
    assert r.json() == {"error": "parameter keys starting with 'triton_' are reserved for Triton usage "
                                 "and should not be specified."}


@pytest.mark.parametrize("model", ["repeat_int32", "square_int32"])
def test_grpc_unary_refused(gc, model):
    req = (repeat_req(gc.pb, "u", [1]) if model == "repeat_int32" else square_req(gc.pb, "u", 1))
    e = gh.rpc_error(gc.model_infer, req)
    assert e.code() == grpc.StatusCode.UNIMPLEMENTED
    assert e.details() == DECOUPLED_UNARY


def test_stream_repeat(gc):
    msgs, code, _ = stream(gc, [repeat_req(gc.pb, "rep-1", [1, 2, 3])])
    assert code == grpc.StatusCode.OK
    check_repeat(msgs, "rep-1", [1, 2, 3])


def test_stream_repeat_empty_final(gc):
    msgs, code, _ = stream(gc, [repeat_req(gc.pb, "rep-2", [1, 2, 3],
                                           params={"triton_enable_empty_final_response": True})])
    assert code == grpc.StatusCode.OK
    assert len(msgs) == 4
    check_repeat(msgs[:3], "rep-2", [1, 2, 3])
    empty_final(msgs[3], "rep-2", "repeat_int32")


def test_stream_repeat_empty_final_false(gc):
    msgs, code, _ = stream(gc, [repeat_req(gc.pb, "rep-3", [1, 2, 3],
                                           params={"triton_enable_empty_final_response": False})])
    assert code == grpc.StatusCode.OK
    check_repeat(msgs, "rep-3", [1, 2, 3])


def test_stream_square(gc):
    msgs, code, _ = stream(gc, [square_req(gc.pb, "sq-1", 3)])
    assert code == grpc.StatusCode.OK
    assert len(msgs) == 3
    for m in msgs:
        assert data_msg(m, "sq-1", "square_int32")["OUT"].tolist() == [3]


def test_stream_square_zero(gc):
    msgs, code, _ = stream(gc, [square_req(gc.pb, "sq-0", 0)])
    assert code == grpc.StatusCode.OK
    assert msgs == []


def test_stream_square_zero_empty_final(gc):
    msgs, code, _ = stream(gc, [square_req(gc.pb, "sq-0f", 0, {"triton_enable_empty_final_response": True})])
    assert code == grpc.StatusCode.OK
    assert len(msgs) == 1
    empty_final(msgs[0], "sq-0f", "square_int32")


@pytest.mark.parametrize("params", [None, {"triton_enable_empty_final_response": True}])
def test_stream_non_decoupled(gc, params):
    msgs, code, _ = stream(gc, [identity_req(gc.pb, "id-1", params)])
    assert code == grpc.StatusCode.OK
    assert len(msgs) == 1
    o = data_msg(msgs[0], "id-1", "identity_int32")
    assert o["OUTPUT0"].tolist() == [[5, 6]]


def error_only(m, rid, text):
    assert m.error_message == text
    ir = m.infer_response
    assert ir.id == rid and ir.model_name == "" and ir.model_version == "", ir
    assert len(ir.outputs) == 0 and len(ir.parameters) == 0, ir


def test_stream_bad_parameter_type(gc):
    msgs, code, _ = stream(gc, [square_req(gc.pb, "sq-bad", 1, {"triton_enable_empty_final_response": 1})])
    assert code == grpc.StatusCode.OK
    assert len(msgs) == 1
    error_only(msgs[0], "sq-bad", "invalid value type for 'triton_enable_empty_final_response' parameter, "
                                  "expected bool_param.")


def test_stream_unknown_triton_parameter(gc):
    msgs, code, _ = stream(gc, [square_req(gc.pb, "sq-bad2", 1, {"triton_nope": True})])
    assert code == grpc.StatusCode.OK
    assert len(msgs) == 1
    error_only(msgs[0], "sq-bad2", "parameter keys starting with 'triton_' are reserved for Triton usage. "
                                   "Only the following keys starting with 'triton_' are allowed: "
                                   "triton_enable_empty_final_response")


def test_stream_unknown_model(gc):
    req = square_req(gc.pb, "", 1)
    req.model_name = "nope"
    msgs, code, _ = stream(gc, [req])
    assert code == grpc.StatusCode.OK
    assert len(msgs) == 1
    assert msgs[0].error_message == "Request for unknown model: 'nope' is not found"


def test_stream_missing_inputs(gc):
    req = gh.infer_request(gc.pb, "repeat_int32", [("IN", "INT32", [3], np.array([1, 2, 3], dtype=np.int32))],
                           request_id="rep-bad")
    msgs, code, _ = stream(gc, [req])
    assert code == grpc.StatusCode.OK
    assert len(msgs) == 1
    error_only(msgs[0], "rep-bad",
               "[request id: rep-bad] expected 3 inputs but got 1 inputs for model 'repeat_int32'. "
               "Got input(s) ['IN'], but missing required input(s) ['DELAY','WAIT']. "
               "Please provide all required input(s).")


def test_stream_two_requests(gc):
    msgs, code, _ = stream(gc, [square_req(gc.pb, "sq-a", 2), square_req(gc.pb, "sq-b", 1)])
    assert code == grpc.StatusCode.OK
    by = {}
    for m in msgs:
        by.setdefault(m.infer_response.id, []).append(data_msg(m, m.infer_response.id, "square_int32")["OUT"])
    assert {k: [int(x[0]) for x in v] for k, v in by.items()} == {"sq-a": [2, 2], "sq-b": [1]}


# ------------------------------------------------------------- beyond ---

@pytest.mark.parametrize("n", [0, 1, 1000])
def test_repeat_counts(gc, n):
    vals = list(range(7, 7 + n))
    msgs, code, _ = stream(gc, [repeat_req(gc.pb, f"n{n}", vals,
                                           params={"triton_enable_empty_final_response": True})])
    assert code == grpc.StatusCode.OK
    check_repeat(msgs[:-1], f"n{n}", vals)
    empty_final(msgs[-1], f"n{n}", "repeat_int32")


def test_responses_after_execute_returned(gc):
    """DELAY and WAIT make the thread send long after execute returned (and
    release the request before its FINAL); each response still arrives as
    it is sent, in order, then the empty final."""
    msgs, code, _ = stream(gc, [repeat_req(gc.pb, "late", [4, 5, 6], delay=[50, 50, 50], wait=100,
                                           params={"triton_enable_empty_final_response": True})])
    assert code == grpc.StatusCode.OK
    check_repeat(msgs[:3], "late", [4, 5, 6])
    empty_final(msgs[3], "late", "repeat_int32")


def test_errors_mid_stream(gc):
    """A failing request between good ones: its error is one message, the
    others complete and the stream ends OK."""
    reqs = [square_req(gc.pb, "g1", 2), square_req(gc.pb, "bad", -1), repeat_req(gc.pb, "g2", [8, 9]),
            square_req(gc.pb, "bad2", 1, {"triton_x": True}), square_req(gc.pb, "g3", 1)]
    msgs, code, _ = stream(gc, reqs)
    assert code == grpc.StatusCode.OK
    by = {}
    for m in msgs:
        by.setdefault(m.infer_response.id, []).append(m)
    assert [m.error_message for m in by["bad"]] == ["square: IN must not be negative"]
    assert len(by["bad2"]) == 1 and by["bad2"][0].error_message.startswith("parameter keys starting with")
    assert len(by["g1"]) == 2 and len(by["g3"]) == 1
    check_repeat(by["g2"], "g2", [8, 9])


def test_many_concurrent_streams(srv, grpc_stubs):  # noqa: F811
    """16 clients, each a stream of 4 requests with 50 responses each."""
    def one(k):
        with gh.Client(grpc_stubs, gh.grpc_target(srv)) as c:
            reqs = [repeat_req(c.pb, f"c{k}-{j}", [k * 1000 + j * 100 + i for i in range(50)])
                    for j in range(4)]
            msgs, code, details = stream(c, reqs)
            assert code == grpc.StatusCode.OK, details
            by = {}
            for m in msgs:
                by.setdefault(m.infer_response.id, []).append(m)
            for j in range(4):
                check_repeat(by[f"c{k}-{j}"], f"c{k}-{j}", [k * 1000 + j * 100 + i for i in range(50)])
            return len(msgs)

    with cf.ThreadPoolExecutor(16) as ex:
        assert list(ex.map(one, range(16))) == [200] * 16


def test_repeat_statistics(srv, gc):
    """Each request counts once (not once per response): inference and
    execution counts grow by the number of requests."""
    def counts():
        s = gc.model_statistics("repeat_int32").model_stats[0]
        return s.inference_count, s.execution_count, s.inference_stats.success.count
    before = counts()
    msgs, code, _ = stream(gc, [repeat_req(gc.pb, f"s{i}", [1, 2]) for i in range(4)])
    assert code == grpc.StatusCode.OK and len(msgs) == 8
    after = counts()
    assert [a - b for a, b in zip(after, before)] == [4, 4, 4]


# ------------------------------------------------------ flow control ---

STREAM_CAP = 16384


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    """A server whose calls may queue only STREAM_CAP response bytes."""
    h.require_binary()
    tmp = tmp_path_factory.mktemp("decoupled-capped")
    repo = copy_repo(tmp / "repo")
    s = h.start_server(tmp / "srv", [repo], wait_models=MODELS,
                       extra=["--exit-timeout-secs=10", f"--grpc-stream-buffer-bytes={STREAM_CAP}"])
    try:
        yield s
    finally:
        s.stop(check=True)


def test_slow_reader_is_cut_off(capped, grpc_stubs):  # noqa: F811
    """A reader that opens a 256-byte window and reads nothing for a while:
    the server queues at most STREAM_CAP bytes, then ends the call with
    RESOURCE_EXHAUSTED after what it had queued; the server serves on."""
    n = 5000
    req = repeat_req(grpc_stubs.pb, "slow", list(range(n))).SerializeToString()
    with gh.H2Conn(capped.grpc_port, timeout=HANG_S) as c:
        c.start(settings=[(4, 256)])  # SETTINGS_INITIAL_WINDOW_SIZE
        c.send_headers(1, f"/{gh.SERVICE}/ModelStreamInfer")
        body = gh.grpc_message(req)
        for off in range(0, len(body), 16384):  # the default SETTINGS_MAX_FRAME_SIZE
            c.send_data(1, body[off:off + 16384], end_stream=off + 16384 >= len(body))
        # Not reading lets the backend's 5000 sends (~650 KB) pile up; then
        # the reader catches up (collect() opens the window as it reads).
        threading.Event().wait(1.0)
        res = c.collect(1, timeout=HANG_S)
    assert res.header("grpc-status") == "8", res
    assert "reads too slowly" in (res.header("grpc-message") or ""), res
    msgs = res.grpc_messages()
    assert 0 < len(msgs) < n
    assert sum(5 + len(m) for m in msgs) <= STREAM_CAP + 256
    # In order, nothing skipped, up to the cut.
    for i, raw in enumerate(msgs):
        m = grpc_stubs.pb.ModelStreamInferResponse.FromString(raw)
        assert gh.outputs_of(m.infer_response)["IDX"].tolist() == [i]
    # The server serves on, and a reader that keeps up gets everything.
    with gh.Client(grpc_stubs, gh.grpc_target(capped)) as gc2:
        msgs, code, _ = stream(gc2, [repeat_req(gc2.pb, "ok", list(range(100)))])
        assert code == grpc.StatusCode.OK
        check_repeat(msgs, "ok", list(range(100)))


def test_server_stop_with_streams_open(tmp_path, grpc_stubs):  # noqa: F811
    """SIGTERM while ModelStreamInfer streams wait on a slow decoupled model:
    the calls end early (no hang) and the server exits 0
    (bounded waits only, nothing timed)."""
    import signal
    import time
    repo = copy_repo(tmp_path / "repo")
    srv = h.start_server(tmp_path / "srv", [repo], extra=["--exit-timeout-secs=2"], wait_models=MODELS)
    c = gh.connect(srv, grpc_stubs)
    pb = grpc_stubs.pb
    ended = []

    def run(i):
        # 50 responses, 200 ms apart: 10 s, far past the exit timeout.
        req = repeat_req(pb, f"stop-{i}", list(range(50)), delay=[200] * 50)
        call = c.model_stream_infer(iter([req]), timeout=HANG_S)
        got = 0
        try:
            for _ in call:
                got += 1
        except grpc.RpcError:
            pass
        ended.append(got)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.6)  # the streams are running (first responses come at 200 ms)
    srv.proc.send_signal(signal.SIGTERM)
    rc = srv.proc.wait(timeout=20)
    for t in threads:
        t.join(timeout=20)
    c.close()
    assert rc == 0, srv.log_tail()
    assert len(ended) == 4
    assert all(n < 50 for n in ended), ended  # cut short, not run to the end
