"""Model control: --model-control-mode=explicit|none|poll, the load and unload
calls of the model repository extension over HTTP and gRPC, and the
repository index, following tritonserver 2.47's recorded answers
(shared/conformance/triton-2.47/features/features.md sections 2, 2b, 2c, 2d).

Each test runs a private inferd on a copy of test/models/control_repo (the
conformance configs: identity_int32, broken_backend with a backend that does
not exist, step1_identity, step2_identity and ensemble_identity chaining
them). Where Triton answers 500 / INTERNAL for a client's mistake, inferd
answers 400 / INVALID_ARGUMENT with Triton's words.

Unload answers as soon as the unload has begun (as Triton): the index is
read until the model has settled, within a generous bound (no timing is
asserted).
"""

import base64
import json
import shutil
import time

import grpc
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as g
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

CONTROL_REPO = h.REPO_ROOT / "test" / "models" / "control_repo"
REFUSED = "explicit model load / unload is not allowed if polling is enabled"
ALL = ["broken_backend", "ensemble_identity", "identity_int32", "step1_identity", "step2_identity"]
NO_BACKEND = ("Invalid argument: unable to find backend library for backend 'no_such_backend', "
              "try specifying runtime on the model configuration.")
SETTLE_S = 30  # an upper bound only: the index is polled, never timed


def override(name="identity_int32", max_batch_size=2, dims=True):
    inp = {"name": "INPUT0", "data_type": "TYPE_INT32"}
    if dims:
        inp["dims"] = [-1]
    return json.dumps({"name": name, "backend": "identity", "max_batch_size": max_batch_size,
                       "input": [inp],
                       "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [-1]}]})


def copy_control_repo(dst, models=None):
    dst.mkdir(parents=True, exist_ok=True)
    for name in models or ALL:
        shutil.copytree(CONTROL_REPO / name, dst / name)
    return dst


@pytest.fixture
def start(tmp_path):
    """start(mode="explicit", models=None, extra=(), wait=()) -> Server"""
    started = []

    def run(mode="explicit", models=None, extra=(), wait=()):
        n = len(started)
        repo = copy_control_repo(tmp_path / f"repo{n}", models)
        srv = h.start_server(tmp_path / f"srv{n}", [repo],
                             extra=[f"--model-control-mode={mode}", *extra], wait_models=wait)
        started.append(srv)
        # Live comes before the start-up scan of the repository has ended
        # (the index is empty until then): wait for its end.
        srv.wait_loading_finished(SETTLE_S)
        return srv

    yield run
    h.stop_all(started)  # exits 0 (Triton's exit 1 after a failed reload is a defect)


def index(srv, ready=None):
    body = {} if ready is None else {"ready": ready}
    r = srv.post("/v2/repository/index", json=body)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/json"), r.headers
    return r.json()


def row(srv, name):
    return next(m for m in index(srv) if m["name"] == name)


def settled(srv, name, state):
    """The index row of `name` once it shows `state` (polled, bounded)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        r = row(srv, name)
        if r.get("state") == state or time.monotonic() > deadline:
            return r
        time.sleep(0.05)


def load(srv, name, body=None, **kw):
    if body is None:
        return srv.post(f"/v2/repository/models/{name}/load", **kw)
    return srv.post(f"/v2/repository/models/{name}/load", json=body, **kw)


def unload(srv, name, body=None):
    return srv.post(f"/v2/repository/models/{name}/unload", json={} if body is None else body)


def assert_ok_empty(r):
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/json"), r.headers
    assert r.content == b"", r.content


def assert_error(r, status, text=None, prefix=None):
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["Content-Type"].startswith("application/json"), r.headers
    msg = r.json()["error"]
    if text is not None:
        assert msg == text, msg
    if prefix is not None:
        assert msg.startswith(prefix), msg
    return msg


def infer(srv, name="identity_int32", data=(1, 2, 3, 4)):
    return srv.post(f"/v2/models/{name}/infer", json={"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, len(data)], "data": list(data)}]})


# ============================================================ explicit ===

def test_explicit_starts_with_nothing_loaded(start):
    srv = start()
    assert index(srv) == [{"name": n} for n in ALL]
    assert index(srv, ready=True) == []
    r = srv.post("/v2/repository/index", data=b"")
    assert r.status_code == 200 and r.json() == [{"name": n} for n in ALL], r.text
    assert srv.get("/v2/health/ready").status_code == 200
    assert srv.get("/v2/models/identity_int32/ready").status_code == 400


def test_explicit_load_unload_http(start):
    srv = start()
    assert_ok_empty(load(srv, "identity_int32", {}))
    assert row(srv, "identity_int32") == {"name": "identity_int32", "version": "1", "state": "READY"}
    assert index(srv, ready=True) == [{"name": "identity_int32", "version": "1", "state": "READY"}]
    assert infer(srv).json()["outputs"][0]["data"] == [1, 2, 3, 4]
    # Loading a loaded model again (empty body) is fine.
    assert_ok_empty(load(srv, "identity_int32", data=b""))
    assert srv.get("/v2/models/identity_int32/ready").status_code == 200

    # An unknown model: Triton's words, 400 (Triton: 500); nothing changes.
    assert_error(load(srv, "nope", {}), 400,
                 "failed to load 'nope', failed to poll from model repository")
    assert [m["name"] for m in index(srv)] == ALL

    # A model whose backend does not exist.
    msg = assert_error(load(srv, "broken_backend", {}), 400,
                       prefix="load failed for model 'broken_backend': version 1 is at "
                              "UNAVAILABLE state: " + NO_BACKEND)
    assert msg.endswith(";\n"), repr(msg)
    r = row(srv, "broken_backend")
    assert r["version"] == "1" and r["state"] == "UNAVAILABLE", r
    assert r["reason"].startswith(NO_BACKEND), r

    # Unload: 200 at once; the model then settles UNAVAILABLE "unloaded".
    assert_ok_empty(unload(srv, "identity_int32"))
    assert settled(srv, "identity_int32", "UNAVAILABLE") == {
        "name": "identity_int32", "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"}
    r = srv.get("/v2/models/identity_int32/ready")
    assert r.status_code == 400, r.text
    r = srv.get("/v2/models/identity_int32")
    assert r.status_code == 404, r.text
    assert r.json() == {"error": "Request for unknown model: 'identity_int32' has no available versions"}
    assert infer(srv).status_code == 404
    # Unloading it again, or a model that does not exist: 200.
    assert_ok_empty(unload(srv, "identity_int32"))
    assert_ok_empty(unload(srv, "nope"))
    assert [m["name"] for m in index(srv)] == ALL
    # And it loads again.
    assert_ok_empty(load(srv, "identity_int32"))
    assert settled(srv, "identity_int32", "READY")["state"] == "READY"
    assert infer(srv).status_code == 200


def test_config_override(start):
    srv = start()
    assert_ok_empty(load(srv, "identity_int32"))
    assert srv.get("/v2/models/identity_int32/config").json()["max_batch_size"] == 8
    assert_ok_empty(load(srv, "identity_int32", {"parameters": {"config": override()}}))
    cfg = srv.get("/v2/models/identity_int32/config").json()
    assert cfg["max_batch_size"] == 2, cfg
    assert cfg["instance_group"][0]["name"] == "identity_int32", cfg
    assert infer(srv).status_code == 200
    # A batch over the new limit is refused: the override is what serves.
    r = srv.post("/v2/models/identity_int32/infer", json={"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [3, 1], "data": [1, 2, 3]}]})
    assert r.status_code == 400, r.text


def test_load_refusals_http(start):
    """Client mistakes in a load request: 400 with Triton's words (Triton: 500); the
    model keeps serving."""
    srv = start()
    assert_ok_empty(load(srv, "identity_int32"))
    cases = [
        ({"parameters": {"config": "{not json"}},
         "failed to load 'identity_int32', failed to poll from model repository"),
        ({"parameters": {"config": json.loads(override())}},
         "attempt to access JSON non-string as string"),
        ({"parameters": {"color": "blue"}}, "unexpected error on creating Triton parameter"),
    ]
    for body, text in cases:
        assert_error(load(srv, "identity_int32", body), 400, text)
    assert_error(load(srv, "identity_int32", {"parameters": {"file:1/model.bin": "@@not base64@@"}}),
                 400, "invalid base64 in load parameter 'file:1/model.bin'")
    r = srv.post("/v2/repository/models/identity_int32/load", data=b"{not json",
                 headers={"Content-Type": "application/json"})
    assert_error(r, 400, prefix="failed to parse the request JSON buffer: ")
    r = srv.get("/v2/repository/models/identity_int32/load")
    assert r.status_code == 405 and r.json() == {"error": "Method Not Allowed"}, r.text
    r = srv.get("/v2/repository/models/identity_int32/unload")
    assert r.status_code == 405, r.text
    assert row(srv, "identity_int32")["state"] == "READY"
    assert srv.get("/v2/models/identity_int32/config").json()["max_batch_size"] == 8
    assert infer(srv).status_code == 200


def test_failed_override_of_unloaded_model(start):
    """A config override that does not load: 400 `load failed ...;\\n`, the index
    keeps the reason, other models are untouched."""
    srv = start()
    assert_ok_empty(load(srv, "identity_int32"))
    bad = override("step1_identity", max_batch_size=8).replace('"identity"', '"no_such_backend"')
    msg = assert_error(load(srv, "step1_identity", {"parameters": {"config": bad}}), 400,
                       prefix="load failed for model 'step1_identity': version 1 is at "
                              "UNAVAILABLE state: ")
    assert msg.endswith(";\n"), repr(msg)
    r = row(srv, "step1_identity")
    assert r["state"] == "UNAVAILABLE" and r["reason"], r
    assert srv.get("/v2/models/identity_int32/ready").status_code == 200


def test_failed_reload_keeps_the_old_model(start):
    """Section 2b: a reload that fails leaves the loaded version READY, with its
    old config, serving; then it unloads normally and the server exits 0."""
    srv = start(models=["identity_int32"], extra=["--exit-timeout-secs=5"])
    assert_ok_empty(load(srv, "identity_int32"))
    bad = override().replace('"identity"', '"no_such_backend"')
    msg = assert_error(load(srv, "identity_int32", {"parameters": {"config": bad}}), 400,
                       prefix="load failed for model 'identity_int32': version 1 is at "
                              "UNAVAILABLE state: ")
    assert msg.endswith(";\n"), repr(msg)
    # Triton lists the row as READY without a reason; inferd also says why the
    # reload failed (a reason on the READY row).
    (r,) = index(srv)
    assert (r["name"], r["version"], r["state"]) == ("identity_int32", "1", "READY"), r
    assert "reason" not in r or "no_such_backend" in r["reason"], r
    assert srv.get("/v2/models/identity_int32/config").json()["max_batch_size"] == 8
    r = infer(srv)
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [1, 2, 3, 4], r.text
    assert_ok_empty(unload(srv, "identity_int32"))
    assert settled(srv, "identity_int32", "UNAVAILABLE")["reason"] == "unloaded"
    r = infer(srv)
    assert r.status_code == 404, r.text
    assert r.json() == {"error": "Request for unknown model: 'identity_int32' has no available versions"}


def test_load_with_files(start):
    """"file:<version>/<name>" parameters (base64) with a "config": the model loads
    from a temporary folder holding those files; unload removes it."""
    srv = start()
    blob = bytes(range(256)) * 3
    body = {"parameters": {"config": override(max_batch_size=4),
                           "file:1/model.bin": base64.b64encode(blob).decode()}}
    assert_ok_empty(load(srv, "identity_int32", body))
    assert settled(srv, "identity_int32", "READY")["state"] == "READY"
    assert srv.get("/v2/models/identity_int32/config").json()["max_batch_size"] == 4
    r = infer(srv, data=(7, 8))
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [7, 8], r.text
    assert_ok_empty(unload(srv, "identity_int32"))
    settled(srv, "identity_int32", "UNAVAILABLE")
    assert srv.get("/v2/models/identity_int32/ready").status_code == 400
    # Loaded again without files: from the repository, its own config.
    assert_ok_empty(load(srv, "identity_int32"))
    assert srv.get("/v2/models/identity_int32/config").json()["max_batch_size"] == 8
    # Paths that leave the model folder are refused.
    for path in ("../escape", "/abs/model.bin", "1/../../x"):
        body = {"parameters": {"config": override(), f"file:{path}": "AAAA"}}
        r = load(srv, "identity_int32", body)
        assert r.status_code == 400, (path, r.text)
    assert srv.get("/v2/models/identity_int32/config").json()["max_batch_size"] == 8


def test_load_model_flag(start):
    srv = start(extra=["--load-model=identity_int32"], wait=("identity_int32",))
    rows = index(srv)
    assert [r["name"] for r in rows] == ALL
    assert row(srv, "identity_int32")["state"] == "READY"
    assert all(r == {"name": r["name"]} for r in rows if r["name"] != "identity_int32"), rows


def test_load_model_star_loads_everything(start):
    srv = start(models=["identity_int32", "step1_identity"], extra=["--load-model=*"],
                wait=("identity_int32", "step1_identity"))
    assert index(srv, ready=True) == [
        {"name": "identity_int32", "version": "1", "state": "READY"},
        {"name": "step1_identity", "version": "1", "state": "READY"}]


def test_load_answers_in_order_on_one_connection(start):
    """Pipelined on one connection: a load, then server metadata. The later
    request is answered at once but its answer waits behind the load's: the
    answers come back in request order."""
    srv = start()
    load_req = h.http_request("POST", "/v2/repository/models/identity_int32/load", b"{}",
                              headers={"Content-Type": "application/json"})
    meta_req = h.http_request("GET", "/v2")
    with h.RawConn(srv.http_port) as c:
        c.send(load_req + meta_req)
        first = c.read_response()
        second = c.read_response()
    assert first.status == 200 and first.body == b"", first
    assert second.status == 200 and second.json()["name"] == "triton", second
    assert srv.get("/v2/models/identity_int32/ready").status_code == 200


def test_client_gone_before_the_load_ends(start):
    """The client closes its connection right after sending a load: the load goes
    on, the server keeps serving."""
    srv = start()
    req = h.http_request("POST", "/v2/repository/models/identity_int32/load", b"{}",
                         headers={"Content-Type": "application/json"})
    for _ in range(5):
        with h.RawConn(srv.http_port) as c:
            c.send(req)
    assert settled(srv, "identity_int32", "READY")["state"] == "READY"
    assert infer(srv).status_code == 200
    assert srv.alive()


# ================================================================= gRPC ===

def grpc_param(pb, **kw):
    return pb.ModelRepositoryParameter(**kw)


def test_explicit_grpc(start, grpc_stubs):
    srv = start()
    with g.connect(srv, grpc_stubs) as c:
        pb = c.pb
        r = c.repository_index()
        assert [(m.name, m.version, m.state) for m in r.models] == [(n, "", "") for n in ALL]
        assert len(c.repository_index(ready=True).models) == 0

        c.repository_model_load("identity_int32")
        r = c.repository_index(ready=True)
        assert [(m.name, m.version, m.state, m.reason) for m in r.models] == [
            ("identity_int32", "1", "READY", "")]

        e = g.rpc_error(c.repository_model_load, "nope")
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, g.describe(e)
        assert e.details() == "failed to load 'nope', failed to poll from model repository"

        c.repository_model_load("identity_int32",
                                parameters={"config": grpc_param(pb, string_param=override())})
        cfg = c.model_config("identity_int32").config
        assert cfg.max_batch_size == 2, cfg

        e = g.rpc_error(c.repository_model_load, "identity_int32",
                        parameters={"config": grpc_param(pb, string_param="{not json")})
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, g.describe(e)
        assert e.details() == "failed to load 'identity_int32', failed to poll from model repository"

        e = g.rpc_error(c.repository_model_load, "identity_int32",
                        parameters={"config": grpc_param(pb, bool_param=True)})
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, g.describe(e)
        assert e.details() == "invalid value type for load parameter 'config', expected string_param."

        e = g.rpc_error(c.repository_model_load, "identity_int32",
                        parameters={"color": grpc_param(pb, string_param="blue")})
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, g.describe(e)

        e = g.rpc_error(c.repository_model_load, "broken_backend")
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, g.describe(e)
        assert e.details().startswith("load failed for model 'broken_backend': version 1 is at "
                                      "UNAVAILABLE state: " + NO_BACKEND), g.describe(e)
        assert e.details().endswith(";\n"), g.describe(e)

        c.repository_model_unload("identity_int32")
        settled(srv, "identity_int32", "UNAVAILABLE")
        m = next(m for m in c.repository_index().models if m.name == "identity_int32")
        assert (m.version, m.state, m.reason) == ("1", "UNAVAILABLE", "unloaded"), m
        c.repository_model_unload("nope")

        e = g.rpc_error(c.repository_model_unload, "identity_int32",
                        parameters={"unload_dependents": grpc_param(pb, string_param="true")})
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, g.describe(e)
        assert e.details() == ("invalid value type for 'unload_dependents' parameter, "
                               "expected bool_param.")


def test_grpc_load_with_files(start, grpc_stubs):
    srv = start()
    with g.connect(srv, grpc_stubs) as c:
        pb = c.pb
        c.repository_model_load("identity_int32", parameters={
            "config": grpc_param(pb, string_param=override(max_batch_size=4)),
            "file:1/model.bin": grpc_param(pb, bytes_param=b"\x00\x01\x02" * 100)})
        assert c.model_config("identity_int32").config.max_batch_size == 4
        e = g.rpc_error(c.repository_model_load, "identity_int32", parameters={
            "config": grpc_param(pb, string_param=override()),
            "file:1/model.bin": grpc_param(pb, string_param="AAAA")})
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, g.describe(e)
        assert e.details() == ("invalid value type for load parameter 'file:1/model.bin', "
                               "expected bytes_param.")
        c.repository_model_unload("identity_int32")


def test_grpc_load_cancelled_by_the_client(start, grpc_stubs):
    """A client that gives up on a load (deadline) leaves the server serving; the
    load still completes."""
    srv = start()
    with g.connect(srv, grpc_stubs) as c:
        futures = [c.future("RepositoryModelLoad", model_name="identity_int32", timeout=0.001)
                   for _ in range(5)]
        for f in futures:
            try:
                f.result()
            except grpc.RpcError:
                pass
        assert settled(srv, "identity_int32", "READY")["state"] == "READY"
        assert c.server_live().live


# ======================================================== none and poll ===

@pytest.mark.parametrize("mode", ["none", "poll"])
def test_load_unload_refused_unless_explicit(start, grpc_stubs, mode):
    """Sections 2c and 2d: 503 / UNAVAILABLE with the same words in both modes;
    the models stay loaded."""
    extra = ["--repository-poll-secs=60"] if mode == "poll" else []
    srv = start(mode=mode, models=["identity_int32"], extra=extra, wait=("identity_int32",))
    ready = [{"name": "identity_int32", "version": "1", "state": "READY"}]
    assert index(srv) == ready
    for path in ("identity_int32/load", "nope/load", "identity_int32/unload"):
        r = srv.post(f"/v2/repository/models/{path}", json={})
        assert_error(r, 503, REFUSED)
    assert index(srv) == ready
    with g.connect(srv, grpc_stubs) as c:
        for rpc in ("RepositoryModelLoad", "RepositoryModelUnload"):
            e = g.rpc_error(c.call, rpc, model_name="identity_int32")
            assert e.code() == grpc.StatusCode.UNAVAILABLE, g.describe(e)
            assert e.details() == REFUSED, g.describe(e)
    assert index(srv) == ready
    assert infer(srv).status_code == 200


def test_server_metadata_lists_unload_dependents(start, grpc_stubs):
    srv = start(mode="none", models=["identity_int32"], wait=("identity_int32",))
    ext = srv.get("/v2").json()["extensions"]
    i = ext.index("model_repository")
    assert ext[i + 1] == "model_repository(unload_dependents)", ext
    with g.connect(srv, grpc_stubs) as c:
        assert list(c.server_metadata().extensions) == ext


# ============================================ ensembles (after the merge) ===

def test_ensemble_load_and_unload_dependents(start):
    """Section 2: loading an ensemble loads its composing models; a plain unload
    leaves them READY; unload_dependents unloads those loaded for it only."""
    srv = start()
    r = load(srv, "ensemble_identity")
    if r.status_code == 400 and "names no backend" in r.text:
        pytest.skip("ensembles are not served by this build yet")
    assert_ok_empty(r)
    for n in ("ensemble_identity", "step1_identity", "step2_identity"):
        assert settled(srv, n, "READY")["state"] == "READY", n
    assert_ok_empty(unload(srv, "ensemble_identity"))
    assert settled(srv, "ensemble_identity", "UNAVAILABLE")["reason"] == "unloaded"
    assert row(srv, "step1_identity")["state"] == "READY"
    assert row(srv, "step2_identity")["state"] == "READY"

    # step1 gets a load request of its own: it stays when the ensemble goes.
    assert_ok_empty(load(srv, "step1_identity"))
    assert_ok_empty(load(srv, "ensemble_identity"))
    assert_ok_empty(unload(srv, "ensemble_identity", {"parameters": {"unload_dependents": True}}))
    assert settled(srv, "step2_identity", "UNAVAILABLE")["reason"] == "unloaded"
    assert settled(srv, "ensemble_identity", "UNAVAILABLE")["reason"] == "unloaded"
    assert row(srv, "step1_identity")["state"] == "READY"
    # A non-boolean unload_dependents is taken as false (Triton answers 200).
    assert_ok_empty(unload(srv, "ensemble_identity", {"parameters": {"unload_dependents": "true"}}))


def test_ensemble_unload_dependents_grpc(start, grpc_stubs):
    srv = start()
    with g.connect(srv, grpc_stubs) as c:
        try:
            c.repository_model_load("ensemble_identity")
        except grpc.RpcError as e:
            if "names no backend" in (e.details() or ""):
                pytest.skip("ensembles are not served by this build yet")
            raise
        ready = {m.name for m in c.repository_index(ready=True).models}
        assert ready == {"ensemble_identity", "step1_identity", "step2_identity"}, ready
        c.repository_model_unload("ensemble_identity", parameters={
            "unload_dependents": grpc_param(c.pb, bool_param=True)})
        for n in ("ensemble_identity", "step1_identity", "step2_identity"):
            assert settled(srv, n, "UNAVAILABLE")["reason"] == "unloaded", n
        assert len(c.repository_index(ready=True).models) == 0


def test_caller_gone_during_a_slow_load(private_server, grpc_stubs):
    """The caller goes away while its load is in flight (the sleep backend's
    load_delay_ms holds the load): the HTTP connection closes, the gRPC call
    passes its deadline. The load goes on to READY and nothing else is
    disturbed (the server exits 0 at the end, and under ASan without leaks)."""
    srv = private_server(models=["identity_fp32", "sleep"],
                         extra=("--model-control-mode=explicit", "--load-model=identity_fp32"))
    slow = json.dumps({
        "name": "sleep", "backend": "sleep", "max_batch_size": 0,
        "input": [{"name": "IN", "data_type": "TYPE_INT32", "dims": [1]}],
        "output": [{"name": "OUT", "data_type": "TYPE_INT32", "dims": [1]}],
        "parameters": {"load_delay_ms": {"string_value": "1500"}},
    })
    body = json.dumps({"parameters": {"config": slow}}).encode()
    with h.RawConn(srv.http_port) as c:
        c.send(h.http_request("POST", "/v2/repository/models/sleep/load", body,
                              headers={"Content-Type": "application/json"}))
        assert settled(srv, "sleep", "LOADING")["state"] == "LOADING"
    assert settled(srv, "sleep", "READY")["state"] == "READY"

    assert_ok_empty(unload(srv, "sleep"))
    settled(srv, "sleep", "UNAVAILABLE")
    with g.connect(srv, grpc_stubs) as c:
        e = g.rpc_error(c.call, "RepositoryModelLoad", model_name="sleep", timeout=0.5,
                        parameters={"config": grpc_param(c.pb, string_param=slow)})
        assert e.code() == grpc.StatusCode.DEADLINE_EXCEEDED, g.describe(e)
        assert settled(srv, "sleep", "READY")["state"] == "READY"
        assert c.server_live().live
    assert srv.get("/v2/models/identity_fp32/ready").status_code == 200
