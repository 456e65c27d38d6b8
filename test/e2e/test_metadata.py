"""Model metadata, configuration, readiness, version policies, repository index.
Reference bodies come from reference/triton-2.47-http.json (captured from
tritonserver 2.47 serving the same identity_fp32, identity_bytes and batched configs)."""

import pytest

import e2e_helpers as h


@pytest.mark.parametrize("path", [
    "/v2/models/identity_fp32",
    "/v2/models/identity_fp32/versions/1",
    "/v2/models/batched",
])
def test_model_metadata_matches_reference(server, path):
    ref = h.reference_response("GET", path)["body_json"]
    r = server.get(path)
    assert r.status_code == 200, r.text
    got = r.json()
    # "platform" is the backend name for backend models.
    assert got.get("platform") == ref["platform"] == "identity"
    got = {k: v for k, v in got.items() if k != "platform"}
    ref = {k: v for k, v in ref.items() if k != "platform"}
    assert got == ref


@pytest.mark.parametrize("model", ["identity_fp32", "identity_bytes", "batched"])
def test_model_config_matches_reference(server, model):
    path = f"/v2/models/{model}/config"
    ref = h.reference_response("GET", path)["body_json"]
    r = server.get(path)
    assert r.status_code == 200, r.text
    assert r.json() == ref


def test_metadata_multi_io(server):
    r = server.get("/v2/models/identity_multi")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["name"] == "identity_multi"
    assert body["versions"] == ["1"]
    assert body["inputs"] == [
        {"name": "INPUT0", "datatype": "FP32", "shape": [-1, 2]},
        {"name": "INPUT1", "datatype": "INT32", "shape": [-1, 3]},
    ]
    assert body["outputs"] == [
        {"name": "OUTPUT0", "datatype": "FP32", "shape": [-1, 2]},
        {"name": "OUTPUT1", "datatype": "INT32", "shape": [-1, 3]},
    ]


def test_metadata_non_batching_and_bytes(server):
    body = server.get("/v2/models/identity_bytes").json()
    assert body["inputs"] == [{"name": "INPUT0", "datatype": "BYTES", "shape": [-1]}]
    assert body["outputs"] == [{"name": "OUTPUT0", "datatype": "BYTES", "shape": [-1]}]
    body = server.get("/v2/models/identity_fp16").json()
    assert body["inputs"] == [{"name": "INPUT0", "datatype": "FP16", "shape": [4]}]
    body = server.get("/v2/models/identity_bool").json()
    assert body["inputs"] == [{"name": "INPUT0", "datatype": "BOOL", "shape": [-1]}]


def test_config_parameters_and_instances(server):
    cfg = server.get("/v2/models/identity_delay/config").json()
    assert cfg["parameters"] == {"execute_delay_ms": {"string_value": "200"}}
    cfg = server.get("/v2/models/sleep/config").json()
    assert cfg["backend"] == "sleep"
    assert [g["count"] for g in cfg["instance_group"]] == [3]
    assert [g["kind"] for g in cfg["instance_group"]] == ["KIND_CPU"]


def test_model_ready(server):
    r = server.get("/v2/models/identity_fp32/ready")
    assert r.status_code == 200, r.text
    r = server.get("/v2/models/identity_fp32/versions/1/ready")
    assert r.status_code == 200, r.text


def test_missing_version_ready_is_400(server):
    r = server.get("/v2/models/identity_fp32/versions/7/ready")
    assert r.status_code == 400, r.text
    h.error_of(r)


@pytest.mark.parametrize("suffix", ["", "/config"])
def test_unknown_model_is_404(server, suffix):
    r = server.get(f"/v2/models/nope{suffix}")
    assert r.status_code == 404, r.text
    assert "nope" in h.error_of(r)


def test_unknown_model_ready_not_200(server):
    r = server.get("/v2/models/nope/ready")
    assert r.status_code in (400, 404), r.text


@pytest.mark.parametrize("model,ready,not_ready,default", [
    ("versioned", ["2", "3"], ["1"], "3"),
    ("specific_version", ["1", "3"], ["2"], "3"),
    ("all_versions", ["1", "2"], [], "2"),
    ("batched", ["1", "2"], [], "2"),
])
def test_version_policies(server, model, ready, not_ready, default):
    for v in ready:
        r = server.get(f"/v2/models/{model}/versions/{v}/ready")
        assert r.status_code == 200, (v, r.text)
    for v in not_ready:
        r = server.get(f"/v2/models/{model}/versions/{v}/ready")
        assert r.status_code == 400, (v, r.text)
    r = server.get(f"/v2/models/{model}/ready")
    assert r.status_code == 200, r.text
    meta = server.get(f"/v2/models/{model}").json()
    assert sorted(meta["versions"], key=int) == ready
    for v in ready:
        r = server.get(f"/v2/models/{model}/versions/{v}")
        assert r.status_code == 200, (v, r.text)
        assert r.json()["name"] == model
    for v in not_ready:
        r = server.get(f"/v2/models/{model}/versions/{v}")
        assert r.status_code >= 400, (v, r.text)
    # Without a version the highest loaded version serves.
    r = h.infer_json(server, model, [("INPUT0", "INT32", [1, 2], [5, 6])])
    assert r.status_code == 200, r.text
    assert r.json()["model_version"] == default


@pytest.mark.parametrize("model", h.BROKEN_MODELS)
def test_broken_model_not_ready(server, model):
    r = server.get(f"/v2/models/{model}/ready")
    assert r.status_code == 400, r.text


def test_broken_model_infer_fails(server):
    r = h.infer_json(server, "broken_backend", [("INPUT0", "FP32", [4], [1, 2, 3, 4])])
    assert r.status_code in (400, 404, 503), r.text
    h.error_of(r)


def _index(server, body):
    r = server.post("/v2/repository/index", json=body)
    assert r.status_code == 200, r.text
    idx = r.json()
    assert isinstance(idx, list)
    for e in idx:
        assert isinstance(e.get("name"), str), e
    return idx


def test_repository_index(server):
    idx = _index(server, {})
    by_name = {}
    for e in idx:
        by_name.setdefault(e["name"], []).append(e)
    assert set(by_name) == set(h.GOOD_MODELS) | set(h.BROKEN_MODELS), sorted(by_name)
    for name in h.BROKEN_MODELS:
        for e in by_name[name]:
            assert e.get("state") == "UNAVAILABLE", e
            assert isinstance(e.get("reason"), str) and e["reason"].strip(), e
    for name, versions in h.GOOD_MODELS.items():
        ready = {e.get("version") for e in by_name[name] if e.get("state") == "READY"}
        assert ready == versions, (name, by_name[name])


def test_repository_index_ready_only(server):
    idx = _index(server, {"ready": True})
    assert all(e.get("state") == "READY" for e in idx), idx
    got = {(e["name"], e.get("version")) for e in idx}
    want = {(n, v) for n, vs in h.GOOD_MODELS.items() for v in vs}
    assert got == want


def test_repository_index_reference_shape(server):
    """Entries for READY models look exactly like the reference entries."""
    ref = h.reference_response("POST", "/v2/repository/index")["body_json"]
    idx = _index(server, {})
    for e in ref:
        assert e in idx, e
