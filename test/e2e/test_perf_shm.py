"""inferd-perf --shared-memory against the session server: a short smoke test.

With --shared-memory=system inferd-perf creates one POSIX shared memory region
per input ("INPUT0_0_0", holding the input) and one per output ("OUTPUT0"),
registers them over the protocol under test, sends requests that name them
instead of carrying tensors, and unregisters and removes them at exit. Checked
here, over HTTP and gRPC: the run succeeds and the client's request count
equals the server's success-count delta (batch 2, identity_fp32 and the
two-tensor identity_multi); no region is left registered on the server and no
object is left in /dev/shm; a region of the same name left registered by
someone else is replaced; --output-shared-memory-size sizes the output region
of a model whose output size is not fixed (BYTES), and one too small fails
with the server's message; --shared-memory=cuda without a GPU stops with a
clear message before anything is registered; bad option values exit 2.
"""

import os
import re
import shutil
import subprocess
from multiprocessing import shared_memory

import pytest

import e2e_helpers as h

TIMEOUT_S = 30  # only so that nothing hangs; every run takes ~1.5 s


def perf_binary():
    exe = h.build_dir() / "inferd-perf"
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        raise AssertionError(f"{exe} not found or not executable; run `make` first")
    return exe


def run_perf(args):
    """(rc, stdout, stderr, pid) of one inferd-perf run."""
    proc = subprocess.Popen([str(perf_binary())] + [str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError("inferd-perf did not finish:\n" + err.decode("utf-8", "replace"))
    return (proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
            proc.pid)


def steps(out):
    parts = re.split(r"^Request concurrency: (\d+)\n", out, flags=re.M)
    return [(int(parts[i]), parts[i + 1]) for i in range(1, len(parts), 2)]


def field(text, name):
    m = re.search(rf"^\s+{re.escape(name)}: (\d+)", text, re.M)
    assert m, f"no '{name}' line in:\n{text}"
    return int(m.group(1))


def url_args(server, proto):
    port = server.grpc_port if proto == "grpc" else server.http_port
    return ["-i", proto, "-u", f"127.0.0.1:{port}"]


def region_names(server):
    r = server.get("/v2/systemsharedmemory/status")
    assert r.status_code == 200, f"{r.status_code} {r.text}"
    return {reg["name"] for reg in r.json()}


def leftovers(pid):
    """Objects inferd-perf (process pid) left in /dev/shm."""
    try:
        return [n for n in os.listdir("/dev/shm") if n.startswith(f"ifdperf{pid}_")]
    except FileNotFoundError:
        return []


def check_counts(out, err, rc, batch):
    assert rc == 0, f"exit {rc}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
    assert "Shared memory: system" in out, out
    got = steps(out)
    assert got, out
    for conc, text in got:
        n = field(text, "Request count")
        assert n > 0, text
        assert field(text, "Successful request count") == n, f"concurrency {conc}:\n{text}"
        assert field(text, "Inference count") == batch * n, f"concurrency {conc}:\n{text}"
        assert "Error count" not in text, text


@pytest.mark.parametrize("proto", ["http", "grpc"])
@pytest.mark.parametrize("model,regions", [
    ("identity_fp32", {"INPUT0_0_0", "OUTPUT0"}),
    ("identity_multi", {"INPUT0_0_0", "INPUT1_0_0", "OUTPUT0", "OUTPUT1"}),
])
def test_system_shm_counts_and_cleanup(server, proto, model, regions):
    assert not regions & region_names(server), "regions left by an earlier test"
    rc, out, err, pid = run_perf(["-m", model, "-b", "2", "--concurrency-range", "1:2:1",
                                  "--measurement-interval", "400", "--warmup", "100",
                                  "--shared-memory", "system"] + url_args(server, proto))
    check_counts(out, err, rc, 2)
    assert [c for c, _ in steps(out)] == [1, 2], out
    assert not regions & region_names(server), "inferd-perf left its regions registered"
    assert leftovers(pid) == []


@pytest.mark.parametrize("proto", ["http", "grpc"])
def test_stale_region_of_the_same_name_is_replaced(server, proto):
    # Someone registered "INPUT0_0_0" (a run that was killed, say): inferd-perf
    # unregisters that name first, then registers its own region under it.
    shm = shared_memory.SharedMemory(create=True, size=4096)
    try:
        r = server.post("/v2/systemsharedmemory/region/INPUT0_0_0/register",
                        json={"key": "/" + shm.name, "offset": 0, "byte_size": 64})
        assert r.status_code == 200, r.text
        rc, out, err, pid = run_perf(["-m", "identity_fp32", "-b", "1", "--measurement-interval",
                                      "300", "--warmup", "50", "--shared-memory", "system"]
                                     + url_args(server, proto))
        check_counts(out, err, rc, 1)
        assert "INPUT0_0_0" not in region_names(server)
        assert leftovers(pid) == []
    finally:
        server.post("/v2/systemsharedmemory/region/INPUT0_0_0/unregister")
        shm.close()
        shm.unlink()


def test_output_size_option(server):
    # identity_bytes: BYTES [-1] in and out, so the output's size is not known
    # ahead: its region is --output-shared-memory-size bytes (times -b).
    common = ["-m", "identity_bytes", "--shape", "INPUT0:8", "--measurement-interval", "300",
              "--warmup", "50", "--shared-memory", "system"] + url_args(server, "http")
    rc, out, err, pid = run_perf(common)  # default 102400 bytes: room enough
    check_counts(out, err, rc, 1)
    assert leftovers(pid) == []
    rc, out, err, pid = run_perf(common + ["--output-shared-memory-size", "4"])
    assert rc == 1, f"exit {rc}\n{out}\n{err}"
    assert "shared memory size specified with the request for output 'OUTPUT0'" in out + err, out + err
    assert not {"INPUT0_0_0", "OUTPUT0"} & region_names(server)
    assert leftovers(pid) == []


def gpu_present():
    if not shutil.which("nvidia-smi"):
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.parametrize("proto", ["http", "grpc"])
def test_cuda_without_gpu_is_refused(server, proto):
    if gpu_present():
        pytest.skip("a GPU is present: the refusal cannot be observed (make test-gpu covers cuda)")
    rc, out, err, _ = run_perf(["-m", "identity_fp32", "--measurement-interval", "300",
                                "--shared-memory", "cuda"] + url_args(server, proto))
    assert rc == 1, f"exit {rc}\n{out}\n{err}"
    assert "--shared-memory=cuda" in err, err
    assert re.search(r"no usable GPU|CUDA runtime", err), err
    assert "Request concurrency" not in out, out
    r = server.get("/v2/cudasharedmemory/status")
    assert r.status_code == 200 and r.json() == [], r.text


@pytest.mark.parametrize("args", [
    ["--shared-memory", "posix"],
    ["--shared-memory", "system", "--raw-get", "/v2/health/live"],
    ["--output-shared-memory-size", "-1"],
    ["--output-shared-memory-size", "12k"],
])
def test_bad_options(server, args):
    rc, out, err, _ = run_perf(["-m", "identity_fp32", "-u", f"127.0.0.1:{server.http_port}"] + args)
    assert rc == 2, f"exit {rc}\n{out}\n{err}"
    assert "error:" in err, err
