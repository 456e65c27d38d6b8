"""The Python backend (issue 15, first slice), end to end over HTTP and gRPC.

Models: test/models/python_repo (model.py files written the way Triton's
Python backend docs write them). The server runs with the shipped backend
directory (build/backends, where python/ holds libtriton_python.so, the stub
and triton_python_backend_utils.py).

What is asserted:
  * add_sub: two FP32 inputs, sum and difference;
  * a BYTES model: numpy object arrays of bytes in and out;
  * default_model_filename is honoured;
  * initialize's args carry Triton's keys; a request's id, parameters and
    requested output names reach execute; InferenceResponse(error=...)
    fails that request only;
  * an exception in execute fails every request with its message; a wrong
    return type and a wrong number of responses fail the requests clearly;
    the server keeps serving;
  * an exception in initialize: that model is not ready, the others are,
    and the traceback is in the log;
  * several instances: each its own stub process, answering concurrently;
  * dynamic batching: concurrent requests reach one execute together;
  * an ensemble of identity then a Python model;
  * SIGKILL of a stub (a child of the server, found through /proc): the
    request in flight fails with "exited unexpectedly", the next request is
    served by a restarted stub (another pid), another model is unaffected;
    a stub killed while idle is replaced by the next request or the one after;
  * many concurrent requests of varied sizes each get their own answer;
  * unload ends a model's stubs, load starts new ones; no stub outlives
    the server.
Every wait is bounded (HANG_S); no assertion is about time.
"""

import concurrent.futures as cf
import json
import os
import signal
import shutil
import time

import grpc
import numpy as np
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as gh
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

PY_REPO = h.REPO_ROOT / "test" / "models" / "python_repo"
HANG_S = 60
PROTOCOLS = ("http", "grpc")
HTTP_STATUS = {"UNAVAILABLE": 503, "NOT_FOUND": 404, "INVALID_ARGUMENT": 400, "INTERNAL": 500}
STUB_NAME = "triton_python_backend_stub"
READY_MODELS = ("add_sub", "bytes_echo", "raise_execute", "wrong_count", "wrong_type", "instances",
                "slow", "batched", "double_fp32", "py_identity_step", "ens_py", "custom_file", "introspect",
                "error_response")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    h.require_binary()
    so = h.backend_dir() / "python" / "libtriton_python.so"
    assert so.is_file(), f"Python backend not built at {so}; run `make` first"
    tmp = tmp_path_factory.mktemp("python")
    repo = tmp / "repo"
    shutil.copytree(PY_REPO, repo)
    s = h.start_server(tmp / "srv", [repo], wait_models=READY_MODELS, timeout=120)
    try:
        yield s
    finally:
        stubs = stub_pids(s.proc.pid) if s.alive() else []
        s.stop(check=True)
        # No stub outlives the server.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}/cmdline") and _is_stub(p)
                                                  for p in stubs):
            time.sleep(0.05)
        left = [p for p in stubs if _is_stub(p)]
        assert not left, f"stub processes left after the server exited: {left}"


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = gh.connect(srv, grpc_stubs)
    yield c
    c.close()


class Failed(Exception):
    def __init__(self, code, message, http_status=None):
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.http_status = code, message, http_status


def infer(proto, srv, gc, model, inputs, timeout=HANG_S):
    """inputs: [(name, datatype, shape, values)]. Returns {output: ndarray or
    list of bytes}, or raises Failed."""
    inputs = [(n, d, s, v if d == "BYTES" else np.asarray(v, dtype=h.NP_DTYPES[d]).reshape(s))
              for n, d, s, v in inputs]
    if proto == "http":
        body, hlen = h.build_binary_request(inputs, parameters={"binary_data_output": True})
        r = requests.post(srv.url(f"/v2/models/{model}/infer"), data=body, timeout=timeout, headers={
            "Inference-Header-Content-Length": str(hlen),
            "Content-Type": "application/octet-stream",
        })
        if r.status_code != 200:
            code = {v: k for k, v in HTTP_STATUS.items()}.get(r.status_code, str(r.status_code))
            raise Failed(code, h.error_of(r), r.status_code)
        _, values = h.parse_infer_response(r)
        return values
    req = gh.infer_request(gc.pb, model, inputs)
    try:
        resp = gc.model_infer(req, timeout=timeout)
    except grpc.RpcError as e:
        raise Failed(e.code().name, e.details())
    return gh.outputs_of(resp)


def fp32(name, values):
    return (name, "FP32", [len(values)], values)


def delay(ms):
    return [("DELAY_MS", "INT32", [1], [ms])]


def _is_stub(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return STUB_NAME.encode() in f.read()
    except OSError:
        return False


def stub_pids(server_pid):
    """Pids of the server's children whose command line names the stub."""
    kids = set()
    for t in os.listdir(f"/proc/{server_pid}/task"):
        try:
            with open(f"/proc/{server_pid}/task/{t}/children") as f:
                kids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    out = []
    for p in sorted(kids):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if STUB_NAME.encode() in f.read():
                    out.append(p)
        except OSError:
            pass
    return out


# ---------------------------------------------------------------- tests ---

@pytest.mark.parametrize("proto", PROTOCOLS)
def test_add_sub(srv, gc, proto):
    a, b = [1.0, 2.5, -3.0, 4.0], [0.5, 0.5, 1.0, -4.0]
    out = infer(proto, srv, gc, "add_sub", [fp32("INPUT0", a), fp32("INPUT1", b)])
    assert np.asarray(out["OUTPUT0"]).tolist() == [1.5, 3.0, -2.0, 0.0]
    assert np.asarray(out["OUTPUT1"]).tolist() == [0.5, 2.0, -4.0, 8.0]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_empty_bytes_first(srv, gc, proto):
    # Before any other request to bytes_echo (this test runs first): an
    # empty BYTES tensor on an instance whose segment was never used.
    out = infer(proto, srv, gc, "bytes_echo", [("INPUT0", "BYTES", [0], [])])
    assert list(out["OUTPUT0"]) == []


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_bytes(srv, gc, proto):
    items = [b"hello", b"", b"\x00\xffab", "é".encode() * 100]
    out = infer(proto, srv, gc, "bytes_echo", [("INPUT0", "BYTES", [len(items)], items)])
    assert [bytes(x) for x in out["OUTPUT0"]] == [x[::-1] for x in items]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_default_model_filename(srv, gc, proto):
    out = infer(proto, srv, gc, "custom_file", [fp32("INPUT0", [1.0, -1.0])])
    assert np.asarray(out["OUTPUT0"]).tolist() == [2.0, 0.0]


def test_args_and_request_fields(srv):
    # Every parameter kind EXECUTE carries: string, int (negative too), bool,
    # double.
    params = {"mykey": "v\u00e9", "n": 3, "neg": -5, "flag": True, "ratio": 0.25}
    body = {"id": "req-7", "parameters": params,
            "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [2], "data": [1.0, 2.0]}],
            "outputs": [{"name": "INFO"}]}
    r = srv.post("/v2/models/introspect/infer", json=body)
    assert r.status_code == 200, r.text
    outs = {o["name"]: o for o in r.json()["outputs"]}
    assert set(outs) == {"INFO"}, outs
    info = json.loads(outs["INFO"]["data"][0])
    args = info["args"]
    for k in ("model_config", "model_instance_kind", "model_instance_name", "model_instance_device_id",
              "model_repository", "model_version", "model_name"):
        assert k in args, (k, args)
    assert args["model_name"] == "introspect" and args["model_version"] == "1", args
    assert args["model_instance_kind"] == "CPU", args
    assert args["model_config"]["name"] == "introspect", args
    assert args["model_repository"].rstrip("/").endswith("introspect"), args
    assert info["request_id"] == "req-7", info
    assert info["parameters"] == params, info
    assert info["requested"] == ["INFO"], info
    assert info["inputs"] == ["INPUT0"] and info["is_cpu"] is True, info


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_error_in_response(srv, gc, proto):
    with pytest.raises(Failed) as ei:
        infer(proto, srv, gc, "error_response", [fp32("INPUT0", [-1.0])])
    assert "error_response: negative input" in ei.value.message, ei.value
    assert ei.value.code == "INVALID_ARGUMENT", ei.value  # TritonError's code kept
    out = infer(proto, srv, gc, "error_response", [fp32("INPUT0", [5.0])])
    assert np.asarray(out["OUTPUT0"]).tolist() == [5.0]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_large_tensor(srv, gc, proto):
    # Bigger than any first shared-memory segment: the segment grows.
    n = 4 * 1024 * 1024
    x = np.arange(n, dtype=np.float32)
    out = infer(proto, srv, gc, "double_fp32", [("INPUT0", "FP32", [n], x)])
    assert np.array_equal(np.asarray(out["OUTPUT0"]), x * 2)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_raise_in_execute(srv, gc, proto):
    with pytest.raises(Failed) as ei:
        infer(proto, srv, gc, "raise_execute", [fp32("INPUT0", [1.0])])
    assert "raise_execute: deliberate failure in execute" in ei.value.message, ei.value
    assert "Traceback" in srv.log_tail(200000), srv.log_tail()
    # The stub survives a user exception: add_sub and the same model still answer.
    infer(proto, srv, gc, "add_sub", [fp32("INPUT0", [0.0] * 4), fp32("INPUT1", [0.0] * 4)])
    with pytest.raises(Failed):
        infer(proto, srv, gc, "raise_execute", [fp32("INPUT0", [1.0])])


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_wrong_number_of_responses(srv, gc, proto):
    with pytest.raises(Failed) as ei:
        infer(proto, srv, gc, "wrong_count", [fp32("INPUT0", [1.0])])
    m = ei.value.message
    assert "Number of InferenceResponse objects do not match number of InferenceRequest objects" in m, m


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_wrong_return_type(srv, gc, proto):
    with pytest.raises(Failed) as ei:
        infer(proto, srv, gc, "wrong_type", [fp32("INPUT0", [1.0])])
    assert "Expected a list in the execute return" in ei.value.message, ei.value


def test_syntax_error(srv):
    r = srv.post("/v2/repository/index", json={})
    entry = [m for m in r.json() if m["name"] == "syntax_error"]
    assert entry and entry[0].get("state") == "UNAVAILABLE", entry
    assert "SyntaxError" in entry[0].get("reason", "") + srv.log_tail(200000), entry


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_empty_tensor(srv, gc, proto):
    out = infer(proto, srv, gc, "double_fp32", [("INPUT0", "FP32", [0], [])])
    assert np.asarray(out["OUTPUT0"]).size == 0


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_sigkill_idle_stub(srv, gc, proto):
    pid = int(np.asarray(infer(proto, srv, gc, "slow", delay(0))["PID"]).reshape(-1)[0])
    os.kill(pid, signal.SIGKILL)
    # Nothing in flight: the next request is served by a new stub (or, if the
    # backend has not yet noticed, fails clearly and the one after is served).
    try:
        out = infer(proto, srv, gc, "slow", delay(0))
    except Failed as f:
        assert "exited unexpectedly" in f.message, f
        out = infer(proto, srv, gc, "slow", delay(0))
    assert int(np.asarray(out["PID"]).reshape(-1)[0]) != pid


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_concurrent_varied_sizes(srv, gc, proto):
    sizes = [1, 1000, 7, 250000, 3, 64, 100000, 0, 5, 33333] * 3

    def one(i, n):
        x = np.arange(n, dtype=np.float32) + i
        out = infer(proto, srv, gc, "double_fp32", [("INPUT0", "FP32", [n], x)])
        assert np.array_equal(np.asarray(out["OUTPUT0"]).reshape(-1), x * 2), (i, n)
        return True

    with cf.ThreadPoolExecutor(8) as ex:
        futs = [ex.submit(one, i, n) for i, n in enumerate(sizes)]
        assert all(f.result(timeout=HANG_S) for f in futs)


def test_raise_in_initialize(srv):
    r = srv.get("/v2/models/raise_init/ready")
    assert r.status_code != 200
    r = srv.post("/v2/repository/index", json={})
    assert r.status_code == 200, r.text
    entry = [m for m in r.json() if m["name"] == "raise_init"]
    assert entry and entry[0].get("state") == "UNAVAILABLE", entry
    assert "raise_init: deliberate failure in initialize" in entry[0].get("reason", ""), entry
    log = srv.log_tail(200000)
    assert "raise_init: deliberate failure in initialize" in log and "Traceback" in log, log[-3000:]
    assert srv.get("/v2/health/live").status_code == 200


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_several_instances(srv, gc, proto):
    # Three instances, each its own stub process: three slow requests at once
    # are answered by three different processes.
    with cf.ThreadPoolExecutor(3) as ex:
        futs = [ex.submit(infer, proto, srv, gc, "instances", delay(500)) for _ in range(3)]
        outs = [f.result(timeout=HANG_S) for f in futs]
    pids = {int(np.asarray(o["PID"]).reshape(-1)[0]) for o in outs}
    names = {bytes(o["INSTANCE"][0]) for o in outs}
    assert len(pids) == 3, outs
    assert len(names) == 3, names
    assert set(pids) <= set(stub_pids(srv.proc.pid))


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_dynamic_batching(srv, gc, proto):
    n = 4
    xs = [[float(i)] * 4 for i in range(n)]
    with cf.ThreadPoolExecutor(n) as ex:
        futs = [ex.submit(infer, proto, srv, gc, "batched", [("INPUT0", "FP32", [1, 4], x)]) for x in xs]
        outs = [f.result(timeout=HANG_S) for f in futs]
    for x, o in zip(xs, outs):
        assert np.asarray(o["OUTPUT0"]).reshape(-1).tolist() == [v * 2 for v in x]
    assert max(int(np.asarray(o["NREQ"]).reshape(-1)[0]) for o in outs) > 1, outs


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_ensemble_with_identity(srv, gc, proto):
    out = infer(proto, srv, gc, "ens_py", [("IN", "FP32", [3], [1.0, 2.0, -0.5])])
    assert np.asarray(out["OUT"]).tolist() == [2.0, 4.0, -1.0]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_sigkill_stub(srv, gc, proto):
    other = infer(proto, srv, gc, "add_sub", [fp32("INPUT0", [1.0] * 4), fp32("INPUT1", [1.0] * 4)])
    assert np.asarray(other["OUTPUT0"]).tolist() == [2.0] * 4
    pid = int(np.asarray(infer(proto, srv, gc, "slow", delay(0))["PID"]).reshape(-1)[0])
    assert pid in stub_pids(srv.proc.pid), (pid, stub_pids(srv.proc.pid))
    before = set(stub_pids(srv.proc.pid))
    with cf.ThreadPoolExecutor(1) as ex:
        fut = ex.submit(infer, proto, srv, gc, "slow", delay(30000))
        # Let the request reach the stub (it is then sleeping in execute).
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not _in_execute(pid):
            time.sleep(0.02)
        time.sleep(0.2)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(Failed) as ei:
            fut.result(timeout=HANG_S)
    m = ei.value.message
    assert "exited unexpectedly" in m and "slow" in m, m
    assert srv.alive()
    # The next request: a restarted stub, another process.
    out = infer(proto, srv, gc, "slow", delay(0))
    new_pid = int(np.asarray(out["PID"]).reshape(-1)[0])
    assert new_pid != pid
    assert new_pid in stub_pids(srv.proc.pid)
    assert pid not in stub_pids(srv.proc.pid)  # reaped, no zombie left as a child
    # Other models unaffected: the same stubs, still answering.
    assert before - {pid} <= set(stub_pids(srv.proc.pid))
    other = infer(proto, srv, gc, "add_sub", [fp32("INPUT0", [3.0] * 4), fp32("INPUT1", [1.0] * 4)])
    assert np.asarray(other["OUTPUT1"]).tolist() == [2.0] * 4
    # (The server as a whole is not ready: raise_init failed to load.)
    for m in ("slow", "add_sub"):
        assert srv.get(f"/v2/models/{m}/ready").status_code == 200, m


def _in_execute(pid):
    """True once the stub process is sleeping (in time.sleep, the model's
    execute). A best effort: /proc/<pid>/wchan says hrtimer_nanosleep or
    similar while it sleeps."""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return "sleep" in f.read()
    except OSError:
        return False


def test_unload_and_reload_stops_and_starts_stubs(tmp_path):
    """Explicit model control: unloading a Python model ends its stubs;
    loading it again starts new ones that answer."""
    repo = tmp_path / "repo"
    for m in ("instances", "add_sub"):
        shutil.copytree(PY_REPO / m, repo / m)
    s = h.start_server(tmp_path / "srv", [repo], wait_models=("instances", "add_sub"), timeout=120,
                       extra=["--model-control-mode=explicit", "--load-model=instances",
                              "--load-model=add_sub"])
    try:
        before = stub_pids(s.proc.pid)
        assert len(before) == 4, before  # 3 instances + add_sub
        mine = {int(np.asarray(infer("http", s, None, "instances", delay(0))["PID"]).reshape(-1)[0])}
        assert mine <= set(before)
        r = s.post("/v2/repository/models/instances/unload", json={})
        assert r.status_code == 200, r.text
        deadline = time.monotonic() + HANG_S
        while time.monotonic() < deadline and len(stub_pids(s.proc.pid)) != 1:
            time.sleep(0.05)
        assert len(stub_pids(s.proc.pid)) == 1, stub_pids(s.proc.pid)
        r = s.post("/v2/repository/models/instances/load", json={})
        assert r.status_code == 200, r.text
        pid = int(np.asarray(infer("http", s, None, "instances", delay(0))["PID"]).reshape(-1)[0])
        assert pid not in before and pid in stub_pids(s.proc.pid)
        out = infer("http", s, None, "add_sub", [fp32("INPUT0", [1.0] * 4), fp32("INPUT1", [2.0] * 4)])
        assert np.asarray(out["OUTPUT0"]).tolist() == [3.0] * 4
    finally:
        s.stop(check=True)
