"""One model's backlog must not hold back another model's responses, nor its
own finished ones (issue 8, defect 1).

Model A (`stall_a`) and model B (`stall_b`) both run the `sleep` test backend
on one instance each (test/models/stall_repo). A's instance is first kept
busy, so that a backlog of cheap requests and then one LONG request queue on
its run queue, with a few more behind it; it then works through the cheap
ones (the case where it coalesces its wake-ups of the loop) and starts the
long one. While the long
one runs, B gets a 1 ms request.

What the design guarantees, and the only things asserted:
  * B's response needs only B's instance and the loop: it comes back while A's
    long request is still running (which ends LONG_MS after it started, far
    later than any scheduling delay), instead of with it;
  * A's cheap responses, finished before the long request started, are all
    readable while the long one still runs: a deferred wake-up is paid by
    another producer, by the loop when it wakes, or by its fallback timer,
    never by the end of the next job.
Only 127.0.0.1; every wait is bounded.
"""

import json
import os
import select
import shutil
import time

import e2e_helpers as h

STALL_REPO_SRC = h.REPO_ROOT / "test" / "models" / "stall_repo"
MODELS = ("stall_a", "stall_b")

OCCUPY_MS = 300  # keeps A's only instance busy while its backlog queues
CHEAP = 40  # cheap requests (0 ms) queued behind it
LONG_MS = 4000  # the request A runs when B's arrives


def _repo(dst):
    so = h.sleep_backend_so()
    assert so.is_file(), f"sleep test backend not built at {so}; run `make` first"
    dst.mkdir(parents=True)
    for m in MODELS:
        shutil.copytree(STALL_REPO_SRC / m, dst / m)
        shutil.copy2(so, dst / m / so.name)
    return dst


def _pin_to_one_cpu(pid):
    """Every thread of the server on one CPU, as in the benchmarks (server on
    one core): the loop then runs only when woken, and every hand-off
    between the loop and an instance is a switch. Threads created later
    inherit it."""
    cpu = min(os.sched_getaffinity(0))
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), {cpu})
        except ProcessLookupError:
            pass


def _request(model, ms):
    body = json.dumps({"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [ms]}]})
    return h.http_request("POST", f"/v2/models/{model}/infer", body=body,
                          headers={"Content-Type": "application/json"})


def _send(port, model, ms):
    c = h.RawConn(port)
    c.send(_request(model, ms))
    return c


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
        _pin_to_one_cpu(srv.proc.pid)
        occupy = _send(srv.port, "stall_a", OCCUPY_MS)
        conns.append(occupy)
        # Requests of one connection are read in one loop iteration, in
        # order; separate connections sent one after another arrive in
        # order too, well inside the occupying request.
        time.sleep(0.05)
        cheap = []
        for _ in range(CHEAP):
            cheap.append(_send(srv.port, "stall_a", 0))
        conns += cheap
        time.sleep(0.05)
        long_ = _send(srv.port, "stall_a", LONG_MS)
        conns.append(long_)
        # More work behind the long request: A's instance starts it with a
        # backlog left, the case in which it may coalesce.
        time.sleep(0.05)
        trailing = [_send(srv.port, "stall_a", 0) for _ in range(3)]
        conns += trailing

        # The occupying request ends; the cheap ones take microseconds each;
        # then the long one starts. Give that generous time, far less than
        # LONG_MS.
        _ok(occupy, OCCUPY_MS)
        time.sleep(0.3)
        assert not _readable(long_), "the long request ended too early to test anything"
        # Before anything else happens on the server: A's own finished work.
        cheap_ready = sum(1 for c in cheap if _readable(c))

        t0 = time.monotonic()
        b = _send(srv.port, "stall_b", 1)
        conns.append(b)
        _ok(b, 1)
        b_latency = time.monotonic() - t0
        # Answered while A's long request still runs, not with it.
        still_running = not _readable(long_)
        assert still_running and cheap_ready == CHEAP, (
            f"model B's 1 ms request took {b_latency:.3f} s: it came back only when model A's "
            f"{LONG_MS} ms request ended" if not still_running else
            f"only {cheap_ready} of model A's {CHEAP} finished cheap responses were sent while its "
            f"long request ran")
        for c in cheap:
            _ok(c, 0)
        _ok(long_, LONG_MS)
        for c in trailing:
            _ok(c, 0)
    finally:
        for c in conns:
            c.close()
        srv.stop(check=True)
