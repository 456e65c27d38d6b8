"""ONNX Runtime backend: nothing leaks across model load/unload cycles.

Explicit model control: a model with a 4 MiB weight initializer is loaded,
asked once and unloaded 100 times (beside another ONNX model that stays
loaded); the server's resident set size must come
back near its level after a few warm-up cycles (a leaked session or its
weights would add about 4 MiB per cycle, 400 MiB in all; the tolerance is
48 MiB, for allocator caches). A leak check, not a timing one: the only
time limit is a generous guard against hangs. Marked `slow` (about 10-30 s):
`-m "not slow"` leaves it out.
"""

import time

import numpy as np
import pytest

import onnx_models as om
import ort_fixtures as of

CYCLES = 100
WARMUP = 5
WEIGHTS = 1 << 20  # FP32 elements: 4 MiB
TOLERANCE_KB = 48 * 1024
GUARD_S = 300


def _rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/<pid>/status")


def _asan(pid):
    """True when the server runs with AddressSanitizer: its quarantine keeps
    freed memory resident, and LeakSanitizer checks leaks there instead."""
    with open(f"/proc/{pid}/maps") as f:
        return "libasan" in f.read()


def _wait_unloaded(srv, name, deadline):
    while True:
        state = of.index(srv).get(name, ("UNAVAILABLE", ""))[0]
        if state not in ("READY", "UNLOADING", "LOADING"):
            return
        assert time.monotonic() < deadline and srv.alive(), f"{name} still {state}\n{srv.log_tail()}"
        time.sleep(0.01)


def _cycle(srv, x, want, deadline):
    r = of.load(srv, "big")
    assert r.status_code == 200, r.text
    out = of.infer("binary", srv, "big", [("INPUT0", "FP32", list(x.shape), x)])
    np.testing.assert_array_equal(out["OUTPUT0"], want)
    r = of.unload(srv, "big")
    assert r.status_code == 200, r.text
    _wait_unloaded(srv, "big", deadline)


@pytest.mark.slow
def test_rss_back_to_baseline_after_100_load_unload_cycles(tmp_path):
    repo = tmp_path / "repo"
    w = (np.arange(WEIGHTS, dtype=np.float32) % 7) - 3.0
    om.write_model(repo, "big", om.scale(w, [None, WEIGHTS]),
                   config=om.config("big", [("INPUT0", "FP32", [WEIGHTS])], [("OUTPUT0", "FP32", [WEIGHTS])], 2))
    # 'anchor' stays loaded, so the cycles measure the model's own life
    # cycle (the backend itself stays loaded, as in a real deployment).
    om.write_model(repo, "anchor", om.identity("FP32", [None, 4]),
                   config=om.config("anchor", [("INPUT0", "FP32", [4])], [("OUTPUT0", "FP32", [4])], 2))
    srv = of.start(tmp_path / "srv", repo, extra=["--model-control-mode=explicit", "--load-model=anchor"],
                   wait_models=("anchor",))
    try:
        if _asan(srv.proc.pid):
            pytest.skip("AddressSanitizer build: RSS includes its quarantine (LeakSanitizer checks leaks)")
        deadline = time.monotonic() + GUARD_S
        x = np.full((1, WEIGHTS), 0.5, dtype=np.float32)
        want = x * w
        for _ in range(WARMUP):
            _cycle(srv, x, want, deadline)
        baseline = _rss_kb(srv.proc.pid)
        for _ in range(CYCLES):
            _cycle(srv, x, want, deadline)
        after = _rss_kb(srv.proc.pid)
        growth = after - baseline
        print(f"RSS baseline {baseline} KiB, after {CYCLES} cycles {after} KiB, growth {growth} KiB")
        assert growth < TOLERANCE_KB, (
            f"RSS grew by {growth} KiB over {CYCLES} load/unload cycles "
            f"(baseline {baseline} KiB, after {after} KiB; about {growth // CYCLES} KiB per cycle)")
        # Still serving afterwards.
        _cycle(srv, x, want, deadline)
    finally:
        srv.stop(check=True)
