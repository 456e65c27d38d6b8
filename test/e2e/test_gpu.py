"""GPUs: instance kinds, GPU memory for backends, memory pools, GPU metrics.

Two kinds of tests live here:

* Tests for every machine (most of them, and the only ones that run where
  there is no GPU): a KIND_GPU model fails to load with Triton's message, a
  KIND_AUTO model falls back to CPU instances, a backend that asks for its
  input and output buffers in GPU memory gets CPU memory (the `memprobe` test
  backend), memory_usage in the statistics (HTTP and gRPC) sums what the
  backend reported, the pool flags are checked, and the GPU gauges come from
  NVML when there is one (a fake libnvidia-ml, build/test/libfake_nvml.so,
  stands in for the driver) and are absent without error when there is none.
* Tests marked `gpu` (run by `make test-gpu`): they need a CUDA build and a
  GPU, and skip saying so otherwise. The `cuda_add` backend adds one on the
  device on its own stream; the server binds each instance's thread to its
  device, copies host inputs to the device and device outputs back to the
  host for the response.
"""

import ctypes
import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

import e2e_helpers as h

try:
    import grpc_helpers as gh
    from grpc_helpers import grpc_stubs  # noqa: F401  (a fixture)
except ImportError as _e:
    gh = None
    _GRPC_WHY = f"gRPC helpers not available ({_e})"

    @pytest.fixture(scope="session")
    def grpc_stubs():
        pytest.skip(_GRPC_WHY)


GPU_REPO = h.REPO_ROOT / "test" / "models" / "gpu_repo"
WAIT_S = 20  # bound on waiting for a sampled gauge to show up


def gpu_count():
    """CUDA devices on this machine (0 without the runtime or a GPU)."""
    for name in ("libcudart.so", "/usr/local/cuda/lib64/libcudart.so"):
        try:
            rt = ctypes.CDLL(name)
        except OSError:
            continue
        n = ctypes.c_int(0)
        if rt.cudaGetDeviceCount(ctypes.byref(n)) != 0:
            return 0
        return n.value
    return 0


HAS_GPU = gpu_count() > 0
NO_GPU_WHY = "no GPU on this machine (or no CUDA runtime): GPU tests skipped"
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason=NO_GPU_WHY)
needs_no_gpu = pytest.mark.skipif(HAS_GPU, reason="this machine has a GPU: a CPU-only behaviour")


def backend_so(name):
    return h.build_dir() / "test" / "backends" / name / f"libtriton_{name}.so"


def gpu_repo(dst, models):
    """A repository with `models` of test/models/gpu_repo, each with its test
    backend's library in its folder (test backends are not installed in the
    backend directory)."""
    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    for m in models:
        shutil.copytree(GPU_REPO / m, dst / m)
        cfg = (dst / m / "config.pbtxt").read_text()
        be = re.search(r'backend: "([^"]+)"', cfg).group(1)
        so = backend_so(be)
        if not so.is_file():
            pytest.skip(f"{so} was not built (the cuda_add backend needs the CUDA toolkit)")
        shutil.copy2(so, dst / m / so.name)
    return dst


def start(tmp_path, models, wait, extra=(), name="srv"):
    repo = gpu_repo(tmp_path / f"{name}-repo", models)
    return h.start_server(tmp_path / name, [repo], extra=extra, wait_models=wait)


def metrics_text(srv):
    import requests
    return requests.get(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=5).text


def wait_metrics(srv, family):
    """The metrics text once `family` shows up (sampled gauges need one
    interval), or the last text when it did not within WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    text = metrics_text(srv)
    while family not in text and time.monotonic() < deadline:
        time.sleep(0.1)
        text = metrics_text(srv)
    return text


def sample(text, family, uuid):
    m = re.search(rf'^{family}\{{gpu_uuid="{uuid}"\}} (\S+)$', text, re.M)
    return None if m is None else float(m.group(1))


def add_one(srv, model, values):
    vals = np.asarray(values, dtype=np.int32)
    r = h.infer_binary(srv, model, [("IN", "INT32", vals.shape, vals)],
                       outputs=[{"name": "OUT", "parameters": {"binary_data": True}},
                                {"name": "MEM", "parameters": {"binary_data": True}}])
    assert r.status_code == 200, r.text
    _, out = h.parse_infer_response(r)
    return vals, out


# ------------------------------------------------ every machine -------

@needs_no_gpu
def test_kind_gpu_without_gpu_fails_to_load(tmp_path):
    srv = start(tmp_path, ["memprobe_auto", "kind_gpu", "kind_gpu_ids"], wait=("memprobe_auto",))
    try:
        index = {e["name"]: e for e in srv.post("/v2/repository/index", json={}).json()}
        assert index["kind_gpu"]["state"] == "UNAVAILABLE", index["kind_gpu"]
        assert ("instance group kind_gpu_0 of model kind_gpu has kind KIND_GPU but no GPUs are "
                "available") in index["kind_gpu"]["reason"], index["kind_gpu"]
        assert index["kind_gpu_ids"]["state"] == "UNAVAILABLE", index["kind_gpu_ids"]
        assert ("instance group kind_gpu_ids_0 of model kind_gpu_ids specifies invalid or "
                "unsupported gpu id 7") in index["kind_gpu_ids"]["reason"], index["kind_gpu_ids"]
        assert srv.get("/v2/models/kind_gpu/ready").status_code == 400
        # The server goes on serving the others.
        vals, out = add_one(srv, "memprobe_auto", [1, 2, 3])
        assert out["OUT"].tolist() == (vals + 1).tolist()
    finally:
        srv.stop(check=True)


@needs_no_gpu
def test_kind_auto_falls_back_to_cpu_and_gpu_preference_gets_cpu_memory(tmp_path):
    srv = start(tmp_path, ["memprobe_auto"], wait=("memprobe_auto",))
    try:
        cfg = srv.get("/v2/models/memprobe_auto/config").json()
        groups = cfg["instance_group"]
        assert [g["kind"] for g in groups] == ["KIND_CPU"], groups
        assert groups[0]["count"] == 2 and groups[0]["gpus"] == [], groups
        # The backend asked for GPU memory for IN and OUT: it got CPU (0).
        for n in (1, 1000, 300000):
            vals, out = add_one(srv, "memprobe_auto", np.arange(n))
            assert np.array_equal(out["OUT"], vals + 1)
            assert out["MEM"].tolist() == [0, 0]
    finally:
        srv.stop(check=True)


EXPECTED_USAGE = [
    {"type": "CPU", "id": 0, "byte_size": 4096},          # ModelReportMemoryUsage
    {"type": "CPU_PINNED", "id": 0, "byte_size": 2048},   # 2 instances x 1024
]


@needs_no_gpu
def test_memory_usage_reported_by_the_backend(tmp_path, grpc_stubs):
    srv = start(tmp_path, ["memprobe_auto"], wait=("memprobe_auto",))
    try:
        st = srv.get("/v2/models/memprobe_auto/stats").json()["model_stats"][0]
        assert st["memory_usage"] == EXPECTED_USAGE, st["memory_usage"]
        c = gh.connect(srv, grpc_stubs)
        try:
            ms = c.model_statistics("memprobe_auto").model_stats[0]
            got = [{"type": u.type, "id": u.id, "byte_size": u.byte_size} for u in ms.memory_usage]
            assert got == EXPECTED_USAGE, got
        finally:
            c.close()
    finally:
        srv.stop(check=True)


def test_gpu_metrics_from_nvml(tmp_path, monkeypatch):
    fake = h.build_dir() / "test" / "libfake_nvml.so"
    assert fake.is_file(), f"{fake} not built; run `make`"
    monkeypatch.setenv("INFERD_NVML_LIBRARY", str(fake))
    srv = start(tmp_path, ["memprobe_auto"], wait=("memprobe_auto",),
                extra=("--metrics-interval-ms=100",))
    try:
        text = wait_metrics(srv, "nv_energy_consumption{")
        assert "# TYPE nv_gpu_utilization gauge" in text, text
        assert sample(text, "nv_gpu_utilization", "GPU-fake-0") == pytest.approx(0.37)
        assert sample(text, "nv_gpu_utilization", "GPU-fake-1") == 0
        for uuid in ("GPU-fake-0", "GPU-fake-1"):
            assert sample(text, "nv_gpu_memory_total_bytes", uuid) == 17179869184
            assert sample(text, "nv_gpu_memory_used_bytes", uuid) == 1073741824
            assert sample(text, "nv_gpu_power_limit", uuid) == 300
            assert sample(text, "nv_energy_consumption", uuid) >= 0
        # The second fake GPU has no power reading: no sample, no error.
        assert sample(text, "nv_gpu_power_usage", "GPU-fake-0") == 42.5
        assert sample(text, "nv_gpu_power_usage", "GPU-fake-1") is None
        assert "# TYPE nv_energy_consumption counter" in text
        assert text.count("# TYPE nv_gpu_utilization ") == 1
    finally:
        srv.stop(check=True)


@needs_no_gpu
def test_pinned_pool_metrics_without_gpu(tmp_path):
    """Triton's two pinned-pool gauges, 0 without a pool (as Triton 2.47 on
    a CPU-only machine: conformance metrics.txt), before the CPU gauges."""
    srv = start(tmp_path, ["memprobe_auto"], wait=("memprobe_auto",),
                extra=("--metrics-interval-ms=100",))
    try:
        text = wait_metrics(srv, "nv_cpu_utilization ")
        for fam in ("nv_pinned_memory_pool_total_bytes", "nv_pinned_memory_pool_used_bytes"):
            assert f"# TYPE {fam} gauge\n{fam} 0\n" in text, text
        assert text.index("nv_pinned_memory_pool_used_bytes") < text.index("nv_cpu_utilization")
    finally:
        srv.stop(check=True)


@pytest.mark.parametrize("how", ["no-library", "no-gpu", "init-fails", "disallowed"])
def test_gpu_metrics_absent_without_error(tmp_path, monkeypatch, how):
    fake = h.build_dir() / "test" / "libfake_nvml.so"
    extra = ["--metrics-interval-ms=100"]
    if how == "no-library":
        monkeypatch.setenv("INFERD_NVML_LIBRARY", str(tmp_path / "no-such-libnvidia-ml.so"))
    else:
        monkeypatch.setenv("INFERD_NVML_LIBRARY", str(fake))
    if how == "no-gpu":
        monkeypatch.setenv("FAKE_NVML_COUNT", "0")
    if how == "init-fails":
        monkeypatch.setenv("FAKE_NVML_FAIL_INIT", "1")
    if how == "disallowed":
        extra.append("--allow-gpu-metrics=false")
    srv = start(tmp_path, ["memprobe_auto"], wait=("memprobe_auto",), extra=extra)
    try:
        # Once the CPU gauges are sampled, the GPU ones would be too.
        text = wait_metrics(srv, "nv_cpu_utilization ")
        assert "nv_cpu_utilization " in text
        text = metrics_text(srv)
        assert "nv_gpu_" not in text and "nv_energy_consumption" not in text, text
        assert "nvml" not in srv.log_tail().lower(), srv.log_tail()
    finally:
        srv.stop(check=True)


@pytest.mark.parametrize("flag,why", [
    ("--cuda-memory-pool-byte-size=1048576", "expects <integer>:<integer>"),
    ("--cuda-memory-pool-byte-size=0:-5", "expects <integer>:<integer>"),
    ("--cuda-memory-pool-byte-size=x:5", "expects <integer>:<integer>"),
    ("--cuda-memory-pool-byte-size=64:1024", "device 64 is past"),
    ("--pinned-memory-pool-byte-size=-1", "expected a non-negative integer"),
    ("--allow-gpu-metrics=maybe", "expected true or false"),
])
def test_bad_gpu_flags_refused(tmp_path, flag, why):
    args = h.server_args([tmp_path], *h.free_ports(3), extra=[flag])
    rc, out, err = h.run_to_exit(args)
    assert rc != 0
    assert why in err, err


def test_pool_flags_accepted(tmp_path):
    srv = start(tmp_path, ["memprobe_auto"], wait=("memprobe_auto",),
                extra=("--pinned-memory-pool-byte-size=0",
                       "--cuda-memory-pool-byte-size=0:1048576",
                       "--cuda-memory-pool-byte-size=3:0"))
    try:
        vals, out = add_one(srv, "memprobe_auto", [41])
        assert out["OUT"].tolist() == [42]
    finally:
        srv.stop(check=True)


# ------------------------------------------------ GPU machines --------

@pytest.mark.gpu
@needs_gpu
def test_cuda_add_on_gpu_instances(tmp_path):
    srv = start(tmp_path, ["cuda_add"], wait=("cuda_add",),
                extra=("--cuda-memory-pool-byte-size=0:16777216",))
    try:
        cfg = srv.get("/v2/models/cuda_add/config").json()
        assert cfg["instance_group"][0]["kind"] == "KIND_GPU"
        for n in (1, 4096, 5 << 20):  # 20 MiB: past the 16 MiB pool (cudaMalloc)
            vals, out = add_one(srv, "cuda_add", np.arange(n) - 7)
            assert np.array_equal(out["OUT"], vals + 1)
            # IN handed on the device (the server copied it there), OUT's
            # buffer on the device, and the instance's device current.
            assert out["MEM"].tolist() == [2, 2, 0]
        st = srv.get("/v2/models/cuda_add/stats").json()["model_stats"][0]
        assert st["inference_stats"]["success"]["count"] == 3
        log = srv.log_tail(20000)
        assert "CUDA memory pool is created on device 0 with size 16777216" in log, log
    finally:
        srv.stop(check=True)


@pytest.mark.gpu
@needs_gpu
def test_cuda_add_concurrent_requests(tmp_path):
    from concurrent.futures import ThreadPoolExecutor
    srv = start(tmp_path, ["cuda_add"], wait=("cuda_add",))
    try:
        def one(i):
            vals, out = add_one(srv, "cuda_add", np.full(10000 + i, i))
            return np.array_equal(out["OUT"], vals + 1)
        with ThreadPoolExecutor(8) as ex:
            assert all(ex.map(one, range(64)))
    finally:
        srv.stop(check=True)


@pytest.mark.gpu
@needs_gpu
def test_kind_auto_picks_gpu(tmp_path):
    srv = start(tmp_path, ["cuda_add_auto"], wait=("cuda_add_auto",))
    try:
        g = srv.get("/v2/models/cuda_add_auto/config").json()["instance_group"][0]
        assert g["kind"] == "KIND_GPU" and g["gpus"] == list(range(gpu_count())), g
        vals, out = add_one(srv, "cuda_add_auto", [1, 2])
        assert out["OUT"].tolist() == [2, 3]
    finally:
        srv.stop(check=True)


@pytest.mark.gpu
@needs_gpu
def test_real_gpu_metrics(tmp_path, monkeypatch):
    monkeypatch.delenv("INFERD_NVML_LIBRARY", raising=False)
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        pytest.skip("no libnvidia-ml.so.1 on this GPU machine")
    srv = start(tmp_path, ["cuda_add"], wait=("cuda_add",), extra=("--metrics-interval-ms=100",))
    try:
        text = wait_metrics(srv, "nv_gpu_memory_total_bytes{")
        assert re.search(r'^nv_gpu_memory_total_bytes\{gpu_uuid="GPU-[^"]+"\} [1-9]', text, re.M), text
        assert re.search(r'^nv_gpu_utilization\{gpu_uuid="GPU-', text, re.M), text
    finally:
        srv.stop(check=True)


@pytest.mark.gpu
@needs_gpu
def test_pinned_pool_created(tmp_path):
    srv = start(tmp_path, ["cuda_add"], wait=("cuda_add",),
                extra=("--pinned-memory-pool-byte-size=8388608",))
    try:
        assert "Pinned memory pool is created at" in srv.log_tail(20000)
        text = metrics_text(srv)
        assert "\nnv_pinned_memory_pool_total_bytes 8388608\n" in text, text
    finally:
        srv.stop(check=True)


def cudart():
    for name in ("libcudart.so", "/usr/local/cuda/lib64/libcudart.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    pytest.skip("no CUDA runtime library")


@pytest.mark.gpu
@needs_gpu
def test_cuda_shared_memory_in_and_out(tmp_path):
    """IN read from, OUT written into CUDA shared memory of this process, on
    the device: the backend gets the regions' device pointers in place."""
    import base64
    rt = cudart()
    n = 4096
    nbytes = 4 * n
    host_in = np.arange(n, dtype=np.int32) * 2
    host_out = np.zeros(n, dtype=np.int32)
    d_in, d_out = ctypes.c_void_p(), ctypes.c_void_p()
    assert rt.cudaSetDevice(0) == 0
    assert rt.cudaMalloc(ctypes.byref(d_in), ctypes.c_size_t(nbytes)) == 0
    assert rt.cudaMalloc(ctypes.byref(d_out), ctypes.c_size_t(nbytes)) == 0
    srv = None
    try:
        assert rt.cudaMemcpy(d_in, host_in.ctypes.data_as(ctypes.c_void_p),
                             ctypes.c_size_t(nbytes), 1) == 0  # host to device
        handles = {}
        for name, ptr in (("in", d_in), ("out", d_out)):
            hbuf = ctypes.create_string_buffer(64)
            assert rt.cudaIpcGetMemHandle(hbuf, ptr) == 0
            handles[name] = base64.b64encode(hbuf.raw).decode()
        srv = start(tmp_path, ["cuda_add"], wait=("cuda_add",))
        for name in ("in", "out"):
            r = srv.post(f"/v2/cudasharedmemory/region/{name}/register",
                         json={"raw_handle": {"b64": handles[name]}, "device_id": 0,
                               "byte_size": nbytes})
            assert r.status_code == 200, r.text
        body = {
            "inputs": [{"name": "IN", "datatype": "INT32", "shape": [n],
                        "parameters": {"shared_memory_region": "in",
                                       "shared_memory_byte_size": nbytes}}],
            "outputs": [{"name": "OUT",
                         "parameters": {"shared_memory_region": "out",
                                        "shared_memory_byte_size": nbytes}},
                        {"name": "MEM"}],
        }
        r = srv.post("/v2/models/cuda_add/infer", json=body)
        assert r.status_code == 200, r.text
        outs = {o["name"]: o for o in r.json()["outputs"]}
        assert "data" not in outs["OUT"], outs["OUT"]
        assert outs["MEM"]["data"] == [2, 2, 0]
        assert rt.cudaMemcpy(host_out.ctypes.data_as(ctypes.c_void_p), d_out,
                             ctypes.c_size_t(nbytes), 2) == 0  # device to host
        assert np.array_equal(host_out, host_in + 1)
        assert srv.post("/v2/cudasharedmemory/unregister").status_code == 200
    finally:
        if srv is not None:
            srv.stop(check=True)
        rt.cudaFree(d_in)
        rt.cudaFree(d_out)
