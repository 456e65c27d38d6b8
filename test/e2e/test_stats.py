"""Statistics extension (GET /v2/models[/{m}[/versions/{v}]]/stats) on a
fresh server for this module, serving test/models/batch_repo.

A known sequence goes to `plain` (default scheduler: one request per
execution, batchcost backend with a 1 ms cost per execute):
  3 successful requests of batch 1, 2 and 3, 1 request the backend fails
  (FAIL true, batch 1), 2 requests refused by validation (wrong datatype)
  and 1 request for an unknown model.
Triton's accounting: validation refusals are not counted; the failed request
counts in `fail` (not in queue/compute*, nor in inference_count, which sums
the batch sizes of successful requests); execution_count and batch_stats
come from the backend's batch reports (4 executions, the failed one too).
The layout is the tritonserver 2.47 capture's (test/e2e/reference).
"""

import time

import pytest

import batch_fixtures as bf
import e2e_helpers as h

# gRPC comparison through the gRPC tests' helpers (generated messages, Client);
# skipped with the reason when they (or python3-grpcio) are not available.
try:
    import grpc_helpers as gh
    from grpc_helpers import grpc_stubs  # noqa: F401  (a fixture)
except ImportError as _e:
    gh = None
    _GRPC_WHY = f"gRPC helpers not available ({_e}): gRPC ModelStatistics comparison skipped"

    @pytest.fixture(scope="session")
    def grpc_stubs():
        pytest.skip(_GRPC_WHY)

MODEL = "plain"
DURATIONS = ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output",
             "cache_hit", "cache_miss")
COST_NS = 1_000_000  # batch_cost_ms of `plain`: every execute sleeps at least this long


@pytest.fixture(scope="module")
def ssrv(tmp_path_factory):
    yield from bf.module_batch_server(tmp_path_factory, "stats")


@pytest.fixture(scope="module")
def seq(ssrv):
    """Runs the known sequence once; returns its facts and the final statistics."""
    t_start_ms = int(time.time() * 1000)
    sent = []

    def post(body, model=MODEL):
        r = ssrv.post(f"/v2/models/{model}/infer", json=body)
        sent.append((model, body, r.status_code, r.text[:300]))
        return r

    ok = {}
    for k in (1, 2, 3):
        vals = bf.values_for(k, k)
        ok[k] = post(bf.infer_body(vals))
        bf.check_echo(ok[k], vals)
        if k == 1:
            bad = post({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 2], "data": [1.0, 2.0]}]})
            assert bad.status_code == 400, f"wrong datatype: HTTP {bad.status_code} {bad.text[:300]}"
            h.error_of(bad)
        if k == 2:
            failed = post(bf.infer_body(bf.values_for(9), fail=True))
            assert failed.status_code == 500, f"FAIL request: HTTP {failed.status_code} {failed.text[:300]}"
            assert "requested failure" in h.error_of(failed)
            bad = post({"inputs": [{"name": "INPUT0", "datatype": "INT64", "shape": [2, 2], "data": [1, 2, 3, 4]}]})
            assert bad.status_code == 400, f"wrong datatype: HTTP {bad.status_code} {bad.text[:300]}"
            h.error_of(bad)
            unknown = post(bf.infer_body(bf.values_for(8)), model="nope")
            assert 400 <= unknown.status_code < 500, unknown.text
    st = bf.wait_stats(ssrv, MODEL, lambda s: bf.requests_counted(s) >= 4, "4 counted requests")
    time.sleep(0.2)  # anything counted late (it must not be) shows up now
    st = bf.get_stats(ssrv, MODEL)
    t_end_ms = int(time.time() * 1000)
    return {"stats": st, "t_start_ms": t_start_ms, "t_end_ms": t_end_ms, "sent": sent}


def _ref_entry():
    body = h.reference_response("GET", "/v2/models/identity_fp32/stats", 200)["body_json"]
    return body["model_stats"][0]


# ------------------------------------------------------------ counts ---

def test_success_and_fail_counts(seq):
    s = seq["stats"]["inference_stats"]
    assert s["success"]["count"] == 3, s
    assert s["fail"]["count"] == 1, s


def test_validation_refusals_are_not_counted(seq):
    s = seq["stats"]["inference_stats"]
    assert s["success"]["count"] + s["fail"]["count"] == 4, \
        f"2 requests refused by validation must not be counted: {s}"


def test_execution_count_counts_every_execution(seq):
    assert seq["stats"]["execution_count"] == 4, seq["stats"]


def test_inference_count_sums_batch_sizes_of_successful_requests(seq):
    # 1 + 2 + 3; the failed request (batch 1) is not an inference.
    assert seq["stats"]["inference_count"] == 6, seq["stats"]


def test_queue_and_compute_count_successful_requests(seq):
    s = seq["stats"]["inference_stats"]
    for k in ("queue", "compute_input", "compute_infer", "compute_output"):
        assert s[k]["count"] == 3, (k, s)


def test_batch_stats_exact(seq):
    bs = seq["stats"]["batch_stats"]
    assert [b["batch_size"] for b in bs] == sorted(b["batch_size"] for b in bs), \
        f"batch_stats not in batch_size order: {bs}"
    assert bf.batch_counts(seq["stats"]) == {1: 2, 2: 1, 3: 1}, bs
    for b in bs:
        n = b["compute_infer"]["count"]
        for k in ("compute_input", "compute_infer", "compute_output"):
            assert b[k]["count"] == n, (k, b)
            assert b[k]["ns"] > 0, (k, b)
        assert b["compute_infer"]["ns"] >= n * COST_NS, \
            f"batch {b['batch_size']}: {n} executions of >= 1 ms took {b['compute_infer']['ns']} ns"
    assert sum(b["compute_infer"]["count"] for b in bs) == seq["stats"]["execution_count"]


# --------------------------------------------------------- durations ---

def test_durations(seq):
    s = seq["stats"]["inference_stats"]
    for k in ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output"):
        assert s[k]["ns"] > 0, (k, s)
    parts = sum(s[k]["ns"] for k in ("queue", "compute_input", "compute_infer", "compute_output"))
    assert parts <= s["success"]["ns"], \
        f"queue + compute_* ({parts} ns) exceed the successful requests' total duration {s['success']['ns']} ns"
    # Each successful request's execute slept 1 ms between compute start and end.
    assert s["compute_infer"]["ns"] >= 3 * COST_NS, s
    assert s["success"]["ns"] >= 3 * COST_NS, s
    assert s["fail"]["ns"] >= COST_NS, s


def test_cache_stats_are_zero(seq):
    s = seq["stats"]["inference_stats"]
    for k in ("cache_hit", "cache_miss"):
        assert s[k] == {"count": 0, "ns": 0}, (k, s)


def test_last_inference_is_wall_clock_ms(seq):
    li = seq["stats"]["last_inference"]
    assert seq["t_start_ms"] - 2000 <= li <= seq["t_end_ms"] + 2000, \
        f"last_inference {li} not within the sequence [{seq['t_start_ms']}, {seq['t_end_ms']}] (ms since epoch)"


# ------------------------------------------------------------ layout ---

def test_layout_matches_triton(seq):
    st, ref = seq["stats"], _ref_entry()
    assert st["name"] == MODEL and st["version"] == "1", st
    assert set(st) == set(ref), f"keys {sorted(st)} vs Triton's {sorted(ref)}"
    assert set(st["inference_stats"]) == set(ref["inference_stats"]) == set(DURATIONS)
    for k, v in st["inference_stats"].items():
        assert set(v) == {"count", "ns"}, (k, v)
        assert all(type(x) is int and x >= 0 for x in v.values()), (k, v)
    for b in st["batch_stats"]:
        assert set(b) == set(ref["batch_stats"][0]), b
        assert type(b["batch_size"]) is int
    for k in ("last_inference", "inference_count", "execution_count"):
        assert type(st[k]) is int, (k, st[k])
    assert st["response_stats"] == {}, st["response_stats"]
    assert st["memory_usage"] == [], st["memory_usage"]


def test_unused_model_is_all_zero(ssrv, seq):
    st = bf.get_stats(ssrv, "qsize")
    assert st["version"] == "1"
    assert st["inference_count"] == 0 and st["execution_count"] == 0, st
    assert st["last_inference"] == 0, st
    for k in DURATIONS:
        assert st["inference_stats"][k] == {"count": 0, "ns": 0}, (k, st)
    assert st["batch_stats"] == [], st


# --------------------------------------------------------- endpoints ---

def test_all_models_stats_lists_every_model(ssrv, seq):
    r = ssrv.get("/v2/models/stats")
    assert r.status_code == 200, r.text
    entries = r.json()["model_stats"]
    got = sorted((e["name"], e["version"]) for e in entries)
    assert got == sorted((m, "1") for m in bf.BATCH_MODELS), got
    plain = [e for e in entries if e["name"] == MODEL][0]
    assert plain == bf.get_stats(ssrv, MODEL), "the /v2/models/stats entry differs from /v2/models/plain/stats"


def test_version_stats_equal_model_stats(ssrv, seq):
    assert bf.get_stats(ssrv, MODEL, version="1") == bf.get_stats(ssrv, MODEL) == seq["stats"]


def test_unknown_model_is_400(ssrv):
    r = ssrv.get("/v2/models/nope/stats")
    assert r.status_code == 400, (r.status_code, r.text)
    err = h.error_of(r)
    assert "nope" in err, err
    assert err == h.reference_response("GET", "/v2/models/nope/stats", 400)["body_json"]["error"]


def test_unknown_model_version_path_is_400(ssrv):
    r = ssrv.get("/v2/models/nope/versions/1/stats")
    assert r.status_code == 400, (r.status_code, r.text)
    assert "nope" in h.error_of(r)


def test_unknown_version_is_400(ssrv):
    r = ssrv.get(f"/v2/models/{MODEL}/versions/7/stats")
    assert r.status_code == 400, (r.status_code, r.text)
    h.error_of(r)


# -------------------------------------------------------------- gRPC ---

@pytest.fixture(scope="module")
def sgrpc(grpc_stubs, ssrv):
    c = gh.connect(ssrv, grpc_stubs)
    yield c
    c.close()


def test_grpc_model_statistics_match_http(sgrpc, ssrv, seq):
    grpc_entries = bf.grpc_stats_to_dicts(sgrpc.model_statistics(MODEL))
    assert len(grpc_entries) == 1, grpc_entries
    assert grpc_entries[0] == bf.comparable(bf.get_stats(ssrv, MODEL))
    versioned = bf.grpc_stats_to_dicts(sgrpc.model_statistics(MODEL, "1"))
    assert versioned == grpc_entries


def test_grpc_all_models_statistics_match_http(sgrpc, ssrv, seq):
    grpc_entries = bf.grpc_stats_to_dicts(sgrpc.model_statistics())
    r = ssrv.get("/v2/models/stats")
    assert r.status_code == 200, r.text
    http_entries = [bf.comparable(e) for e in r.json()["model_stats"]]
    key = lambda e: (e["name"], e["version"])  # noqa: E731
    assert sorted(grpc_entries, key=key) == sorted(http_entries, key=key)


def test_grpc_unknown_model_is_an_error(sgrpc):
    err = gh.rpc_error(sgrpc.model_statistics, "nope")
    assert "nope" in (err.details() or ""), gh.describe(err)
