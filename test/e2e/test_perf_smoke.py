"""inferd-perf (bench/perf) against the session server: a short smoke test.

Each protocol (HTTP binary tensors, HTTP JSON, gRPC unary, gRPC streaming)
runs concurrency 1 and 2 on identity_fp32 with batch 2 and 0.5 s windows.
The report must be perf_analyzer's, and because inferd-perf reads the
server statistics only while no request is in flight, the client's request
count must equal the server's success-count delta in every step, with an
inference count of twice that (batch 2). Also: --raw-get, --json-summary and
-f, and the errors for an unknown model or an unreachable server.
"""

import json
import os
import re
import subprocess

import pytest

import e2e_helpers as h

TIMEOUT_S = 20  # only so that nothing hangs; every run takes ~1.5 s


def perf_binary():
    exe = h.build_dir() / "inferd-perf"
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        raise AssertionError(f"{exe} not found or not executable; run `make` first")
    return exe


def run_perf(args):
    proc = subprocess.run([str(perf_binary())] + [str(a) for a in args], capture_output=True,
                          timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def steps(out):
    """[(concurrency, step text)] of a perf_analyzer-style report."""
    parts = re.split(r"^Request concurrency: (\d+)\n", out, flags=re.M)
    return [(int(parts[i]), parts[i + 1]) for i in range(1, len(parts), 2)]


def field(text, name):
    m = re.search(rf"^\s+{re.escape(name)}: (\d+)", text, re.M)
    assert m, f"no '{name}' line in:\n{text}"
    return int(m.group(1))


MODES = {
    "http-binary": lambda s: ["-i", "http", "-u", f"127.0.0.1:{s.http_port}", "--http-format", "binary"],
    "http-json": lambda s: ["-i", "http", "-u", f"127.0.0.1:{s.http_port}", "--http-format", "json"],
    "grpc": lambda s: ["-i", "grpc", "-u", f"127.0.0.1:{s.grpc_port}"],
    "grpc-stream": lambda s: ["-i", "grpc", "-u", f"127.0.0.1:{s.grpc_port}", "--streaming"],
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_counts_match_server(server, mode, tmp_path):
    summary = tmp_path / "summary.json"
    csv = tmp_path / "results.csv"
    rc, out, err = run_perf(["-m", "identity_fp32", "-b", "2", "--concurrency-range", "1:2:1",
                             "--measurement-interval", "500", "--warmup", "100",
                             "--json-summary", summary, "-f", csv] + MODES[mode](server))
    assert rc == 0, f"exit {rc}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
    assert re.search(r"^\s+Throughput: [\d.e+]+ infer/sec$", out, re.M), out
    assert re.search(r"^\s+p99 latency: \d+ usec$", out, re.M), out
    got = steps(out)
    assert [c for c, _ in got] == [1, 2], out
    for conc, text in got:
        n = field(text, "Request count")
        assert n > 0, text
        assert field(text, "Successful request count") == n, f"concurrency {conc}:\n{text}"
        assert field(text, "Inference count") == 2 * n, f"concurrency {conc}:\n{text}"
        assert "Error count" not in text, text
    assert "Inferences/Second vs. Client Average Batch Latency" in out

    doc = json.loads(summary.read_text())
    assert [s["concurrency"] for s in doc["steps"]] == [1, 2]
    for s, (_, text) in zip(doc["steps"], got):
        assert s["request_count"] == field(text, "Request count")
        assert s["server"]["success_count"] == s["request_count"]
    rows = csv.read_text().splitlines()
    assert rows[0].startswith("Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,")
    assert rows[0].endswith(",p50 latency,p90 latency,p95 latency,p99 latency")
    assert [r.split(",")[0] for r in rows[1:]] == ["1", "2"]


def test_raw_get(server):
    rc, out, err = run_perf(["--raw-get", "/v2/health/live", "-u", f"127.0.0.1:{server.http_port}",
                             "--measurement-interval", "300", "--warmup", "100"])
    assert rc == 0, f"exit {rc}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
    (conc, text), = steps(out)
    assert conc == 1 and field(text, "Request count") > 0
    assert re.search(r"^\s+p99 latency: \d+ usec$", text, re.M), out
    assert "Server:" not in text


def test_unknown_model(server):
    rc, out, err = run_perf(["-m", "no_such_model", "-u", f"127.0.0.1:{server.http_port}",
                             "--measurement-interval", "300", "--warmup", "0"])
    assert rc != 0
    assert "no_such_model" in err and "metadata" in err, err


def test_unknown_model_grpc(server):
    rc, out, err = run_perf(["-m", "no_such_model", "-i", "grpc", "-u", f"127.0.0.1:{server.grpc_port}",
                             "--measurement-interval", "300", "--warmup", "0"])
    assert rc != 0
    assert "no_such_model" in err and "ModelMetadata" in err, err


def test_unreachable_server():
    (port,) = h.free_ports(1)
    rc, out, err = run_perf(["-m", "identity_fp32", "-u", f"127.0.0.1:{port}",
                             "--measurement-interval", "300", "--warmup", "0"])
    assert rc != 0
    assert "cannot connect" in err, err
