"""Load shedding a client can act on (issue 29): a full model queue
(dynamic_batching's max_queue_size) and the server-wide in-flight cap
(--max-inflight-requests) refuse a request at once, as Triton does (HTTP 503,
gRPC UNAVAILABLE) by default, or with --overload-status=429 as HTTP 429 with
Retry-After (--overload-retry-after-secs) and gRPC RESOURCE_EXHAUSTED. Both
count in inferd_requests_shed_total{reason}.

Models: `shed`, a batchcost model (one instance, max_batch_size 1, 800 ms per
execute) whose queue holds 1 request; `sleep` (three instances, sleeps IN ms).
A request is "running" once sent and given ORDER_GAP_S; the next ones are sent
after it, so the one executing, the one queued and the refused ones are known.
"""

import re
import threading
import time

import grpc
import numpy as np
import pytest
import requests

import batch_fixtures as bf
import e2e_helpers as h
import grpc_helpers as g
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

ORDER_GAP_S = 0.15
COST_MS = 800
SLEEP_MS = 1200
CAP = 3

SHED_CONFIG = f"""
name: "shed"
backend: "batchcost"
max_batch_size: 1
input [ {{ name: "INPUT0" data_type: TYPE_INT32 dims: [ 2 ] }} ]
output [ {{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 2 ] }} ]
dynamic_batching {{ default_queue_policy {{ max_queue_size: 1 }} }}
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
parameters {{ key: "batch_cost_ms" value {{ string_value: "{COST_MS}" }} }}
"""


def start(tmp_path, extra):
    repo = bf.copy_batch_repo(tmp_path / "repo", models=["qsize"])
    (repo / "qsize").rename(repo / "shed")
    (repo / "shed" / "config.pbtxt").write_text(SHED_CONFIG)
    h.copy_repo(repo, models=["sleep"])
    return h.start_server(tmp_path / "srv", [repo], wait_models=("shed", "sleep"),
                          extra=[f"--max-inflight-requests={CAP}", *extra])


@pytest.fixture(scope="module", params=["default", "429"])
def osrv(request, tmp_path_factory):
    extra = [] if request.param == "default" else ["--overload-status=429",
                                                   "--overload-retry-after-secs=2"]
    srv = start(tmp_path_factory.mktemp(f"overload-{request.param}"), extra)
    srv.mode = request.param
    try:
        yield srv
    finally:
        srv.stop(check=True)


def shed_body(i):
    return {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 2], "data": [i, i]}]}


def sleep_body(ms):
    return {"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [ms]}]}


def post(srv, model, body, out, key):
    t0 = time.monotonic()
    r = requests.post(srv.url(f"/v2/models/{model}/infer"), json=body, timeout=bf.HANG_S)
    out[key] = (r, time.monotonic() - t0)


def run_in_order(srv, sends):
    """sends: (model, body) each started ORDER_GAP_S after the previous;
    returns [(response, seconds)] in that order."""
    out, threads = {}, []
    for i, (model, body) in enumerate(sends):
        t = threading.Thread(target=post, args=(srv, model, body, out, i))
        t.start()
        threads.append(t)
        time.sleep(ORDER_GAP_S)
    for t in threads:
        t.join(bf.HANG_S)
    return [out[i] for i in range(len(sends))]


def shed_metrics(srv):
    text = requests.get(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=10).text
    got = dict(re.findall(r'^inferd_requests_shed_total\{reason="(\w+)"\} (\d+)$', text, re.M))
    return {k: int(v) for k, v in got.items()}


def check_refused(srv, r, secs, words):
    if srv.mode == "default":
        assert r.status_code == 503, (r.status_code, r.text)
        assert "Retry-After" not in r.headers
    else:
        assert r.status_code == 429, (r.status_code, r.text)
        assert r.headers.get("Retry-After") == "2", dict(r.headers)
    assert words in r.json()["error"], r.text
    # At once, not after waiting for the requests ahead of it.
    assert secs < COST_MS / 1000.0, secs


def test_full_queue_http(osrv):
    before = shed_metrics(osrv)
    res = run_in_order(osrv, [("shed", shed_body(i)) for i in range(4)])
    # 0 executes, 1 waits in the queue (max_queue_size 1), 2 and 3 are shed.
    for r, _ in res[:2]:
        assert r.status_code == 200, r.text
    for r, secs in res[2:]:
        check_refused(osrv, r, secs, "Exceeds maximum queue size for model 'shed'")
    after = shed_metrics(osrv)
    assert after["queue_full"] - before["queue_full"] == 2
    assert after["inflight_cap"] == before["inflight_cap"]


def test_inflight_cap_http(osrv):
    before = shed_metrics(osrv)
    res = run_in_order(osrv, [("sleep", sleep_body(SLEEP_MS))] * CAP + [("sleep", sleep_body(0))])
    for r, _ in res[:CAP]:
        assert r.status_code == 200, r.text
    r, secs = res[CAP]
    check_refused(osrv, r, secs, "requests in flight, its limit (--max-inflight-requests)")
    after = shed_metrics(osrv)
    assert after["inflight_cap"] - before["inflight_cap"] == 1
    # Once they are done, the count is back down: a request passes.
    r = requests.post(osrv.url("/v2/models/sleep/infer"), json=sleep_body(0), timeout=bf.HANG_S)
    assert r.status_code == 200, r.text


def test_full_queue_and_cap_grpc(osrv, grpc_stubs):  # noqa: F811
    pb = grpc_stubs.pb
    want = grpc.StatusCode.UNAVAILABLE if osrv.mode == "default" else grpc.StatusCode.RESOURCE_EXHAUSTED
    with g.Client(grpc_stubs, g.grpc_target(osrv)) as cl:
        reqs = [g.infer_request(pb, "shed", [("INPUT0", "INT32", [1, 2], np.array([[i, i]], np.int32))])
                for i in range(3)]
        futs = []
        for rq in reqs:
            futs.append(cl.model_infer_future(rq))
            time.sleep(ORDER_GAP_S)
        err = futs[2].exception()
        assert err is not None and err.code() == want, err
        assert "Exceeds maximum queue size" in err.details()
        assert futs[0].result() and futs[1].result()

        slow = [g.infer_request(pb, "sleep", [("IN", "INT32", [1], np.array([SLEEP_MS], np.int32))])
                for _ in range(CAP)]
        futs = []
        for rq in slow:
            futs.append(cl.model_infer_future(rq))
            time.sleep(ORDER_GAP_S)
        quick = g.infer_request(pb, "sleep", [("IN", "INT32", [1], np.array([0], np.int32))])
        err = g.rpc_error(cl.model_infer, quick)
        assert err.code() == want, err
        assert "--max-inflight-requests" in err.details()
        for f in futs:
            assert f.result()


def test_shed_metric_documented_shape(osrv):
    text = requests.get(f"http://127.0.0.1:{osrv.metrics_port}/metrics", timeout=10).text
    assert "# TYPE inferd_requests_shed_total counter" in text
    assert set(shed_metrics(osrv)) == {"queue_full", "inflight_cap"}
