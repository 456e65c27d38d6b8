"""Ensembles end to end (features.md section 3): an ensemble's steps run on
its composing models through the normal submit path, over HTTP (JSON and
binary) and gRPC.

The models are test/models/ens_repo (identity composing models):
- ensemble_identity: Triton's step1_identity -> step2_identity chain;
- ensemble_fan: IN feeds step1 and step2 (fan-out), join_identity reads both
  (fan-in), step2 again after it; MID, step1's output, is an ensemble output
  too (an output of a middle step);
- ensemble_dyn: step1 then dyn_identity, which batches dynamically (a batch
  of 2 goes at once, a lone request waits up to 3 s);
- ensemble_fail: step1 beside fail_identity, which fails every request;
plus test/models/ens_seq_repo/ensemble_seq over seq_repo's seq_oldest (the
seqacc test backend) for sequence flags and correlation IDs.
"""

import shutil
import threading
import time

import grpc
import numpy as np
import pytest

import e2e_helpers as h
from grpc_helpers import connect, grpc_stubs, infer_request, outputs_of, rpc_error  # noqa: F401

ENS_REPO = h.REPO_ROOT / "test" / "models" / "ens_repo"
ENS_SEQ_REPO = h.REPO_ROOT / "test" / "models" / "ens_seq_repo"
SEQ_REPO = h.REPO_ROOT / "test" / "models" / "seq_repo"
MODELS = sorted(p.name for p in ENS_REPO.iterdir() if p.is_dir())

SEQ_PARAMS = {"sequence_id": 0, "sequence_start": False, "sequence_end": False}


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("ens")
    repo = tmp / "repo"
    shutil.copytree(ENS_REPO, repo)
    shutil.copytree(ENS_SEQ_REPO / "ensemble_seq", repo / "ensemble_seq")
    shutil.copytree(SEQ_REPO / "seq_oldest", repo / "seq_oldest")
    so = h.build_dir() / "test" / "backends" / "seqacc" / "libtriton_seqacc.so"
    assert so.is_file(), f"test backend not built at {so}; run `make` first"
    shutil.copy2(so, repo / "seq_oldest" / so.name)
    s = h.start_server(tmp / "srv", [repo], wait_models=tuple(MODELS) + ("ensemble_seq", "seq_oldest"))
    try:
        yield s
    finally:
        s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = connect(srv, grpc_stubs)
    yield c
    c.close()


def stats(srv, model):
    r = srv.get(f"/v2/models/{model}/stats")
    assert r.status_code == 200, r.text
    return r.json()["model_stats"][0]


def wait_stats(srv, model, pred, timeout=10):
    """Statistics are recorded just after the response goes out (as Triton):
    poll until `pred(stats)` holds."""
    deadline = time.monotonic() + timeout
    while True:
        st = stats(srv, model)
        if pred(st) or time.monotonic() > deadline:
            return st
        time.sleep(0.02)


def count(st, key="success"):
    return st["inference_stats"][key]["count"]


# ------------------------------------------------------- metadata, config ---

def test_metadata_as_triton(srv):
    r = srv.get("/v2/models/ensemble_identity")
    assert r.status_code == 200
    assert r.json() == {
        "name": "ensemble_identity", "versions": ["1"], "platform": "ensemble",
        "inputs": [{"name": "IN", "datatype": "INT32", "shape": [-1, -1]}],
        "outputs": [{"name": "OUT", "datatype": "INT32", "shape": [-1, -1]}]}
    assert srv.get("/v2/models/ensemble_identity/ready").status_code == 200


def test_config_is_an_ensemble(srv):
    cfg = srv.get("/v2/models/ensemble_identity/config").json()
    assert cfg["platform"] == "ensemble"
    assert cfg["backend"] == ""
    assert cfg["instance_group"] == []
    assert "optimization" not in cfg
    assert cfg["ensemble_scheduling"]["step"][0] == {
        "model_name": "step1_identity", "model_version": -1, "input_map": {"INPUT0": "IN"},
        "output_map": {"OUTPUT0": "mid"}, "model_namespace": ""}


# ------------------------------------------------------------- inference ---

def test_http_json_as_triton(srv):
    r = srv.post("/v2/models/ensemble_identity/infer", json={
        "id": "ens-1", "inputs": [{"name": "IN", "datatype": "INT32", "shape": [1, 4], "data": [1, 2, 3, 4]}]})
    assert r.status_code == 200, r.text
    assert r.json() == {"id": "ens-1", "model_name": "ensemble_identity", "model_version": "1",
                        "parameters": SEQ_PARAMS,
                        "outputs": [{"name": "OUT", "datatype": "INT32", "shape": [1, 4], "data": [1, 2, 3, 4]}]}
    r = srv.post("/v2/models/ensemble_identity/infer", json={
        "inputs": [{"name": "IN", "datatype": "INT32", "shape": [2, 3], "data": [1, 2, 3, 4, 5, 6]}],
        "outputs": [{"name": "OUT"}]})
    assert r.status_code == 200, r.text
    assert r.json() == {"model_name": "ensemble_identity", "model_version": "1", "parameters": SEQ_PARAMS,
                        "outputs": [{"name": "OUT", "datatype": "INT32", "shape": [2, 3],
                                     "data": [1, 2, 3, 4, 5, 6]}]}


def test_http_binary(srv):
    data = np.arange(24, dtype=np.int32).reshape(3, 8)
    r = h.infer_binary(srv, "ensemble_identity", [("IN", "INT32", [3, 8], data)],
                       outputs=[{"name": "OUT", "parameters": {"binary_data": True}}])
    assert r.status_code == 200, r.text
    header, values = h.parse_infer_response(r)
    assert header["parameters"] == SEQ_PARAMS
    assert np.array_equal(values["OUT"], data)


def test_internal_tensor_refused(srv):
    r = srv.post("/v2/models/ensemble_identity/infer", json={
        "inputs": [{"name": "mid", "datatype": "INT32", "shape": [1, 4], "data": [1, 2, 3, 4]}]})
    assert r.status_code == 400
    # Triton's text; core prefixes "[request id: <id_unknown>] " (as it does
    # for every model: a core matter, not the ensemble's).
    assert h.error_of(r) == "unexpected inference input 'mid' for model 'ensemble_identity'"
    r = srv.post("/v2/models/ensemble_identity/infer", json={
        "inputs": [{"name": "IN", "datatype": "INT32", "shape": [1, 4], "data": [1, 2, 3, 4]}],
        "outputs": [{"name": "mid"}]})
    assert r.status_code == 400
    assert h.error_of(r) == "unexpected inference output 'mid' for model 'ensemble_identity'"


def test_grpc_as_triton(gc):
    pb = gc.pb
    req = infer_request(pb, "ensemble_identity", [("IN", "INT32", [1, 2], [[7, 8]])], request_id="ens-g")
    resp = gc.model_infer(req)
    assert resp.model_name == "ensemble_identity"
    assert resp.model_version == "1"
    assert resp.id == "ens-g"
    params = {k: v.WhichOneof("parameter_choice") for k, v in resp.parameters.items()}
    assert params == {"sequence_id": "int64_param", "sequence_start": "bool_param", "sequence_end": "bool_param"}
    assert resp.parameters["sequence_id"].int64_param == 0
    assert resp.parameters["sequence_start"].bool_param is False
    assert resp.parameters["sequence_end"].bool_param is False
    out = outputs_of(resp)
    assert list(resp.outputs[0].shape) == [1, 2]
    assert out["OUT"].tolist() == [[7, 8]]


def test_fan_out_fan_in(srv, gc):
    data = [[3, 1, 4, 1, 5]]
    r = h.infer_json(srv, "ensemble_fan", [("IN", "INT32", [1, 5], data[0])])
    assert r.status_code == 200, r.text
    outs = {o["name"]: o for o in r.json()["outputs"]}
    assert sorted(outs) == ["MID", "OUT0", "OUT1"]
    for o in outs.values():
        assert o["shape"] == [1, 5] and o["data"] == data[0]
    resp = gc.model_infer(infer_request(gc.pb, "ensemble_fan", [("IN", "INT32", [1, 5], data)]))
    out = outputs_of(resp)
    assert sorted(out) == ["MID", "OUT0", "OUT1"]
    assert all(v.tolist() == data for v in out.values())


def test_output_of_a_middle_step_runs_only_what_it_needs(srv):
    before_join = stats(srv, "join_identity")
    before_s1 = stats(srv, "step1_identity")
    r = h.infer_json(srv, "ensemble_fan", [("IN", "INT32", [1, 3], [9, 8, 7])], outputs=[{"name": "MID"}])
    assert r.status_code == 200, r.text
    assert [o["name"] for o in r.json()["outputs"]] == ["MID"]
    assert r.json()["outputs"][0]["data"] == [9, 8, 7]
    wait_stats(srv, "step1_identity", lambda s: count(s) == count(before_s1) + 1)
    assert count(stats(srv, "step1_identity")) == count(before_s1) + 1
    assert count(stats(srv, "join_identity")) == count(before_join)


def test_step_batches_with_direct_traffic(srv):
    before = stats(srv, "dyn_identity")
    results = {}

    def ens():
        results["ens"] = h.infer_json(srv, "ensemble_dyn", [("IN", "INT32", [1, 2], [5, 6])])

    def direct():
        results["direct"] = h.infer_json(srv, "dyn_identity", [("INPUT0", "INT32", [1, 2], [7, 8])])

    threads = [threading.Thread(target=ens), threading.Thread(target=direct)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["ens"].status_code == 200, results["ens"].text
    assert results["ens"].json()["outputs"][0]["data"] == [5, 6]
    assert results["direct"].json()["outputs"][0]["data"] == [7, 8]
    st = wait_stats(srv, "dyn_identity", lambda s: count(s) == count(before) + 2)
    # One execution of 2: the ensemble's step and the direct request.
    assert st["execution_count"] == before["execution_count"] + 1
    sizes = {b["batch_size"]: b["compute_infer"]["count"] for b in st["batch_stats"]}
    old = {b["batch_size"]: b["compute_infer"]["count"] for b in before["batch_stats"]}
    assert sizes.get(2, 0) == old.get(2, 0) + 1


def test_failing_step_fails_the_request(srv, gc):
    before = stats(srv, "ensemble_fail")
    r = h.infer_json(srv, "ensemble_fail", [("IN", "INT32", [1, 2], [1, 2])])
    assert r.status_code == 400
    assert h.error_of(r) == "in ensemble 'ensemble_fail', no input matches a requested output"
    e = rpc_error(gc.model_infer, infer_request(gc.pb, "ensemble_fail", [("IN", "INT32", [1, 2], [[1, 2]])]))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.details() == "in ensemble 'ensemble_fail', no input matches a requested output"
    st = wait_stats(srv, "ensemble_fail", lambda s: count(s, "fail") == count(before, "fail") + 2)
    assert count(st, "fail") == count(before, "fail") + 2
    assert count(st) == count(before)
    # The server goes on serving.
    r = h.infer_json(srv, "ensemble_identity", [("IN", "INT32", [1, 1], [1])])
    assert r.status_code == 200


def test_statistics_as_triton(srv):
    """features.md "Read first" 6: the ensemble counts its own requests
    (success, queue, one execution per request, batch sizes); its compute
    durations are the sums of its composing models'; the composing models
    count ensemble traffic like direct traffic."""
    names = ("ensemble_identity", "step1_identity", "step2_identity")
    before = {m: stats(srv, m) for m in names}
    for shape, data in (([1, 4], [1, 2, 3, 4]), ([2, 3], [1, 2, 3, 4, 5, 6]), ([1, 1], [0])):
        r = h.infer_json(srv, "ensemble_identity", [("IN", "INT32", shape, data)])
        assert r.status_code == 200, r.text
    after = {m: wait_stats(srv, m, lambda s, m=m: count(s) == count(before[m]) + 3) for m in names}
    for m in names:
        b, a = before[m], after[m]
        assert count(a) == count(b) + 3, m
        assert a["inference_count"] == b["inference_count"] + 4, m
        assert a["execution_count"] == b["execution_count"] + 3, m
        for k in ("queue", "compute_input", "compute_infer", "compute_output"):
            assert count(a, k) == count(b, k) + 3, (m, k)
        assert count(a, "fail") == count(b, "fail")
    ens_b, ens_a = before["ensemble_identity"], after["ensemble_identity"]
    for k in ("compute_input", "compute_infer", "compute_output"):
        d_ens = ens_a["inference_stats"][k]["ns"] - ens_b["inference_stats"][k]["ns"]
        d_steps = sum(after[m]["inference_stats"][k]["ns"] - before[m]["inference_stats"][k]["ns"]
                      for m in ("step1_identity", "step2_identity"))
        assert d_ens == d_steps, k
    sizes = {b["batch_size"] for b in ens_a["batch_stats"]}
    assert {1, 2} <= sizes
    g = srv.get("/v2/models/stats").json()["model_stats"]
    assert {"ensemble_identity", "step1_identity", "step2_identity"} <= {s["name"] for s in g}


def test_sequence_flags_and_correlation_id_flow(srv, gc):
    """The ensemble request's sequence_id / start / end reach a sequence
    composing model (seqacc accumulates per correlation ID; END adds the ID);
    the answer's parameters carry them as Triton's do."""
    vals = [(5, True, False, 5), (3, False, False, 8), (2, False, True, 10 + 1001)]
    for v, start, end, acc in vals:
        params = {"sequence_id": 1001}
        if start:
            params["sequence_start"] = True
        if end:
            params["sequence_end"] = True
        r = h.infer_json(srv, "ensemble_seq", [("IN", "INT32", [1, 1], [v])], parameters=params)
        assert r.status_code == 200, r.text
        body = r.json()
        outs = {o["name"]: o["data"] for o in body["outputs"]}
        assert outs["ACC"] == [acc]
        assert outs["START"] == [1 if start else 0]
        assert outs["END"] == [1 if end else 0]
        assert body["parameters"] == {"sequence_id": 1001, "sequence_start": start, "sequence_end": end}
    # A string correlation ID stays a string in the answer (and fails in a
    # backend that reads integer IDs, as Triton's do).
    req = infer_request(gc.pb, "ensemble_identity", [("IN", "INT32", [1, 1], [[4]])])
    req.parameters["sequence_id"].int64_param = 42
    req.parameters["sequence_start"].bool_param = True
    resp = gc.model_infer(req)
    assert resp.parameters["sequence_id"].int64_param == 42
    assert resp.parameters["sequence_start"].bool_param is True


def test_many_concurrent(srv):
    errors = []

    def worker(k):
        try:
            for i in range(10):
                data = [k, i, k * i]
                r = h.infer_json(srv, "ensemble_fan", [("IN", "INT32", [1, 3], data)])
                assert r.status_code == 200, r.text
                assert all(o["data"] == data for o in r.json()["outputs"])
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_grpc_stream(gc):
    """Ensembles over ModelStreamInfer: every request answered once, in-stream
    errors for a failing step, the stream ends OK."""
    pb = gc.pb
    reqs = []
    for i in range(40):
        model = "ensemble_fail" if i % 10 == 5 else "ensemble_fan"
        reqs.append(infer_request(pb, model, [("IN", "INT32", [1, 3], [[i, i + 1, i + 2]])], request_id=f"s{i}"))
    call = gc.model_stream_infer(iter(reqs), timeout=60)
    resps = list(call)
    assert call.code() == grpc.StatusCode.OK, (call.code(), call.details())
    assert len(resps) == 40
    errors = [r for r in resps if r.error_message]
    assert len(errors) == 4
    assert all(r.error_message == "in ensemble 'ensemble_fail', no input matches a requested output"
               for r in errors)
    good = {r.infer_response.id: r.infer_response for r in resps if not r.error_message}
    assert sorted(good) == sorted(f"s{i}" for i in range(40) if i % 10 != 5)
    for rid, ir in good.items():
        i = int(rid[1:])
        outs = outputs_of(ir)
        assert sorted(outs) == ["MID", "OUT0", "OUT1"]
        assert all(v.tolist() == [[i, i + 1, i + 2]] for v in outs.values())


def test_composing_model_unloaded_and_loaded_again(tmp_path):
    """Explicit mode: loading the ensemble loads its composing models; a
    composing model unloaded later fails the ensemble's requests with core's
    error (prefixed as Triton's); loaded again, it serves the next request
    (composing models are looked up per request)."""
    h.require_binary()
    repo = tmp_path / "repo"
    for m in ("ensemble_identity", "step1_identity", "step2_identity"):
        shutil.copytree(ENS_REPO / m, repo / m)
    srv = h.start_server(tmp_path / "srv", [repo], wait_models=("ensemble_identity",),
                         extra=["--model-control-mode=explicit", "--load-model=ensemble_identity"])
    try:
        body = [("IN", "INT32", [1, 2], [4, 2])]
        r = h.infer_json(srv, "ensemble_identity", body)
        assert r.status_code == 200, r.text
        r = srv.post("/v2/repository/models/step2_identity/unload", json={})
        assert r.status_code == 200, r.text
        deadline = time.monotonic() + 20
        while srv.get("/v2/models/step2_identity/ready").status_code == 200:
            assert time.monotonic() < deadline, "step2_identity did not unload"
            time.sleep(0.05)
        r = h.infer_json(srv, "ensemble_identity", body)
        assert r.status_code >= 400, r.text
        err = h.error_of(r)
        assert err.startswith("in ensemble 'ensemble_identity', "), err
        assert "step2_identity" in err, err
        r = srv.post("/v2/repository/models/step2_identity/load", json={})
        assert r.status_code == 200, r.text
        r = h.infer_json(srv, "ensemble_identity", body)
        assert r.status_code == 200, r.text
        assert r.json()["outputs"][0]["data"] == [4, 2]
        st = wait_stats(srv, "ensemble_identity", lambda s: count(s) == 2 and count(s, "fail") == 1)
        assert (count(st), count(st, "fail")) == (2, 1)
    finally:
        srv.stop(check=True)


def test_nested_ensemble(srv):
    """An ensemble as a step of another: answered, and both count it."""
    before = {m: stats(srv, m) for m in ("ensemble_nested", "ensemble_identity", "step1_identity")}
    r = h.infer_json(srv, "ensemble_nested", [("IN", "INT32", [2, 2], [1, 2, 3, 4])])
    assert r.status_code == 200, r.text
    assert r.json()["outputs"] == [{"name": "OUT", "datatype": "INT32", "shape": [2, 2], "data": [1, 2, 3, 4]}]
    st = wait_stats(srv, "ensemble_nested", lambda s: count(s) == count(before["ensemble_nested"]) + 1)
    assert st["inference_count"] == before["ensemble_nested"]["inference_count"] + 2
    assert count(stats(srv, "ensemble_identity")) == count(before["ensemble_identity"]) + 1
    assert count(stats(srv, "step1_identity")) == count(before["step1_identity"]) + 2


# Triton's qa/L0_optional_input models: an identity model whose two inputs
# are optional, an ensemble wrapping it, and a pipeline whose second step is
# given only one of them.
OPT_IDENTITY = '''name: "identity_2_float32"
backend: "identity"
max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] optional: true },
        { name: "INPUT1" data_type: TYPE_FP32 dims: [ 1 ] optional: true } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] },
         { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 1 ] } ]
'''
OPT_IO = '''platform: "ensemble"
max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] optional: true },
        { name: "INPUT1" data_type: TYPE_FP32 dims: [ 1 ] optional: true } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] },
         { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 1 ] } ]
'''
OPT_ENSEMBLE = 'name: "ensemble_identity_2_float32"\n' + OPT_IO + '''ensemble_scheduling { step [
  { model_name: "identity_2_float32" model_version: -1
    input_map { key: "INPUT0" value: "INPUT0" } input_map { key: "INPUT1" value: "INPUT1" }
    output_map { key: "OUTPUT0" value: "OUTPUT0" } output_map { key: "OUTPUT1" value: "OUTPUT1" } } ] }
'''
OPT_PIPELINE = 'name: "pipeline_identity_2_float32"\n' + OPT_IO + '''ensemble_scheduling { step [
  { model_name: "identity_2_float32" model_version: -1
    input_map { key: "INPUT0" value: "INPUT0" } input_map { key: "INPUT1" value: "INPUT1" }
    output_map { key: "OUTPUT0" value: "internal_output" } },
  { model_name: "identity_2_float32" model_version: -1
    input_map { key: "INPUT1" value: "internal_output" }
    output_map { key: "OUTPUT0" value: "OUTPUT0" } output_map { key: "OUTPUT1" value: "OUTPUT1" } } ] }
'''


def test_optional_inputs_left_out(private_server, tmp_path):
    """An ensemble request that leaves optional inputs out runs its steps
    without them, as Triton does (its L0_optional_input): the step's model
    answers a requested output whose optional input is absent with zeros
    (Triton's identity backend does so). Before, the identity backend failed
    the step ("no input matches a requested output")."""
    repo = tmp_path / "repo"
    for name, cfg in (("identity_2_float32", OPT_IDENTITY), ("ensemble_identity_2_float32", OPT_ENSEMBLE),
                      ("pipeline_identity_2_float32", OPT_PIPELINE)):
        (repo / name / "1").mkdir(parents=True)
        (repo / name / "config.pbtxt").write_text(cfg)
    srv = private_server(repos=[repo], wait_models=("ensemble_identity_2_float32", "pipeline_identity_2_float32"))
    ens = "ensemble_identity_2_float32"
    # Only one input, and only its output requested.
    for given, want in (("INPUT1", "OUTPUT1"), ("INPUT0", "OUTPUT0")):
        r = h.infer_json(srv, ens, [(given, "FP32", [1, 1], [3.0])], outputs=[{"name": want}])
        assert r.status_code == 200, r.text
        assert [(o["name"], o["data"]) for o in r.json()["outputs"]] == [(want, [3.0])]
    # Every output requested: the left-out input's is zeros.
    r = h.infer_json(srv, ens, [("INPUT1", "FP32", [1, 1], [2.0])])
    assert r.status_code == 200, r.text
    outs = {o["name"]: (o["shape"], o["data"]) for o in r.json()["outputs"]}
    assert outs == {"OUTPUT0": ([1, 1], [0.0]), "OUTPUT1": ([1, 1], [2.0])}
    # The pipeline: its second step gets INPUT1 only; OUTPUT0 is zeros and
    # OUTPUT1 is the first step's OUTPUT0, which is INPUT0.
    r = h.infer_json(srv, "pipeline_identity_2_float32",
                     [("INPUT0", "FP32", [1, 1], [1.0]), ("INPUT1", "FP32", [1, 1], [0.5])])
    assert r.status_code == 200, r.text
    outs = {o["name"]: o["data"] for o in r.json()["outputs"]}
    assert outs == {"OUTPUT0": [0.0], "OUTPUT1": [1.0]}
