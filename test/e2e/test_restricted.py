"""Triton's restricted APIs: --http-restricted-api and
--grpc-restricted-protocol (features.md section 6b). A restricted group is
served only to requests carrying the rule's header (HTTP: the name in any
case) or the metadata triton-grpc-protocol-<key> (gRPC) with the exact value;
the others get 403 with Triton's JSON error sent as text/plain, or
UNAVAILABLE with Triton's message. Groups not named stay open."""

import grpc
import numpy as np
import pytest

import e2e_helpers as h
import grpc_helpers as g
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

SC = grpc.StatusCode
SECTION_6B = ["--http-restricted-api=model-repository:admin-key=secret",
              "--grpc-restricted-protocol=model-repository:admin-key=secret"]
HTTP_REFUSED = {"error": "This API is restricted, expecting header 'admin-key'"}
GRPC_REFUSED = "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'"


@pytest.fixture
def srv6b(private_server):
    return private_server(models=["identity_int32", "identity_fp32"], extra=SECTION_6B,
                          wait_models=("identity_int32",))


def _refused(r, header="admin-key"):
    assert r.status_code == 403, (r.status_code, r.text)
    assert r.headers["Content-Type"] == "text/plain", r.headers
    assert r.json() == {"error": f"This API is restricted, expecting header '{header}'"}


def _index(r):
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/json"), r.headers
    return sorted((m["name"], m.get("version"), m.get("state")) for m in r.json())


# ------------------------------------------------ section 6b, HTTP ---

def test_http_section_6b(srv6b):
    s = srv6b
    _refused(s.post("/v2/repository/index", json={}))
    assert ("identity_int32", "1", "READY") in _index(
        s.post("/v2/repository/index", json={}, headers={"admin-key": "secret"}))
    _refused(s.post("/v2/repository/index", json={}, headers={"admin-key": "wrong"}))
    # The header name in any case.
    assert ("identity_int32", "1", "READY") in _index(
        s.post("/v2/repository/index", json={}, headers={"Admin-Key": "secret"}))
    _refused(s.post("/v2/repository/models/identity_int32/unload", json={}))
    assert s.get("/v2/models/identity_int32/ready").status_code == 200
    # Not restricted: health and model config.
    r = s.get("/v2/health/ready")
    assert r.status_code == 200 and r.text == ""
    r = s.get("/v2/models/identity_int32/config")
    assert r.status_code == 200 and r.json()["max_batch_size"] == 8
    # The value compared exactly; a prefix or a longer value is no match.
    for v in ("secre", "secret2", "SECRET", ""):
        _refused(s.post("/v2/repository/index", json={}, headers={"admin-key": v}))
    # Before the method check, as in Triton.
    _refused(s.get("/v2/repository/index"))


def test_http_header_split_across_reads(srv6b):
    """The matcher sees the header in pieces (llhttp reports what each read
    brought): byte by byte still matches."""
    with h.RawConn(srv6b.http_port) as c:
        req = (b"POST /v2/repository/index HTTP/1.1\r\nHost: x\r\nX-Other: 1\r\n"
               b"ADMIN-key:  secret\r\nContent-Length: 2\r\n\r\n{}")
        for i in range(len(req)):
            c.send(req[i:i + 1])
        r = c.read_response()
        assert r.status == 200, r
        # A second request on the connection without the header: refused
        # (what the first one carried is forgotten).
        c.send(b"POST /v2/repository/index HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        r = c.read_response()
        assert r.status == 403, r
        assert r.json() == HTTP_REFUSED


# ------------------------------------------------ section 6b, gRPC ---

def test_grpc_section_6b(srv6b, grpc_stubs):
    with g.connect(srv6b, grpc_stubs) as c:
        for md in (None, [("admin-key", "secret")], [("triton-grpc-protocol-admin-key", "wrong")]):
            e = g.rpc_error(c.repository_index, metadata=md)
            assert e.code() == SC.UNAVAILABLE and e.details() == GRPC_REFUSED, g.describe(e)
        r = c.repository_index(metadata=[("triton-grpc-protocol-admin-key", "secret")])
        assert ("identity_int32", "1", "READY") in [(m.name, m.version, m.state) for m in r.models]
        e = g.rpc_error(c.repository_model_unload, "identity_int32")
        assert e.code() == SC.UNAVAILABLE and e.details() == GRPC_REFUSED, g.describe(e)
        assert c.server_ready().ready is True
        assert c.model_ready("identity_int32").ready is True


# ------------------------------------------- one group per category ---

ALL_BUT_HEALTH = ["metadata:meta-key=m", "inference:infer-key=i", "model-config:cfg-key=c",
                  "statistics:stats-key=s", "model-repository,shared-memory,trace,logging:adm=a"]


@pytest.fixture
def srv_all(private_server):
    extra = [f"--http-restricted-api={r}" for r in ALL_BUT_HEALTH]
    extra += [f"--grpc-restricted-protocol={r}" for r in ALL_BUT_HEALTH + ["health:hk=h"]]
    return private_server(models=["identity_fp32"], extra=extra)


HTTP_CASES = [
    ("GET", "/v2", "meta-key", "m"),
    ("GET", "/v2/models/identity_fp32", "meta-key", "m"),
    ("GET", "/v2/models/identity_fp32/versions/1", "meta-key", "m"),
    ("GET", "/v2/models/identity_fp32/config", "cfg-key", "c"),
    ("GET", "/v2/models/stats", "stats-key", "s"),
    ("GET", "/v2/models/identity_fp32/stats", "stats-key", "s"),
    ("POST", "/v2/repository/index", "adm", "a"),
]


@pytest.mark.parametrize("method,path,key,value", HTTP_CASES)
def test_http_each_group(srv_all, method, path, key, value):
    body = {} if method == "POST" else None
    r = srv_all.session.request(method, srv_all.url(path), json=body, timeout=10)
    _refused(r, key)
    # Another group's header does not open it.
    other = "adm" if key != "adm" else "meta-key"
    _refused(srv_all.session.request(method, srv_all.url(path), json=body,
                                     headers={other: "a" if other == "adm" else "m"}, timeout=10), key)
    r = srv_all.session.request(method, srv_all.url(path), json=body, headers={key: value}, timeout=10)
    assert r.status_code == 200, r.text


def test_http_inference_group(srv_all):
    x = np.arange(16, dtype=np.float32).reshape(1, 16)
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": x.ravel().tolist()}]}
    for path in ("/v2/models/identity_fp32/infer", "/v2/models/identity_fp32/generate",
                 "/v2/models/identity_fp32/generate_stream"):
        _refused(srv_all.post(path, json=body), "infer-key")
    r = srv_all.post("/v2/models/identity_fp32/infer", json=body, headers={"Infer-Key": "i"})
    assert r.status_code == 200, r.text
    # Health stays open over HTTP (restricted over gRPC only).
    assert srv_all.get("/v2/health/live").status_code == 200
    assert srv_all.get("/v2/models/identity_fp32/ready").status_code == 200


GRPC_CASES = [
    ("ServerLive", {}, "hk", "h"),
    ("ServerReady", {}, "hk", "h"),
    ("ModelReady", {"name": "identity_fp32"}, "hk", "h"),
    ("ServerMetadata", {}, "meta-key", "m"),
    ("ModelMetadata", {"name": "identity_fp32"}, "meta-key", "m"),
    ("ModelConfig", {"name": "identity_fp32"}, "cfg-key", "c"),
    ("ModelStatistics", {"name": "identity_fp32"}, "stats-key", "s"),
    ("RepositoryIndex", {}, "adm", "a"),
    ("SystemSharedMemoryStatus", {}, "adm", "a"),
    ("CudaSharedMemoryStatus", {}, "adm", "a"),
    ("TraceSetting", {}, "adm", "a"),
    ("LogSettings", {}, "adm", "a"),
]


@pytest.mark.parametrize("rpc,fields,key,value", GRPC_CASES)
def test_grpc_each_group(srv_all, grpc_stubs, rpc, fields, key, value):
    want = f"This protocol is restricted, expecting header 'triton-grpc-protocol-{key}'"
    with g.Client(grpc_stubs, g.grpc_target(srv_all)) as c:
        e = g.rpc_error(c.call, rpc, **fields)
        assert e.code() == SC.UNAVAILABLE and e.details() == want, g.describe(e)
        # The bare key (without the prefix) is not the metadata asked for.
        e = g.rpc_error(c.call, rpc, metadata=[(key, value)], **fields)
        assert e.code() == SC.UNAVAILABLE and e.details() == want, g.describe(e)
        try:
            c.call(rpc, metadata=[(f"triton-grpc-protocol-{key}", value)], **fields)
        except grpc.RpcError as err:
            # Past the restriction, the RPC's own answer (e.g. trace and
            # logging settings may be refused by this build): never the
            # restriction's.
            assert err.details() != want, g.describe(err)


def test_grpc_inference_and_health_check(srv_all, grpc_stubs):
    x = np.arange(16, dtype=np.float32).reshape(1, 16)
    with g.Client(grpc_stubs, g.grpc_target(srv_all)) as c:
        req = g.infer_request(c.pb, "identity_fp32", [("INPUT0", "FP32", [1, 16], x)])
        e = g.rpc_error(c.model_infer, req)
        assert e.code() == SC.UNAVAILABLE, g.describe(e)
        assert "triton-grpc-protocol-infer-key" in e.details()
        resp = c.model_infer(req, metadata=[("triton-grpc-protocol-infer-key", "i")])
        np.testing.assert_array_equal(g.outputs_of(resp)["OUTPUT0"], x)
        # The streaming call ends with the same status.
        it = c.model_stream_infer(iter([req]))
        e = g.rpc_error(lambda: list(it))
        assert e.code() == SC.UNAVAILABLE, g.describe(e)
        it = c.model_stream_infer(iter([req]), metadata=[("triton-grpc-protocol-infer-key", "i")])
        out = list(it)
        assert len(out) == 1 and out[0].error_message == "", out
        e = g.rpc_error(c.health_check)
        assert e.code() == SC.UNAVAILABLE, g.describe(e)


# --------------------------------------------------------- the flags ---

@pytest.mark.parametrize("flags,message", [
    # tritonserver's words: "api" for HTTP, "protocol" for gRPC.
    (["--http-restricted-api=health:a=b", "--http-restricted-api=health,metadata:c=d"],
     "restricted api 'health' can not be specified in multiple config groups"),
    (["--grpc-restricted-protocol=inference:a=b", "--grpc-restricted-protocol=inference:a=b"],
     "restricted protocol 'inference' can not be specified in multiple config groups"),
    (["--http-restricted-api=nope:a=b"], "unknown restricted api 'nope'"),
    (["--grpc-restricted-protocol=health,nope:a=b"], "unknown restricted protocol 'nope'"),
    (["--http-restricted-api=health"], "is not <api-list>:<key>=<value>"),
    (["--http-restricted-api=health:a"], "is not <api-list>:<key>=<value>"),
    (["--grpc-restricted-protocol=health:=b"], "must not be empty"),
])
def test_bad_flags(tmp_path, flags, message):
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    ports = h.free_ports(3)
    rc, out, err = h.run_to_exit(h.server_args([repo], *ports, extra=flags))
    assert rc == 1, (rc, out, err)
    assert message in err, err
