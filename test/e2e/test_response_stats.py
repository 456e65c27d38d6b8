"""The statistics extension's response_stats (issue 28), as Triton 24.x
records them: per response index ("0", "1", ...) of a decoupled model's
requests, what the backend reported through
TRITONBACKEND_ModelInstanceResponseStatistics* and
TRITONBACKEND_ModelInstanceReportResponseStatistics, over HTTP
/v2/models/<m>/stats and gRPC ModelStatistics alike.

square_int32 runs the `square` test backend (test/models/backends/square),
which reports every response as Triton's square backend does, with the
parameters of Triton's qa/L0_response_statistics: of N responses the last
CUSTOM_EMPTY_COUNT are empty (reported, not sent) and the CUSTOM_FAIL_COUNT
before them fail. The expected counts follow that test's bookkeeping.

Triton's core records nothing by itself for responses a backend sends
(TRITONBACKEND_ResponseSend, ResponseFactorySendFlags): a backend that does
not report (the `repeat` test backend, the Python backend, whose decoupled
sender does not call the API either) leaves response_stats empty.
"""

import re
import shutil

import grpc
import numpy as np
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as gh
import python_fixtures as pf
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

DECOUPLED_REPO = h.REPO_ROOT / "test" / "models" / "decoupled_repo"
HANG_S = 60
INFER_DELAY_NS = 20_000_000
OUTPUT_DELAY_NS = 10_000_000
FAIL, EMPTY = 2, 1
FIELDS = ("compute_infer", "compute_output", "success", "fail", "empty_response", "cancel")

SQUARE_CONFIG = f"""
name: "square_int32"
backend: "square"
max_batch_size: 0
model_transaction_policy {{ decoupled: True }}
input [ {{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [ {{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }} ]
parameters [
  {{ key: "CUSTOM_INFER_DELAY_NS" value: {{ string_value: "{INFER_DELAY_NS}" }} }},
  {{ key: "CUSTOM_OUTPUT_DELAY_NS" value: {{ string_value: "{OUTPUT_DELAY_NS}" }} }},
  {{ key: "CUSTOM_FAIL_COUNT" value: {{ string_value: "{FAIL}" }} }},
  {{ key: "CUSTOM_EMPTY_COUNT" value: {{ string_value: "{EMPTY}" }} }}
]
"""


def backend_so(name):
    return h.build_dir() / "test" / "backends" / name / f"libtriton_{name}.so"


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("respstats")
    repo = tmp / "repo"
    (repo / "square_int32" / "1").mkdir(parents=True)
    (repo / "square_int32" / "config.pbtxt").write_text(SQUARE_CONFIG)
    shutil.copytree(DECOUPLED_REPO / "repeat_int32", repo / "repeat_int32")
    for m, b in (("square_int32", "square"), ("repeat_int32", "repeat")):
        so = backend_so(b)
        assert so.is_file(), f"test backend not built at {so}; run `make` first"
        shutil.copy2(so, repo / m / so.name)
    s = h.start_server(tmp / "srv", [repo], wait_models=("square_int32", "repeat_int32"))
    try:
        yield s
    finally:
        s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = gh.connect(srv, grpc_stubs)
    yield c
    c.close()


def stream(gc, reqs):
    call = gc.model_stream_infer(iter(list(reqs)), timeout=HANG_S)
    out = list(call)
    assert call.code() == grpc.StatusCode.OK, call.details()
    return out


def square(gc, n, rid):
    req = gh.infer_request(gc.pb, "square_int32", [("IN", "INT32", [1], np.array([n], dtype=np.int32))],
                           request_id=rid)
    return stream(gc, [req])


def http_stats(srv, model):
    r = requests.get(srv.url(f"/v2/models/{model}/stats"), timeout=10)
    assert r.status_code == 200, r.text
    return r


def grpc_response_stats(gc, model):
    m = gc.model_statistics(model).model_stats[0]
    return {k: {f: {"count": int(getattr(v, f).count), "ns": int(getattr(v, f).ns)} for f in FIELDS}
            for k, v in m.response_stats.items()}


def expected_kind(i, n):
    """qa/L0_response_statistics: success, then FAIL failures, then EMPTY empty."""
    if i + FAIL + EMPTY < n:
        return "success"
    if i + EMPTY < n:
        return "fail"
    return "empty_response"


def add_expected(counts, n):
    for i in range(n):
        c = counts.setdefault(str(i), {f: 0 for f in FIELDS})
        kind = expected_kind(i, n)
        c["compute_infer"] += 1
        if kind != "empty_response":
            c["compute_output"] += 1
        c[kind] += 1


def check(srv, gc, counts):
    st = http_stats(srv, "square_int32").json()["model_stats"][0]
    rs = st["response_stats"]
    assert set(rs) == set(counts), rs
    for k, c in counts.items():
        assert set(rs[k]) == set(FIELDS), rs[k]
        for f in FIELDS:
            assert rs[k][f]["count"] == c[f], (k, f, rs[k])
        # The backend's sleeps bound the durations from below.
        assert rs[k]["compute_infer"]["ns"] >= c["compute_infer"] * INFER_DELAY_NS, rs[k]
        assert rs[k]["compute_output"]["ns"] >= c["compute_output"] * OUTPUT_DELAY_NS, rs[k]
        assert rs[k]["cancel"] == {"count": 0, "ns": 0}, rs[k]
    assert grpc_response_stats(gc, "square_int32") == rs


def test_square_response_stats_accumulate(srv, gc):
    """Three requests of 4, 6 and 3 responses, as Triton's QA test sends
    them: each index accumulates over the requests."""
    counts = {}
    for n, rid in ((4, "a"), (6, "b"), (3, "c")):
        msgs = square(gc, n, rid)
        # n - EMPTY sent, FAIL of them errors (the flags-only FINAL is
        # not a message unless the client asks for it).
        assert len(msgs) == n - EMPTY, [str(m)[:200] for m in msgs]
        assert sum(1 for m in msgs if "simulated failure" in m.error_message) == FAIL, [m.error_message for m in msgs]
        add_expected(counts, n)
        check(srv, gc, counts)


def test_response_stats_keys_in_map_order(srv, gc):
    """Keys are strings, written in the order of Triton's std::map: "10"
    sorts before "2"."""
    square(gc, 12, "order")
    text = http_stats(srv, "square_int32").text
    body = text[text.index('"response_stats":{'):]
    keys = [int(k) for k in re.findall(r'"(\d+)":\{"compute_infer"', body)]
    assert keys == sorted(keys, key=str), keys
    assert sorted(keys) == list(range(len(keys))) and len(keys) >= 12


def test_no_report_no_response_stats(srv, gc):
    """A backend that sends responses without reporting them (repeat)
    leaves response_stats empty, as Triton's core records none itself."""
    req = gh.infer_request(gc.pb, "repeat_int32",
                           [("IN", "INT32", [3], np.array([1, 2, 3], dtype=np.int32)),
                            ("DELAY", "UINT32", [3], np.zeros(3, dtype=np.uint32)),
                            ("WAIT", "UINT32", [1], np.zeros(1, dtype=np.uint32))], request_id="r")
    msgs = stream(gc, [req])
    assert len(msgs) >= 3
    assert http_stats(srv, "repeat_int32").json()["model_stats"][0]["response_stats"] == {}
    assert grpc_response_stats(gc, "repeat_int32") == {}


# ------------------------------------------------------------- Python ---

@pytest.fixture(scope="module")
def pysrv(tmp_path_factory):
    s = pf.start_python_server(tmp_path_factory.mktemp("respstats_py"), ("py_repeat",), ("py_repeat",))
    try:
        yield s
    finally:
        s.stop(check=True)


def test_python_decoupled_response_stats_empty(pysrv, grpc_stubs):  # noqa: F811
    """Triton's Python backend sends a decoupled model's responses through
    TRITONBACKEND_ResponseSend without reporting their statistics, so its
    response_stats stay empty; inferd's Python backend does the same."""
    c = gh.connect(pysrv, grpc_stubs)
    try:
        req = gh.infer_request(c.pb, "py_repeat", [("IN", "INT32", [2], np.array([4, 5], dtype=np.int32))],
                               request_id="p")
        call = c.model_stream_infer(iter([req]), timeout=HANG_S)
        msgs = list(call)
        assert call.code() == grpc.StatusCode.OK and len(msgs) >= 2
        st = http_stats(pysrv, "py_repeat").json()["model_stats"][0]
        assert st["inference_stats"]["success"]["count"] >= 1, st
        assert st["response_stats"] == {}, st["response_stats"]
        assert grpc_response_stats(c, "py_repeat") == {}
    finally:
        c.close()
