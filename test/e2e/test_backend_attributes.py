"""Backend attributes and instance initialization (issue 28), as Triton
24.x does them with the `attrs` test backend (test/models/backends/attrs):

* TRITONBACKEND_GetBackendAttribute is asked once the backend initialized,
  before its models load: a model config without instance_group gets the
  backend's preferred group (KIND_CPU, count 3) where Triton's defaults
  would give one instance, and a group that sets its count keeps it;
* TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(true) lets
  a model's instances initialize concurrently (their initialization windows
  overlap); without it (--backend-config=attrs,parallel-loading=false) they
  initialize one after the other, Triton's default;
* a backend's load error reaches the client and the repository index with
  the backend's text as it is (no inferd prefix naming the entry point).
"""

import shutil

import numpy as np
import pytest
import requests

import e2e_helpers as h

MODELS = ("attrs_default", "attrs_explicit")
REFUSED = "attrs: instance initialization refused"


def config(name, extra=""):
    return (f'name: "{name}"\nbackend: "attrs"\nmax_batch_size: 0\n'
            'input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
            'output [ { name: "WINDOWS" data_type: TYPE_INT64 dims: [ -1, 2 ] } ]\n' + extra)


def make_repo(root):
    so = h.build_dir() / "test" / "backends" / "attrs" / "libtriton_attrs.so"
    assert so.is_file(), f"test backend not built at {so}; run `make` first"
    models = {
        "attrs_default": config("attrs_default"),
        "attrs_explicit": config("attrs_explicit", 'instance_group [ { kind: KIND_CPU count: 2 } ]\n'),
        "attrs_fail": config("attrs_fail",
                             'parameters [ { key: "FAIL_INSTANCE_INIT" value: { string_value: "1" } } ]\n'),
    }
    for name, text in models.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(text)
        shutil.copy2(so, root / name / so.name)
    return root


def start(tmp, extra=()):
    h.require_binary()
    repo = make_repo(tmp / "repo")
    return h.start_server(tmp / "srv", [repo], wait_models=MODELS, extra=list(extra))


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = start(tmp_path_factory.mktemp("attrs"),
              extra=["--model-control-mode=explicit"] + [f"--load-model={m}" for m in MODELS])
    try:
        yield s
    finally:
        s.stop(check=True)


def windows(srv, model):
    body = {"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [0]}]}
    r = srv.post(f"/v2/models/{model}/infer", json=body)
    assert r.status_code == 200, r.text
    out = r.json()["outputs"][0]
    return np.array(out["data"], dtype=np.int64).reshape(out["shape"])


def groups(srv, model):
    r = requests.get(srv.url(f"/v2/models/{model}/config"), timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["instance_group"]


def test_preferred_group_without_instance_group(srv):
    g = groups(srv, "attrs_default")
    assert len(g) == 1 and g[0]["kind"] == "KIND_CPU" and g[0]["count"] == 3, g
    assert g[0]["name"] == "attrs_default", g
    assert len(windows(srv, "attrs_default")) == 3


def test_explicit_count_kept(srv):
    g = groups(srv, "attrs_explicit")
    assert len(g) == 1 and g[0]["kind"] == "KIND_CPU" and g[0]["count"] == 2, g
    assert len(windows(srv, "attrs_explicit")) == 2


def test_parallel_loading_overlaps(srv):
    w = windows(srv, "attrs_default")
    # Every instance started before any ended: all three ran at once.
    assert w[:, 0].max() < w[:, 1].min(), w.tolist()


def test_load_error_is_the_backends_text(srv):
    r = srv.post("/v2/repository/models/attrs_fail/load", json={})
    assert r.status_code == 400, r.text
    err = h.error_of(r)
    assert err == ("load failed for model 'attrs_fail': version 1 is at UNAVAILABLE state: "
                   f"Invalid argument: {REFUSED};\n"), err
    idx = srv.post("/v2/repository/index", json={})
    assert idx.status_code == 200, idx.text
    entry = [e for e in idx.json() if e["name"] == "attrs_fail"]
    assert entry and entry[0]["state"] == "UNAVAILABLE", idx.json()
    assert entry[0]["reason"] == f"Invalid argument: {REFUSED}", entry


def test_serial_loading_without_the_attribute(tmp_path):
    s = start(tmp_path, extra=["--backend-config=attrs,parallel-loading=false"])
    try:
        w = windows(s, "attrs_default")
        assert len(w) == 3, w.tolist()
        # One after the other: each began after the one before it ended.
        for prev, cur in zip(w[:-1], w[1:]):
            assert cur[0] >= prev[1], w.tolist()
    finally:
        s.stop(check=True)
