"""One model's backlog must not hold back another model's responses, nor its
own finished ones (issue 8, defect 1).

Model A (`stall_a`) and model B (`stall_b`) both run the `sleep` test backend
on one instance each (test/models/stall_repo). A's instance first finishes
cheap requests and goes idle. Then one connection pipelines to A: two cheap
requests, one LONG request and one more cheap one; they are read in one loop
iteration, so A's instance finds them queued together and works through
them: a backlog of cheap jobs (where it may coalesce its wake-ups of the
loop) followed by a long job started with work still queued. While the long
one runs, B gets a 1 ms request.

What the design guarantees, and the only things asserted:
  * A's two cheap responses, finished before the long job started, are out
    while it runs: a deferred wake-up is paid by another producer, by the
    loop when it wakes, or by its fallback timer, never by the end of the
    next job;
  * B's response needs only B's instance and the loop: it comes back while
    A's long request still runs (it ends LONG_MS after it started, far later
    than any scheduling delay), not with it.
Only 127.0.0.1; every wait is bounded.
"""

import json
import select
import shutil
import time

import e2e_helpers as h

STALL_REPO_SRC = h.REPO_ROOT / "test" / "models" / "stall_repo"
MODELS = ("stall_a", "stall_b")

LONG_MS = 4000  # the request A runs when B's arrives
SETTLE_S = 0.5
WARM = 20  # for the cheap jobs to finish and the long one to start


def _repo(dst):
    so = h.sleep_backend_so()
    assert so.is_file(), f"sleep test backend not built at {so}; run `make` first"
    dst.mkdir(parents=True)
    for m in MODELS:
        shutil.copytree(STALL_REPO_SRC / m, dst / m)
        shutil.copy2(so, dst / m / so.name)
    return dst


def _request(model, ms):
    body = json.dumps({"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [ms]}]})
    return h.http_request("POST", f"/v2/models/{model}/infer", body=body,
                          headers={"Content-Type": "application/json"})


def _readable(conn):
    if conn.buf:
        return True
    r, _, _ = select.select([conn.sock], [], [], 0)
    return bool(r)


def _ok(conn, ms):
    r = conn.read_response()
    assert r.status == 200, r
    assert r.json()["outputs"][0]["data"] == [ms]


def test_backlog_of_one_model_does_not_stall_another(tmp_path):
    h.require_binary()
    srv = h.start_server(tmp_path / "srv", [_repo(tmp_path / "repo")], wait_models=MODELS)
    conns = []
    try:
        # A's instance runs cheap jobs (warm: the last one is as cheap as
        # they get), then sleeps on its empty run queue.
        warm = h.RawConn(srv.port)
        conns.append(warm)
        for _ in range(WARM):
            warm.send(_request("stall_a", 0))
            _ok(warm, 0)

        # The backlog: responses on one connection keep request order, so the
        # two cheap ones come first and the trailing one after the long one.
        a = h.RawConn(srv.port)
        conns.append(a)
        a.send(_request("stall_a", 0) + _request("stall_a", 0) + _request("stall_a", LONG_MS)
               + _request("stall_a", 0))
        time.sleep(SETTLE_S)

        # Before anything else happens on the server: A's own finished work.
        cheap_out = 0
        while cheap_out < 2 and _readable(a):
            _ok(a, 0)
            cheap_out += 1
        long_running = not _readable(a)
        assert long_running, "A's long request ended too early to test anything"

        t0 = time.monotonic()
        b = h.RawConn(srv.port)
        conns.append(b)
        b.send(_request("stall_b", 1))
        _ok(b, 1)
        b_latency = time.monotonic() - t0
        long_running = not _readable(a)
        assert cheap_out == 2 and long_running, (
            f"model B's 1 ms request took {b_latency:.3f} s "
            f"({'before' if long_running else 'only when'} model A's {LONG_MS} ms request ended); "
            f"{cheap_out} of model A's 2 finished cheap responses were out while its long one ran")

        while cheap_out < 2:
            _ok(a, 0)
            cheap_out += 1
        _ok(a, LONG_MS)
        _ok(a, 0)
    finally:
        for c in conns:
            c.close()
        srv.stop(check=True)
