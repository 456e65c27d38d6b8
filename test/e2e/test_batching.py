"""Dynamic batcher (Triton's dynamic_batching) on test/models/batch_repo.

Every model runs the `batchcost` backend: one execute costs a fixed time
whatever the batch holds, with one instance, so batching is visible in the
statistics (execution_count, batch_stats) and in completion times.
Only lower bounds that follow from the configuration are asserted on time
(a 300 ms queue delay, a 300 ms execution...), plus hang guards; the one
upper bound (preferred batch size) is structural: it is below the 2 s queue
delay the request would otherwise wait.

Requests meant to arrive in a given order are started one after another
with a short pause (ORDER_GAP_S) in between, each on its own connection.
"""

import threading
import time

import pytest
import requests

import batch_fixtures as bf

ORDER_GAP_S = 0.03


@pytest.fixture(scope="module")
def bsrv(tmp_path_factory):
    yield from bf.module_batch_server(tmp_path_factory, "batching")


def _delta(after, before, key):
    return after[key] - before[key]


def _send_together(srv, model, bodies):
    """All requests connect first, then are released at once. Returns
    (results, t_release)."""
    go = threading.Event()
    s = bf.Sender(srv)
    for b in bodies:
        s.start(model, b, ready_event=go)
    t_release = time.monotonic()
    go.set()
    return s.join(), t_release


def _wait_counted(srv, model, before, n):
    want = bf.requests_counted(before) + n
    return bf.wait_stats(srv, model, lambda st: bf.requests_counted(st) >= want,
                         f"{n} more requests counted")


def _error_text(res):
    j = res["json"]
    if isinstance(j, dict) and isinstance(j.get("error"), str):
        return j["error"]
    return res["text"] or ""


def _lone_request(srv, model, body):
    with requests.Session() as sess:
        sess.get(srv.url("/v2/health/live"), timeout=bf.HANG_S)
        t0 = time.monotonic()
        r = bf.post_infer(sess, srv.base, model, body)
        return r, time.monotonic() - t0


# ------------------------------------------------------------ batch8 ---

def test_64_concurrent_requests_are_batched(bsrv):
    n = 64
    before = bf.get_stats(bsrv, "batch8")
    vals = [bf.values_for(i) for i in range(n)]
    results, _ = _send_together(bsrv, "batch8", [bf.infer_body(v, request_id=f"r{i}") for i, v in enumerate(vals)])
    for i, res in enumerate(results):
        bf.check_echo(res["resp"], vals[i])
        assert res["json"].get("id") == f"r{i}", res["json"]

    after = _wait_counted(bsrv, "batch8", before, n)
    assert _delta(after, before, "inference_count") == n, (before, after)
    execs = _delta(after, before, "execution_count")
    # max_batch_size 8: at least 64 / 8 executions; batching keeps it near that.
    assert 8 <= execs <= 8 + 3, f"{execs} executions for {n} concurrent requests (max_batch_size 8)"
    batches = bf.batch_counts_delta(after, before)
    assert sum(size * cnt for size, cnt in batches.items()) == n, batches
    assert sum(batches.values()) == execs, (batches, execs)
    assert max(batches) > 1, f"no batch held more than one request: {batches}"
    assert max(batches) <= 8, f"a batch exceeded max_batch_size 8: {batches}"
    s = after["inference_stats"]
    assert s["success"]["count"] - before["inference_stats"]["success"]["count"] == n
    assert s["fail"]["count"] == before["inference_stats"]["fail"]["count"]


def test_request_batch_dimension_counts_toward_max_batch_size(bsrv):
    """Requests of batch 3 on batch8: never more than 8 elements in a batch."""
    n = 12
    before = bf.get_stats(bsrv, "batch8")
    vals = [bf.values_for(i, 3) for i in range(n)]
    results, _ = _send_together(bsrv, "batch8", [bf.infer_body(v) for v in vals])
    for i, res in enumerate(results):
        bf.check_echo(res["resp"], vals[i])
    after = _wait_counted(bsrv, "batch8", before, n)
    assert _delta(after, before, "inference_count") == 3 * n
    batches = bf.batch_counts_delta(after, before)
    assert sum(size * cnt for size, cnt in batches.items()) == 3 * n, batches
    # A batch holds whole requests of 3: 3 or 6 elements (9 > 8).
    assert set(batches) <= {3, 6}, f"batch sizes {batches}: requests of batch 3 must count 3 each"


# ------------------------------------------------------------- delay ---

def test_queue_delay_holds_a_lone_request(bsrv):
    before = bf.get_stats(bsrv, "delay")
    vals = bf.values_for(1)
    r, dt = _lone_request(bsrv, "delay", bf.infer_body(vals))
    bf.check_echo(r, vals)
    # max_queue_delay_microseconds 300000: nothing else comes, so it waits it out.
    assert dt >= 0.25, f"lone request answered after {dt:.3f}s: the 300 ms queue delay was not applied"
    assert dt < 3.0, f"lone request answered after {dt:.3f}s: held far longer than the 300 ms queue delay"
    after = _wait_counted(bsrv, "delay", before, 1)
    assert _delta(after, before, "execution_count") == 1
    assert bf.batch_counts_delta(after, before) == {1: 1}


def test_queue_delay_gathers_concurrent_requests_into_one_execution(bsrv):
    before = bf.get_stats(bsrv, "delay")
    vals = [bf.values_for(i) for i in range(8)]
    results, _ = _send_together(bsrv, "delay", [bf.infer_body(v) for v in vals])
    for i, res in enumerate(results):
        bf.check_echo(res["resp"], vals[i])
    after = _wait_counted(bsrv, "delay", before, 8)
    assert _delta(after, before, "execution_count") == 1, \
        f"8 requests sent together became {bf.batch_counts_delta(after, before)} (size: executions)"
    assert bf.batch_counts_delta(after, before) == {8: 1}
    assert _delta(after, before, "inference_count") == 8


# --------------------------------------------------------- preferred ---

def test_preferred_batch_size_is_sent_without_waiting_for_the_delay(bsrv):
    before = bf.get_stats(bsrv, "preferred")
    vals = [bf.values_for(i) for i in range(4)]
    results, t_release = _send_together(bsrv, "preferred", [bf.infer_body(v) for v in vals])
    for i, res in enumerate(results):
        bf.check_echo(res["resp"], vals[i])
    last = max(res["t_done"] for res in results) - t_release
    # Structural bound: short of the preferred size they would wait the 2 s delay.
    assert last < 1.5, f"4 requests (preferred_batch_size 4) answered after {last:.3f}s: they waited for the delay"
    after = _wait_counted(bsrv, "preferred", before, 4)
    assert _delta(after, before, "execution_count") == 1
    assert bf.batch_counts_delta(after, before) == {4: 1}


def test_preferred_batch_size_counts_batch_dimensions(bsrv):
    """Two requests of batch 2 make the preferred batch of 4."""
    before = bf.get_stats(bsrv, "preferred")
    vals = [bf.values_for(i, 2) for i in range(2)]
    results, t_release = _send_together(bsrv, "preferred", [bf.infer_body(v) for v in vals])
    for i, res in enumerate(results):
        bf.check_echo(res["resp"], vals[i])
    last = max(res["t_done"] for res in results) - t_release
    assert last < 1.5, f"2 requests of batch 2 answered after {last:.3f}s: they waited for the 2 s delay"
    after = _wait_counted(bsrv, "preferred", before, 2)
    assert bf.batch_counts_delta(after, before) == {4: 1}
    assert _delta(after, before, "inference_count") == 4


def test_short_of_preferred_batch_size_waits_for_the_delay(bsrv):
    """The control for the tests above: a lone request does wait the 2 s delay."""
    vals = bf.values_for(5)
    r, dt = _lone_request(bsrv, "preferred", bf.infer_body(vals))
    bf.check_echo(r, vals)
    assert dt >= 1.8, f"lone request answered after {dt:.3f}s despite max_queue_delay_microseconds 2000000"
    assert dt < 2 * bf.HANG_S


# ---------------------------------------------------------- priority ---

def test_priority_request_overtakes_queued_default_requests(bsrv):
    """One request runs (200 ms), one waits, then 3 default-level requests,
    then one with priority 1: it completes before the 3 default ones."""
    s = bf.Sender(bsrv)
    occupy = [s.start("priority", bf.infer_body(bf.values_for(i))) for i in range(2)]
    time.sleep(ORDER_GAP_S)
    defaults = []
    for i in range(3):
        defaults.append(s.start("priority", bf.infer_body(bf.values_for(10 + i))))
        time.sleep(ORDER_GAP_S)
    high = s.start("priority", bf.infer_body(bf.values_for(20), parameters={"priority": 1}))
    results = s.join()
    for idx, vi in zip(occupy + defaults + [high], [0, 1, 10, 11, 12, 20]):
        bf.check_echo(results[idx]["resp"], bf.values_for(vi))
    t_high = results[high]["t_done"]
    late = [i for i in defaults if results[i]["t_done"] < t_high]
    order = sorted(range(len(results)), key=lambda i: results[i]["t_done"])
    assert not late, (f"default-priority requests {late} completed before the priority-1 request "
                      f"(completion order {order}; priority request {high}, defaults {defaults})")


def test_priority_zero_means_default_level(bsrv):
    r, _ = _lone_request(bsrv, "priority", bf.infer_body(bf.values_for(30), parameters={"priority": 0}))
    bf.check_echo(r, bf.values_for(30))


# ------------------------------------------------------ queue policy ---

def test_timeout_reject_rejects_a_request_that_waited_too_long(bsrv):
    s = bf.Sender(bsrv)
    first = s.start("timeout_reject", bf.infer_body(bf.values_for(1)))
    time.sleep(ORDER_GAP_S)
    second = s.start("timeout_reject", bf.infer_body(bf.values_for(2)))
    results = s.join()
    bf.check_echo(results[first]["resp"], bf.values_for(1))
    res = results[second]
    assert 400 <= res["status"] < 600, \
        f"request queued behind a 300 ms execution with a 100 ms REJECT timeout got HTTP {res['status']}: {res['text'][:300]}"
    msg = _error_text(res)
    assert "timeout" in msg.lower(), f"rejection does not say timeout: {msg!r}"
    waited = res["t_done"] - res["t_sent"]
    assert waited >= 0.09, f"rejected after {waited:.3f}s, before its 100 ms timeout could expire"


def test_timeout_delay_still_serves_a_request_that_waited_too_long(bsrv):
    s = bf.Sender(bsrv)
    first = s.start("timeout_delay", bf.infer_body(bf.values_for(1)))
    time.sleep(ORDER_GAP_S)
    second = s.start("timeout_delay", bf.infer_body(bf.values_for(2)))
    results = s.join()
    bf.check_echo(results[first]["resp"], bf.values_for(1))
    bf.check_echo(results[second]["resp"], bf.values_for(2))
    # Design lower bound: it ran after the first one's 300 ms execution, then its own.
    span = results[second]["t_done"] - results[first]["t_sent"]
    assert span >= 0.57, f"second request done {span:.3f}s after the first was sent: the executions overlapped"


def test_timeout_override_with_delay_action_still_served(bsrv):
    s = bf.Sender(bsrv)
    first = s.start("timeout_delay", bf.infer_body(bf.values_for(1)))
    time.sleep(ORDER_GAP_S)
    short = s.start("timeout_delay", bf.infer_body(bf.values_for(3), parameters={"timeout": 50000}))
    results = s.join()
    bf.check_echo(results[first]["resp"], bf.values_for(1))
    bf.check_echo(results[short]["resp"], bf.values_for(3))


def test_max_queue_size_rejects_only_the_overflow(bsrv):
    """One request runs (300 ms), 2 wait (max_queue_size 2); the next 3 are
    rejected at once, and only they."""
    s = bf.Sender(bsrv)
    running = s.start("qsize", bf.infer_body(bf.values_for(0)))
    time.sleep(2 * ORDER_GAP_S)
    queued = []
    for i in (1, 2):
        queued.append(s.start("qsize", bf.infer_body(bf.values_for(i))))
        time.sleep(ORDER_GAP_S)
    over = []
    for i in (3, 4, 5):
        over.append(s.start("qsize", bf.infer_body(bf.values_for(i))))
        time.sleep(ORDER_GAP_S)
    results = s.join()
    for idx, vi in zip([running] + queued, [0, 1, 2]):
        bf.check_echo(results[idx]["resp"], bf.values_for(vi))
    last_queued_done = max(results[i]["t_done"] for i in queued)
    for idx in over:
        res = results[idx]
        assert res["status"] == 503, \
            f"request over max_queue_size got HTTP {res['status']} (expected 503): {res['text'][:300]}"
        msg = _error_text(res)
        assert "queue size" in msg.lower(), f"rejection does not mention the queue size: {msg!r}"
        # Rejected at once, not after waiting behind the queued ones.
        assert res["t_done"] < last_queued_done, "an over-the-limit request was answered after the queued ones"


def test_queue_policies_leave_the_server_healthy(bsrv):
    for m in bf.BATCH_MODELS:
        r = bsrv.get(f"/v2/models/{m}/ready")
        assert r.status_code == 200, (m, r.status_code)
    r = bsrv.get("/v2/health/ready")
    assert r.status_code == 200
    assert bsrv.alive()


# ------------------------------------------------------- input counts ---

def test_missing_required_input_with_optional_ones_says_the_range(bsrv):
    """A model with optional inputs: Triton words the count as a range
    (required..all); without optional inputs the exact count (test_decoupled,
    test_generate)."""
    base = bsrv.base
    fail = {"name": "FAIL", "datatype": "BOOL", "shape": [1, 1], "data": [False]}
    r = requests.post(f"{base}/v2/models/plain/infer", json={"inputs": [fail]}, timeout=30)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == (
        "[request id: <id_unknown>] expected number of inputs between 1 and 2 but got 1 "
        "inputs for model 'plain'. Got input(s) ['FAIL'], but missing required input(s) "
        "['INPUT0']. Please provide all required input(s).")
    r = requests.post(f"{base}/v2/models/plain/infer", json={"id": "7", "inputs": []}, timeout=30)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == (
        "[request id: 7] expected number of inputs between 1 and 2 but got 0 inputs for "
        "model 'plain'. Got input(s) [], but missing required input(s) ['INPUT0']. "
        "Please provide all required input(s).")
