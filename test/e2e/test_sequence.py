"""The sequence batcher, end to end (features.md sections 1 and 1b).

The models live in test/models/seq_repo and run on two test backends:
`seqacc` (test/models/backends/seqacc: an accumulator per sequence, per batch
slot in `slot` mode like Triton's qa `sequence` backend, per CORRID in
`corrid` mode like its `dyna_sequence` backend, END adding the integer CORRID)
and `seqstate` (implicit state: new state = old state + INPUT). seqacc is
strict: a control input the config names but the request lacks, a control of
the wrong type or shape, or a CORRID that differs from the request's
correlation ID is an error response naming it, so scheduler mistakes show up
as failed requests. Its extra outputs (SLOT, INSTANCE, BATCH, OUT_START,
OUT_END, OUT_READY, OUT_CORRID) say what the backend saw.

What is asserted follows from the design: statuses and Triton's messages
(Triton's 500 for a client mistake is 400 here), running sums, a sequence
staying on one slot of one instance, null requests filling the slots below a
busy one and never being counted, END freeing a slot at once, the idle limit,
restart on START, implicit state, shutdown with sequences live, the
inferd_sequence_active / inferd_sequence_backlog gauges. No timing is asserted
beyond generous bounds that only keep a broken server from hanging the run;
"B is still waiting" is asserted only where nothing but the scheduler's
mistake could answer B (its slot is held and the idle limit is far away).

Only 127.0.0.1; threads and requests are bounded.
"""

import concurrent.futures as cf
import json
import re
import shutil
import signal
import subprocess
import threading
import time

import grpc
import numpy as np
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as gh
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

SEQ_REPO_SRC = h.REPO_ROOT / "test" / "models" / "seq_repo"
ACC_MODELS = ("seq_direct", "seq_count", "seq_oldest", "seq_string", "seq_nobatch",
              "seq_types", "seq_idle", "seq_idle_oldest", "seq_slow")
STATE_MODELS = ("state_zero", "state_file", "state_var")
ALL_MODELS = ACC_MODELS + STATE_MODELS

# Only there so that nothing hangs; never a claim about speed.
HANG_S = 30
ACC_OUTPUTS = ("OUTPUT", "SLOT", "INSTANCE", "BATCH", "OUT_START", "OUT_END", "OUT_READY",
               "OUT_CORRID")

MISSING_ID = "inference request to model '{m}' must specify a non-zero or non-empty correlation ID"
NO_START = ("inference request for sequence {id} to model '{m}' must specify the START flag on "
            "the first request of the sequence")
NOT_UINT = "correlation ID in request is not an unsigned int"


# ------------------------------------------------------------ servers ---

def backend_so(name):
    return h.build_dir() / "test" / "backends" / name / f"libtriton_{name}.so"


def copy_seq_repo(dst, models=ALL_MODELS, with_identity=True):
    """Copy the seq_repo models to dst, each with its backend's .so in its
    folder; identity_int32 of test/models/repo too (a model without
    sequence_batching, run by the shipped identity backend)."""
    dst.mkdir(parents=True, exist_ok=True)
    for m in models:
        shutil.copytree(SEQ_REPO_SRC / m, dst / m)
        so = backend_so("seqstate" if m.startswith("state_") else "seqacc")
        if not so.is_file():
            raise AssertionError(f"test backend not built at {so}; run `make` first")
        shutil.copy2(so, dst / m / so.name)
    if with_identity:
        shutil.copytree(h.MODELS_SRC / "identity_int32", dst / "identity_int32")
    return dst


def start_seq_server(tmp, models=ALL_MODELS, extra=()):
    h.require_binary()
    repo = copy_seq_repo(tmp / "seq_repo", models)
    waits = tuple(models) + ("identity_int32",)
    return h.start_server(tmp / "srv", [repo], extra=extra, wait_models=waits)


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    """One server for the module. Its SIGTERM at teardown must exit 0 (the
    1b row: Triton's sequence backends never release a request that failed
    on a string id and Triton then exits 1; inferd must not)."""
    s = start_seq_server(tmp_path_factory.mktemp("seq"), extra=["--exit-timeout-secs=10"])
    try:
        yield s
    finally:
        s.stop(check=True)


@pytest.fixture(scope="module")
def gclient(srv, grpc_stubs):  # noqa: F811
    c = gh.connect(srv, grpc_stubs)
    yield c
    c.close()


# ----------------------------------------------------------- requests ---

def batching(model):
    return model != "seq_nobatch"


def body(model, value, seq_id=None, start=None, end=None, outputs=("OUTPUT",), shape=None,
         input_name="INPUT"):
    """JSON body of one request; value: an int or a list (one request row)."""
    data = list(value) if isinstance(value, (list, tuple)) else [value]
    if shape is None:
        shape = [1, len(data)] if batching(model) else [len(data)]
    b = {"inputs": [{"name": input_name, "datatype": "INT32", "shape": shape, "data": data}]}
    if outputs:
        b["outputs"] = [{"name": o} for o in outputs]
    params = {}
    if seq_id is not None:
        params["sequence_id"] = seq_id
    if start is not None:
        params["sequence_start"] = start
    if end is not None:
        params["sequence_end"] = end
    if params:
        b["parameters"] = params
    return b


def post(session, srv, model, b):
    return session.post(srv.url(f"/v2/models/{model}/infer"), data=json.dumps(b),
                        headers={"Content-Type": "application/json"}, timeout=HANG_S)


def outs(resp_json):
    """{name: list of values} of a JSON infer response."""
    return {o["name"]: o["data"] for o in resp_json.get("outputs", [])}


def http_step(session, srv, model, value, seq_id, start=False, end=False, outputs=ACC_OUTPUTS):
    """One request that must succeed; returns {output: first value}."""
    r = post(session, srv, model, body(model, value, seq_id, start or None, end or None,
                                       outputs))
    assert r.status_code == 200, f"{model} id {seq_id!r} value {value}: {r.status_code} {r.text}"
    return {k: v[0] for k, v in outs(r.json()).items()}


def expect_error(r, status, message, content_type="application/json"):
    assert r.status_code == status, f"{r.status_code} {r.text}"
    if content_type is not None:
        assert r.headers.get("Content-Type", "").startswith(content_type), r.headers
    err = r.json().get("error", "")
    assert message in err, f"error {err!r} lacks {message!r}"


def grpc_req(pb, model, value, seq_id=None, start=None, end=None, outputs=ACC_OUTPUTS,
             request_id=None):
    data = np.asarray([value], dtype=np.int32).reshape([1, 1] if batching(model) else [1])
    req = gh.infer_request(pb, model, [("INPUT", "INT32", list(data.shape), data)],
                           outputs=outputs, request_id=request_id)
    if isinstance(seq_id, str):
        req.parameters["sequence_id"].string_param = seq_id
    elif seq_id is not None:
        req.parameters["sequence_id"].int64_param = seq_id
    if start is not None:
        req.parameters["sequence_start"].bool_param = start
    if end is not None:
        req.parameters["sequence_end"].bool_param = end
    return req


def grpc_values(resp):
    o = gh.outputs_of(resp)
    return {k: (bytes(v[0]).decode() if isinstance(v, list) else int(np.asarray(v).flatten()[0]))
            for k, v in o.items()}


def grpc_step(client, model, value, seq_id, start=False, end=False):
    resp = client.model_infer(grpc_req(client.pb, model, value, seq_id, start or None,
                                       end or None), timeout=HANG_S)
    return grpc_values(resp)


# ------------------------------------------------------------ metrics ---

GAUGE_RE = re.compile(r'^(inferd_sequence_(?:active|backlog))\{([^}]*)\}\s+(\S+)\s*$')


def gauges(srv, model):
    """{'active': v, 'backlog': v} for model version 1 (None when absent)."""
    r = requests.get(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=HANG_S)
    assert r.status_code == 200, r.text
    found = {"active": None, "backlog": None}
    for line in r.text.splitlines():
        m = GAUGE_RE.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        if labels.get("model") == model and labels.get("version") == "1":
            found[m.group(1).rsplit("_", 1)[1]] = float(m.group(3))
    return found


def wait_gauges(srv, model, active, backlog, timeout=HANG_S):
    deadline = time.monotonic() + timeout
    while True:
        g = gauges(srv, model)
        if g["active"] == active and g["backlog"] == backlog:
            return g
        if time.monotonic() > deadline:
            raise AssertionError(f"{model}: gauges {g}, expected active {active} backlog {backlog}")
        time.sleep(0.05)


def get_stats(srv, model):
    r = srv.get(f"/v2/models/{model}/stats")
    assert r.status_code == 200, r.text
    return r.json()["model_stats"][0]


# ====================================================== features.md 1 ===

def test_config_defaults_direct(srv):
    r = srv.get("/v2/models/seq_direct/config")
    assert r.status_code == 200, r.text
    cfg = r.json()
    assert cfg["max_batch_size"] == 4
    ctl = lambda name, kind: {"name": name, "control": [{  # noqa: E731
        "kind": kind, "int32_false_true": [0, 1], "fp32_false_true": [], "bool_false_true": [],
        "data_type": "TYPE_INVALID"}]}
    assert cfg["sequence_batching"] == {
        "direct": {"max_queue_delay_microseconds": 0, "minimum_slot_utilization": 0},
        "max_sequence_idle_microseconds": 5000000,
        "control_input": [ctl("START", "CONTROL_SEQUENCE_START"),
                          ctl("READY", "CONTROL_SEQUENCE_READY")],
        "state": [], "iterative_sequence": False}
    ig = cfg["instance_group"]
    assert len(ig) == 1 and ig[0]["name"] == "seq_direct_0" and ig[0]["count"] == 2, ig


def test_config_defaults_oldest(srv):
    r = srv.get("/v2/models/seq_oldest/config")
    assert r.status_code == 200, r.text
    sb = r.json()["sequence_batching"]
    assert sb["oldest"] == {"max_candidate_sequences": 6, "preferred_batch_size": [4],
                            "max_queue_delay_microseconds": 0, "preserve_ordering": False}
    assert sb["control_input"][3] == {"name": "CORRID", "control": [{
        "kind": "CONTROL_SEQUENCE_CORRID", "int32_false_true": [], "fp32_false_true": [],
        "bool_false_true": [], "data_type": "TYPE_UINT64"}]}
    assert sb["state"] == [] and sb["iterative_sequence"] is False


def test_three_steps_direct(srv):
    """5, 3, 2 -> 5, 8, 10 with Triton's exact bodies; then the ended id
    needs START again."""
    m = "seq_direct"
    s = requests.Session()
    for value, start, end, total in ((5, True, None, 5), (3, None, None, 8), (2, None, True, 10)):
        r = post(s, srv, m, body(m, value, 1001, start, end))
        assert r.status_code == 200, r.text
        assert r.json() == {"model_name": m, "model_version": "1", "outputs": [
            {"name": "OUTPUT", "datatype": "INT32", "shape": [1, 1], "data": [total]}]}
    expect_error(post(s, srv, m, body(m, 1, 1001)), 400, NO_START.format(id=1001, m=m))


def test_three_steps_oldest_end_adds_corrid(srv):
    m = "seq_oldest"
    s = requests.Session()
    for value, start, end, total in ((5, True, None, 5), (3, None, None, 8),
                                     (2, None, True, 1011)):
        r = post(s, srv, m, body(m, value, 1001, start, end))
        assert r.status_code == 200, r.text
        assert r.json() == {"model_name": m, "model_version": "1", "outputs": [
            {"name": "OUTPUT", "datatype": "INT32", "shape": [1, 1], "data": [total]}]}
    expect_error(post(s, srv, m, body(m, 1, 1001)), 400, NO_START.format(id=1001, m=m))


@pytest.mark.parametrize("model", ["seq_direct", "seq_oldest", "seq_nobatch", "state_zero"])
@pytest.mark.parametrize("params", [{}, {"sequence_start": True}, {"sequence_end": True},
                                    {"sequence_id": 0, "sequence_start": True},
                                    {"sequence_id": "", "sequence_start": True}],
                         ids=["no-id", "no-id-start", "no-id-end", "id-0-start", "empty-id"])
def test_missing_or_zero_id(srv, model, params):
    b = body(model, 1, outputs=("OUTPUT",))
    b["parameters"] = params
    expect_error(post(requests, srv, model, b), 400, MISSING_ID.format(m=model))


@pytest.mark.parametrize("model", ["seq_direct", "seq_oldest", "seq_string", "seq_nobatch"])
def test_non_start_for_unknown_id(srv, model):
    sid = "no-such-seq" if model == "seq_string" else 9999
    expect_error(post(requests, srv, model, body(model, 1, sid)), 400,
                 NO_START.format(id=sid, m=model))
    # END alone does not start a sequence either.
    sid2 = "no-such-seq-2" if model == "seq_string" else 9998
    expect_error(post(requests, srv, model, body(model, 1, sid2, end=True)), 400,
                 NO_START.format(id=sid2, m=model))


def test_batch_of_two_is_refused(srv):
    """A sequence request holds one batch row (Triton's refusal)."""
    b = body("seq_direct", [1], 3001, start=True, shape=[2, 1])
    b["inputs"][0]["data"] = [1, 2]
    expect_error(post(requests, srv, "seq_direct", b), 400,
                 "inference request to model 'seq_direct' must specify batch-size 1 due to "
                 "requirements of sequence batcher")


def test_integer_id_on_string_corrid_model_is_refused(srv):
    """seq_string's CORRID is TYPE_STRING: an integer id cannot fill it."""
    r = post(requests, srv, "seq_string", body("seq_string", 1, 3002, start=True))
    expect_error(r, 400, "correlation ID in request is not a string "
                 "(the CORRID control of model 'seq_string' is TYPE_STRING)")


@pytest.mark.parametrize("params,name", [({"sequence_id": -1, "sequence_start": True}, "sequence_id"),
                                         ({"sequence_id": 1.5, "sequence_start": True}, "sequence_id"),
                                         ({"sequence_id": 5, "sequence_start": "true"},
                                          "sequence_start")],
                         ids=["id--1", "id-1.5", "start-string"])
def test_bad_parameter_types(srv, params, name):
    """Triton: 500 'Unable to parse ...' (a client mistake: 400 here)."""
    b = body("seq_direct", 1)
    b["parameters"] = params
    expect_error(post(requests, srv, "seq_direct", b), 400, f"Unable to parse '{name}'")


def test_start_on_live_id_restarts(srv):
    s = requests.Session()
    assert http_step(s, srv, "seq_direct", 1, 1100, start=True)["OUTPUT"] == 1
    assert http_step(s, srv, "seq_direct", 2, 1100, start=True)["OUTPUT"] == 2
    assert http_step(s, srv, "seq_direct", 4, 1100, end=True)["OUTPUT"] == 6
    # Oldest: the restart resets the CORRID's accumulator too.
    assert http_step(s, srv, "seq_oldest", 1, 1200, start=True)["OUTPUT"] == 1
    assert http_step(s, srv, "seq_oldest", 2, 1200, start=True)["OUTPUT"] == 2
    assert http_step(s, srv, "seq_oldest", 4, 1200, end=True)["OUTPUT"] == 6 + 1200


def test_start_and_end_in_one_request(srv):
    s = requests.Session()
    o = http_step(s, srv, "seq_direct", 42, 1300, start=True, end=True)
    assert o["OUTPUT"] == 42 and o["OUT_START"] == 1 and o["OUT_READY"] == 1
    expect_error(post(s, srv, "seq_direct", body("seq_direct", 1, 1300)), 400,
                 NO_START.format(id=1300, m="seq_direct"))
    o = http_step(s, srv, "seq_oldest", 3, 1301, start=True, end=True)
    assert o["OUTPUT"] == 3 + 1301 and o["OUT_START"] == 1 and o["OUT_END"] == 1


def test_sequence_parameters_on_non_sequence_model(srv):
    def ident(params):
        return {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 4],
                            "data": [1, 2, 3, 4]}], "parameters": params}
    for params in ({"sequence_id": 7, "sequence_start": True, "sequence_end": True},
                   {"sequence_start": True}):
        r = srv.post("/v2/models/identity_int32/infer", json=ident(params))
        assert r.status_code == 200, r.text
        assert outs(r.json())["OUTPUT0"] == [1, 2, 3, 4]


def test_string_id_on_identity_fails_in_backend(srv):
    """Triton: 400 text/plain from the identity backend."""
    r = srv.post("/v2/models/identity_int32/infer", json={
        "inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 4], "data": [1, 2, 3, 4]}],
        "parameters": {"sequence_id": "abc"}})
    expect_error(r, 400, NOT_UINT, content_type=None)


def test_grpc_three_steps_and_errors(srv, gclient):
    m = "seq_direct"
    assert grpc_step(gclient, m, 10, 2001, start=True)["OUTPUT"] == 10
    assert grpc_step(gclient, m, 1, 2001)["OUTPUT"] == 11
    assert grpc_step(gclient, m, 2, 2001, end=True)["OUTPUT"] == 13
    e = gh.rpc_error(gclient.model_infer, grpc_req(gclient.pb, m, 1))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and e.details() == MISSING_ID.format(m=m), \
        gh.describe(e)
    e = gh.rpc_error(gclient.model_infer, grpc_req(gclient.pb, m, 1, 9999))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and \
        e.details() == NO_START.format(id=9999, m=m), gh.describe(e)
    req = grpc_req(gclient.pb, m, 1, 2003)
    req.parameters["sequence_start"].int64_param = 1
    e = gh.rpc_error(gclient.model_infer, req)
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and e.details() == \
        "invalid value type for 'sequence_start' parameter, expected bool_param.", gh.describe(e)


def test_grpc_sequence_id_as_uint64_param(srv, gclient):
    req = grpc_req(gclient.pb, "seq_direct", 1, None, start=True)
    req.parameters["sequence_id"].uint64_param = 2004
    e = gh.rpc_error(gclient.model_infer, req)
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and e.details() == (
        "invalid value type for 'sequence_id' parameter, expected int64_param or string_param."), \
        gh.describe(e)


def test_grpc_oldest_one_step(srv, gclient):
    o = grpc_step(gclient, "seq_oldest", 3, 2002, start=True, end=True)
    assert o["OUTPUT"] == 2005 and o["OUT_CORRID"] == "2002"


def test_stream_errors_and_sequence(srv, gclient):
    """On ModelStreamInfer a refused request is an error message on the
    stream, which stays open and carries a sequence after it."""
    pb = gclient.pb
    reqs = [grpc_req(pb, "seq_direct", 1, 9997, request_id="bad"),
            grpc_req(pb, "seq_direct", 1, request_id="noid", start=True)]
    reqs += [grpc_req(pb, "seq_direct", v, 2101, start=(i == 0) or None, end=(i == 2) or None,
                      request_id=f"ok{i}") for i, v in enumerate((4, 5, 6))]
    msgs = list(gclient.model_stream_infer(iter(reqs), timeout=HANG_S))
    errors = {m.infer_response.id: m.error_message for m in msgs if m.error_message}
    assert errors == {"bad": NO_START.format(id=9997, m="seq_direct"),
                      "noid": MISSING_ID.format(m="seq_direct")}, msgs
    ok = {m.infer_response.id: grpc_values(m.infer_response)["OUTPUT"]
          for m in msgs if not m.error_message}
    assert ok == {"ok0": 4, "ok1": 9, "ok2": 15}, msgs


# ===================================================== features.md 1b ===

@pytest.mark.parametrize("model", ["seq_oldest", "seq_direct", "seq_nobatch"])
def test_string_id_on_integer_model_fails_in_backend(srv, model):
    """A string id passes the scheduler and fails in the backend, which reads
    the integer correlation ID (the scheduler does not refuse it)."""
    r = post(requests, srv, model, body(model, 1, f"str-{model}", start=True))
    expect_error(r, 400, NOT_UINT, content_type=None)
    # The scheduler took that START (as Triton's does): the id's END reaches
    # the backend and fails the same way, and it frees the slot (the
    # non-batching model has only one).
    r = post(requests, srv, model, body(model, 1, f"str-{model}", end=True))
    assert r.status_code == 400, r.text
    assert NOT_UINT in r.json()["error"], r.text
    # The server keeps serving the model.
    s = requests.Session()
    assert http_step(s, srv, model, 4, 3100 + len(model), start=True, end=True)["OUT_START"] == 1


# ======================================================= control types ===

def test_fp32_bool_controls_and_int32_corrid(srv):
    s = requests.Session()
    seen = [http_step(s, srv, "seq_types", v, 77, start=(i == 0), end=(i == 2))
            for i, v in enumerate((1, 2, 3))]
    assert [o["OUTPUT"] for o in seen] == [1, 3, 6]
    assert [o["OUT_START"] for o in seen] == [1, 0, 0]
    assert [o["OUT_END"] for o in seen] == [0, 0, 1]
    assert all(o["OUT_READY"] == 1 and o["OUT_CORRID"] == "77" for o in seen), seen


def test_non_batching_model(srv):
    """max_batch_size 0: controls of shape [1] (seqacc checks), INT64 CORRID."""
    s = requests.Session()
    seen = [http_step(s, srv, "seq_nobatch", v, 5, start=(i == 0), end=(i == 3))
            for i, v in enumerate((4, 5, 6, 7))]
    assert [o["OUTPUT"] for o in seen] == [4, 9, 15, 22]
    assert [o["OUT_END"] for o in seen] == [0, 0, 0, 1]
    assert all(o["OUT_CORRID"] == "5" and o["SLOT"] == 0 for o in seen), seen


def test_string_ids(srv, gclient):
    s = requests.Session()
    seen = [http_step(s, srv, "seq_string", v, "alpha", start=(i == 0), end=(i == 2))
            for i, v in enumerate((1, 2, 3))]
    assert [o["OUTPUT"] for o in seen] == [1, 3, 6]
    assert all(o["OUT_CORRID"] == "alpha" for o in seen), seen
    seen = [grpc_step(gclient, "seq_string", v, "beta", start=(i == 0), end=(i == 2))
            for i, v in enumerate((5, 6, 7))]
    assert [o["OUTPUT"] for o in seen] == [5, 11, 18]
    assert all(o["OUT_CORRID"] == "beta" for o in seen), seen
    expect_error(post(s, srv, "seq_string", body("seq_string", 1, "alpha")), 400,
                 NO_START.format(id="alpha", m="seq_string"))


# ============================================ concurrency and backlog ===

def plan(n_steps, seed):
    rng = np.random.default_rng(seed)
    return [int(x) for x in rng.integers(-50, 100, size=n_steps)]


def check_sequence(model, sid, values, seen):
    """The answers of one whole sequence: running sums (END adds an integer
    CORRID in corrid mode), START/END/READY as sent, one slot of one
    instance for the direct strategy, null requests below a busy slot."""
    corrid_mode = model in ("seq_oldest", "seq_string")
    n = len(values)
    sums = list(np.cumsum(values))
    if corrid_mode and not isinstance(sid, str):
        sums[-1] += sid
    got = [o["OUTPUT"] for o in seen]
    assert got == sums, f"{model} {sid!r}: outputs {got}, expected {sums} for {values}"
    assert [o["OUT_START"] for o in seen] == [1] + [0] * (n - 1), (model, sid, seen)
    if "END" in CONTROLS[model]:
        assert [o["OUT_END"] for o in seen] == [0] * (n - 1) + [1], (model, sid, seen)
    assert all(o["OUT_READY"] == 1 for o in seen), (model, sid, seen)
    assert len({o["INSTANCE"] for o in seen}) == 1, \
        f"{model} {sid!r} moved between instances: {[o['INSTANCE'] for o in seen]}"
    assert all(1 <= o["BATCH"] <= MAX_BATCH[model] for o in seen), (model, sid, seen)
    if corrid_mode:
        assert all(o["OUT_CORRID"] == str(sid) for o in seen), (model, sid, seen)
    else:
        assert len({(o["INSTANCE"], o["SLOT"]) for o in seen}) == 1, \
            f"{model} {sid!r} moved between slots: {[(o['INSTANCE'], o['SLOT']) for o in seen]}"
        assert all(o["BATCH"] > o["SLOT"] for o in seen), \
            f"{model} {sid!r}: a batch shorter than its slot position: {seen}"


MAX_BATCH = {"seq_direct": 4, "seq_count": 4, "seq_oldest": 8, "seq_string": 4, "seq_nobatch": 1,
             "seq_types": 2, "seq_idle": 1, "seq_idle_oldest": 1, "seq_slow": 2}

CONTROLS = {
    "seq_direct": ("START", "READY"), "seq_count": ("START", "READY"),
    "seq_oldest": ("START", "END", "READY", "CORRID"),
    "seq_string": ("START", "END", "READY", "CORRID"),
    "seq_nobatch": ("START", "END", "READY", "CORRID"),
    "seq_types": ("START", "END", "READY", "CORRID"),
    "seq_idle": ("START", "END", "READY"), "seq_slow": ("START", "READY"),
    "seq_idle_oldest": ("START", "END", "READY", "CORRID"),
}


def run_http_sequence(srv, model, sid, values, pause=0.0):
    with requests.Session() as s:
        seen = []
        for i, v in enumerate(values):
            seen.append(http_step(s, srv, model, v, sid, start=(i == 0),
                                  end=(i == len(values) - 1)))
            if pause:
                time.sleep(pause)
    return seen


def run_grpc_sequence(client, model, sid, values, pause=0.0):
    seen = []
    for i, v in enumerate(values):
        seen.append(grpc_step(client, model, v, sid, start=(i == 0), end=(i == len(values) - 1)))
        if pause:
            time.sleep(pause)
    return seen


def run_stream_sequences(client, model, seqs):
    """All requests of several sequences interleaved on ONE ModelStreamInfer
    stream, sent without waiting for answers (the batcher keeps each
    sequence's order). seqs: {sid: values}. Returns {sid: answers in order}."""
    reqs = []
    longest = max(len(v) for v in seqs.values())
    for step in range(longest):
        for sid, values in seqs.items():
            if step < len(values):
                reqs.append(grpc_req(client.pb, model, values[step], sid, start=(step == 0) or None,
                                     end=(step == len(values) - 1) or None,
                                     request_id=f"{sid}#{step}"))
    got = {}
    call = client.model_stream_infer(iter(reqs), timeout=HANG_S * 2)
    for msg in call:
        assert not msg.error_message, f"stream error: {msg.error_message}"
        got[msg.infer_response.id] = grpc_values(msg.infer_response)
    assert len(got) == len(reqs), f"{len(got)} of {len(reqs)} stream answers"
    return {sid: [got[f"{sid}#{i}"] for i in range(len(values))] for sid, values in seqs.items()}


def test_many_interleaved_sequences_http_grpc_stream(srv, grpc_stubs):  # noqa: F811
    """More live sequences than slots on each model (direct: 2 instances x 4
    slots; oldest: 6 candidates; string: 2 instances x 4 candidates), from
    HTTP, unary gRPC and stream clients at once: every sequence completes
    with its own sums on one slot of one instance."""
    jobs = []
    k = 0
    for model, n in (("seq_direct", 14), ("seq_oldest", 10), ("seq_string", 10)):
        for i in range(n):
            k += 1
            sid = f"s{k}-{model}" if model == "seq_string" else 50000 + k
            kind = ("http", "grpc")[i % 2]
            jobs.append((kind, model, sid, plan(4 + i % 4, k)))
    clients = [gh.connect(srv, grpc_stubs) for _ in range(3)]
    try:
        with cf.ThreadPoolExecutor(max_workers=20) as ex:
            futs = {}
            for j, (kind, model, sid, values) in enumerate(jobs):
                if kind == "http":
                    f = ex.submit(run_http_sequence, srv, model, sid, values, 0.01)
                else:
                    f = ex.submit(run_grpc_sequence, clients[j % 3], model, sid, values, 0.01)
                futs[f] = (model, sid, values)
            stream_jobs = {}
            for mi, model in enumerate(("seq_direct", "seq_oldest", "seq_string")):
                seqs = {(f"st{i}-{model}" if model == "seq_string" else 60000 + 10 * mi + i):
                        plan(3 + i, 100 + i) for i in range(3)}
                stream_jobs[ex.submit(run_stream_sequences, clients[0], model, seqs)] = (model, seqs)
            for f in cf.as_completed(list(futs) + list(stream_jobs), timeout=HANG_S * 4):
                if f in futs:
                    model, sid, values = futs[f]
                    check_sequence(model, sid, values, f.result())
                else:
                    model, seqs = stream_jobs[f]
                    res = f.result()
                    for sid, values in seqs.items():
                        check_sequence(model, sid, values, res[sid])
    finally:
        for c in clients:
            c.close()
    for model in ("seq_direct", "seq_oldest", "seq_string"):
        wait_gauges(srv, model, 0, 0)


def test_backlog_all_complete(srv):
    """Twice as many simultaneous sequences as slots (or more: the
    non-batching model has one), each pausing between its steps (so slots
    stay held and the rest wait in the backlog): all complete, each with
    its own sums."""
    jobs = [("seq_direct", 70000 + i, plan(5, 200 + i)) for i in range(16)]
    jobs += [("seq_oldest", 71000 + i, plan(5, 300 + i)) for i in range(12)]
    jobs += [("seq_nobatch", 72000 + i, plan(3, 400 + i)) for i in range(4)]
    jobs += [("seq_types", 73000 + i, plan(4, 500 + i)) for i in range(5)]
    with cf.ThreadPoolExecutor(max_workers=len(jobs)) as ex:
        futs = {ex.submit(run_http_sequence, srv, m, sid, v, 0.05): (m, sid, v) for m, sid, v in jobs}
        for f in cf.as_completed(futs, timeout=HANG_S * 4):
            m, sid, v = futs[f]
            check_sequence(m, sid, v, f.result())


def test_end_frees_the_slot_at_once(srv):
    """seq_nobatch has ONE slot and a 30 s idle limit: B's START waits in the
    backlog while A lives (gauges 1 / 1) and goes on as soon as A ENDs."""
    m = "seq_nobatch"
    s = requests.Session()
    wait_gauges(srv, m, 0, 0)
    assert http_step(s, srv, m, 1, 801, start=True)["OUTPUT"] == 1
    result = {}

    def b_start():
        with requests.Session() as bs:
            result["b"] = http_step(bs, srv, m, 10, 802, start=True)
            result["t"] = time.monotonic()

    t = threading.Thread(target=b_start, daemon=True)
    t.start()
    wait_gauges(srv, m, 1, 1)
    # A's slot is held and its idle limit is 30 s away: B cannot be answered.
    time.sleep(0.3)
    assert "b" not in result, f"B answered while A held the only slot: {result}"
    assert http_step(s, srv, m, 2, 801)["OUTPUT"] == 3
    t_end = time.monotonic()
    assert http_step(s, srv, m, 3, 801, end=True)["OUTPUT"] == 6
    t.join(HANG_S)
    assert not t.is_alive(), "B still waiting after A's END"
    assert result["b"]["OUTPUT"] == 10
    # Bound far below the 30 s idle limit: it was END, not idleness.
    assert result["t"] - t_end < 15, result
    wait_gauges(srv, m, 1, 0)
    assert http_step(s, srv, m, 5, 802, end=True)["OUTPUT"] == 15
    wait_gauges(srv, m, 0, 0)


# ================================================================ idle ===

def end_bonus(model, sid):
    """What seqacc adds to the END answer: the integer CORRID in corrid mode."""
    return sid if model in ("seq_oldest", "seq_idle_oldest") else 0


@pytest.mark.parametrize("m", ["seq_idle", "seq_idle_oldest"])
def test_idle_limit_expires_sequence(srv, m):
    """A 300 ms idle limit. After well over it, a non-START request of the
    sequence is refused; START begins it again."""
    s = requests.Session()
    assert http_step(s, srv, m, 6, 4001, start=True)["OUTPUT"] == 6
    time.sleep(1.5)
    expect_error(post(s, srv, m, body(m, 1, 4001)), 400, NO_START.format(id=4001, m=m))
    assert http_step(s, srv, m, 6, 4001, start=True)["OUTPUT"] == 6
    assert http_step(s, srv, m, 1, 4001, end=True)["OUTPUT"] == 7 + end_bonus(m, 4001)
    wait_gauges(srv, m, 0, 0)


@pytest.mark.parametrize("m", ["seq_idle", "seq_idle_oldest"])
def test_idle_limit_hands_slot_to_backlog(srv, m):
    """Room for ONE sequence: B, backlogged behind an idle A, gets the slot
    when A expires; A's next non-START request is then refused."""
    s = requests.Session()
    assert http_step(s, srv, m, 1, 4101, start=True)["OUTPUT"] == 1
    with requests.Session() as bs:
        o = http_step(bs, srv, m, 20, 4102, start=True)  # waits for A to expire
        assert o["OUTPUT"] == 20 and o["SLOT"] == 0
        expect_error(post(s, srv, m, body(m, 1, 4101)), 400, NO_START.format(id=4101, m=m))
        assert http_step(bs, srv, m, 2, 4102, end=True)["OUTPUT"] == 22 + end_bonus(m, 4102)
    wait_gauges(srv, m, 0, 0)


# ======================================================= implicit state ===

def state_step(s, srv, model, values, sid, start=False, end=False):
    r = post(s, srv, model, body(model, values, sid, start or None, end or None,
                                 outputs=("OUTPUT", "OLD_STATE")))
    assert r.status_code == 200, f"{model} {sid} {values}: {r.status_code} {r.text}"
    o = {x["name"]: x for x in r.json()["outputs"]}
    return o["OUTPUT"]["data"], o["OLD_STATE"]["data"], o["OLD_STATE"]["shape"]


def test_state_zero_initial_and_reset_on_start(srv):
    m = "state_zero"
    s = requests.Session()
    assert state_step(s, srv, m, [5], 9001, start=True) == ([5], [0], [1, 1])
    assert state_step(s, srv, m, [3], 9001) == ([8], [5], [1, 1])
    # START on the live id: the state is the initial value again.
    assert state_step(s, srv, m, [10], 9001, start=True) == ([10], [0], [1, 1])
    assert state_step(s, srv, m, [1], 9001, end=True) == ([11], [10], [1, 1])
    # A new sequence on the same id starts from zero, not from 11.
    assert state_step(s, srv, m, [2], 9001, start=True, end=True) == ([2], [0], [1, 1])


def test_state_from_data_file(srv):
    m = "state_file"
    s = requests.Session()
    assert state_step(s, srv, m, [1, 2, 3], 9101, start=True) == \
        ([101, 202, 303], [100, 200, 300], [1, 3])
    assert state_step(s, srv, m, [1, 1, 1], 9101) == ([102, 203, 304], [101, 202, 303], [1, 3])
    assert state_step(s, srv, m, [0, 0, 0], 9101, start=True) == \
        ([100, 200, 300], [100, 200, 300], [1, 3])
    assert state_step(s, srv, m, [0, 0, 1], 9101, end=True)[0] == [100, 200, 301]


def test_state_variable_dims(srv):
    """state_var: dims [-1], initial zero of shape [2]; the new state takes
    the shape of the INPUT that made it."""
    m = "state_var"
    s = requests.Session()
    assert state_step(s, srv, m, [1, 2, 3], 9201, start=True) == ([1, 2, 3], [0, 0], [1, 2])
    assert state_step(s, srv, m, [10], 9201) == ([11], [1, 2, 3], [1, 3])
    assert state_step(s, srv, m, [1, 1], 9201) == ([12, 1], [11], [1, 1])
    assert state_step(s, srv, m, [0, 0, 0, 0], 9201, end=True) == ([12, 1, 0, 0], [12, 1], [1, 2])


def test_state_interleaved_sequences_are_separate(srv):
    """Sequences running at once on one instance (batch 4) keep their own
    state, null requests included in their batches."""
    m = "state_zero"

    def run(sid, inc, n):
        with requests.Session() as s:
            got = [state_step(s, srv, m, [inc], sid, start=(i == 0), end=(i == n - 1))[0][0]
                   for i in range(n)]
        return sid, inc, got

    with cf.ThreadPoolExecutor(max_workers=6) as ex:
        futs = [ex.submit(run, 9300 + i, i + 1, 4 + i) for i in range(6)]
        for f in cf.as_completed(futs, timeout=HANG_S * 2):
            sid, inc, got = f.result()
            assert got == [inc * (k + 1) for k in range(len(got))], (sid, got)


# ========================================================== statistics ===

def test_statistics_count_real_requests_only(srv):
    """seq_count: one instance, 4 slots. Three sequences take slots; a
    request of the one in the highest slot, alone, runs with null requests
    below it (BATCH > SLOT). Statistics count only the real requests, and
    refused requests not at all."""
    m = "seq_count"
    s = requests.Session()
    before = get_stats(srv, m)["inference_stats"]
    assert before["success"]["count"] == 0, before
    real = 0
    first = {}
    for sid in (701, 702, 703):
        first[sid] = http_step(s, srv, m, sid - 700, sid, start=True)
        real += 1
    assert len({o["SLOT"] for o in first.values()}) == 3, first
    high = max(first, key=lambda k: first[k]["SLOT"])
    o = http_step(s, srv, m, 100, high)
    real += 1
    assert o["SLOT"] == first[high]["SLOT"] and o["BATCH"] > o["SLOT"], o
    assert o["OUTPUT"] == (high - 700) + 100
    for sid in (701, 702, 703):
        http_step(s, srv, m, 1, sid, end=True)
        real += 1
    # Refused by the scheduler: not counted.
    expect_error(post(s, srv, m, body(m, 1)), 400, MISSING_ID.format(m=m))
    expect_error(post(s, srv, m, body(m, 1, 709)), 400, NO_START.format(id=709, m=m))
    deadline = time.monotonic() + HANG_S
    while True:
        st = get_stats(srv, m)
        inf = st["inference_stats"]
        if inf["success"]["count"] >= real or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    time.sleep(0.2)
    st = get_stats(srv, m)
    inf = st["inference_stats"]
    assert inf["success"]["count"] == real, inf
    assert inf["fail"]["count"] == 0, inf
    assert st["inference_count"] == real, st
    assert 1 <= st["execution_count"] <= real, st
    assert inf["queue"]["count"] == real and inf["compute_infer"]["count"] == real, inf


# ============================================================ shutdown ===

def test_sigterm_with_live_sequences_and_queued_requests(tmp_path, grpc_stubs):  # noqa: F811
    """Sequences live, requests queued behind a slow execute and STARTs in
    the backlog (HTTP and gRPC) when SIGTERM comes: the server exits 0
    within its exit timeout plus slack, and every client gets an answer or
    a closed connection (nothing hangs). Answers that are 200 are correct;
    the backlogged STARTs, whose slots never free (30 s idle limit), fail."""
    exit_timeout = 4
    srv = start_seq_server(tmp_path, models=("seq_slow", "seq_nobatch"),
                           extra=[f"--exit-timeout-secs={exit_timeout}"])
    client = gh.connect(srv, grpc_stubs)
    try:
        s = requests.Session()
        # seq_slow: 2 slots, 200 ms per execute, 30 s idle limit.
        assert http_step(s, srv, "seq_slow", 1, 1, start=True)["OUTPUT"] == 1
        assert http_step(s, srv, "seq_slow", 1, 2, start=True)["OUTPUT"] == 1
        assert http_step(s, srv, "seq_nobatch", 1, 3, start=True)["OUTPUT"] == 1
        results = {}
        lock = threading.Lock()

        def send(key, model, value, sid, start=False):
            try:
                r = post(requests, srv, model, body(model, value, sid, start or None, None,
                                                    ("OUTPUT",)))
                res = (r.status_code, r.text)
            except requests.RequestException as e:
                res = ("conn", repr(e))
            with lock:
                results[key] = res

        def send_grpc(key, model, value, sid):
            try:
                grpc_step(client, model, value, sid, start=True)
                res = ("grpc-ok", "")
            except grpc.RpcError as e:
                res = ("grpc-error", gh.describe(e))
            with lock:
                results[key] = res

        threads = [threading.Thread(target=send_grpc, args=("g1", "seq_nobatch", 7, 13))]
        for i in range(4):  # queued behind each other on sequence 1
            threads.append(threading.Thread(target=send, args=(f"q{i}", "seq_slow", 1, 1)))
        threads.append(threading.Thread(target=send, args=("b1", "seq_slow", 5, 11, True)))
        threads.append(threading.Thread(target=send, args=("b2", "seq_nobatch", 5, 12, True)))
        for t in threads:
            t.daemon = True
            t.start()
        wait_gauges(srv, "seq_nobatch", 1, 2)
        wait_gauges(srv, "seq_slow", 2, 1)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        try:
            rc = srv.proc.wait(timeout=exit_timeout + 20)
        except subprocess.TimeoutExpired:
            srv.proc.kill()
            srv.proc.wait()
            raise AssertionError(f"inferd still running long after SIGTERM\n{srv.log_tail()}")
        elapsed = time.monotonic() - t0
        for t in threads:
            t.join(HANG_S)
            assert not t.is_alive(), "a client still waits after the server exited"
        assert rc == 0, f"exit status {rc}\n{srv.log_tail()}"
        assert elapsed < exit_timeout + 2 + 6, f"exited after {elapsed:.1f} s\n{srv.log_tail()}"
        assert set(results) == {"q0", "q1", "q2", "q3", "b1", "b2", "g1"}, results
        assert results["g1"][0] == "grpc-error", results
        assert results["b1"][0] != 200 and results["b2"][0] != 200, results
        sums = sorted(json.loads(v[1])["outputs"][0]["data"][0]
                      for k, v in results.items() if k.startswith("q") and v[0] == 200)
        # The queued requests of sequence 1 that were answered 200 carry its
        # running sum (2, 3, 4, 5 in order of execution).
        assert sums == list(range(2, 2 + len(sums))), results
        for k, v in results.items():
            assert v[0] in (200, "conn", "grpc-error") or 400 <= v[0] < 600, (k, v)
    finally:
        client.close()
        srv.stop(check=False)


# ================================================== iterative sequence ===

def test_iterative_sequence_loads(tmp_path):
    """iterative_sequence: true loads. A request without a sequence ID starts
    a sequence of its own (START set, an ID from the batcher), which ends
    when its backend releases it for good: every request of a model with 8
    slots, 12 in turn, gets one (Triton's IterativeSequencer)."""
    repo = copy_seq_repo(tmp_path / "repo", models=("seq_direct",), with_identity=False)
    shutil.copytree(repo / "seq_direct", repo / "seq_iter")
    cfg = (repo / "seq_iter" / "config.pbtxt").read_text()
    cfg = re.sub(r'name: "seq_direct"', 'name: "seq_iter"', cfg)
    assert "sequence_batching {" in cfg
    cfg = cfg.replace("sequence_batching {", "sequence_batching {\n  iterative_sequence: true", 1)
    (repo / "seq_iter" / "config.pbtxt").write_text(cfg)
    s = h.start_server(tmp_path / "srv", [repo], wait_models=("seq_direct", "seq_iter"))
    try:
        with requests.Session() as session:
            for i in range(12):
                r = post(session, s, "seq_iter", body("seq_iter", i, outputs=("OUTPUT", "OUT_START")))
                assert r.status_code == 200, r.text
                assert outs(r.json())["OUT_START"] == [1], r.text
    finally:
        s.stop(check=True)
