"""inferd-perf --service-kind=triton_c_api: the server embedded in the tool.

perf_analyzer's C API mode: inferd-perf dlopens build/lib/libtritonserver.so
(--triton-server-directory=build), creates a server on test/models/repo with
TRITONSERVER_ServerNew (explicit model control: only the model under test is
loaded, with the backends of build/backends) and sends its requests with
TRITONSERVER_ServerInferAsync. The smoke test runs concurrency 1 and 2 on
identity_fp32 with batch 2 and 0.5 s windows: the report must be
perf_analyzer's, and as over the sockets the client's request count must
equal the server's success-count delta (read with
TRITONSERVER_ServerModelStatistics) in every step, with an inference count
twice that; concurrency 4 with --spin-us and the open loop too. Also the
errors: no library in the directory, an unknown model,
a missing --model-repository, options that do not apply in-process, and a
decoupled model (not measured in this mode). Last, over HTTP to the session
server, --cpu-pid: the server's CPU time per request beside the tool's.
"""

import json
import os
import re
import subprocess

import e2e_helpers as h
from test_perf_smoke import field, perf_binary, steps

TIMEOUT_S = 60  # only so that nothing hangs; a run takes ~2 s

REPO = h.REPO_ROOT / "test" / "models" / "repo"


def run_capi(args, server_dir=None, repo=REPO):
    cmd = [str(perf_binary()), "--service-kind=triton_c_api",
           f"--triton-server-directory={server_dir or h.build_dir()}",
           f"--model-repository={repo}"] + [str(a) for a in args]
    proc = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def test_counts_match_server(tmp_path):
    summary = tmp_path / "summary.json"
    csv = tmp_path / "results.csv"
    rc, out, err = run_capi(["-m", "identity_fp32", "-b", "2", "--concurrency-range", "1:2:1",
                             "--measurement-interval", "500", "--warmup", "100",
                             "--json-summary", summary, "-f", csv])
    assert rc == 0, f"exit {rc}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
    assert "Service Kind: Triton C API" in out, out
    assert re.search(r"^\s+Throughput: [\d.e+]+ infer/sec$", out, re.M), out
    assert re.search(r"^\s+p99 latency: \d+ usec$", out, re.M), out
    assert re.search(r"^\s+CPU of this process \(the embedded server included\): [\d.]+ usec per "
                     r"request$", out, re.M), out
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
    assert doc["protocol"] == "triton_c_api"
    assert [s["concurrency"] for s in doc["steps"]] == [1, 2]
    for s, (_, text) in zip(doc["steps"], got):
        assert s["request_count"] == field(text, "Request count")
        assert s["server"]["success_count"] == s["request_count"]
        assert s["cpu_self_us_per_request"] > 0
        assert s["p50_latency_ns"] <= s["p99_latency_ns"]
    rows = csv.read_text().splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == ["1", "2"]


def test_version_and_open_loop():
    rc, out, err = run_capi(["-m", "identity_fp32", "-x", "1", "--request-rate-range", "200",
                             "--measurement-interval", "500", "--warmup", "0"])
    assert rc == 0, f"exit {rc}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
    text = out.split("Request Rate: 200 inference requests per seconds\n", 1)[1]
    n = field(text, "Request count")
    assert n > 0 and field(text, "Successful request count") == n, text


def test_no_library(tmp_path):
    rc, out, err = run_capi(["-m", "identity_fp32", "-p", "300"], server_dir=tmp_path)
    assert rc != 0
    assert "no libtritonserver.so" in err and str(tmp_path) in err, err


def test_unknown_model():
    rc, out, err = run_capi(["-m", "no_such_model", "-p", "300", "--warmup", "0"])
    assert rc != 0
    assert "failed to load the model" in err and "no_such_model" in err, err


def test_decoupled_model_refused():
    # square_int32 runs on the square test backend (build/test/backends).
    rc, out, err = run_capi(["-m", "square_int32", "--shape", "IN:1", "-p", "300", "--warmup", "0",
                             "--backend-directory", h.build_dir() / "test" / "backends"],
                            repo=h.REPO_ROOT / "test" / "models" / "decoupled_repo")
    assert rc == 2, f"exit {rc}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
    assert "'square_int32' is a decoupled model" in err, err


def test_bad_options():
    rc, out, err = run_capi(["-m", "identity_fp32", "-i", "grpc"])
    assert rc != 0 and "do not apply" in err, err
    proc = subprocess.run([str(perf_binary()), "--service-kind=triton_c_api", "-m", "identity_fp32"],
                          capture_output=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0 and b"--model-repository" in proc.stderr, proc.stderr
    proc = subprocess.run([str(perf_binary()), "--model-repository", str(REPO), "-m", "identity_fp32"],
                          capture_output=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0 and b"need --service-kind=triton_c_api" in proc.stderr, proc.stderr
    proc = subprocess.run([str(perf_binary()), "--service-kind=tfserving", "-m", "identity_fp32"],
                          capture_output=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0 and b"triton_c_api" in proc.stderr, proc.stderr


def test_cpu_pid_over_http(server, tmp_path):
    """The HTTP side of the comparison: --cpu-pid adds the server's CPU time
    per request (its /proc/PID/stat over the window) to the tool's own."""
    summary = tmp_path / "summary.json"
    proc = subprocess.run([str(perf_binary()), "-m", "identity_fp32", "-u", f"127.0.0.1:{server.http_port}",
                           "--shape", "INPUT0:16", "--measurement-interval", "500", "--warmup", "100",
                           "--cpu-pid", str(server.proc.pid), "--json-summary", str(summary)],
                          capture_output=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    out = proc.stdout.decode()
    assert proc.returncode == 0, out + proc.stderr.decode()
    assert re.search(r"^\s+CPU of this process: [\d.]+ usec per request$", out, re.M), out
    assert re.search(rf"^\s+CPU of process {server.proc.pid}: [\d.]+ usec per request$", out, re.M), out
    (s,) = json.loads(summary.read_text())["steps"]
    assert s["cpu_pid"] == server.proc.pid
    assert s["cpu_self_us_per_request"] > 0 and s["cpu_pid_us_per_request"] >= 0


def test_spin_us_and_concurrency():
    rc, out, err = run_capi(["-m", "identity_fp32", "--concurrency-range", "4", "--spin-us", "20",
                             "--measurement-interval", "300", "--warmup", "0"])
    assert rc == 0, f"exit {rc}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
    ((conc, text),) = steps(out)
    n = field(text, "Request count")
    assert conc == 4 and n > 0 and field(text, "Successful request count") == n, text


def test_cpu_pid_several_and_children(server, tmp_path):
    """--cpu-pid takes a list and --cpu-children adds each listed process's
    children as found when the window starts (the Python backend's stubs):
    here the server and this test process, whose child is the server."""
    summary = tmp_path / "summary.json"
    pids = f"{server.proc.pid},{os.getpid()}"
    proc = subprocess.run([str(perf_binary()), "-m", "identity_fp32", "-u", f"127.0.0.1:{server.http_port}",
                           "--shape", "INPUT0:16", "--measurement-interval", "500", "--warmup", "100",
                           "--cpu-pid", pids, "--cpu-children", "--json-summary", str(summary)],
                          capture_output=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    out = proc.stdout.decode()
    assert proc.returncode == 0, out + proc.stderr.decode()
    m = re.search(rf"^\s+CPU of processes {pids} and children \((\d+)\): [\d.]+ usec per request$", out, re.M)
    assert m and int(m.group(1)) >= 3, out  # the two, plus at least the server as a child
    (s,) = json.loads(summary.read_text())["steps"]
    assert s["cpu_pid"] == server.proc.pid and s["cpu_pids"] == int(m.group(1)), s
    for bad in ("1,", ",1", "1,x", "0", ",".join(["1"] * 17)):
        p = subprocess.run([str(perf_binary()), "-m", "identity_fp32", "--cpu-pid", bad],
                           capture_output=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
        assert p.returncode != 0 and b"bad value" in p.stderr, (bad, p.stderr)
