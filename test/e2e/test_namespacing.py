"""Model namespacing (--model-namespacing=true): a model name may be in
several repositories, each model in its repository's namespace, as in
Triton.

Two repositories, both with a composing model named "step" (an INT32
identity in A, an FP32 one in B) and an ensemble using it ("ens_a" in A,
"ens_b" in B): each ensemble must resolve "step" in its own repository
(the other one's data type would not even load). A request naming "step"
is ambiguous and refused with Triton's message; a unique name serves; the
repository index lists both "step" rows.
"""

import shutil
import time

import grpc
import numpy as np
import pytest

import e2e_helpers as h
import grpc_helpers as g
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

SETTLE_S = 30  # an upper bound only
AMBIGUOUS = ("There are 2 identifiers of model 'step' in global map, model namespace "
             "must be provided to resolve ambiguity.")


def identity(name, dtype):
    return f"""name: "{name}"
backend: "identity"
max_batch_size: 8
input [ {{ name: "INPUT0" data_type: TYPE_{dtype} dims: [ -1 ] }} ]
output [ {{ name: "OUTPUT0" data_type: TYPE_{dtype} dims: [ -1 ] }} ]
"""


def ensemble(name, dtype):
    return f"""name: "{name}"
platform: "ensemble"
max_batch_size: 8
input [ {{ name: "IN" data_type: TYPE_{dtype} dims: [ -1 ] }} ]
output [ {{ name: "OUT" data_type: TYPE_{dtype} dims: [ -1 ] }} ]
ensemble_scheduling {{
  step [ {{ model_name: "step" model_version: -1
            input_map {{ key: "INPUT0" value: "IN" }}
            output_map {{ key: "OUTPUT0" value: "OUT" }} }} ]
}}
"""


def model(repo, name, text):
    d = repo / name
    (d / "1").mkdir(parents=True)
    (d / "config.pbtxt").write_text(text)


@pytest.fixture
def repos(tmp_path):
    a, b = tmp_path / "repo_a", tmp_path / "repo_b"
    model(a, "step", identity("step", "INT32"))
    model(a, "ens_a", ensemble("ens_a", "INT32"))
    model(a, "only_a", identity("only_a", "INT32"))
    model(b, "step", identity("step", "FP32"))
    model(b, "ens_b", ensemble("ens_b", "FP32"))
    return [a, b]


@pytest.fixture
def start(tmp_path):
    started = []

    def run(repos, extra=(), wait=()):
        srv = h.start_server(tmp_path / f"srv{len(started)}", repos, extra=list(extra),
                             wait_models=wait)
        started.append(srv)
        srv.wait_loading_finished(SETTLE_S)
        return srv

    yield run
    h.stop_all(started)


def infer(srv, name, dtype, data=(1, 2, 3)):
    return srv.post(f"/v2/models/{name}/infer", json={"inputs": [
        {"name": "INPUT0" if not name.startswith("ens") else "IN", "datatype": dtype,
         "shape": [1, len(data)], "data": list(data)}]})


def rows(srv, name):
    r = srv.post("/v2/repository/index", json={})
    assert r.status_code == 200, r.text
    return [m for m in r.json() if m["name"] == name]


def test_namespaces_coexist_and_ensembles_resolve_their_own(start, repos, grpc_stubs):  # noqa: F811
    srv = start(repos, extra=["--model-namespacing=true"], wait=("ens_a", "ens_b", "only_a"))

    # Each ensemble runs its own repository's "step" (INT32 in A, FP32 in B).
    r = infer(srv, "ens_a", "INT32", (4, 5, 6))
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["datatype"] == "INT32"
    assert r.json()["outputs"][0]["data"] == [4, 5, 6]
    r = infer(srv, "ens_b", "FP32", (1.5, 2.5))
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["datatype"] == "FP32"
    assert r.json()["outputs"][0]["data"] == [1.5, 2.5]

    # A name in both namespaces is ambiguous: refused with Triton's words.
    r = infer(srv, "step", "INT32")
    assert r.status_code == 400, r.text
    assert r.json()["error"] == AMBIGUOUS
    assert srv.get("/v2/models/step").status_code == 400
    assert srv.get("/v2/models/step/ready").status_code != 200
    # A unique name serves.
    r = infer(srv, "only_a", "INT32")
    assert r.status_code == 200, r.text

    # The index lists both models of the name, both ready.
    got = rows(srv, "step")
    assert [m["state"] for m in got] == ["READY", "READY"], got

    with g.connect(srv, grpc_stubs) as c:
        pb = c.pb
        err = g.rpc_error(c.model_infer, g.infer_request(
            pb, "step", [("INPUT0", "INT32", [1, 2], np.array([[1, 2]], dtype=np.int32))]))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, g.describe(err)
        assert err.details() == AMBIGUOUS
        resp = c.model_infer(g.infer_request(
            pb, "ens_a", [("IN", "INT32", [1, 2], np.array([[7, 8]], dtype=np.int32))]))
        assert resp.model_name == "ens_a"


def test_without_namespacing_a_shared_name_is_refused(start, repos):
    srv = start(repos, wait=("only_a",))
    got = rows(srv, "step")
    assert len(got) == 1 and got[0]["state"] == "UNAVAILABLE", got
    assert "more than one model repository" in got[0]["reason"], got
    # The ensembles cannot resolve their composing model.
    assert srv.get("/v2/models/ens_a/ready").status_code != 200
    assert infer(srv, "only_a", "INT32").status_code == 200
    r = infer(srv, "step", "INT32")
    assert r.status_code in (400, 404), r.text
    assert "identifiers" not in r.json()["error"]


def test_explicit_load_and_unload_by_name(start, repos):
    srv = start(repos, extra=["--model-namespacing=true", "--model-control-mode=explicit"])
    # Loading an ensemble loads its own repository's composing model only.
    r = srv.post("/v2/repository/models/ens_b/load")
    assert r.status_code == 200, r.text
    assert infer(srv, "ens_b", "FP32", (0.5,)).status_code == 200
    assert sorted(m.get("state", "") for m in rows(srv, "step")) == ["", "READY"]
    # While only one "step" is loaded, the name is still two models'.
    assert infer(srv, "step", "FP32").json()["error"] == AMBIGUOUS

    # A load by name loads every repository's model of that name.
    r = srv.post("/v2/repository/models/step/load")
    assert r.status_code == 200, r.text
    assert [m["state"] for m in rows(srv, "step")] == ["READY", "READY"]
    # ... and an unload by name unloads them all.
    r = srv.post("/v2/repository/models/step/unload", json={})
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + SETTLE_S
    while any(m["state"] != "UNAVAILABLE" for m in rows(srv, "step")):
        assert time.monotonic() < deadline, rows(srv, "step")
        time.sleep(0.05)


def test_startup_load_model_and_poll(start, repos, tmp_path):
    """--load-model=<name> loads every repository's model of that name; in
    poll mode a model added to one repository under a name the other has
    loads beside it."""
    srv = start(repos, extra=["--model-namespacing=true", "--model-control-mode=explicit",
                              "--load-model=step"])
    assert [m["state"] for m in rows(srv, "step")] == ["READY", "READY"]

    srv = start(repos, extra=["--model-namespacing=true", "--model-control-mode=poll",
                              "--repository-poll-secs=1"], wait=("only_a",))
    model(repos[1], "only_a", identity("only_a", "FP32"))
    deadline = time.monotonic() + SETTLE_S
    while [m.get("state") for m in rows(srv, "only_a")] != ["READY", "READY"]:
        assert time.monotonic() < deadline, rows(srv, "only_a")
        time.sleep(0.1)
    assert infer(srv, "only_a", "INT32").json()["error"] == AMBIGUOUS.replace("'step'", "'only_a'")


def test_composing_model_moves_between_repositories(start, tmp_path):
    """With namespacing, a composing model that moves from the ensemble's
    repository to another one (removed from A, added to B, a poll) is found
    there: the ensemble's step resolves to the one model of that name, as
    Triton's global lookup does when the ensemble's own namespace has none."""
    a, b = tmp_path / "mv_a", tmp_path / "mv_b"
    model(a, "step", identity("step", "INT32"))
    model(a, "ens_a", ensemble("ens_a", "INT32"))
    b.mkdir()
    srv = start([a, b], extra=["--model-namespacing=true", "--model-control-mode=poll",
                               "--repository-poll-secs=1"], wait=("ens_a",))
    assert infer(srv, "ens_a", "INT32", (1, 2)).json()["outputs"][0]["data"] == [1, 2]
    shutil.move(str(a / "step"), str(b / "step"))
    deadline = time.monotonic() + SETTLE_S
    # A's "step" goes, B's loads.
    while srv.log_path.read_text().count("successfully loaded 'step' version 1") < 2:
        assert time.monotonic() < deadline, srv.log_tail()
        time.sleep(0.1)
    while True:
        r = infer(srv, "ens_a", "INT32", (3, 4))
        # A's row stays (UNAVAILABLE) beside B's READY one.
        st = sorted(m.get("state") for m in rows(srv, "step"))
        if r.status_code == 200:
            assert st == ["READY", "UNAVAILABLE"], rows(srv, "step")
            break
        assert time.monotonic() < deadline, (r.text, rows(srv, "step"), rows(srv, "ens_a"),
                                              srv.log_tail())
        time.sleep(0.2)
    assert r.json()["outputs"][0]["data"] == [3, 4]
    assert rows(srv, "ens_a")[0]["state"] == "READY"
