"""The config's `runtime` field: which backend library a model loads.

Triton looks for the library named by `runtime` (default
libtriton_<backend>.so) in the version folder, the model folder, then
<backend-directory>/<backend>; a runtime may name a file in a sub-folder of
the folder it is found in, but must not lead out of it. One server serves
every model here (test_config_sanity.py replays Triton's own two runtime
cases: a name found nowhere, and "../" out of the version folder).
"""

import os
import shutil

import pytest

import e2e_helpers as h
from test_config_sanity import model_results, wait_loaded

IO = """
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
"""


def identity_so():
    return h.backend_dir() / "identity" / "libtriton_identity.so"


def add_model(repo, name, backend, runtime, files=()):
    d = repo / name
    (d / "1").mkdir(parents=True)
    (d / "config.pbtxt").write_text(
        f'name: "{name}"\nbackend: "{backend}"\nruntime: "{runtime}"\n{IO}')
    for rel, how in files:
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if how == "copy":
            shutil.copy2(identity_so(), p)
        else:  # a symbolic link to the identity backend, outside the folder
            os.symlink(identity_so(), p)


@pytest.fixture(scope="module")
def runtime_server(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("runtime")
    repo = tmp / "repo"
    repo.mkdir()
    # The default name, spelt out: found in <backend-directory>/identity.
    add_model(repo, "rt_default_name", "identity", "libtriton_identity.so")
    # A file of another name in a sub-folder of the model folder, for a
    # backend whose default library exists nowhere: only the runtime finds it.
    add_model(repo, "rt_subfolder", "no_such_backend", "lib/libcustom.so",
              [("lib/libcustom.so", "copy")])
    # A leading '/' is dropped (Triton joins the runtime to the folder).
    add_model(repo, "rt_leading_slash", "no_such_backend", "/libcustom.so",
              [("1/libcustom.so", "copy")])
    # A link that resolves outside the version folder escapes it.
    add_model(repo, "rt_link_escape", "identity", "linked.so",
              [("1/linked.so", "link")])
    # A runtime found nowhere.
    add_model(repo, "rt_missing", "identity", "libnot_there.so")
    srv = h.start_server(tmp / "srv", [repo], wait_models=())
    try:
        wait_loaded(srv)
        yield srv, repo, model_results(srv)
    finally:
        srv.stop(check=True)


@pytest.mark.parametrize("name", ["rt_default_name", "rt_subfolder", "rt_leading_slash"])
def test_runtime_loads_and_serves(runtime_server, name):
    srv, _, results = runtime_server
    loaded, reason = results[name]
    assert loaded, f"{name} not loaded: {reason}"
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4],
                        "data": [1, 2, 3, 4]}]}
    r = srv.post(f"/v2/models/{name}/infer", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == [1, 2, 3, 4]


def test_runtime_link_out_of_folder_escapes(runtime_server):
    _, repo, results = runtime_server
    loaded, reason = results["rt_link_escape"]
    assert not loaded
    assert (f"backend library name 'linked.so' escapes backend directory "
            f"'{repo}/rt_link_escape/1', for model 'rt_link_escape', check model "
            f"config runtime field") in reason, reason


def test_runtime_not_found_lists_the_search(runtime_server):
    _, repo, results = runtime_server
    loaded, reason = results["rt_missing"]
    assert not loaded
    assert ("unable to find backend library 'libnot_there.so' for model 'rt_missing', "
            f"searched: '{repo}/rt_missing/1' '{repo}/rt_missing' "
            f"'{h.backend_dir()}/identity'") in reason, reason
