"""inferd-perf --streaming on a decoupled model (issue 11).

A private server loads test/models/decoupled_repo (repeat_int32 on the test
backend `repeat`, whose .so is copied in from the build). inferd-perf runs
one short closed-loop step with IN of 10 zero elements and DELAY of 10
zeros, so each request has 10 responses and a flags-only final message.
Checks: exit 0; responses = 10 x requests (report and --json-summary);
the server counted every request once; first-response latencies never
above the complete-request ones (both are measured on the same requests,
so this holds for the average and every percentile); the CSV has the extra
columns. Also: a decoupled model without --streaming is refused (exit 2).
No timing assertions.
"""

import csv
import json
import re
import shutil

import pytest

import e2e_helpers as h
from test_perf_smoke import run_perf

REPO_SRC = h.REPO_ROOT / "test" / "models" / "decoupled_repo"
N = 10


@pytest.fixture(scope="module")
def dsrv(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("perf_streaming")
    repo = tmp / "repo"
    shutil.copytree(REPO_SRC / "repeat_int32", repo / "repeat_int32")
    so = h.build_dir() / "test" / "backends" / "repeat" / "libtriton_repeat.so"
    if not so.is_file():
        raise AssertionError(f"test backend not built at {so}; run `make` first")
    shutil.copy2(so, repo / "repeat_int32" / so.name)
    s = h.start_server(tmp / "srv", [repo], extra=["--exit-timeout-secs=10"],
                       wait_models=("repeat_int32",))
    try:
        yield s
    finally:
        s.stop(check=True)


def field(text, name):
    m = re.search(rf"^\s+{re.escape(name)}: (\d+)", text, re.M)
    assert m, f"no '{name}' line in:\n{text}"
    return int(m.group(1))


def base_args(s):
    return ["-m", "repeat_int32", "-i", "grpc", "-u", f"127.0.0.1:{s.grpc_port}",
            "--shape", f"IN:{N}", "--shape", f"DELAY:{N}", "--input-data", "zero",
            "--measurement-interval", "300", "--warmup", "50"]


def test_decoupled_streaming(dsrv, tmp_path):
    summary = tmp_path / "summary.json"
    out_csv = tmp_path / "results.csv"
    rc, out, err = run_perf(base_args(dsrv) + ["--streaming", "--concurrency-range", "1:2",
                                               "--json-summary", summary, "-f", out_csv])
    assert rc == 0, f"exit {rc}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
    assert "Decoupled model" in out, out
    doc = json.loads(summary.read_text())
    assert doc["protocol"] == "grpc-stream"
    assert [s["concurrency"] for s in doc["steps"]] == [1, 2]
    for s in doc["steps"]:
        n = s["request_count"]
        assert n > 0 and s["errors"] == 0, s
        assert s["responses"] == N * n, s
        f = s["first_response"]
        assert f["count"] == n, s
        assert s["server"]["success_count"] == n, s
        for k in ("avg_latency_us", "p50_latency_us", "p90_latency_us", "p95_latency_us",
                  "p99_latency_us"):
            assert f[k] <= s[k], (k, s)
    step1 = out.split("Request concurrency: 2")[0]
    n = field(step1, "Request count")
    assert field(step1, "Response count") == N * n, step1
    assert field(step1, "First response count") == n, step1
    assert field(step1, "First response p99 latency") <= field(step1, "p99 latency"), step1
    rows = list(csv.DictReader(out_csv.read_text().splitlines()))
    assert len(rows) == 2
    assert float(rows[0]["Responses/Second"]) > 0, rows
    assert int(rows[0]["First Response p50 latency"]) <= int(rows[0]["p50 latency"]), rows


def test_decoupled_needs_streaming(dsrv):
    rc, out, err = run_perf(base_args(dsrv) + ["--concurrency-range", "1"])
    assert rc == 2, f"exit {rc}\n{out}\n{err}"
    assert "decoupled" in err, err
