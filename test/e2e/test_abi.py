"""The Triton backend ABI, seen from both sides.

test_exports: libtritonserver.so, and the inferd executable that stands in for
it, export every function the Triton headers declare for the server and
nothing else, under the soname libtritonserver.so (test/abi/check_exports.sh).

test_one_core_per_process: a backend linked with -ltritonserver and no rpath,
as Triton's are, gets the executable's core: with LD_LIBRARY_PATH pointing at
build/lib, where a search for libtritonserver.so would succeed, the running
server still maps no libtritonserver.so (ld.so matches the backend's DT_NEEDED
against the executable's soname).

test_abicheck_backend: the abicheck test backend (test/models/backends/abicheck)
runs its checks of the ABI from inside a real execute and answers with one
REPORT element per check (1 passed, 0 failed) and a "failures" parameter
naming the failed ones. It needs a server of its own: its backend is in no
backend directory, so the library is copied into the model's version folder,
which is also the first place the backend search looks.
"""

import json
import os
import shutil
import subprocess

import pytest

import e2e_helpers as h

ABI_REPO_SRC = h.REPO_ROOT / "test" / "models" / "abi_repo"
CHECK_EXPORTS = h.REPO_ROOT / "test" / "abi" / "check_exports.sh"


def abicheck_backend_so():
    return h.build_dir() / "test" / "backends" / "abicheck" / "libtriton_abicheck.so"


@pytest.mark.parametrize("rel", ["lib/libtritonserver.so", "inferd"])
def test_exports(rel):
    lib = h.build_dir() / rel
    assert lib.is_file(), f"{lib} not built; run `make` first"
    r = subprocess.run(["bash", str(CHECK_EXPORTS), str(lib)], cwd=str(h.REPO_ROOT),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"check_exports failed (rc {r.returncode}):\n{r.stdout}\n{r.stderr}"
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("check_exports: ") and last.endswith(" passed, 0 failed"), r.stdout


def start_abicheck_server(tmp_path):
    so = abicheck_backend_so()
    assert so.is_file(), f"{so} not built; run `make` first"
    repo = tmp_path / "repo"
    shutil.copytree(ABI_REPO_SRC / "abicheck", repo / "abicheck")
    shutil.copy2(so, repo / "abicheck" / "1" / so.name)
    return h.start_server(tmp_path / "srv", [repo], wait_models=("abicheck",))


def test_abicheck_backend(tmp_path):
    h.require_binary()
    srv = start_abicheck_server(tmp_path)
    try:
        body = {"id": "abi-1", "inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [7]}]}
        r = srv.post("/v2/models/abicheck/infer", json=body)
        assert r.status_code == 200, f"{r.status_code} {r.text}\n--- log tail ---\n{srv.log_tail()}"
        resp = r.json()
        assert resp.get("id") == "abi-1", resp
        params = resp.get("parameters") or {}
        outs = {o["name"]: o for o in resp.get("outputs", [])}
        assert set(outs) == {"REPORT"}, resp
        report = outs["REPORT"]
        assert report["datatype"] == "INT32", report
        n = params.get("checked")
        assert n is not None and report["shape"] == [n] and len(report["data"]) == n, resp
        failures = params.get("failures")
        assert all(v == 1 for v in report["data"]) and failures == "", (
            f"ABI checks failed: {failures!r}; report {report['data']}\n--- log tail ---\n{srv.log_tail()}"
        )
    finally:
        srv.stop(check=True)


def test_backend_config_reaches_the_backend(tmp_path):
    """--backend-config settings (a backend's own, and one without a backend
    name for every backend) appear in TRITONBACKEND_BackendConfig's cmdline
    object, over inferd's defaults; another backend's do not."""
    h.require_binary()
    so = abicheck_backend_so()
    repo = tmp_path / "repo"
    shutil.copytree(ABI_REPO_SRC / "abicheck", repo / "abicheck")
    shutil.copy2(so, repo / "abicheck" / "1" / so.name)
    srv = h.start_server(tmp_path / "srv", [repo], wait_models=("abicheck",), extra=(
        "--backend-config=abicheck,shape-tensor=a=b,c",
        "--backend-config=default-max-batch-size=8",
        "--backend-config=other,not-mine=1",
        "--model-load-gpu-limit=1:0.25"))
    try:
        # The backend checks (and logs) its config while serving a request.
        body = {"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [7]}]}
        r = srv.post("/v2/models/abicheck/infer", json=body)
        assert r.status_code == 200, r.text
        log = srv.log_tail(200000)
        # Log messages are JSON strings: the backend's JSON text, escaped.
        line = next((l for l in log.splitlines() if '\\"cmdline\\"' in l), None)
        assert line is not None, log
        cmd = json.loads(json.loads(line[line.index("] ") + 2:]))["cmdline"]
        assert cmd["shape-tensor"] == "a=b,c", cmd
        assert cmd["default-max-batch-size"] == "8", cmd
        assert "not-mine" not in cmd, cmd
        assert cmd["auto-complete-config"] in ("true", "false"), cmd
        # tritonserver's global setting for --model-load-gpu-limit.
        assert cmd["model-load-gpu-limit-device-1"] == "0.250000", cmd
    finally:
        srv.stop(check=True)


def test_backend_config_flag_refused_when_malformed(tmp_path):
    h.require_binary()
    for bad in ("=1", "abicheck,=1", "novalue"):
        r = subprocess.run([str(h.build_dir() / "inferd"), f"--backend-config={bad}",
                            f"--model-repository={tmp_path}"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and "backend-config" in r.stderr, (bad, r.stderr)


def test_one_core_per_process(tmp_path, monkeypatch):
    h.require_binary()
    lib_dir = h.build_dir() / "lib"
    assert (lib_dir / "libtritonserver.so").is_file(), f"{lib_dir} not built; run `make` first"
    monkeypatch.setenv("LD_LIBRARY_PATH", str(lib_dir))
    srv = start_abicheck_server(tmp_path)
    try:
        with open(f"/proc/{srv.proc.pid}/maps") as f:
            mapped = {os.path.basename(line.split()[5]) for line in f if len(line.split()) >= 6}
        assert "libtriton_abicheck.so" in mapped, sorted(mapped)
        assert "libtritonserver.so" not in mapped, (
            f"libtritonserver.so is mapped: the backend did not bind to the executable's core: {sorted(mapped)}\n--- log tail ---\n{srv.log_tail()}"
        )
        body = {"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [7]}]}
        r = srv.post("/v2/models/abicheck/infer", json=body)
        assert r.status_code == 200, f"{r.status_code} {r.text}\n--- log tail ---\n{srv.log_tail()}"
    finally:
        srv.stop(check=True)
