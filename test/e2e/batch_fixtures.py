"""Helpers for the dynamic batching, statistics and metrics e2e tests.

The models live in test/models/batch_repo (a repository of their own, so that
the session server's test/models/repo keeps its exact contents). Every model
uses the `batchcost` test backend (test/models/backends/batchcost): each
execute costs a fixed `batch_cost_ms` whatever the batch holds, OUTPUT0 is a
copy of INPUT0 (INT32 [2] per batch element) and an optional BOOL input FAIL
that is true makes that request fail in the backend. The backend is not in
the backend directory: start_batch_server() copies libtriton_batchcost.so
into each model's folder (the same search order the `sleep` model uses).

Only 127.0.0.1; every wait is bounded; timings are never asserted beyond
lower bounds that follow from the design (plus generous hang guards).
"""

import json
import shutil
import threading
import time
from pathlib import Path

import requests

import e2e_helpers as h

BATCH_REPO_SRC = h.REPO_ROOT / "test" / "models" / "batch_repo"
BATCH_MODELS = ("batch8", "delay", "preferred", "priority", "timeout_reject",
                "timeout_delay", "qsize", "plain")

# Only there so that nothing hangs; never a claim about speed.
HANG_S = 30


def batchcost_so():
    return h.build_dir() / "test" / "backends" / "batchcost" / "libtriton_batchcost.so"


def copy_batch_repo(dst, models=None):
    """Copy test/models/batch_repo (or only `models`) to dst, with
    libtriton_batchcost.so copied into every model folder."""
    so = batchcost_so()
    if not so.is_file():
        raise AssertionError(f"batchcost test backend not built at {so}; run `make` first")
    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    names = models if models is not None else sorted(p.name for p in BATCH_REPO_SRC.iterdir() if p.is_dir())
    for name in names:
        shutil.copytree(BATCH_REPO_SRC / name, dst / name)
        shutil.copy2(so, dst / name / so.name)
    return dst


def start_batch_server(tmp_dir, models=None, extra=()):
    """Start an inferd on a copy of batch_repo; waits until every model is ready.
    The caller stops it (srv.stop(check=True))."""
    h.require_binary()
    tmp_dir = Path(tmp_dir)
    repo = copy_batch_repo(tmp_dir / "batch_repo", models)
    names = models if models is not None else BATCH_MODELS
    return h.start_server(tmp_dir / "srv", [repo], extra=extra, wait_models=tuple(names))


def module_batch_server(tmp_path_factory, name, models=None, extra=()):
    """Generator body for a module-scoped fixture: yields a started server and
    checks at teardown that it exits 0 on SIGTERM."""
    srv = start_batch_server(tmp_path_factory.mktemp(name), models, extra)
    try:
        yield srv
    finally:
        srv.stop(check=True)


# ------------------------------------------------------------ requests ---

def infer_body(values, fail=None, parameters=None, request_id=None):
    """JSON body for one request. values: list of [a, b] pairs (one per batch
    element); fail: None (no FAIL input) or a bool for every element."""
    k = len(values)
    inputs = [{"name": "INPUT0", "datatype": "INT32", "shape": [k, 2],
               "data": [int(x) for pair in values for x in pair]}]
    if fail is not None:
        inputs.append({"name": "FAIL", "datatype": "BOOL", "shape": [k, 1], "data": [bool(fail)] * k})
    body = {"inputs": inputs}
    if parameters:
        body["parameters"] = parameters
    if request_id is not None:
        body["id"] = request_id
    return body


def post_infer(session_or_server, base, model, body, timeout=HANG_S):
    """POST /v2/models/<model>/infer with a requests.Session."""
    return session_or_server.post(f"{base}/v2/models/{model}/infer", json=body, timeout=timeout)


def output0(resp):
    body = resp.json()
    outs = {o["name"]: o for o in body.get("outputs", [])}
    assert "OUTPUT0" in outs, f"no OUTPUT0 in {body!r}"
    return outs["OUTPUT0"]


def check_echo(resp, values):
    assert resp.status_code == 200, f"HTTP {resp.status_code}: {resp.text[:300]}"
    out = output0(resp)
    assert out["datatype"] == "INT32", out
    assert out["shape"] == [len(values), 2], out
    assert out["data"] == [int(x) for pair in values for x in pair], out


class Sender:
    """Requests sent from threads, each with its own connection (a
    requests.Session opened before the request is started), recording when
    each request was started and when its response came back.

        s = Sender(srv)
        i = s.start("model", body)        # returns at once
        s.join()                          # waits (bounded) for all
        s.results[i] -> dict(t_sent, t_done, status, text, json, exc)
    """

    def __init__(self, server):
        self.server = server
        self.results = []
        self._threads = []

    def _session(self):
        sess = requests.Session()
        # Open the connection first so that connecting is not part of the request.
        sess.get(self.server.url("/v2/health/live"), timeout=HANG_S)
        return sess

    def start(self, model, body, ready_event=None):
        """Start one request in a thread; returns its index in results.
        With ready_event, the thread connects, then waits for the event."""
        idx = len(self.results)
        res = {"model": model, "t_sent": None, "t_done": None, "status": None, "text": None,
               "json": None, "exc": None}
        self.results.append(res)
        connected = threading.Event()

        def run():
            sess = None
            try:
                sess = self._session()
                connected.set()
                if ready_event is not None:
                    ready_event.wait(HANG_S)
                res["t_sent"] = time.monotonic()
                r = post_infer(sess, self.server.base, model, body)
                res["t_done"] = time.monotonic()
                res["status"] = r.status_code
                res["text"] = r.text
                try:
                    res["json"] = r.json()
                except ValueError:
                    pass
                res["resp"] = r
            except Exception as e:  # reported by the test
                res["t_done"] = time.monotonic()
                res["exc"] = repr(e)
            finally:
                connected.set()
                if sess is not None:
                    sess.close()

        t = threading.Thread(target=run, daemon=True)
        t.start()
        self._threads.append(t)
        connected.wait(HANG_S)
        if ready_event is None:
            # Let the request leave the client before the caller sends the next one.
            while res["t_sent"] is None and res["exc"] is None and t.is_alive():
                time.sleep(0.001)
        return idx

    def join(self, timeout=3 * HANG_S):
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        hung = [i for i, t in enumerate(self._threads) if t.is_alive()]
        assert not hung, f"requests {hung} got no response within {timeout}s"
        for i, r in enumerate(self.results):
            assert r["exc"] is None, f"request {i} ({r['model']}) raised {r['exc']}"
        return self.results


# ---------------------------------------------------------- statistics ---

def get_stats(server, model, version=None):
    path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/stats"
    r = server.get(path)
    assert r.status_code == 200, f"GET {path}: HTTP {r.status_code} {r.text[:300]}"
    body = r.json()
    assert isinstance(body, dict) and isinstance(body.get("model_stats"), list), body
    entries = [e for e in body["model_stats"] if e.get("name") == model]
    assert len(entries) == 1, f"GET {path}: expected one entry for {model}, got {body!r}"
    return entries[0]


def requests_counted(stats):
    s = stats["inference_stats"]
    return s["success"]["count"] + s["fail"]["count"]


def wait_stats(server, model, pred, what, timeout=10.0):
    """Polls the model's statistics until pred(stats) holds (the statistics of
    a request may be recorded a moment after its response was sent)."""
    deadline = time.monotonic() + timeout
    while True:
        st = get_stats(server, model)
        if pred(st):
            return st
        if time.monotonic() > deadline:
            raise AssertionError(f"statistics of {model} never showed {what} within {timeout}s: "
                                 f"{json.dumps(st)}")
        time.sleep(0.02)


def batch_counts(stats):
    """{batch_size: executions} from batch_stats (compute_infer counts)."""
    out = {}
    for b in stats.get("batch_stats", []):
        out[int(b["batch_size"])] = int(b["compute_infer"]["count"])
    return out


def batch_counts_delta(after, before):
    a, b = batch_counts(after), batch_counts(before)
    d = {k: a.get(k, 0) - b.get(k, 0) for k in set(a) | set(b)}
    return {k: v for k, v in d.items() if v != 0}


# --------------------------------------------------------------- gRPC ---

def grpc_stats_to_dicts(resp):
    """A gRPC ModelStatisticsResponse as a list of plain dicts with int values,
    in the layout comparable() gives an HTTP statistics entry."""
    def dur(d):
        return {"count": int(d.count), "ns": int(d.ns)}

    out = []
    for m in resp.model_stats:
        s = m.inference_stats
        out.append({
            "name": m.name, "version": m.version, "last_inference": int(m.last_inference),
            "inference_count": int(m.inference_count), "execution_count": int(m.execution_count),
            "inference_stats": {k: dur(getattr(s, k)) for k in
                                ("success", "fail", "queue", "compute_input", "compute_infer",
                                 "compute_output", "cache_hit", "cache_miss")},
            "batch_stats": [{"batch_size": int(b.batch_size), "compute_input": dur(b.compute_input),
                             "compute_infer": dur(b.compute_infer), "compute_output": dur(b.compute_output)}
                            for b in sorted(m.batch_stats, key=lambda b: b.batch_size)],
        })
    return out


def comparable(stats):
    """The fields of an HTTP statistics entry that gRPC carries too, ints only."""
    def dur(d):
        return {"count": int(d["count"]), "ns": int(d["ns"])}
    return {
        "name": stats["name"], "version": stats["version"], "last_inference": int(stats["last_inference"]),
        "inference_count": int(stats["inference_count"]), "execution_count": int(stats["execution_count"]),
        "inference_stats": {k: dur(v) for k, v in stats["inference_stats"].items()},
        "batch_stats": [{"batch_size": int(b["batch_size"]), "compute_input": dur(b["compute_input"]),
                         "compute_infer": dur(b["compute_infer"]), "compute_output": dur(b["compute_output"])}
                        for b in sorted(stats["batch_stats"], key=lambda b: int(b["batch_size"]))],
    }


def values_for(i, k=1):
    """Distinct INT32 values for request i with batch size k."""
    return [[i * 100 + j, -(i * 100 + j) - 7] for j in range(k)]

