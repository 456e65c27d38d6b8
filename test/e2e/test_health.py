"""Health and server metadata endpoints."""

import e2e_helpers as h


def test_live(server):
    r = server.get("/v2/health/live")
    assert r.status_code == 200, r.text
    assert r.content == b""


def test_ready_clean_repository(private_server):
    # The session server holds broken models; with strict readiness tritonserver
    # reports the server not ready then, so server readiness is checked on a
    # private server whose models all load.
    srv = private_server(models=["identity_fp32", "identity_int32"])
    r = srv.get("/v2/health/ready")
    assert r.status_code == 200, r.text
    assert r.content == b""


def test_ready_answers(server):
    r = server.get("/v2/health/ready")
    assert r.status_code in (200, 400), r.text


def test_server_metadata(server):
    r = server.get("/v2")
    assert r.status_code == 200, r.text
    assert r.headers.get("Content-Type", "").startswith("application/json")
    body = r.json()
    assert isinstance(body.get("name"), str) and body["name"]
    assert isinstance(body.get("version"), str) and body["version"]
    assert isinstance(body.get("extensions"), list)
    assert all(isinstance(e, str) for e in body["extensions"])
    assert "binary_tensor_data" in body["extensions"]
    # Landed: the sequence batcher, the repository index (load/unload as in
    # mode none), priorities and queue policies.
    for ext in ("sequence", "model_repository", "schedule_policy"):
        assert ext in body["extensions"], body


def test_server_metadata_is_tritons(server):
    """tritonserver's default id (clients check the name) and its extension
    list, in its order (its core lists "trace" between "statistics" and
    "logging" when built with tracing)."""
    body = server.get("/v2").json()
    assert body["name"] == "triton", body
    assert body["extensions"] == [
        "classification", "sequence", "model_repository", "model_repository(unload_dependents)",
        "schedule_policy", "model_configuration", "system_shared_memory",
        "cuda_shared_memory", "binary_tensor_data", "parameters", "statistics",
        "trace", "logging"], body


def test_post_live_is_405(server):
    r = server.post("/v2/health/live", data=b"")
    assert r.status_code == 405, r.text
    h.error_of(r)


def test_unknown_path_is_404(server):
    r = server.get("/v2/nosuch")
    assert r.status_code == 404, r.text
    r = server.get("/nosuch/at/all")
    assert r.status_code == 404, r.text


def test_reference_health_exchanges(server):
    """GET exchanges of the reference capture for health and server paths."""
    for ex in h.load_reference():
        req, ref = ex["request"], ex["response"]
        if req["method"] != "GET" or not req["path"].startswith("/v2/health"):
            continue
        if req["path"] == "/v2/health/ready":
            continue  # see test_ready_clean_repository
        r = server.get(req["path"])
        assert r.status_code == ref["status"], (req["path"], r.text)
        if ref["body_text"] is not None:
            assert r.text == ref["body_text"], req["path"]
