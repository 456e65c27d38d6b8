"""The model repository extension's load and unload under
--model-control-mode=none (features.md section 2c): Triton refuses both, for
any model, with 503 `explicit model load / unload is not allowed if polling is
enabled` (gRPC UNAVAILABLE, the same words), and the models stay as they were.
"""

import grpc
import pytest

import grpc_helpers as g
from grpc_helpers import grpc_client, grpc_stubs  # noqa: F401  (fixtures)

REFUSED = "explicit model load / unload is not allowed if polling is enabled"


def index(server):
    r = server.post("/v2/repository/index", json={})
    assert r.status_code == 200, r.text
    return sorted((m["name"], m.get("version", ""), m.get("state", "")) for m in r.json())


@pytest.mark.parametrize("path", [
    "/v2/repository/models/identity_fp32/load",
    "/v2/repository/models/nope/load",
    "/v2/repository/models/identity_fp32/unload",
    "/v2/repository/models/nope/unload",
])
def test_http_load_unload_refused_in_mode_none(server, path):
    before = index(server)
    r = server.post(path, json={})
    assert r.status_code == 503, r.text
    assert r.headers["Content-Type"].startswith("application/json"), r.headers
    assert r.json() == {"error": REFUSED}
    assert index(server) == before
    assert server.get("/v2/models/identity_fp32/ready").status_code == 200


def test_http_load_unload_need_post(server):
    assert server.get("/v2/repository/models/identity_fp32/load").status_code == 405


@pytest.mark.parametrize("rpc", ["RepositoryModelLoad", "RepositoryModelUnload"])
def test_grpc_load_unload_refused_in_mode_none(server, grpc_client, rpc):
    e = g.rpc_error(grpc_client.call, rpc, model_name="identity_fp32")
    assert e.code() == grpc.StatusCode.UNAVAILABLE, g.describe(e)
    assert e.details() == REFUSED, g.describe(e)
    assert server.get("/v2/models/identity_fp32/ready").status_code == 200
