"""The Python backend, second slice (issue 15): Logger, custom metrics,
auto_complete_config, request cancellation and the stub's restart, end to
end over HTTP and gRPC.

Models (test/models/python_repo): py_logmetrics (Logger at every level,
MetricFamily COUNTER, GAUGE and HISTOGRAM), py_autocomplete (config.pbtxt
without inputs, outputs or batching), py_cancel (polls is_cancelled()),
py_restart (initialize takes a second; answers its pid), py_restart_fail
(a second initialize raises), py_repeat (decoupled, for a stub killed with
a stream open), py_keep (keeps each input array past execute).

What is asserted, as Triton does it:
  * Logger lines reach the server log at their level with the model file's
    name and line (model.py:N), verbose ones only with --log-verbose;
  * the metrics appear on the metrics port under their names, labels,
    kinds and values, and Metric.value() reads them back;
  * GET v2/models/m/config shows what auto_complete_config added, and the
    model serves with it (batched); a decoupled policy set there holds;
    Triton's ModelConfig refuses dims that contradict config.pbtxt;
  * an input array kept past execute stays intact (its shared-memory
    block lives while Python holds a view), and blocks are reused once
    freed: the stub's DOWN segment does not grow with every request;
  * DLPack with numpy: Tensor.from_dlpack of an array and of a capsule,
    and np.from_dlpack(tensor) (Triton's Tensor implements __dlpack__);
  * a cancelled request (gRPC cancel, gRPC deadline, HTTP client gone) is
    seen by is_cancelled() while execute runs;
  * a stub killed with SIGKILL: a request sent once its death is known
    waits for the restarted stub and is served by it; the model is not
    ready right after the kill and ready again once the stub is back; a stream open on a killed decoupled stub ends
    its request with "exited unexpectedly"; a restart whose initialize
    fails makes requests fail clearly instead of hanging.
Every wait is bounded (HANG_S, python_fixtures.py); no assertion is about time.
"""

import os
import shutil
import signal
import threading
import time

import grpc
import numpy as np
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as gh
import python_fixtures as pf
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)
from test_metrics import parse_metrics

MODELS = ("py_logmetrics", "py_autocomplete", "py_autocomplete_decoupled", "py_cancel", "py_restart",
          "py_restart_fail", "py_repeat", "py_keep", "py_dlpack")
# Copied too; expected not to load.
BROKEN = ("py_autocomplete_conflict",)
PROTOCOLS = ("http", "grpc")
STUB_NAME = b"triton_python_backend_stub"


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = pf.start_python_server(tmp_path_factory.mktemp("pyfeatures"), MODELS + BROKEN, MODELS, extra=["--log-verbose=1"])
    try:
        yield s
    finally:
        s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = gh.connect(srv, grpc_stubs)
    yield c
    c.close()


def log_text(srv):
    return srv.log_path.read_text(errors="replace")


def wait_log(srv, text, timeout=pf.HANG_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log_text(srv):
            return
        assert srv.alive(), srv.log_tail()
        time.sleep(0.05)
    raise AssertionError(f"no {text!r} in the server log\n--- log tail ---\n{srv.log_tail()}")


def line_of(model, text):
    """The 1-based line of model.py that holds text (a Logger call)."""
    src = (pf.PY_REPO / model / "1" / "model.py").read_text().splitlines()
    hits = [i + 1 for i, line in enumerate(src) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def log_lines(srv, text):
    return [ln for ln in log_text(srv).splitlines() if text in ln]


# ------------------------------------------------------------- Logger ---

def test_logger_levels_file_and_line(srv, gc):
    pf.infer("http", srv, gc, "py_logmetrics", [("IN", "FP32", [3], [1, 2, 3])])
    for letter, text in (("I", "py_logmetrics: execute info"), ("W", "py_logmetrics: execute warn"),
                         ("E", "py_logmetrics: execute error"), ("I", "py_logmetrics: execute log default"),
                         ("W", "py_logmetrics: execute log warning"), (None, "py_logmetrics: execute verbose"),
                         ("I", "py_logmetrics: initialize info")):
        wait_log(srv, text)
        where = f"model.py:{line_of('py_logmetrics', text)}] "
        lines = [ln for ln in log_lines(srv, text) if where in ln]
        assert lines, (text, where, log_lines(srv, text))
        if letter:
            assert lines[-1].startswith(letter), (letter, lines[-1])


def test_logger_verbose_off(tmp_path):
    """Without --log-verbose, log_verbose lines are not written; the others are."""
    repo = tmp_path / "repo"
    shutil.copytree(pf.PY_REPO / "py_logmetrics", repo / "py_logmetrics")
    s = h.start_server(tmp_path / "srv", [repo], wait_models=("py_logmetrics",), timeout=120)
    try:
        pf.infer("http", s, None, "py_logmetrics", [("IN", "FP32", [1], [1])])
        wait_log(s, "py_logmetrics: execute log warning")
        assert "py_logmetrics: execute verbose" not in log_text(s), s.log_tail()
    finally:
        s.stop(check=True)


# ------------------------------------------------------------ metrics ---

def metrics(srv):
    r = requests.get(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=pf.HANG_S)
    assert r.status_code == 200
    return parse_metrics(r.text)


def sample(fams, name, **labels):
    want = {"model": "py_logmetrics", "version": "1", **labels}
    got = [v for lb, v in fams.get(name, {}).get("samples", []) if lb == want]
    assert len(got) == 1, (name, want, fams.get(name))
    return got[0]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_metric_family_counter_gauge_histogram(srv, gc, proto):
    before = metrics(srv)
    n0 = sample(before, "py_logmetrics_requests_total") if "py_logmetrics_requests_total" in before else 0.0
    h0 = {le: sample(before, "py_logmetrics_size_bucket", le=le) for le in ("1", "4", "16", "+Inf")} \
        if "py_logmetrics_size_bucket" in before else {le: 0.0 for le in ("1", "4", "16", "+Inf")}
    sizes = [1, 3, 10, 30]
    for i, n in enumerate(sizes):
        out = pf.infer(proto, srv, gc, "py_logmetrics", [("IN", "FP32", [n], [0.5] * n)])
        # Metric.value() reads back what the server holds.
        assert np.asarray(out["COUNT"]).tolist() == [n0 + i + 1], out
        assert np.asarray(out["GAUGE"]).tolist() == [float(n)], out
    fams = metrics(srv)
    assert fams["py_logmetrics_requests_total"]["type"] == "counter"
    assert fams["py_logmetrics_requests_total"]["help"] == "Requests executed by py_logmetrics"
    assert fams["py_logmetrics_last_size"]["type"] == "gauge"
    assert fams["py_logmetrics_size"]["type"] == "histogram"
    assert sample(fams, "py_logmetrics_requests_total") == n0 + len(sizes)
    assert sample(fams, "py_logmetrics_last_size") == float(sizes[-1])
    expect = {"1": 1, "4": 2, "16": 3, "+Inf": 4}
    for le, k in expect.items():
        assert sample(fams, "py_logmetrics_size_bucket", le=le) == h0[le] + k, le
    assert sample(fams, "py_logmetrics_size_count") >= len(sizes)


# ---------------------------------------------------- auto-complete ---

def test_autocomplete_config(srv, gc):
    c = srv.get("/v2/models/py_autocomplete/config").json()
    assert c["max_batch_size"] == 8, c
    ins = {i["name"]: i for i in c["input"]}
    outs = {o["name"]: o for o in c["output"]}
    assert set(ins) == {"INPUT0", "INPUT1"} and set(outs) == {"OUTPUT0"}, c
    assert ins["INPUT0"]["data_type"] == "TYPE_FP32" and [int(d) for d in ins["INPUT0"]["dims"]] == [4], c
    assert ins["INPUT1"].get("optional") is True, c
    assert outs["OUTPUT0"]["data_type"] == "TYPE_FP32", c
    assert "dynamic_batching" in c, c
    # The gRPC view agrees.
    gcfg = gc.model_config("py_autocomplete").config
    assert gcfg.max_batch_size == 8 and sorted(i.name for i in gcfg.input) == ["INPUT0", "INPUT1"]
    md = srv.get("/v2/models/py_autocomplete").json()
    assert {i["name"]: i["shape"] for i in md["inputs"]} == {"INPUT0": [-1, 4], "INPUT1": [-1, 4]}, md


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_autocomplete_serves(srv, gc, proto):
    x = [[1, 2, 3, 4], [5, 6, 7, 8]]
    out = pf.infer(proto, srv, gc, "py_autocomplete", [("INPUT0", "FP32", [2, 4], x)])
    assert np.asarray(out["OUTPUT0"]).tolist() == x
    out = pf.infer(proto, srv, gc, "py_autocomplete", [("INPUT0", "FP32", [1, 4], x[0]),
                                                     ("INPUT1", "FP32", [1, 4], x[1])])
    assert np.asarray(out["OUTPUT0"]).tolist() == [[6, 8, 10, 12]]


def test_autocomplete_conflict_refused(srv):
    """add_input with other dims than config.pbtxt's: Triton's ModelConfig
    refuses it and the model does not load, with the message as its reason."""
    idx = {m["name"]: m for m in srv.post("/v2/repository/index", json={}).json()}
    e = idx["py_autocomplete_conflict"]
    assert e["state"] == "UNAVAILABLE", e
    text = ("model 'py_autocomplete_conflict', tensor 'INPUT0': the model expects dims [8] but the model "
            "configuration specifies dims [4]")
    assert text in e.get("reason", ""), e


def test_autocomplete_decoupled(srv, gc):
    """set_model_transaction_policy({"decoupled": True}) in
    auto_complete_config makes the model decoupled for the server too."""
    c = srv.get("/v2/models/py_autocomplete_decoupled/config").json()
    assert c["model_transaction_policy"] == {"decoupled": True}, c
    body = {"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [3]}]}
    r = srv.post("/v2/models/py_autocomplete_decoupled/infer", json=body)
    assert r.status_code == 501, (r.status_code, r.text)
    req = gh.infer_request(gc.pb, "py_autocomplete_decoupled", [("IN", "INT32", [1], np.array([3], dtype=np.int32))],
                           request_id="acd")
    call = gc.model_stream_infer(iter([req]), timeout=pf.HANG_S)
    msgs = list(call)
    assert call.code() == grpc.StatusCode.OK
    assert [gh.outputs_of(m.infer_response)["OUT"].tolist() for m in msgs] == [[3], [3]], msgs


# ---------------------------------------------------------- cancel ---

def cancel_req(gc, ms, rid):
    return gh.infer_request(gc.pb, "py_cancel", [("MS", "INT32", [1], np.array([ms], dtype=np.int32))],
                            request_id=rid)


def check_cancel_serving(srv, gc):
    out = pf.infer("grpc", srv, gc, "py_cancel", [("MS", "INT32", [1], [0])], request_id="after")
    assert np.asarray(out["OUT"]).tolist() == [0]


def test_not_cancelled(srv, gc):
    out = pf.infer("http", srv, gc, "py_cancel", [("MS", "INT32", [1], [30])], request_id="plain")
    assert np.asarray(out["OUT"]).tolist() == [30]
    wait_log(srv, "py_cancel: request 'plain' not cancelled")


def test_grpc_client_cancel(srv, gc):
    fut = gc.model_infer_future(cancel_req(gc, 60000, "g-cancel"), timeout=120)
    wait_log(srv, "py_cancel: request 'g-cancel' waiting")
    fut.cancel()
    wait_log(srv, "py_cancel: request 'g-cancel' cancelled after")
    check_cancel_serving(srv, gc)


def test_grpc_deadline_cancels(srv, gc):
    with pytest.raises(grpc.RpcError) as ei:
        gc.model_infer(cancel_req(gc, 60000, "g-deadline"), timeout=1.0)
    assert ei.value.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED), ei.value
    wait_log(srv, "py_cancel: request 'g-deadline' cancelled after")
    check_cancel_serving(srv, gc)


def test_http_close_cancels(srv, gc):
    import json
    body = json.dumps({"id": "h-close", "inputs": [{"name": "MS", "datatype": "INT32", "shape": [1],
                                                    "data": [60000]}]}).encode()
    with h.RawConn(srv.port) as c:
        c.send(h.http_request("POST", "/v2/models/py_cancel/infer", body,
                              headers={"Content-Type": "application/json"}))
        wait_log(srv, "py_cancel: request 'h-close' waiting")
    wait_log(srv, "py_cancel: request 'h-close' cancelled after")
    check_cancel_serving(srv, gc)


# ------------------------------------------ shared-memory lifetimes ---

@pytest.mark.parametrize("proto", PROTOCOLS)
def test_kept_input_stays_intact(srv, gc, proto):
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal(n).astype(np.float32) for n in (5, 1 << 20, 3, 1 << 18, 0, 77, 1 << 20)]
    prev = None
    for x in xs:
        out = pf.infer(proto, srv, gc, "py_keep", [("IN", "FP32", [len(x)], x)])
        if prev is not None:  # (the first answers what an earlier test sent)
            assert np.array_equal(np.asarray(out["OUT"]).reshape(-1), prev), (len(prev), len(x))
        prev = x


def test_down_segment_reuses_freed_blocks(srv, gc):
    """64 requests of 4 MiB, one at a time (the model keeps one block alive
    besides the current one): the DOWN segment (the stub's descriptor 4, a
    memfd) stays far below 64 x 4 MiB."""
    x = np.arange(1 << 20, dtype=np.float32)
    pid = None
    for i in range(64):
        out = pf.infer("http", srv, gc, "py_keep", [("IN", "FP32", [len(x)], x + i)])
        if i:
            assert np.asarray(out["OUT"]).reshape(-1)[0] == i - 1
        pid = int(np.asarray(out["PID"]).reshape(-1)[0])
    link = os.readlink(f"/proc/{pid}/fd/4")
    assert "memfd" in link, link
    size = os.stat(f"/proc/{pid}/fd/4").st_size
    assert size <= 16 * (4 << 20), f"DOWN segment is {size} bytes after 64 requests of 4 MiB"


# ------------------------------------------------------------ DLPack ---

@pytest.mark.parametrize("proto", PROTOCOLS)
def test_dlpack_with_numpy(srv, gc, proto):
    x = [1.5, -2.0, 0.25]
    out = pf.infer(proto, srv, gc, "py_dlpack", [("IN", "FP32", [3], x)])
    assert np.asarray(out["TIMES3"]).tolist() == [4.5, -6.0, 0.75]
    assert np.asarray(out["ROUND"]).tolist() == x
    assert [bytes(m).decode() for m in out["MSG"]] == [""], out["MSG"]
    assert np.asarray(out["VIA_PROTOCOL"]).tolist() == x


# --------------------------------------------------------- restarts ---

def children(pid):
    kids = set()
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                kids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return kids


def stub_of(srv, model):
    """Pids of the server's stub children whose argv names the model."""
    out = []
    for p in children(srv.proc.pid):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if any(STUB_NAME in a for a in argv) and model.encode() in argv:
            out.append(p)
    return out


def ready(srv, model):
    return srv.get(f"/v2/models/{model}/ready").status_code == 200


def pid_of(out):
    return int(np.asarray(out["PID"]).reshape(-1)[0])


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_request_waits_for_restart(srv, gc, proto):
    """A request that arrives once the stub is known dead (its EOF seen)
    waits for the restarted stub and is served by it."""
    pid = pid_of(pf.infer(proto, srv, gc, "py_restart", [("IN", "INT32", [1], [0])]))
    died = "stub process for model 'py_restart' instance 'py_restart_0_0' exited unexpectedly"
    seen = log_text(srv).count(died)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + pf.HANG_S
    while log_text(srv).count(died) == seen:
        assert time.monotonic() < deadline, srv.log_tail()
        time.sleep(0.02)
    new = pid_of(pf.infer(proto, srv, gc, "py_restart", [("IN", "INT32", [1], [0])]))
    assert new != pid and new in stub_of(srv, "py_restart")
    # Other models never noticed.
    assert ready(srv, "py_logmetrics") and ready(srv, "py_cancel")


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_ready_during_restart(srv, gc, proto):
    """v2/models/m/ready is false right after the kill (the restarted
    stub's initialize takes a second), true again once it is back."""
    pid = pid_of(pf.infer(proto, srv, gc, "py_restart", [("IN", "INT32", [1], [0])]))
    assert ready(srv, "py_restart")
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while ready(srv, "py_restart"):
        assert time.monotonic() < deadline, "py_restart stayed ready after its stub was killed"
        time.sleep(0.01)
    if proto == "grpc":
        assert gc.model_ready("py_restart").ready is False
    idx = {m["name"]: m for m in srv.post("/v2/repository/index", json={}).json()}
    assert idx["py_restart"]["state"] != "READY" or not ready(srv, "py_restart")
    deadline = time.monotonic() + pf.HANG_S
    while not ready(srv, "py_restart"):
        assert time.monotonic() < deadline, srv.log_tail()
        time.sleep(0.05)
    idx = {m["name"]: m for m in srv.post("/v2/repository/index", json={}).json()}
    assert idx["py_restart"]["state"] == "READY", idx["py_restart"]
    assert pid_of(pf.infer(proto, srv, gc, "py_restart", [("IN", "INT32", [1], [0])])) != pid


def test_killed_decoupled_stub_fails_open_stream(srv, gc):
    pids = stub_of(srv, "py_repeat")
    assert len(pids) == 1, (pids, children(srv.proc.pid))
    req = gh.infer_request(gc.pb, "py_repeat", [
        ("IN", "INT32", [3], np.array([1, 2, 3], dtype=np.int32)),
        ("DELAY", "UINT32", [3], np.array([0, 30000, 0], dtype=np.uint32))], request_id="doomed")
    got = []
    done = threading.Event()

    def reader():
        try:
            call = gc.model_stream_infer(iter([req]), timeout=pf.HANG_S)
            for m in call:
                got.append(m)
        finally:
            done.set()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    deadline = time.monotonic() + pf.HANG_S
    while not got:  # the first response came: the second one is 30 s away
        assert time.monotonic() < deadline and not done.is_set(), got
        time.sleep(0.02)
    os.kill(pids[0], signal.SIGKILL)
    assert done.wait(pf.HANG_S), "the stream did not end after its stub was killed"
    assert got[0].error_message == "" and gh.outputs_of(got[0].infer_response)["OUT"].tolist() == [1]
    errs = [m.error_message for m in got[1:] if m.error_message]
    assert len(errs) == 1, [str(m)[:300] for m in got]
    assert "exited unexpectedly" in errs[0] and "py_repeat" in errs[0], errs
    # The restarted stub serves the next stream.
    deadline = time.monotonic() + pf.HANG_S
    while not ready(srv, "py_repeat"):
        assert time.monotonic() < deadline, srv.log_tail()
        time.sleep(0.05)
    call = gc.model_stream_infer(iter([gh.infer_request(gc.pb, "py_repeat", [
        ("IN", "INT32", [2], np.array([5, 6], dtype=np.int32))], request_id="next")]), timeout=pf.HANG_S)
    msgs = list(call)
    assert [gh.outputs_of(m.infer_response)["OUT"].tolist() for m in msgs] == [[5], [6]], msgs
    assert stub_of(srv, "py_repeat") and pids[0] not in stub_of(srv, "py_repeat")


def test_restart_whose_initialize_fails(srv, gc):
    pid = pid_of(pf.infer("http", srv, gc, "py_restart_fail", [("IN", "INT32", [1], [0])]))
    os.kill(pid, signal.SIGKILL)
    # The restart's initialize raises: requests fail (bounded), never hang.
    with pytest.raises(pf.Failed) as ei:
        for _ in range(3):  # one may still race ahead of the EOF
            pf.infer("http", srv, gc, "py_restart_fail", [("IN", "INT32", [1], [0])])
            time.sleep(0.2)
    assert "py_restart_fail" in ei.value.message, ei.value
    wait_log(srv, "py_restart_fail: refusing a second initialize")
    assert srv.alive() and ready(srv, "py_cancel")
    assert not ready(srv, "py_restart_fail")
