"""Business logic scripting (BLS): models whose execute runs other models
through the in-process API, end to end over HTTP and gRPC (issue 14).

The BLS models run the `bls` test backend (test/models/backends/bls: plain C,
public headers only; it gets the server with TRITONBACKEND_ModelServer, sends
TRITONSERVER_InferenceRequests with TRITONSERVER_ServerInferAsync, outputs in
its own malloc allocator's buffers, and waits on a condition variable of its
own; the model config's "calls" says what it calls). Models:
test/models/bls_repo, plus repeat_int32 from test/models/decoupled_repo. The
fixture gives the server a backend directory of its own: the shipped
backends plus the test backends bls, memprobe, repeat and sleep.

What is asserted:
  * a chain (identity, then a model that adds 1 to identity's output) returns
    both calls' outputs, and each callee counted exactly one inference;
  * a BLS model calls an ensemble, and an ensemble has a BLS step;
  * a call to a decoupled model gathers every response, none lost;
  * the BLS deadlock rule (docs/c_api.md): a one-instance model calling
    itself, and a cycle of one-instance models, are refused at once with
    UNAVAILABLE "deadlock" (never a hang), again on every retry (the
    instance is free after each refusal), and the server keeps serving; a
    two-instance model calling itself is served by its other instance;
  * saturation: more clients than the caller has instances, every instance
    waiting on one slow one-instance callee, all succeed;
  * a cycle through an ensemble is refused as well (the ensemble's step
    carries the chain of callers);
  * many clients at once on the two-instance self-caller: each gets its
    answer or the refusal, none hangs;
  * a callee's error (unknown model, bad shape) is the client's error, with
    the callee's status and message;
  * several clients at once on the chain get their own answers;
  * a client that goes away (HTTP close, gRPC cancel) cancels the BLS
    model's call too, and the instance is free again;
  * only the outputs a client asks for come back;
  * SIGTERM with BLS requests accepted and in flight: the drain completes
    them all, their calls included.
Every wait is bounded (HANG_S), and no assertion is about time.
"""

import concurrent.futures as cf
import json
import os
import shutil
import signal
import time

import grpc
import numpy as np
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as gh
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

BLS_REPO = h.REPO_ROOT / "test" / "models" / "bls_repo"
DECOUPLED_REPO = h.REPO_ROOT / "test" / "models" / "decoupled_repo"
TEST_BACKENDS = ("bls", "memprobe", "repeat", "sleep")
# Only there so that nothing hangs; never a claim about speed.
HANG_S = 60
# How long a request that should be refused at once may take before the
# test calls it hung (a cycle through an ensemble).
CYCLE_WAIT_S = 10

PROTOCOLS = ("http", "grpc")

HTTP_STATUS = {"UNAVAILABLE": 503, "NOT_FOUND": 404, "INVALID_ARGUMENT": 400}


def _models():
    return sorted(p.name for p in BLS_REPO.iterdir() if p.is_dir()) + ["repeat_int32"]


def _repo(dst):
    dst.mkdir(parents=True)
    for p in BLS_REPO.iterdir():
        if p.is_dir():
            shutil.copytree(p, dst / p.name)
    shutil.copytree(DECOUPLED_REPO / "repeat_int32", dst / "repeat_int32")
    return dst


def _backend_dir(dst):
    """The shipped backends (linked) plus the test backends this repo uses."""
    dst.mkdir(parents=True)
    for p in h.backend_dir().iterdir():
        os.symlink(p.resolve(), dst / p.name)
    for b in TEST_BACKENDS:
        so = h.build_dir() / "test" / "backends" / b / f"libtriton_{b}.so"
        assert so.is_file(), f"test backend not built at {so}; run `make` first"
        (dst / b).mkdir()
        shutil.copy2(so, dst / b / so.name)
    return dst


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("bls")
    repo = _repo(tmp / "repo")
    backends = _backend_dir(tmp / "backends")
    # --backend-directory given twice: the later one (ours) is the one used.
    s = h.start_server(tmp / "srv", [repo], extra=[f"--backend-directory={backends}"],
                       wait_models=tuple(_models()))
    try:
        yield s
    finally:
        s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = gh.connect(srv, grpc_stubs)
    yield c
    c.close()


# ------------------------------------------------------------ requests ---

class Failed(Exception):
    """An error answer: `code` is the gRPC status name (for HTTP, the name
    whose status HTTP_STATUS gives), `http_status` the HTTP status."""

    def __init__(self, code, message, http_status=None):
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.http_status = code, message, http_status


def infer(proto, srv, gc, model, inputs, outputs=None, timeout=HANG_S):
    """inputs: [(name, datatype, shape, values)]; outputs: the names asked
    for (None: all). Returns {output: ndarray}, or raises Failed."""
    inputs = [(n, d, s, np.asarray(v, dtype=h.NP_DTYPES[d]).reshape(s)) for n, d, s, v in inputs]
    if proto == "http":
        outs = None if outputs is None else [
            {"name": o, "parameters": {"binary_data": True}} for o in outputs]
        body, hlen = h.build_binary_request(inputs, outs)
        # A connection per call: requests' Session is not for threads.
        r = requests.post(srv.url(f"/v2/models/{model}/infer"), data=body, timeout=timeout, headers={
            "Inference-Header-Content-Length": str(hlen),
            "Content-Type": "application/octet-stream",
        })
        if r.status_code != 200:
            code = {v: k for k, v in HTTP_STATUS.items()}.get(r.status_code, str(r.status_code))
            raise Failed(code, h.error_of(r), r.status_code)
        header, values = h.parse_infer_response(r)
        assert header["model_name"] == model, header
        return {k: np.asarray(v) for k, v in values.items()}
    req = gh.infer_request(gc.pb, model, inputs, outputs=outputs)
    try:
        resp = gc.model_infer(req, timeout=timeout)
    except grpc.RpcError as e:
        raise Failed(e.code().name, e.details())
    assert resp.model_name == model, resp
    return gh.outputs_of(resp)


def expect_error(proto, srv, gc, model, inputs, code, *texts):
    with pytest.raises(Failed) as ei:
        infer(proto, srv, gc, model, inputs)
    f = ei.value
    assert f.code == code, f"{model}: expected {code}, got {f}"
    if proto == "http":
        assert f.http_status == HTTP_STATUS[code], f
    for t in texts:
        assert t in f.message, f"{model}: {t!r} not in {f.message!r}"
    return f.message


def int32_in(values, name="INPUT0"):
    return [(name, "INT32", [len(values)], values)]


def success_count(srv, model):
    r = srv.get(f"/v2/models/{model}/stats")
    assert r.status_code == 200, r.text
    return r.json()["model_stats"][0]["inference_stats"]["success"]["count"]


def assert_count(srv, model, expected):
    """The model's success count reaches `expected` and stays there. A
    callee is counted at its release, before its caller answers; the
    client's own request may be counted just after its answer went out."""
    deadline = time.monotonic() + HANG_S
    while success_count(srv, model) < expected and time.monotonic() < deadline:
        time.sleep(0.01)
    assert success_count(srv, model) == expected, model


def assert_ready(srv):
    r = srv.get("/v2/health/ready")
    assert r.status_code == 200, srv.log_tail()


# ---------------------------------------------------------------- tests ---

@pytest.mark.parametrize("proto", PROTOCOLS)
def test_chain_identity_then_second_model(srv, gc, proto):
    before = {m: success_count(srv, m) for m in ("bls_chain", "bls_identity", "bls_plus1")}
    out = infer(proto, srv, gc, "bls_chain", int32_in([1, 2, -7]))
    assert out["OUTPUT0"].tolist() == [1, 2, -7]  # identity's
    assert out["OUT"].tolist() == [2, 3, -6]  # bls_plus1's, fed identity's output
    assert out["MEM"].tolist() == [0, 0]  # memprobe: CPU in, CPU out
    for m, n in before.items():
        assert_count(srv, m, n + 1)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_chain_only_the_requested_output(srv, gc, proto):
    out = infer(proto, srv, gc, "bls_chain", int32_in([10, 20]), outputs=["OUT"])
    assert list(out) == ["OUT"]
    assert out["OUT"].tolist() == [11, 21]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_bls_calls_an_ensemble(srv, gc, proto):
    """The ensemble's output is built on the loop, not by a backend: it
    reaches the BLS model in its allocator's buffers all the same."""
    out = infer(proto, srv, gc, "bls_to_ens", int32_in([1, 2, 3, 4]))
    assert out["SUM"].tolist() == [2, 3, 4, 5]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_ensemble_with_a_bls_step(srv, gc, proto):
    out = infer(proto, srv, gc, "ens_of_bls", [("IN", "INT32", [2], [40, 50])])
    assert out["R"].tolist() == [41, 51]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_decoupled_callee_every_response_gathered(srv, gc, proto):
    vals = [5, 6, 7, 8, 9, 10, 11]
    out = infer(proto, srv, gc, "bls_decoupled", [
        ("IN", "INT32", [len(vals)], vals),
        ("DELAY", "UINT32", [len(vals)], [0, 3, 0, 3, 0, 0, 1]),
        ("WAIT", "UINT32", [1], [5]),
    ])
    assert out["OUT"].tolist() == vals
    assert out["IDX"].tolist() == list(range(len(vals)))


def test_decoupled_callee_no_response_only_final(srv, gc):
    """The callee sends only the flags-only FINAL: the BLS call ends, with no
    output to return."""
    out = infer("http", srv, gc, "bls_decoupled", [
        ("IN", "INT32", [0], []), ("DELAY", "UINT32", [0], []), ("WAIT", "UINT32", [1], [0]),
    ])
    assert out == {}


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_self_call_one_instance_refused_not_hung(srv, gc, proto):
    # Refused every time: the instance is free again after each refusal.
    for _ in range(3):
        expect_error(proto, srv, gc, "bls_self_1", int32_in([4, 2]), "UNAVAILABLE",
                     "deadlock", "bls_self_1")
    assert_ready(srv)
    # The other models are still served.
    assert infer(proto, srv, gc, "bls_identity", int32_in([3]))["OUTPUT0"].tolist() == [3]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_self_call_two_instances_served_by_the_other(srv, gc, proto):
    before = success_count(srv, "bls_self_2")
    out = infer(proto, srv, gc, "bls_self_2", int32_in([4, 2]))
    assert out["OUTPUT0"].tolist() == [4, 2]
    # The client's request and the model's call to itself.
    assert_count(srv, "bls_self_2", before + 2)


def test_self_call_two_instances_many_clients(srv, gc):
    """6 clients at once on bls_self_2, 3 rounds: when both instances wait on
    calls to themselves, a call is refused rather than left waiting. Each
    client gets the right answer or the deadlock refusal; none hangs, and a
    lone request afterwards is served."""
    def one(i):
        proto = PROTOCOLS[i % 2]
        try:
            out = infer(proto, srv, gc, "bls_self_2", int32_in([i, 7]))
        except Failed as f:
            assert f.code == "UNAVAILABLE" and "deadlock" in f.message, f
            return "refused"
        assert out["OUTPUT0"].tolist() == [i, 7]
        return "ok"

    with cf.ThreadPoolExecutor(6) as ex:
        for _ in range(3):
            done = [f.result(timeout=HANG_S) for f in [ex.submit(one, i) for i in range(6)]]
            assert len(done) == 6
    assert infer("http", srv, gc, "bls_self_2", int32_in([9]))["OUTPUT0"].tolist() == [9]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_cycle_refused(srv, gc, proto):
    """a -> b -> a, one instance each: the call back to a is refused, and the
    refusal travels back through b and a to the client."""
    expect_error(proto, srv, gc, "bls_cycle_a", int32_in([1]), "UNAVAILABLE", "deadlock",
                 "bls_cycle_a")
    assert_ready(srv)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_saturation_every_caller_instance_waiting_on_one_callee(srv, gc, proto):
    """bls_saturate has 4 instances, all calling bls_slow (one instance, 100
    ms per execute). 8 clients at once: every caller instance ends up
    waiting on the callee, which has instances of its own: all succeed."""
    n = 8
    before = success_count(srv, "bls_slow")
    with cf.ThreadPoolExecutor(n) as ex:
        futs = [ex.submit(infer, proto, srv, gc, "bls_saturate", int32_in([i, -i]))
                for i in range(n)]
        results = [f.result(timeout=HANG_S) for f in futs]
    for i, out in enumerate(results):
        assert out["OUTPUT0"].tolist() == [i, -i]
    assert_count(srv, "bls_slow", before + n)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_callee_unknown_model(srv, gc, proto):
    expect_error(proto, srv, gc, "bls_unknown", int32_in([1]), "NOT_FOUND",
                 "unknown model", "no_such_model")
    assert_ready(srv)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_callee_bad_shape(srv, gc, proto):
    expect_error(proto, srv, gc, "bls_bad_shape", int32_in([1, 2, 3]), "INVALID_ARGUMENT",
                 "unexpected shape", "bls_fixed4", "[4]")
    # The right shape goes through.
    out = infer(proto, srv, gc, "bls_bad_shape", int32_in([1, 2, 3, 4]))
    assert out["OUTPUT0"].tolist() == [1, 2, 3, 4]


LONG_MS = 60000  # far longer than any wait: only a cancel ends it early


def wait_log(srv, text):
    deadline = time.monotonic() + HANG_S
    while text not in srv.log_path.read_text(errors="replace"):
        assert srv.alive() and time.monotonic() < deadline, \
            f"no {text!r} in the server log\n--- log tail ---\n{srv.log_tail()}"
        time.sleep(0.05)


def cheap_call_served(srv):
    """bls_cancel's one instance is free again: a 0 ms call is answered."""
    out = infer("http", srv, None, "bls_cancel", [("IN", "INT32", [1], [0])])
    assert out["OUT"].tolist() == [0]


def test_http_close_cancels_the_bls_call(srv):
    """The client closes while bls_cancel waits on bls_sleep: the BLS model
    sees its request cancelled and cancels its call (which carries the
    client's request id), which stops sleeping."""
    body = json.dumps({"id": "bls-http", "inputs": [
        {"name": "IN", "datatype": "INT32", "shape": [1], "data": [LONG_MS]}]}).encode()
    with h.RawConn(srv.port) as c:
        c.send(h.http_request("POST", "/v2/models/bls_cancel/infer", body,
                              headers={"Content-Type": "application/json"}))
        wait_log(srv, "sleep: request 'bls-http' sleeping")
    wait_log(srv, "sleep: request 'bls-http' cancelled after")
    cheap_call_served(srv)


def test_grpc_cancel_cancels_the_bls_call(srv, gc):
    req = gh.infer_request(gc.pb, "bls_cancel", [("IN", "INT32", [1], np.array([LONG_MS], np.int32))],
                           request_id="bls-grpc")
    fut = gc.model_infer_future(req, timeout=HANG_S * 2)
    wait_log(srv, "sleep: request 'bls-grpc' sleeping")
    fut.cancel()
    wait_log(srv, "sleep: request 'bls-grpc' cancelled after")
    cheap_call_served(srv)


def test_many_clients_on_the_chain(srv, gc):
    """4 clients x 25 requests, HTTP and gRPC mixed, on the two-instance chain:
    each gets its own answer."""
    def client(k):
        proto = PROTOCOLS[k % 2]
        for j in range(25):
            v = [k, j, k * 100 + j]
            out = infer(proto, srv, gc, "bls_chain", int32_in(v))
            assert out["OUTPUT0"].tolist() == v
            assert out["OUT"].tolist() == [x + 1 for x in v]
        return k

    with cf.ThreadPoolExecutor(4) as ex:
        assert sorted(f.result(timeout=HANG_S) for f in [ex.submit(client, k) for k in range(4)]) \
            == [0, 1, 2, 3]
    assert_ready(srv)


def test_cycle_through_an_ensemble_refused(tmp_path):
    """bls_via_ens (one instance) -> ens_cycle -> bls_via_ens: refused with
    the deadlock error, as a direct cycle is. A private server (a hang
    would hold it until its exit timeout); CYCLE_WAIT_S only detects the
    hang."""
    h.require_binary()
    repo = _repo(tmp_path / "repo")
    backends = _backend_dir(tmp_path / "backends")
    s = h.start_server(tmp_path / "srv", [repo],
                       extra=[f"--backend-directory={backends}", "--exit-timeout-secs=5"],
                       wait_models=("bls_via_ens", "ens_cycle"))
    try:
        try:
            infer("http", s, None, "bls_via_ens", int32_in([1]), timeout=CYCLE_WAIT_S)
            raise AssertionError("the cycle through the ensemble was served")
        except Failed as f:
            assert f.code == "UNAVAILABLE" and "deadlock" in f.message, f
    finally:
        s.stop(check=True)


def pending(s, model):
    """nv_inference_pending_request_count of `model` (queued, not executing)."""
    r = requests.get(f"http://127.0.0.1:{s.metrics_port}/metrics", timeout=HANG_S)
    assert r.status_code == 200, r.text[:300]
    key = f'nv_inference_pending_request_count{{model="{model}",version="1"}} '
    for line in r.text.splitlines():
        if line.startswith(key):
            return int(float(line[len(key):]))
    raise AssertionError(f"no pending count for {model} in the metrics")


def test_stop_with_bls_calls_in_flight(tmp_path):
    """SIGTERM while 8 clients' requests to bls_saturate were all accepted:
    its 4 instances executing, each waiting on a call to bls_slow (one
    instance, made slower here), and 4 more requests queued. The drain
    completes every accepted request, BLS calls included: all 8 answered
    right, and the server exits 0."""
    h.require_binary()
    repo = _repo(tmp_path / "repo")
    cfg = repo / "bls_slow" / "config.pbtxt"
    cfg.write_text(cfg.read_text().replace('string_value: "100"', 'string_value: "400"'))
    backends = _backend_dir(tmp_path / "backends")
    s = h.start_server(tmp_path / "srv", [repo], extra=[f"--backend-directory={backends}"],
                       wait_models=("bls_saturate", "bls_slow"))
    n = 8

    def one(i):
        try:
            out = infer("http", s, None, "bls_saturate", int32_in([i]))
        except Failed as f:
            return ("error", f.http_status, f.message)
        except requests.ConnectionError as e:
            return ("closed", None, str(e))
        assert out["OUTPUT0"].tolist() == [i]
        return ("ok", 200, "")

    try:
        with cf.ThreadPoolExecutor(n) as ex:
            futs = [ex.submit(one, i) for i in range(n)]
            # Every request accepted: 4 queued at bls_saturate, its 4
            # instances' calls at bls_slow (1 executing, 3 queued).
            deadline = time.monotonic() + HANG_S
            while not (pending(s, "bls_saturate") == 4 and pending(s, "bls_slow") == 3):
                if success_count(s, "bls_slow") > 0:
                    pytest.skip("the machine was too slow to see every request queued")
                assert time.monotonic() < deadline, s.log_tail()
                time.sleep(0.01)
            s.proc.send_signal(signal.SIGTERM)
            results = [f.result(timeout=HANG_S) for f in futs]
    finally:
        s.stop(check=True)
    assert results == [("ok", 200, "")] * n
