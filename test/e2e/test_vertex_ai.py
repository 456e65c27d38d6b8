"""The Vertex AI endpoint (--allow-vertex-ai=true, or AIP_MODE=PREDICTION):
the health and predict routes of AIP_HEALTH_ROUTE / AIP_PREDICT_ROUTE, the
default model (--vertex-ai-default-model, else the only model), the
X-Vertex-Ai-Triton-Redirect header to the KServe v2 routes, tritonserver's
start-up errors; the server keeps serving after bad requests. Every port is a
free one, passed explicitly (or through AIP_HTTP_PORT)."""

import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest
import requests

import e2e_helpers as h

MODEL = "identity_fp32"
DATA = [float(i) / 4 for i in range(16)]
ROUTES = {"AIP_HEALTH_ROUTE": "/health", "AIP_PREDICT_ROUTE": "/predict"}
BINARY = "application/vnd.vertex-ai-triton.binary+json;json-header-size="
REDIRECT = "X-Vertex-Ai-Triton-Redirect"


def _wait_health(url, proc, timeout=h.START_TIMEOUT_S):
    """The Vertex AI listener starts once the models have loaded: wait for
    its health route (bounded; fails when the server exits)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"inferd exited with status {proc.returncode}"
        try:
            if requests.get(url + "/health", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{url}/health not ready within {timeout}s")


def _start(tmp_path, models=(MODEL,), extra=(), env=None, name="srv"):
    repo = h.copy_repo(tmp_path / f"{name}-repo", models=list(models))
    port = h.free_ports(1)[0]
    srv = h.start_server(tmp_path / name, [repo], wait_models=models,
                         extra=["--allow-vertex-ai=true", f"--vertex-ai-port={port}", *extra],
                         env={**ROUTES, **(env or {})})
    srv.vx = f"http://127.0.0.1:{port}"
    try:
        _wait_health(srv.vx, srv.proc)
    except AssertionError:
        srv.stop(check=False)
        raise
    return srv


@pytest.fixture
def vx(tmp_path):
    srv = _start(tmp_path)
    try:
        yield srv
    finally:
        srv.stop(check=True)


def _json_body():
    return {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": DATA}]}


def test_health(vx):
    r = requests.get(vx.vx + "/health", timeout=10)
    assert r.status_code == 200 and r.content == b""
    assert requests.post(vx.vx + "/health", timeout=10).status_code == 405


def test_predict_json_only_model(vx):
    r = requests.post(vx.vx + "/predict", json=_json_body(), timeout=10)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["model_name"] == MODEL
    assert out["outputs"][0]["data"] == DATA


def test_predict_binary(vx):
    x = np.arange(16, dtype=np.float32).reshape(1, 16)
    body, hlen = h.build_binary_request(
        [("INPUT0", "FP32", [1, 16], x)],
        outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": True}}])
    r = requests.post(vx.vx + "/predict", data=body,
                      headers={"Content-Type": BINARY + str(hlen)}, timeout=10)
    assert r.status_code == 200, r.text
    _, values = h.parse_infer_response(r)
    assert np.array_equal(values["OUTPUT0"], x)


def test_redirect(vx):
    def post(path, **kw):
        return requests.post(vx.vx + "/predict", headers={REDIRECT: path}, timeout=10, **kw)

    r = post(f"v2/models/{MODEL}/infer", json=_json_body())
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == DATA, r.text
    assert post("v2/health/ready").status_code == 200
    assert post("v2/health/live").status_code == 200
    assert post("v2").json()["name"] == "triton"
    assert post(f"v2/models/{MODEL}").json()["name"] == MODEL
    assert post(f"v2/models/{MODEL}/ready").status_code == 200
    assert post(f"v2/models/{MODEL}/config").json()["name"] == MODEL
    assert "model_stats" in post("v2/models/stats").json()
    assert any(m["name"] == MODEL for m in post("v2/repository/index").json())
    r = post("metrics")
    assert r.status_code == 200 and "nv_inference_request_success" in r.text
    # Routes tritonserver does not redirect, and unknown ones: 400.
    r = post("v2/logging")
    assert r.status_code == 400 and r.content == b""
    assert post("v2/nothing").status_code == 400
    assert post("/v2/health/ready").status_code == 400  # "//v2/..."
    # Only POST carries a redirect.
    r = requests.get(vx.vx + "/predict", headers={REDIRECT: "v2/health/ready"}, timeout=10)
    assert r.status_code == 405
    # An unknown model: Triton's error, as on the HTTP endpoint.
    r = post("v2/models/nope/infer", json=_json_body())
    assert r.status_code >= 400 and "nope" in h.error_of(r)


def test_bad_requests_then_serves(vx):
    r = requests.post(vx.vx + "/predict", data=b"{not json", timeout=10)
    assert r.status_code == 400 and h.error_of(r)
    r = requests.post(vx.vx + "/predict", data=b"{}",
                      headers={"Content-Type": BINARY + "-1"}, timeout=10)
    assert r.status_code == 400
    assert "inference header size should be in range (0, 2), got: -1" in h.error_of(r)
    assert requests.get(vx.vx + "/predict", timeout=10).status_code == 405
    r = requests.get(vx.vx + "/v2/health/ready", timeout=10)
    assert r.status_code == 400 and r.content == b""
    r = requests.post(vx.vx + "/predict", headers={REDIRECT: "v" * 5000}, timeout=10)
    assert r.status_code == 400 and "longer than" in h.error_of(r)
    r = requests.post(vx.vx + "/predict", json=_json_body(), timeout=10)
    assert r.status_code == 200, r.text
    assert vx.get("/v2/health/ready").status_code == 200


def test_default_model_flag(tmp_path):
    srv = _start(tmp_path, models=(MODEL, "identity_int32"),
                 extra=["--vertex-ai-default-model=identity_int32"])
    try:
        body = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 16],
                            "data": list(range(16))}]}
        r = requests.post(srv.vx + "/predict", json=body, timeout=10)
        assert r.status_code == 200, r.text
        assert r.json()["model_name"] == "identity_int32"
    finally:
        srv.stop(check=True)


def _exit_text(repo, extra, env):
    args = h.server_args([repo], *h.free_ports(3), extra)
    p = subprocess.run(args, capture_output=True, text=True, timeout=h.START_TIMEOUT_S,
                       env={**os.environ, **env})
    assert p.returncode != 0, p.stdout + p.stderr
    return p.stdout + p.stderr


@pytest.mark.parametrize("models,extra,env,needle", [
    ((MODEL, "identity_int32"), [], ROUTES,
     "Expect the model repository contains only a single model if default model is not specified"),
    ((MODEL,), ["--vertex-ai-default-model=nope"], ROUTES, "Expect the default model 'nope' is loaded"),
    ((MODEL,), [], {"AIP_HEALTH_ROUTE": "/health"},
     "API_PREDICT_ROUTE is not defined for Vertex AI endpoint"),
    ((MODEL,), [], {"AIP_PREDICT_ROUTE": "/predict"},
     "AIP_HEALTH_ROUTE is not defined for Vertex AI endpoint"),
], ids=["two-models", "default-absent", "no-predict-route", "no-health-route"])
def test_start_errors(tmp_path, models, extra, env, needle):
    repo = h.copy_repo(tmp_path / "repo", models=list(models))
    port = h.free_ports(1)[0]
    env = {k: v for k, v in env.items()}
    for k in ROUTES:
        env.setdefault(k, "")
    text = _exit_text(repo, ["--allow-vertex-ai=true", f"--vertex-ai-port={port}", *extra], env)
    assert needle in text, text


def test_aip_mode_environment(tmp_path):
    """AIP_MODE=PREDICTION turns Vertex AI on (port AIP_HTTP_PORT) and HTTP and
    gRPC off; AIP_STORAGE_URI is the repository when none is given."""
    repo = h.copy_repo(tmp_path / "repo", models=[MODEL])
    vport, hport = h.free_ports(2)
    args = [str(h.require_binary()), f"--backend-directory={h.backend_dir()}",
            f"--http-port={hport}"]
    env = {**os.environ, **ROUTES, "AIP_MODE": "PREDICTION", "AIP_HTTP_PORT": str(vport),
           "AIP_STORAGE_URI": str(repo)}
    log = open(tmp_path / "inferd.log", "wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env)
    log.close()
    try:
        url = f"http://127.0.0.1:{vport}"
        _wait_health(url, proc)
        r = requests.post(url + "/predict", json=_json_body(), timeout=10)
        assert r.status_code == 200 and r.json()["model_name"] == MODEL, r.text
        with pytest.raises(requests.ConnectionError):
            requests.get(f"http://127.0.0.1:{hport}/v2/health/ready", timeout=5)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=h.STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
    assert rc == 0, (tmp_path / "inferd.log").read_text(errors="replace")[-3000:]


def test_both_endpoints_one_server(tmp_path):
    """SageMaker and Vertex AI side by side, each on its own port."""
    sport = h.free_ports(1)[0]
    srv = _start(tmp_path, extra=["--allow-sagemaker=true", f"--sagemaker-port={sport}"],
                 env={"SAGEMAKER_TRITON_DEFAULT_MODEL_NAME": MODEL})
    try:
        r = requests.post(f"http://127.0.0.1:{sport}/invocations", json=_json_body(), timeout=10)
        assert r.status_code == 200, r.text
        r = requests.post(srv.vx + "/predict", data=json.dumps(_json_body()), timeout=10)
        assert r.status_code == 200, r.text
    finally:
        srv.stop(check=True)


def test_restricted_api(tmp_path):
    """--http-restricted-api applies to the routes the endpoints reach."""
    sport = h.free_ports(1)[0]
    srv = _start(tmp_path, extra=["--http-restricted-api=inference:k=v",
                                  "--allow-sagemaker=true", f"--sagemaker-port={sport}"],
                 env={"SAGEMAKER_TRITON_DEFAULT_MODEL_NAME": MODEL})
    try:
        for url in (srv.vx + "/predict", f"http://127.0.0.1:{sport}/invocations"):
            r = requests.post(url, json=_json_body(), timeout=10)
            assert r.status_code == 403 and "expecting header 'k'" in h.error_of(r), r.text
            r = requests.post(url, json=_json_body(), headers={"k": "v"}, timeout=10)
            assert r.status_code == 200, r.text
        r = requests.post(srv.vx + "/predict", headers={REDIRECT: f"v2/models/{MODEL}/infer"},
                          json=_json_body(), timeout=10)
        assert r.status_code == 403
        assert requests.get(srv.vx + "/health", timeout=10).status_code == 200
    finally:
        srv.stop(check=True)
