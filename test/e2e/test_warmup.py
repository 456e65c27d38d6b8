"""Model warmup (model_warmup in config.pbtxt), as tritonserver 2.47 runs it:
every sample runs on every instance, `count` times (0: once), its
batch_size requests of batch 1 executed together, with zero, random or
file data (<model>/warmup/<file>), before the model is ready; a failing
warmup fails the load with Triton's message.

The models use the warmrec test backend (test/models/backends/warmrec),
which appends a JSON line to a record file for every instance initialize
and every execute (instance, thread id, each request's inputs), so the
tests read what reached the backend. No timing is asserted: readiness is
checked against what the record file already holds.
"""

import json
import shutil
import struct
import threading
import time

import pytest

import e2e_helpers as h

SETTLE_S = 30  # an upper bound only


def warmrec_so():
    return h.build_dir() / "test" / "backends" / "warmrec" / "libtriton_warmrec.so"


def config(name, record, warmup, max_batch_size=8, instances=1, params=None, dims="4"):
    p = {"record": str(record)}
    p.update(params or {})
    params_txt = "\n".join(
        f'parameters {{ key: "{k}" value: {{ string_value: "{v}" }} }}' for k, v in p.items())
    return f"""
name: "{name}"
backend: "warmrec"
max_batch_size: {max_batch_size}
input [ {{ name: "IN" data_type: TYPE_INT32 dims: [ {dims} ] }} ]
output [ {{ name: "OUT" data_type: TYPE_INT32 dims: [ {dims} ] }} ]
instance_group [ {{ kind: KIND_CPU count: {instances} }} ]
{params_txt}
model_warmup [ {warmup} ]
"""


def sample(name, inputs, batch_size=1, count=None):
    ins = " ".join(
        f'inputs {{ key: "{k}" value: {{ data_type: {dt} dims: [ {dims} ] {data} }} }}'
        for k, (dt, dims, data) in inputs.items())
    c = f" count: {count}" if count is not None else ""
    return f'{{ name: "{name}" batch_size: {batch_size}{c} {ins} }}'


ZERO4 = ("TYPE_INT32", "4", "zero_data: true")

# name -> (config kwargs, files under warmup/)
MODELS = {
    # Zero, random and file data; BYTES zero and random data; a control
    # input the config does not declare; a batch_size 0 sample (skipped).
    "w_data": (dict(warmup=", ".join([
        sample("zeros", {"IN": ZERO4}),
        sample("random", {"IN": ("TYPE_INT32", "64", "random_data: true")}),
        sample("file", {"IN": ("TYPE_INT32", "4", 'input_data_file: "in.bin"')}),
        sample("strings", {"S": ("TYPE_STRING", "2", "zero_data: true"),
                           "R": ("TYPE_STRING", "3", "random_data: true")}),
        sample("control", {"IN": ZERO4, "START": ("TYPE_INT32", "1", "zero_data: true")}),
        sample("skipped", {"IN": ZERO4}, batch_size=0),
    ]), dims="-1"), {"in.bin": struct.pack("<4i", 1, 2, 3, 4) + b"extra"}),
    # Two instances, a batch of 3, twice each.
    "w_count": (dict(warmup=sample("batch3", {"IN": ZERO4}, batch_size=3, count=2), instances=2), {}),
    # A model that does not batch: no batch dimension.
    "w_nobatch": (dict(warmup=sample("one", {"IN": ZERO4}), max_batch_size=0), {}),
    # An execute that takes a while: ready only after it.
    "w_slow": (dict(warmup=sample("slow", {"IN": ZERO4}), params={"delay_ms": "700"}), {}),
    # Failures.
    "w_fail": (dict(warmup=sample("fails", {"IN": ZERO4}), params={"fail": "1"}), {}),
    "w_fail_exec": (dict(warmup=sample("refused", {"IN": ZERO4}), params={"fail_exec": "1"}), {}),
    "w_nofile": (dict(warmup=sample("nofile", {"IN": ("TYPE_INT32", "4", 'input_data_file: "nope.bin"')})), {}),
    "w_short": (dict(warmup=sample("short", {"IN": ("TYPE_INT32", "4", 'input_data_file: "short.bin"')})),
                {"short.bin": b"abc"}),
    "w_vardim": (dict(warmup=sample("vardim", {"IN": ("TYPE_INT32", "-1", "zero_data: true")}), dims="-1"), {}),
    "w_nodata": (dict(warmup=sample("nodata", {"IN": ("TYPE_INT32", "4", "")})), {}),
}


def make_repo(tmp, names):
    repo = tmp / "repo"
    so = warmrec_so()
    assert so.is_file(), f"{so} is not built (make all builds test/models/backends/*)"
    for name in names:
        kw, files = MODELS[name]
        d = repo / name
        (d / "1").mkdir(parents=True)
        (d / "config.pbtxt").write_text(config(name, tmp / f"{name}.rec", **kw))
        shutil.copy2(so, d / so.name)
        if files:
            (d / "warmup").mkdir()
            for fname, data in files.items():
                (d / "warmup" / fname).write_bytes(data)
    return repo


def records(tmp, name):
    path = tmp / f"{name}.rec"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def execs(tmp, name):
    return [r for r in records(tmp, name) if r["ev"] == "exec"]


@pytest.fixture(scope="module")
def explicit(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("warmup")
    repo = make_repo(tmp, list(MODELS))
    s = h.start_server(tmp, [repo], extra=["--model-control-mode=explicit"], wait_models=())
    s.tmp = tmp
    s.repo = repo
    try:
        yield s
    finally:
        s.stop(check=True)


def load(srv, name):
    return srv.post(f"/v2/repository/models/{name}/load", json={}, timeout=60)


def row(srv, name):
    r = srv.post("/v2/repository/index", json={})
    assert r.status_code == 200, r.text
    return next(m for m in r.json() if m["name"] == name)


def load_error(srv, name):
    r = load(srv, name)
    assert r.status_code == 400, (r.status_code, r.text)
    return r.json()["error"]


def reason(srv, name):
    rw = row(srv, name)
    assert rw["state"] == "UNAVAILABLE", rw
    return rw["reason"]


def test_data_reaches_the_backend(explicit):
    srv, tmp = explicit, explicit.tmp
    r = load(srv, "w_data")
    assert r.status_code == 200, r.text
    ex = execs(tmp, "w_data")
    # Five samples ran once each (count unset: once); batch_size 0 was skipped.
    assert len(ex) == 5, ex
    zeros, rand, file_, strings, control = (e["reqs"] for e in ex)
    assert [len(x) for x in (zeros, rand, file_, strings, control)] == [1] * 5
    assert zeros[0] == {"IN": {"dt": "INT32", "shape": [1, 4], "size": 16, "zero": True,
                               "head": "00" * 16}}
    assert rand[0]["IN"]["shape"] == [1, 64] and rand[0]["IN"]["size"] == 256
    assert rand[0]["IN"]["zero"] is False
    # The file's first 16 bytes (the rest of it is not sent).
    assert file_[0]["IN"]["size"] == 16
    assert file_[0]["IN"]["head"] == struct.pack("<4i", 1, 2, 3, 4).hex()
    # BYTES: zero and random data are empty strings (4 zero bytes each).
    assert strings[0]["S"] == {"dt": "BYTES", "shape": [1, 2], "size": 8, "zero": True,
                               "head": "00" * 8}
    assert strings[0]["R"]["size"] == 12 and strings[0]["R"]["zero"] is True
    # An input the config does not declare reaches the backend as given.
    assert control[0]["START"]["shape"] == [1, 1] and control[0]["START"]["zero"] is True
    # Warmup on the instance's own thread.
    init = [x for x in records(tmp, "w_data") if x["ev"] == "init"]
    assert len(init) == 1 and all(e["tid"] == init[0]["tid"] for e in ex), records(tmp, "w_data")
    # Counted as Triton counts what the backend reports for warmup
    # requests: five requests, five executions of batch 1.
    st = srv.get("/v2/models/w_data/stats").json()["model_stats"][0]
    assert st["inference_count"] == 5 and st["execution_count"] == 5, st
    assert st["inference_stats"]["success"]["count"] == 5, st
    assert st["inference_stats"]["fail"]["count"] == 0, st
    assert [(b["batch_size"], b["compute_infer"]["count"]) for b in st["batch_stats"]] == [(1, 5)], st
    # The model serves.
    r = srv.post("/v2/models/w_data/infer", json={"inputs": [
        {"name": "IN", "datatype": "INT32", "shape": [1, 2], "data": [7, 8]}]})
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == [7, 8]
    st = srv.get("/v2/models/w_data/stats").json()["model_stats"][0]
    assert st["inference_count"] == 6 and st["execution_count"] == 6, st


def test_count_batch_and_instances(explicit):
    srv, tmp = explicit, explicit.tmp
    r = load(srv, "w_count")
    assert r.status_code == 200, r.text
    rec = records(tmp, "w_count")
    init = {x["inst"]: x["tid"] for x in rec if x["ev"] == "init"}
    ex = [x for x in rec if x["ev"] == "exec"]
    assert len(init) == 2, rec
    # count 2 on each of the two instances, 3 requests of batch 1 together.
    assert sorted(e["inst"] for e in ex) == sorted(list(init) * 2), ex
    for e in ex:
        assert e["tid"] == init[e["inst"]], (e, init)
        assert len(e["reqs"]) == 3 and all(q["IN"]["shape"] == [1, 4] for q in e["reqs"]), e


def test_no_batch_dimension_when_the_model_does_not_batch(explicit):
    srv, tmp = explicit, explicit.tmp
    assert load(srv, "w_nobatch").status_code == 200
    ex = execs(tmp, "w_nobatch")
    assert len(ex) == 1 and ex[0]["reqs"][0]["IN"]["shape"] == [4], ex


def test_ready_only_after_warmup(explicit):
    srv, tmp = explicit, explicit.tmp
    result = {}

    def do_load():
        result["r"] = load(srv, "w_slow")

    t = threading.Thread(target=do_load)
    t.start()
    seen_ready = False
    deadline = time.monotonic() + SETTLE_S
    while t.is_alive() and time.monotonic() < deadline:
        if srv.get("/v2/models/w_slow/ready").status_code == 200:
            # Ready may be seen only once the warmup's execute has run.
            assert len(execs(tmp, "w_slow")) == 1, records(tmp, "w_slow")
            seen_ready = True
        time.sleep(0.02)
    t.join(SETTLE_S)
    assert result["r"].status_code == 200, result["r"].text
    # When the load call answers, the warmup has run.
    assert len(execs(tmp, "w_slow")) == 1
    assert srv.get("/v2/models/w_slow/ready").status_code == 200
    del seen_ready


# The index reason is Triton's "<status code>: <message>" (INVALID_ARG for
# all of these; a file that cannot be read is INTERNAL).
FAILURES = {
    "w_fail": "failed to run warmup sample 'fails': warmrec: failing as asked; ",
    "w_fail_exec": "failed to run warmup sample 'refused': warmrec: execute refused as asked; ",
    "w_short": "warmup setting expects 16 bytes, but the data provided from short.binonly has 3 bytes",
    "w_vardim": "warmup setting expects all variable-size dimensions are specified for input 'IN'",
    "w_nodata": "warmup setting expects input 'IN' to have input_data_type set",
}


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_failing_warmup_fails_the_load(explicit, name):
    srv = explicit
    msg = load_error(srv, name)
    assert FAILURES[name] in msg, msg
    assert msg.startswith(f"load failed for model '{name}': version 1 is at UNAVAILABLE state: "), msg
    assert reason(srv, name) == "Invalid argument: " + FAILURES[name], reason(srv, name)
    assert srv.get(f"/v2/models/{name}/ready").status_code != 200


def test_missing_warmup_file(explicit):
    srv = explicit
    path = explicit.repo / "w_nofile" / "warmup" / "nope.bin"
    want = f"failed to open text file for read {path}: No such file or directory"
    assert want in load_error(srv, "w_nofile")
    assert reason(srv, "w_nofile") == "Internal: " + want
    # The file appears: the next load warms up and serves.
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(bytes(16))
    assert load(srv, "w_nofile").status_code == 200
    assert row(srv, "w_nofile")["state"] == "READY"
    # The failed loads counted nothing.
    st = srv.get("/v2/models/w_nofile/stats").json()["model_stats"][0]
    assert st["inference_count"] == 1 and st["execution_count"] == 1, st


def test_reload_warms_up_again(explicit):
    srv, tmp = explicit, explicit.tmp
    cfg = explicit.repo / "w_nobatch" / "config.pbtxt"
    assert load(srv, "w_nobatch").status_code == 200
    before = len(execs(tmp, "w_nobatch"))
    cfg.write_text(cfg.read_text().replace('name: "one" batch_size: 1',
                                           'name: "one" batch_size: 1 count: 3'))
    r = load(srv, "w_nobatch")
    assert r.status_code == 200, r.text
    assert len(execs(tmp, "w_nobatch")) == before + 3
    assert row(srv, "w_nobatch")["state"] == "READY"


def test_startup_failure_leaves_the_model_unavailable(tmp_path):
    h.require_binary()
    repo = make_repo(tmp_path, ["w_count", "w_fail"])
    s = h.start_server(tmp_path, [repo], wait_models=("w_count",))
    try:
        assert reason(s, "w_fail") == "Invalid argument: " + FAILURES["w_fail"]
        assert s.get("/v2/models/w_fail/ready").status_code != 200
        assert len(execs(tmp_path, "w_count")) == 4
        # 2 instances x count 2 x 3 requests; 4 executions of batch 3.
        st = s.get("/v2/models/w_count/stats").json()["model_stats"][0]
        assert st["inference_count"] == 12 and st["execution_count"] == 4, st
        assert [(b["batch_size"], b["compute_infer"]["count"]) for b in st["batch_stats"]] == [(3, 4)], st
        # ... and in the metrics, as Triton's are.
        m = h.requests.get(f"http://127.0.0.1:{s.metrics_port}/metrics", timeout=10).text
        assert 'nv_inference_count{model="w_count",version="1"} 12' in m, m[:3000]
        assert 'nv_inference_exec_count{model="w_count",version="1"} 4' in m, m[:3000]
    finally:
        s.stop(check=True)


def test_decoupled_and_python_models_warm_up(tmp_path):
    """Responses from other threads, response factories and flags-only
    final responses (decoupled models), and the Python backend's stub."""
    h.require_binary()
    repo = tmp_path / "repo"
    shutil.copytree(h.REPO_ROOT / "test" / "models" / "decoupled_repo" / "repeat_int32", repo / "repeat_int32")
    so = h.build_dir() / "test" / "backends" / "repeat" / "libtriton_repeat.so"
    assert so.is_file(), so
    shutil.copy2(so, repo / "repeat_int32" / so.name)
    py = h.REPO_ROOT / "test" / "models" / "python_repo"
    for m in ("add_sub", "py_repeat"):
        shutil.copytree(py / m, repo / m)
    warm = {
        "repeat_int32": sample("three", {"IN": ("TYPE_INT32", "3", "random_data: true"),
                                         "DELAY": ("TYPE_UINT32", "3", "zero_data: true"),
                                         "WAIT": ("TYPE_UINT32", "1", "zero_data: true")}, count=2),
        "add_sub": sample("zeros", {"INPUT0": ("TYPE_FP32", "4", "zero_data: true"),
                                    "INPUT1": ("TYPE_FP32", "4", "random_data: true")}),
        "py_repeat": sample("two", {"IN": ("TYPE_INT32", "2", "zero_data: true"),
                                    "DELAY": ("TYPE_UINT32", "2", "zero_data: true")}),
    }
    for m, w in warm.items():
        cfg = repo / m / "config.pbtxt"
        cfg.write_text(cfg.read_text() + f"\nmodel_warmup [ {w} ]\n")
    s = h.start_server(tmp_path / "srv", [repo], wait_models=tuple(warm), timeout=120,
                       extra=["--log-verbose=1"])
    try:
        log = s.log_path.read_text(errors="replace")
        for m, name, it in (("repeat_int32", "three", 2), ("add_sub", "zeros", 1), ("py_repeat", "two", 1)):
            assert row(s, m)["state"] == "READY", row(s, m)
            assert any(f"model '{m}' instance " in ln and
                       ln.endswith(f"is running warmup sample '{name}' for iteration {it}\"")
                       for ln in log.splitlines()), log[-3000:]
        r = s.post("/v2/models/add_sub/infer", json={"inputs": [
            {"name": "INPUT0", "datatype": "FP32", "shape": [4], "data": [1, 2, 3, 4]},
            {"name": "INPUT1", "datatype": "FP32", "shape": [4], "data": [1, 1, 1, 1]}]})
        assert r.status_code == 200, r.text
        assert r.json()["outputs"][0]["data"] == [2, 3, 4, 5]
    finally:
        s.stop(check=True)


def test_sequence_models_warm_up_with_their_control_inputs(tmp_path):
    """A sequence batcher model lists its control inputs in the sample (as
    Triton asks: warmup does not go through the scheduler); implicit state
    models warm up too. The warmup leaves no sequence behind: a real
    sequence afterwards starts from scratch."""
    h.require_binary()
    src = h.REPO_ROOT / "test" / "models" / "seq_repo"
    repo = tmp_path / "repo"
    one = ("TYPE_INT32", "1", 'input_data_file: "one.bin"')
    zero = ("TYPE_INT32", "1", "zero_data: true")
    warm = {
        # The seqacc backend refuses a START without a correlation ID (and
        # warmup requests have none, in Triton too): READY 0 makes these
        # null requests, which it answers without touching any sequence.
        "seq_direct": ("seqacc", sample("null", {"INPUT": ("TYPE_INT32", "1", 'input_data_file: "seven.bin"'),
                                                 "START": zero, "READY": zero}, count=2)),
        # Implicit state is not loaded for warmup requests (Triton's warmup
        # skips that step too): the sample gives the state input itself.
        "state_var": ("seqstate", sample("start", {"INPUT": ("TYPE_INT32", "2", "random_data: true"),
                                                   "INPUT_STATE": ("TYPE_INT32", "2", "zero_data: true"),
                                                   "START": one, "READY": one})),
    }
    for m, (backend, w) in warm.items():
        shutil.copytree(src / m, repo / m)
        so = h.build_dir() / "test" / "backends" / backend / f"libtriton_{backend}.so"
        assert so.is_file(), so
        shutil.copy2(so, repo / m / so.name)
        (repo / m / "warmup").mkdir()
        (repo / m / "warmup" / "one.bin").write_bytes(struct.pack("<i", 1))
        (repo / m / "warmup" / "seven.bin").write_bytes(struct.pack("<i", 7))
        cfg = repo / m / "config.pbtxt"
        cfg.write_text(cfg.read_text() + f"\nmodel_warmup [ {w} ]\n")
    s = h.start_server(tmp_path / "srv", [repo], wait_models=tuple(warm), timeout=60)
    try:
        for value, start, end, total in ((5, True, None, 5), (3, None, None, 8), (2, None, True, 10)):
            params = {"sequence_id": 1001}
            if start:
                params["sequence_start"] = True
            if end:
                params["sequence_end"] = True
            r = s.post("/v2/models/seq_direct/infer", json={
                "inputs": [{"name": "INPUT", "datatype": "INT32", "shape": [1, 1], "data": [value]}],
                "outputs": [{"name": "OUTPUT"}], "parameters": params})
            assert r.status_code == 200, r.text
            assert r.json()["outputs"][0]["data"] == [total], r.json()
        r = s.post("/v2/models/state_var/infer", json={
            "inputs": [{"name": "INPUT", "datatype": "INT32", "shape": [1, 2], "data": [1, 2]}],
            "parameters": {"sequence_id": 7, "sequence_start": True, "sequence_end": True}})
        assert r.status_code == 200, r.text
    finally:
        s.stop(check=True)
