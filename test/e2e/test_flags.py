"""Every tritonserver 2.47 flag on inferd's command line (docs/flags.md).

Each accepted flag starts a server that serves (one identity model, so the
starts stay fast); bad values are refused with a message naming the flag;
flags whose feature inferd lacks are refused; the flags with an effect are
checked for it. Each test runs private servers on free loopback ports.
"""

import os
import socket
import struct
import subprocess
import time
import zlib

import numpy as np
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as g
from grpc_helpers import FLAG_ACK, GOAWAY, PING, SETTINGS, frame
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

MODEL = "identity_fp32"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return h.copy_repo(tmp_path_factory.mktemp("flags") / "repo", models=[MODEL])


def _args(repos, extra=(), ports=None):
    http_port, grpc_port, metrics_port = ports or h.free_ports(3)
    return h.server_args(repos, http_port, grpc_port, metrics_port, extra)


def _refused(repo, extra, env=None):
    """Runs inferd expecting it to refuse to start; returns its output."""
    args = _args([repo], extra)
    if env is None:
        rc, out, err = h.run_to_exit(args)
    else:
        p = subprocess.run(args, capture_output=True, text=True, timeout=h.START_TIMEOUT_S,
                           env={**os.environ, **env}, cwd=str(h.REPO_ROOT))
        rc, out, err = p.returncode, p.stdout, p.stderr
    assert rc != 0, f"inferd started with {extra}\n{out}{err}"
    return out + err


# Flags with a value tritonserver accepts (both spellings appear). Values that
# are files are filled in by the test ("{tmp}").
ACCEPTED = [
    ["--id=my-inferd"],
    ["--id", "other-name"],
    ["--exit-timeout-secs=5"],
    ["--exit-timeout-secs=-1"],  # tritonserver uses max(0, N)
    ["--log-verbose=-1"],
    ["--model-store={tmp}"],
    ["--exit-on-error=false"],
    ["--disable-auto-complete-config"],
    ["--strict-model-config=false"],
    ["--strict-readiness=true"],
    ["--model-control-mode=NONE"],
    ["--model-control-mode=poll", "--repository-poll-secs=5"],
    ["--repository-poll-secs=-3"],  # ignored outside poll mode, as tritonserver
    ["--model-control-mode=explicit", "--load-model=" + MODEL],
    ["--model-config-name=h100"],
    ["--model-load-thread-count=8"],
    ["--model-load-thread-count", "1"],
    ["--model-load-gpu-limit=0:0.8", "--model-load-gpu-limit", "1:0"],
    ["--model-load-retry-count=0"],
    ["--model-load-retry-count=3"],
    ["--model-namespacing=false"],
    ["--model-namespacing=true"],
    ["--repoagent-directory=/opt/tritonserver/repoagents"],
    ["--enable-peer-access=true"],
    ["--allow-http=true"],
    ["--http-address=127.0.0.1"],
    ["--reuse-http-port=true"],
    ["--http-thread-count=8"],
    ["--http-restricted-api=model-repository:admin-key=admin-value"],
    ["--http-header-forward-pattern=^x-fwd-"],
    ["--grpc-header-forward-pattern", "x-.*"],
    ["--allow-grpc=false"],
    ["--grpc-address=127.0.0.1"],
    ["--reuse-grpc-port=1"],
    ["--grpc-infer-allocation-pool-size=16"],
    ["--grpc-infer-thread-count=4"],
    ["--grpc-max-response-pool-size=8"],
    ["--grpc-use-ssl=false"],
    ["--grpc-infer-response-compression-level=high"],
    ["--grpc-infer-response-compression-level", "none"],
    ["--grpc-keepalive-time=10000"],
    ["--grpc-keepalive-timeout=5000"],
    ["--grpc-keepalive-permit-without-calls=true"],
    ["--grpc-http2-max-pings-without-data=0"],
    ["--grpc-http2-min-recv-ping-interval-without-data=5000"],
    ["--grpc-http2-max-ping-strikes=0"],
    ["--grpc-max-connection-age=60000"],
    ["--grpc-max-connection-age-grace=5000"],
    ["--grpc-restricted-protocol=health:k=v"],
    ["--log-verbose=true"],
    ["--log-verbose=1"],
    ["--log-info=false"],
    ["--log-warning=on"],
    ["--log-error=1"],
    ["--log-format=ISO8601"],
    ["--log-file={tmp}/inferd.log"],
    ["--allow-sagemaker=false"],
    ["--sagemaker-port=8080"],
    ["--sagemaker-safe-port-range=8000-8500"],
    ["--sagemaker-thread-count=8"],
    ["--allow-vertex-ai=false"],
    ["--vertex-ai-port=8080"],
    ["--vertex-ai-thread-count=8"],
    ["--vertex-ai-default-model=" + MODEL],
    ["--allow-metrics=false"],
    ["--allow-gpu-metrics=false"],
    ["--allow-cpu-metrics=false"],
    ["--metrics-address=127.0.0.1"],
    ["--metrics-interval-ms=500.5"],
    ["--metrics-config=summary_latencies=false"],
    ["--trace-config=level=OFF"],
    ["--trace-config", "triton,file={tmp}/trace.json", "--trace-config", "rate=100",
     "--trace-config", "count=-1", "--trace-config", "triton,log-frequency=0",
     "--trace-config", "mode=triton"],
    ["--trace-config", "triton,file={tmp}/trace.json", "--trace-config", "level=TIMESTAMPS",
     "--trace-config", "level=TENSORS", "--trace-config", "rate=1"],
    ["--trace-level=TENSORS", "--trace-file={tmp}/trace.json"],
    ["--trace-level=OFF"],
    ["--trace-level=TIMESTAMPS", "--trace-level=OFF"],
    ["--trace-file={tmp}/trace.json"],
    ["--trace-rate=1000"],
    ["--trace-count=-1"],
    ["--trace-log-frequency=0"],
    ["--backend-config=identity,some-setting=1"],
    ["--cache-directory={tmp}"],
    ["--cache-config=local,size=1048576"],
    ["--cache-config", "local,size=1024", "--cache-config", "local,unused=x"],
    ["--response-cache-byte-size=1024"],
    ["--cache-config=local,size=0", "--cache-directory={tmp}"],
    ["--rate-limit=off"],
    ["--rate-limit=OFF", "--rate-limit-resource=R1:4:0", "--rate-limit-resource=R2:2"],
    ["--rate-limit=execution_count"],
    ["--rate-limit=EXECUTION_COUNT", "--rate-limit-resource=R1:4:0", "--rate-limit-resource=R2:2"],
    ["--pinned-memory-pool-byte-size=0"],
    ["--cuda-virtual-address-size=0:1073741824"],
    ["--min-supported-compute-capability=7.5"],
    ["--buffer-manager-thread-count=2"],
    ["--host-policy=gpu_0,numa-node=0"],
    ["--host-policy=cpu,cpu-cores=0", "--host-policy=cpu,pinned-memory=x"],
    ["--model-repo={tmp}"],  # a unique prefix, as getopt_long takes it
]


@pytest.mark.parametrize("extra", ACCEPTED, ids=lambda e: " ".join(e)[:60])
def test_accepted_flag_serves(repo, tmp_path, extra):
    extra = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    srv = h.start_server(tmp_path, [repo], extra=extra)
    try:
        assert srv.get("/v2/health/live").status_code == 200
    finally:
        srv.stop()


def test_help_lists_tritonserver_flags():
    p = subprocess.run([str(h.require_binary()), "--help"], capture_output=True, text=True,
                       timeout=h.START_TIMEOUT_S)
    assert p.returncode == 0, p.stderr
    for flag in ("--id", "--model-config-name", "--disable-auto-complete-config",
                 "--reuse-grpc-port", "--allow-cpu-metrics", "--http-thread-count",
                 "--cache-config", "--rate-limit=execution_count"):
        assert flag in p.stdout, flag


BAD = [
    (["--exit-timeout-secs=abc"], "exit-timeout-secs"),
    (["--model-control-mode=sometimes"], "model-control-mode"),
    (["--model-config-name="], "model-config-name"),
    (["--model-load-thread-count=x"], "model-load-thread-count"),
    (["--reuse-http-port=maybe"], "reuse-http-port"),
    (["--allow-cpu-metrics=2"], "allow-cpu-metrics"),
    (["--metrics-interval-ms=fast"], "metrics-interval-ms"),
    (["--grpc-infer-response-compression-level=max"], "compression_level"),
    (["--grpc-infer-response-compression-level="], "compression_level"),
    (["--grpc-keepalive-time=x"], "grpc-keepalive-time"),
    (["--log-verbose=loud"], "log-verbose"),
    (["--log-format=json"], "log-format"),
    (["--sagemaker-safe-port-range=8000"], "sagemaker-safe-port-range"),
    (["--trace-config=level=SOME"], "trace-config"),
    (["--trace-config=,rate=1"], "No trace mode specified"),
    (["--trace-config=zipkin,rate=1"], "trace mode"),
    (["--trace-config=triton,rate=often"], "trace-config"),
    (["--trace-level=x"], "trace-level"),
    (["--cache-config=size=1"], "No cache specified"),
    (["--cache-config=local"], "--cache-config option format"),
    (["--cache-config=local,size=1", "--cache-config=redis,host=h"], "only one cache"),
    (["--cache-config=local,size=big"], "local cache size"),
    (["--cache-config=local,other=1"], "the local cache needs a size"),
    (["--response-cache-byte-size=x"], "response-cache-byte-size"),
    (["--cache-config=nosuch,a=b", "--cache-directory=/nonexistent"],
     "unable to find 'libtritoncache_nosuch.so' for cache. Searched: /nonexistent"),
    (["--rate-limit=fast"], "--rate-limit"),
    (["--rate-limit-resource=R1"], "--rate-limit-resource option format"),
    (["--rate-limit-resource=R1:x"], "--rate-limit-resource option format"),
    (["--rate-limit-resource=R1:1:0:2"], "--rate-limit-resource option format"),
    (["--rate-limit-resource=R1:-1"], "--rate-limit-resource"),
    (["--cuda-virtual-address-size=0"], "cuda-virtual-address-size"),
    (["--min-supported-compute-capability=x"], "min-supported-compute-capability"),
    (["--host-policy=gpu_0"], "--host-policy option format"),
    (["--model-load-gpu-limit=0"], "model-load-gpu-limit"),
    (["--model-load-gpu-limit", "-1:0.6"], "expects device ID >= 0, got -1"),
    (["--model-load-gpu-limit", "0:-0.4"], "expects limit fraction to be in range [0.0, 1.0], got -0.4"),
    (["--model-load-gpu-limit", "0:1.5"], "expects limit fraction to be in range [0.0, 1.0], got 1.5"),
    (["--disable-auto-complete-config=true"], "disable-auto-complete-config"),
    (["--http-thread-count=many"], "http-thread-count"),
    (["--http-header-forward-pattern=x-(["], "http-header-forward-pattern"),
    (["--grpc-header-forward-pattern=*("], "grpc-header-forward-pattern"),
    (["--id"], "--id"),
    (["--grpc-"], "ambiguous"),
]


@pytest.mark.parametrize("extra,needle", BAD, ids=lambda e: " ".join(e) if isinstance(e, list) else None)
def test_bad_value_refused(repo, extra, needle):
    text = _refused(repo, extra)
    assert needle in text, text


REFUSED = [
    (["--trace-config", "mode=opentelemetry"], "opentelemetry is not supported by inferd yet"),
]


@pytest.mark.parametrize("extra,flag", REFUSED, ids=lambda e: " ".join(e) if isinstance(e, list) else None)
def test_missing_feature_refused(repo, extra, flag):
    text = _refused(repo, extra)
    assert flag in text and "not supported" in text, text


def test_cache_flags_incompatible(repo):
    text = _refused(repo, ["--cache-config=local,size=1", "--response-cache-byte-size=1"])
    assert "Incompatible flags --response-cache-byte-size and --cache-config" in text, text


def _serves(url, timeout=h.START_TIMEOUT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return requests.get(url, timeout=2).status_code
        except requests.RequestException:
            time.sleep(0.05)
    raise AssertionError(f"{url} not served within {timeout}s")


def test_cloud_endpoints_serve(repo, tmp_path):
    """--allow-sagemaker=true and --allow-vertex-ai=true start their
    endpoints (test_sagemaker.py, test_vertex_ai.py test them)."""
    sport, vport = h.free_ports(2)
    srv = h.start_server(tmp_path, [repo], extra=[
        "--allow-sagemaker=true", f"--sagemaker-port={sport}", "--sagemaker-thread-count=4",
        "--allow-vertex-ai=true", f"--vertex-ai-port={vport}", "--vertex-ai-thread-count=4",
        "--vertex-ai-default-model=" + MODEL],
        env={"AIP_HEALTH_ROUTE": "/health", "AIP_PREDICT_ROUTE": "/predict"})
    try:
        assert _serves(f"http://127.0.0.1:{sport}/ping") == 200
        assert _serves(f"http://127.0.0.1:{vport}/health") == 200
    finally:
        srv.stop()


def test_vertex_ai_by_environment(repo, tmp_path):
    """AIP_MODE=PREDICTION turns Vertex AI on (and HTTP off unless asked)."""
    vport = h.free_ports(1)[0]
    srv = h.start_server(tmp_path, [repo], extra=["--allow-http=true"],
                         env={"AIP_MODE": "PREDICTION", "AIP_HTTP_PORT": str(vport),
                              "AIP_HEALTH_ROUTE": "/hc", "AIP_PREDICT_ROUTE": "/p"})
    try:
        assert _serves(f"http://127.0.0.1:{vport}/hc") == 200
    finally:
        srv.stop()
    # Without the routes Vertex AI cannot start; turned off, the same
    # environment starts.
    text = _refused(repo, [], env={"AIP_MODE": "PREDICTION", "AIP_HTTP_PORT": str(vport),
                                   "AIP_PREDICT_ROUTE": "", "AIP_HEALTH_ROUTE": ""})
    assert "API_PREDICT_ROUTE is not defined for Vertex AI endpoint" in text, text
    rc_args = _args([repo], ["--allow-vertex-ai=false", "--help"])
    p = subprocess.run(rc_args, capture_output=True, text=True, timeout=h.START_TIMEOUT_S,
                       env={**os.environ, "AIP_MODE": "PREDICTION"})
    assert p.returncode == 0, p.stderr


def test_no_effect_flags_say_so_once(repo, tmp_path):
    srv = h.start_server(tmp_path, [repo], extra=["--http-thread-count=4", "--http-thread-count=8",
                                                  "--host-policy=gpu_0,numa-node=0",
                                                  "--host-policy=cpu,other=1"])
    try:
        srv.stop()
        log = srv.log_tail(100000)
        assert log.count("--http-thread-count has no effect in inferd") == 1, log
        assert "--host-policy has no effect in inferd: only its numa-node and cpu-cores" in log, log
    finally:
        srv.stop(check=False)


# ------------------------------------------------------------ effects ---

def test_id_names_the_server(repo, tmp_path, grpc_stubs):  # noqa: F811
    srv = h.start_server(tmp_path, [repo], extra=["--id=edge-7"])
    try:
        assert srv.get("/v2").json()["name"] == "edge-7"
        with g.connect(srv, grpc_stubs) as c:
            assert c.server_metadata().name == "edge-7"
    finally:
        srv.stop()


def test_default_name_is_triton(repo, tmp_path):
    srv = h.start_server(tmp_path, [repo])
    try:
        assert srv.get("/v2").json()["name"] == "triton"
    finally:
        srv.stop()


def test_model_config_name_picks_the_other_config(tmp_path):
    r = h.copy_repo(tmp_path / "repo", models=[MODEL, "identity_int32"])
    alt = (r / MODEL / "config.pbtxt").read_text().replace("max_batch_size: 8", "max_batch_size: 4")
    assert alt != (r / MODEL / "config.pbtxt").read_text()
    (r / MODEL / "configs").mkdir()
    (r / MODEL / "configs" / "small.pbtxt").write_text(alt)
    srv = h.start_server(tmp_path, [r], extra=["--model-config-name=small"],
                         wait_models=(MODEL, "identity_int32"))
    try:
        assert srv.get(f"/v2/models/{MODEL}/config").json()["max_batch_size"] == 4
        # A model without configs/small.pbtxt keeps its config.pbtxt.
        assert srv.get("/v2/models/identity_int32/config").status_code == 200
    finally:
        srv.stop()
    srv = h.start_server(tmp_path / "again", [r])
    try:
        assert srv.get(f"/v2/models/{MODEL}/config").json()["max_batch_size"] == 8
    finally:
        srv.stop()


def test_disable_auto_complete_config_is_strict(tmp_path):
    r = h.copy_repo(tmp_path / "repo", models=[MODEL])
    (r / MODEL / "config.pbtxt").unlink()
    srv = h.start_server(tmp_path, [r], extra=["--disable-auto-complete-config"], wait_models=())
    try:
        deadline = time.monotonic() + 10
        while "model loading finished" not in srv.log_tail(100000) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.get(f"/v2/models/{MODEL}/ready").status_code != 200
        assert "strict-model-config" in srv.log_tail(100000)
    finally:
        srv.stop()


def _start_on(tmp_path, repo, ports, extra):
    """inferd on the given (http, grpc, metrics) ports; waits until live on
    HTTP; returns the h.Server, or None when the process exits first."""
    args = _args([repo], extra, ports=ports)
    tmp_path.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "inferd.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=str(h.REPO_ROOT))
    srv = h.Server(proc, *ports, log, [repo], args)
    deadline = time.monotonic() + h.START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None
        if "ready (" in srv.log_tail(100000):
            return srv
        time.sleep(0.05)
    srv.stop(check=False)
    raise AssertionError("inferd did not start\n" + srv.log_tail())


def test_reuse_port_lets_two_servers_share_ports(repo, tmp_path, grpc_stubs):  # noqa: F811
    http_port, grpc_port, m1, m2 = h.free_ports(4)
    reuse = ["--reuse-http-port=true", "--reuse-grpc-port=true"]
    a = _start_on(tmp_path / "a", repo, (http_port, grpc_port, m1), reuse)
    assert a is not None
    try:
        b = _start_on(tmp_path / "b", repo, (http_port, grpc_port, m2), reuse)
        assert b is not None, "the second server could not bind the shared ports"
        try:
            for _ in range(8):
                assert requests.get(f"http://127.0.0.1:{http_port}/v2/health/live",
                                    timeout=5).status_code == 200
            with g.connect(b, grpc_stubs) as c:
                assert c.server_live().live
        finally:
            b.stop()
    finally:
        a.stop()


def test_without_reuse_port_the_second_server_fails(repo, tmp_path):
    http_port, grpc_port, m1, m2 = h.free_ports(4)
    a = _start_on(tmp_path / "a", repo, (http_port, grpc_port, m1), [])
    assert a is not None
    try:
        b = _start_on(tmp_path / "b", repo, (http_port, grpc_port, m2), [])
        if b is not None:
            b.stop(check=False)
        assert b is None, "a second server bound the same HTTP port without --reuse-http-port"
    finally:
        a.stop()


def _metrics_text(srv, want=None, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        text = requests.get(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=5).text
        if want is None or want in text or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


@pytest.mark.parametrize("allow", [True, False])
def test_allow_cpu_metrics(repo, tmp_path, allow):
    srv = h.start_server(tmp_path, [repo], extra=["--metrics-interval-ms=50",
                                                  f"--allow-cpu-metrics={str(allow).lower()}"])
    try:
        text = _metrics_text(srv, "process_cpu_seconds_total")
        assert "process_cpu_seconds_total" in text, text
        assert ("nv_cpu_utilization" in text) == allow, text
        assert ("nv_cpu_memory_total_bytes" in text) == allow, text
    finally:
        srv.stop()


def test_model_load_thread_count_sizes_the_pool(repo, tmp_path):
    srv = h.start_server(tmp_path, [repo], extra=["--model-load-thread-count=12"])
    try:
        pid = srv.proc.pid
        threads = len(os.listdir(f"/proc/{pid}/task"))
        # libuv starts the whole pool at its first job: 12 workers plus the
        # loop and instance threads.
        assert threads >= 13, threads
    finally:
        srv.stop()


def test_unknown_flag_named(repo):
    text = _refused(repo, ["--no-such-flag=1"])
    assert "unknown option '--no-such-flag'" in text, text


# ------------------------------------------------ header forwarding ---

PARAMS_CONFIG = """name: "params"
backend: "params"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
"""


def _params_repo(root):
    """A repository with the `params` test backend's model (it echoes a
    request's string parameters as response parameters)."""
    so = h.build_dir() / "test" / "backends" / "params" / "libtriton_params.so"
    assert so.is_file(), f"{so} not built (make all)"
    d = root / "params"
    (d / "1").mkdir(parents=True)
    (d / "config.pbtxt").write_text(PARAMS_CONFIG)
    (d / so.name).write_bytes(so.read_bytes())
    return root


def _http_params(srv, headers, parameters=None):
    body = {"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [1]}]}
    if parameters is not None:
        body["parameters"] = parameters
    r = srv.post("/v2/models/params/infer", json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json().get("parameters", {})


def _grpc_params(srv, stubs, metadata):
    with g.connect(srv, stubs) as c:
        req = g.infer_request(c.pb, "params", [("IN", "INT32", [1], [1])])
        resp = c.model_infer(req, metadata=metadata)
        out = {}
        for k, v in resp.parameters.items():
            out[k] = v.string_param if v.WhichOneof("parameter_choice") == "string_param" else v.int64_param
        return out


def test_header_forward_patterns(tmp_path, grpc_stubs):  # noqa: F811
    r = _params_repo(tmp_path / "repo")
    srv = h.start_server(tmp_path, [r], wait_models=("params",),
                         extra=["--http-header-forward-pattern=^x-fwd-",
                                "--grpc-header-forward-pattern=^x-g"])
    try:
        got = _http_params(srv, {"X-Fwd-A": "one", "x-fwd-b": "", "X-Other": "no"},
                           parameters={"p": "json"})
        assert got.get("X-Fwd-A") == "one", got
        assert got.get("x-fwd-b") == "", got
        assert "X-Other" not in got and "x-g1" not in got, got
        assert got.get("p") == "json" and got.get("n_params") == 3, got
        # gRPC: metadata keys arrive lowercase; the transport's own headers
        # (content-type, te, grpc-*) and pseudo-headers are never forwarded.
        got = _grpc_params(srv, grpc_stubs, [("x-g1", "v1"), ("x-fwd-a", "http-only")])
        assert got.get("x-g1") == "v1", got
        assert "x-fwd-a" not in got and got.get("n_params") == 1, got
    finally:
        srv.stop()


def test_header_forward_patterns_take_re2_syntax(tmp_path, grpc_stubs):  # noqa: F811
    """tritonserver compiles the patterns with RE2, case-insensitive ("(?i)"
    before the pattern): "(?-i)" turns that off, and \\d, (?P<name>...) and
    \\z are RE2 syntax that POSIX regcomp does not take."""
    r = _params_repo(tmp_path / "repo")
    srv = h.start_server(tmp_path, [r], wait_models=("params",),
                         extra=[r"--http-header-forward-pattern=(?-i)^X-Id-\d+\z",
                                r"--grpc-header-forward-pattern=^(?P<p>x-g)\d|^x-(?-i:Case)"])
    try:
        got = _http_params(srv, {"X-Id-12": "a", "x-id-13": "b", "X-Id-1x": "c"})
        assert got.get("X-Id-12") == "a", got
        assert "x-id-13" not in got and "X-Id-1x" not in got, got
        assert got.get("n_params") == 1, got
        # gRPC keys come lowercase: "x-Case" can never match the
        # case-sensitive group.
        got = _grpc_params(srv, grpc_stubs, [("x-g1", "v1"), ("x-ga", "no"), ("x-case", "no")])
        assert got.get("x-g1") == "v1", got
        assert got.get("n_params") == 1, got
        # A value with trailing whitespace is forwarded as sent (the HTTP/2
        # layer no longer refuses it).
        got = _grpc_params(srv, grpc_stubs, [("x-g2", "v ")])
        assert got.get("x-g2") == "v ", got
    finally:
        srv.stop()


@pytest.mark.parametrize("flag", ["--http-header-forward-pattern", "--grpc-header-forward-pattern"])
def test_header_forward_pattern_errors_name_the_position(repo, flag):
    rc, out, err = h.run_to_exit(_args([repo], [f"{flag}=x-(?<"]))
    assert rc != 0
    assert flag[2:] in out + err and "at offset" in out + err, out + err


def test_no_forward_pattern_forwards_nothing(tmp_path, grpc_stubs):  # noqa: F811
    r = _params_repo(tmp_path / "repo")
    srv = h.start_server(tmp_path, [r], wait_models=("params",))
    try:
        assert _http_params(srv, {"X-Fwd-A": "one"}).get("n_params") == 0
        assert _grpc_params(srv, grpc_stubs, [("x-g1", "v1")]).get("n_params") == 0
    finally:
        srv.stop()


def test_port_collision_refused(repo):
    """tritonserver's CheckPortCollision: with --reuse-*-port the two
    listeners would otherwise share one port."""
    port, metrics_port = h.free_ports(2)
    rc, out, err = h.run_to_exit(_args([repo], ["--reuse-http-port=true", "--reuse-grpc-port=true"],
                                       ports=(port, port, metrics_port)))
    assert rc != 0
    assert "cannot listen to HTTP requests and GRPC requests at the same address and port" in out + err


@pytest.mark.parametrize("retries,fails,loads", [(0, 1, False), (1, 2, False), (2, 2, True)])
def test_model_load_retry_count(tmp_path, retries, fails, loads):
    """The params model fails its first `fails` loads; it loads when the
    retries cover them."""
    r = _params_repo(tmp_path / "repo")
    (r / "params" / "fail_loads").write_text(f"{fails}\n")
    srv = h.start_server(tmp_path, [r], wait_models=(),
                         extra=[f"--model-load-retry-count={retries}"])
    try:
        deadline = time.monotonic() + 10
        while "model loading finished" not in srv.log_tail(100000) and time.monotonic() < deadline:
            time.sleep(0.05)
        ready = srv.get("/v2/models/params/ready").status_code == 200
        assert ready == loads, srv.log_tail()
        assert srv.log_tail(100000).count("retrying (") == min(retries, fails), srv.log_tail()
    finally:
        srv.stop()


# ------------------------------------------------ gRPC connection age ---

def _h2_frames(port, stream_path=None, timeout=5.0):
    """A raw HTTP/2 connection to the gRPC port (optionally with one call
    left open): the frames until the server closes it, and whether it did."""
    frames = []
    with g.H2Conn(port) as c:
        c.start()
        if stream_path is not None:
            c.send_headers(1, stream_path)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return frames, False
            c.sock.settimeout(left)
            try:
                f = c.read_frame()
            except EOFError:
                return frames, True
            except (socket.timeout, TimeoutError):
                return frames, False
            except OSError:
                return frames, True
            frames.append(f)
            ftype, flags, _, payload = f
            if ftype == SETTINGS and not flags & FLAG_ACK:
                c.send(frame(SETTINGS, FLAG_ACK, 0))
            elif ftype == PING and not flags & FLAG_ACK:
                c.send(frame(PING, FLAG_ACK, 0, payload))


def _goaway_ids(frames):
    return [int.from_bytes(p[:4], "big") & 0x7FFFFFFF for t, _, _, p in frames if t == GOAWAY]


def test_grpc_max_connection_age_drains(repo, tmp_path, grpc_stubs):  # noqa: F811
    srv = h.start_server(tmp_path, [repo], extra=["--grpc-max-connection-age=300"])
    try:
        t0 = time.monotonic()
        frames, closed = _h2_frames(srv.grpc_port)
        assert closed, frames
        assert time.monotonic() - t0 >= 0.25
        ids = _goaway_ids(frames)
        assert ids[:1] == [2**31 - 1] and ids[-1] == 0, frames
        with g.connect(srv, grpc_stubs) as c:  # a new connection serves
            assert c.server_live().live
    finally:
        srv.stop()


STREAM_PATH = f"/{g.SERVICE}/ModelStreamInfer"


def test_grpc_max_connection_age_grace_ends_calls(repo, tmp_path):
    srv = h.start_server(tmp_path, [repo], extra=["--grpc-max-connection-age=200",
                                                  "--grpc-max-connection-age-grace=300"])
    try:
        frames, closed = _h2_frames(srv.grpc_port, STREAM_PATH)
        assert closed, frames
        ids = _goaway_ids(frames)
        assert ids[0] == 2**31 - 1 and ids[-1] == 1, frames
    finally:
        srv.stop()


def test_grpc_max_connection_age_without_grace_waits_for_calls(repo, tmp_path):
    srv = h.start_server(tmp_path, [repo], extra=["--grpc-max-connection-age=200"])
    try:
        frames, closed = _h2_frames(srv.grpc_port, STREAM_PATH, timeout=1.5)
        assert not closed, frames
        assert _goaway_ids(frames) == [2**31 - 1], frames
    finally:
        srv.stop()


# ------------------------------------------- gRPC response compression ---

def _raw_infer(srv, stubs, accept):
    """ModelInfer by hand with grpc-accept-encoding `accept`: (grpc-encoding
    of the answer, compressed flag, message bytes as sent, expected input)."""
    import numpy as np
    x = np.zeros((8, 16), dtype=np.float32)  # compressible: it shrinks
    x[:, 3] = 7
    req = g.infer_request(stubs.pb, MODEL, [("INPUT0", "FP32", [8, 16], x)])
    with g.H2Conn(srv.grpc_port) as c:
        c.start()
        extra = [("grpc-accept-encoding", accept)] if accept is not None else []
        c.send_headers(1, f"/{g.SERVICE}/ModelInfer", extra=extra)
        c.send_data(1, g.grpc_message(req.SerializeToString()), end_stream=True)
        res = c.collect(1)
    assert res.header("grpc-status") == "0", res
    flag, n = struct.unpack(">BI", res.data[:5])
    return res.header("grpc-encoding"), flag, res.data[5:5 + n], x


@pytest.mark.parametrize("level,accept,enc", [
    ("low", "identity,deflate,gzip", "gzip"),
    ("medium", "identity,deflate,gzip", "deflate"),
    ("high", "identity, deflate, gzip", "deflate"),
    ("high", "gzip", "gzip"),
    ("low", "identity", None),
    ("high", None, None),
    ("none", "identity,deflate,gzip", None),
])
def test_grpc_infer_response_compression(repo, tmp_path, grpc_stubs, level, accept, enc):  # noqa: F811
    """Algorithms chosen as gRPC core chooses them for a level, among those
    the client accepts; the messages decompress to the right answer."""
    srv = h.start_server(tmp_path, [repo], extra=[f"--grpc-infer-response-compression-level={level}"])
    try:
        got_enc, flag, body, x = _raw_infer(srv, grpc_stubs, accept)
        assert got_enc == enc
        assert flag == (1 if enc else 0)
        if enc == "gzip":
            body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            body = zlib.decompress(body)
        resp = grpc_stubs.pb.ModelInferResponse.FromString(body)
        np_out = g.outputs_of(resp)["OUTPUT0"]
        assert (np_out == x).all()
        # grpcio decompresses on its own; other RPCs stay uncompressed.
        with g.connect(srv, grpc_stubs) as c:
            req = g.infer_request(c.pb, MODEL, [("INPUT0", "FP32", [8, 16], x)])
            assert (g.outputs_of(c.model_infer(req))["OUTPUT0"] == x).all()
            assert c.server_metadata().name == "triton"
    finally:
        srv.stop()


def test_grpc_stream_infer_compressed(repo, tmp_path, grpc_stubs):  # noqa: F811
    import numpy as np
    srv = h.start_server(tmp_path, [repo], extra=["--grpc-infer-response-compression-level=high"])
    try:
        x = np.zeros((8, 16), dtype=np.float32)
        with g.connect(srv, grpc_stubs) as c:
            reqs = [g.infer_request(c.pb, MODEL, [("INPUT0", "FP32", [8, 16], x + i)]) for i in range(3)]
            outs = list(c.model_stream_infer(iter(reqs)))
            assert len(outs) == 3
            for i, o in enumerate(outs):
                assert not o.error_message, o.error_message
                assert (g.outputs_of(o.infer_response)["OUTPUT0"] == x + i).all()
    finally:
        srv.stop()


# ------------------------------------------------------- host policy ---

def _cpus_allowed(pid):
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("Cpus_allowed_list:"):
                        out.append(line.split(":", 1)[1].strip())
        except OSError:
            pass
    return out


@pytest.mark.skipif(os.cpu_count() < 2, reason="needs two CPUs to tell a pinned thread")
def test_host_policy_cpu_cores_pins_instance_threads(repo, tmp_path):
    last = str(os.cpu_count() - 1)
    srv = h.start_server(tmp_path, [repo], extra=[f"--host-policy=cpu,cpu-cores={last}"])
    try:
        allowed = _cpus_allowed(srv.proc.pid)
        assert allowed.count(last) >= 1, allowed  # the identity instance
        assert any(a != last for a in allowed), allowed  # the loop is not pinned
    finally:
        srv.stop()
    srv = h.start_server(tmp_path / "b", [repo])
    try:
        assert last not in _cpus_allowed(srv.proc.pid)
    finally:
        srv.stop()


@pytest.mark.parametrize("setting,why", [("cpu-cores=x", "invalid cpu-cores"),
                                         ("numa-node=9999", "no NUMA node")])
def test_host_policy_bad_setting_fails_the_load(repo, tmp_path, setting, why):
    srv = h.start_server(tmp_path, [repo], extra=[f"--host-policy=cpu,{setting}"], wait_models=())
    try:
        deadline = time.monotonic() + 10
        while "model loading finished" not in srv.log_tail(100000) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.get(f"/v2/models/{MODEL}/ready").status_code != 200
        log = srv.log_tail(100000)
        assert "host policy 'cpu'" in log and why in log, log
    finally:
        srv.stop()


def _thread_policies(pid):
    """The memory policy of each thread of `pid`, as numa_maps shows a
    thread's own policy on mappings without one of their own."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/numa_maps") as f:
                line = f.readline()
        except OSError:
            continue
        if line:
            out.append(line.split()[1])
    return out


@pytest.mark.skipif(not os.path.exists("/sys/devices/system/node/node0/cpulist")
                    or not os.path.exists("/proc/self/numa_maps"), reason="no NUMA support in this kernel")
@pytest.mark.parametrize("extra", [[], ["--host-policy=cpu,cpu-cores=0"]])
def test_host_policy_numa_node_binds_instance_memory(repo, tmp_path, extra):
    """numa-node binds the instance thread's memory to the node (MPOL_BIND,
    as Triton), with cpu-cores or without; other threads keep the default."""
    srv = h.start_server(tmp_path, [repo], extra=["--host-policy=cpu,numa-node=0"] + extra)
    try:
        pols = _thread_policies(srv.proc.pid)
        assert pols.count("bind:0") >= 1, pols  # the identity instance (at least)
        assert "default" in pols, pols  # the loop
        x = np.arange(16, dtype=np.float32).reshape(1, 16)
        r = srv.post(f"/v2/models/{MODEL}/infer", json={"inputs": [
            {"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": x.flatten().tolist()}]})
        assert r.status_code == 200, r.text
    finally:
        srv.stop()
    srv = h.start_server(tmp_path / "b", [repo])
    try:
        assert "bind:0" not in _thread_policies(srv.proc.pid)
    finally:
        srv.stop()
