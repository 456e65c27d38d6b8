"""ONNX Runtime backend under perf_analyzer-style load (build/inferd-perf).

Short closed-loop runs (concurrency 1 and 4, 0.5 s windows) against ONNX
models over every protocol inferd-perf speaks, with inputs and outputs in
system shared memory too (the backend then reads and writes the shared
regions), and a sequence model with implicit state. Because inferd-perf reads
the server statistics only while nothing is in flight, the client's request
count must equal the server's success count in every step; no request may
fail. Nothing here is a timing assertion.
"""

import re
import subprocess

import numpy as np
import pytest

import onnx_models as om
import ort_fixtures as of
from test_perf_smoke import field, perf_binary, steps

TIMEOUT_S = 60  # only so that nothing hangs; a run takes ~3 s

MODES = {
    "http-binary": lambda s: ["-i", "http", "-u", f"127.0.0.1:{s.http_port}", "--http-format", "binary"],
    "http-json": lambda s: ["-i", "http", "-u", f"127.0.0.1:{s.http_port}", "--http-format", "json"],
    "grpc": lambda s: ["-i", "grpc", "-u", f"127.0.0.1:{s.grpc_port}"],
    "grpc-stream": lambda s: ["-i", "grpc", "-u", f"127.0.0.1:{s.grpc_port}", "--streaming"],
    "http-shm": lambda s: ["-i", "http", "-u", f"127.0.0.1:{s.http_port}", "--shared-memory", "system"],
    "grpc-shm": lambda s: ["-i", "grpc", "-u", f"127.0.0.1:{s.grpc_port}", "--shared-memory", "system"],
}

SEQ_CONFIG = """name: "acc"
backend: "onnxruntime"
max_batch_size: 4
sequence_batching {
  max_sequence_idle_microseconds: 10000000
  state [ { input_name: "INPUT_STATE" output_name: "OUTPUT_STATE" data_type: TYPE_INT32 dims: [ 3 ]
            initial_state: { data_type: TYPE_INT32 dims: [ 3 ] zero_data: true name: "zero" } } ]
}
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 3 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 3 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
"""


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ort-perf")
    repo = tmp / "repo"
    om.write_model(repo, "addsub", om.add_sub("FP32", "FP32", [None, 16]),
                   config=om.config("addsub", [("INPUT0", "FP32", [16]), ("INPUT1", "FP32", [16])],
                                    [("OUTPUT0", "FP32", [16]), ("OUTPUT1", "FP32", [16])], 8,
                                    extra="dynamic_batching { }\ninstance_group [ { count: 2 kind: KIND_CPU } ]\n"))
    om.write_model(repo, "strings", om.concat_self("BYTES", 3),
                   config=om.config("strings", [("INPUT0", "BYTES", [3])], [("OUTPUT0", "BYTES", [6])], 8,
                                    extra="dynamic_batching { }\n"))
    om.write_model(repo, "acc", om.accumulator(3), config=SEQ_CONFIG)
    s = of.start(tmp / "srv", repo, wait_models=("addsub", "strings", "acc"))
    yield s
    s.stop(check=True)


def _run(args):
    proc = subprocess.run([str(perf_binary())] + [str(a) for a in args], capture_output=True, timeout=TIMEOUT_S,
                          stdin=subprocess.DEVNULL)
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, f"exit {proc.returncode}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
    return out


def _check_steps(out, batch, concurrencies):
    got = steps(out)
    assert [c for c, _ in got] == concurrencies, out
    for conc, text in got:
        n = field(text, "Request count")
        assert n > 0, text
        assert field(text, "Successful request count") == n, f"concurrency {conc}:\n{text}"
        assert field(text, "Inference count") == batch * n, f"concurrency {conc}:\n{text}"
        assert "Error count" not in text, text


@pytest.mark.parametrize("mode", sorted(MODES))
def test_addsub_under_load(srv, mode):
    before = of.index(srv)
    out = _run(["-m", "addsub", "-b", "2", "--concurrency-range", "1:4:3", "--measurement-interval", "500",
                "--warmup", "100"] + MODES[mode](srv))
    _check_steps(out, 2, [1, 4])
    assert re.search(r"^\s+Throughput: [\d.e+]+ infer/sec$", out, re.M), out
    assert of.index(srv) == before  # nothing was unloaded or failed meanwhile
    assert srv.alive()


@pytest.mark.parametrize("mode", ["http-binary", "grpc", "http-shm"])
def test_bytes_model_under_load(srv, mode):
    out = _run(["-m", "strings", "--concurrency-range", "2:2:1", "--measurement-interval", "500",
                "--warmup", "100"] + MODES[mode](srv))
    _check_steps(out, 1, [2])


@pytest.mark.parametrize("mode", ["http-binary", "grpc-stream"])
def test_sequences_with_implicit_state_under_load(srv, mode):
    out = _run(["-m", "acc", "--concurrency-range", "1:4:3", "--sequence-length", "8",
                "--measurement-interval", "500", "--warmup", "100"] + MODES[mode](srv))
    _check_steps(out, 1, [1, 4])


def test_answers_still_exact_after_load(srv):
    a = np.arange(32, dtype=np.float32).reshape(2, 16) * 0.25
    b = np.ones((2, 16), dtype=np.float32)
    out = of.infer("binary", srv, "addsub", [("INPUT0", "FP32", [2, 16], a), ("INPUT1", "FP32", [2, 16], b)])
    np.testing.assert_array_equal(out["OUTPUT0"], a + b)
    np.testing.assert_array_equal(out["OUTPUT1"], a - b)
