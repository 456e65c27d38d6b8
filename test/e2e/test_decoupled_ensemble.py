"""Ensembles with a decoupled composing model (Triton: the ensemble becomes
decoupled; every response of the decoupled step runs the steps after it and
is an ensemble response; the request ends with the FINAL flag).

Models: test/models/decoupled_ens_repo (ens_square: square_int32 then
identity_int32; ens_repeat: repeat_int32, then identity_int32 on its OUT, its
IDX straight out; ens_square2: square_int32 twice, a decoupled step below
another) over the composing models of test/models/decoupled_repo.
"""

import concurrent.futures as cf
import shutil
import threading

import grpc
import numpy as np
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as gh
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)
from test_decoupled import (DECOUPLED_HTTP, DECOUPLED_UNARY, HANG_S, copy_repo, empty_final,
                            final_flag, set_params, stream)

ENS_SRC = h.REPO_ROOT / "test" / "models" / "decoupled_ens_repo"
ENSEMBLES = ("ens_square", "ens_repeat", "ens_square2")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("decens")
    repo = copy_repo(tmp / "repo")
    for m in ENSEMBLES:
        shutil.copytree(ENS_SRC / m, repo / m)
    s = h.start_server(tmp / "srv", [repo],
                       extra=["--exit-timeout-secs=10", "--metrics-config=histogram_latencies=true"],
                       wait_models=ENSEMBLES)
    try:
        yield s
    finally:
        s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = gh.connect(srv, grpc_stubs)
    yield c
    c.close()


def sq_req(pb, rid, n, params=None, outputs=None):
    req = gh.infer_request(pb, "ens_square", [("IN", "INT32", [1], np.array([n], dtype=np.int32))],
                           request_id=rid)
    for o in outputs or ():
        req.outputs.add().name = o
    set_params(req, params)
    return req


def rep_req(pb, rid, values, delay=None, wait=0, outputs=None):
    values = list(values)
    delay = [0] * len(values) if delay is None else list(delay)
    req = gh.infer_request(pb, "ens_repeat", [
        ("IN", "INT32", [len(values)], np.array(values, dtype=np.int32)),
        ("DELAY", "UINT32", [len(delay)], np.array(delay, dtype=np.uint32)),
        ("WAIT", "UINT32", [1], np.array([wait], dtype=np.uint32)),
    ], request_id=rid)
    for o in outputs or ():
        req.outputs.add().name = o
    return req


def data(m, rid, model):
    assert m.error_message == "", m.error_message
    ir = m.infer_response
    assert ir.id == rid and ir.model_name == model and ir.model_version == "1", ir
    assert final_flag(ir) is False, ir
    return gh.outputs_of(ir)


def test_config_says_decoupled(srv):
    for m in ENSEMBLES:
        cfg = srv.get(f"/v2/models/{m}/config").json()
        assert cfg["model_transaction_policy"] == {"decoupled": True}, cfg


def test_unary_paths_refuse_it(srv, gc):
    body = {"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [2]}]}
    r = srv.post("/v2/models/ens_square/infer", json=body)
    assert r.status_code == 501 and DECOUPLED_HTTP in r.text, r.text
    with pytest.raises(grpc.RpcError) as ei:
        gc.model_infer(sq_req(gc.pb, "u", 2))
    assert ei.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert DECOUPLED_UNARY in ei.value.details()


def test_square_one_response_per_step_response(gc):
    msgs, code, _ = stream(gc, [sq_req(gc.pb, "s3", 3)])
    assert code == grpc.StatusCode.OK, code
    assert len(msgs) == 3, msgs
    for m in msgs:
        out = data(m, "s3", "ens_square")
        assert out["OUT"].tolist() == [3] and out["OUT"].shape == (1,), out


def test_square_zero_and_empty_final(gc):
    msgs, code, _ = stream(gc, [sq_req(gc.pb, "s0", 0)])
    assert code == grpc.StatusCode.OK and msgs == [], msgs
    msgs, code, _ = stream(gc, [sq_req(gc.pb, "s2f", 2, params={"triton_enable_empty_final_response": True})])
    assert code == grpc.StatusCode.OK and len(msgs) == 3, msgs
    for m in msgs[:2]:
        assert data(m, "s2f", "ens_square")["OUT"].tolist() == [2]
    empty_final(msgs[2], "s2f", "ens_square")


def test_nested_decoupled_steps(gc):
    for n in (0, 1, 3):
        req = gh.infer_request(gc.pb, "ens_square2", [("IN", "INT32", [1], np.array([n], dtype=np.int32))],
                               request_id=f"n{n}")
        msgs, code, _ = stream(gc, [req])
        assert code == grpc.StatusCode.OK, code
        assert [data(m, f"n{n}", "ens_square2")["OUT"].tolist() for m in msgs] == [[n]] * (n * n)


def test_repeat_one_response_per_step_response(gc):
    vals = [4, 5, 6]
    msgs, code, _ = stream(gc, [rep_req(gc.pb, "r", vals, delay=[0, 20, 20])])
    assert code == grpc.StatusCode.OK and len(msgs) == 3, msgs
    for i, m in enumerate(msgs):
        out = data(m, "r", "ens_repeat")
        assert out["OUT"].tolist() == [vals[i]], out
        assert out["IDX"].tolist() == [i], out


def test_requested_output_subset(gc):
    msgs, code, _ = stream(gc, [rep_req(gc.pb, "sub", [7, 8], outputs=["IDX"])])
    assert code == grpc.StatusCode.OK and len(msgs) == 2, msgs
    for i, m in enumerate(msgs):
        out = data(m, "sub", "ens_repeat")
        assert set(out) == {"IDX"} and out["IDX"].tolist() == [i], out


def test_error_mid_stream(gc):
    # square's test hook: a negative N is one error response.
    msgs, code, _ = stream(gc, [sq_req(gc.pb, "bad", -1), sq_req(gc.pb, "ok", 1)])
    assert code == grpc.StatusCode.OK, code
    errs = [m for m in msgs if m.error_message]
    oks = [m for m in msgs if not m.error_message]
    assert len(errs) == 1 and "in ensemble 'ens_square'" in errs[0].error_message, errs
    assert errs[0].infer_response.id == "bad"
    assert len(oks) == 1 and data(oks[0], "ok", "ens_square")["OUT"].tolist() == [1]


def test_many_concurrent_streams(gc):
    def one(i):
        n = 1 + i % 5
        msgs, code, _ = stream(gc, [sq_req(gc.pb, f"c{i}", n)])
        assert code == grpc.StatusCode.OK
        assert [data(m, f"c{i}", "ens_square")["OUT"].tolist() for m in msgs] == [[n]] * n
        return n

    with cf.ThreadPoolExecutor(8) as ex:
        total = sum(ex.map(one, range(40)))
    assert total == sum(1 + i % 5 for i in range(40))


def test_long_stream(gc):
    n = 300
    msgs, code, _ = stream(gc, [rep_req(gc.pb, "long", list(range(n)))])
    assert code == grpc.StatusCode.OK and len(msgs) == n
    got = sorted(int(data(m, "long", "ens_repeat")["IDX"][0]) for m in msgs)
    assert got == list(range(n))


def test_cancel_mid_stream_keeps_serving(srv, gc):
    got = []
    first = threading.Event()

    def reqs():
        yield rep_req(gc.pb, "cx", list(range(50)), delay=[0] + [50] * 49)
        first.wait(HANG_S)

    call = gc.model_stream_infer(reqs(), timeout=HANG_S)

    def reader():
        try:
            for m in call:
                got.append(m)
                first.set()
        except grpc.RpcError:
            pass

    t = threading.Thread(target=reader)
    t.start()
    assert first.wait(HANG_S)
    call.cancel()
    t.join(HANG_S)
    assert 1 <= len(got) < 50
    # The server goes on: another stream completes, and the composing
    # repeat model is not left running the cancelled request for 2.5 s.
    msgs, code, _ = stream(gc, [sq_req(gc.pb, "after", 2)])
    assert code == grpc.StatusCode.OK and len(msgs) == 2


def test_statistics_and_first_response_metric(srv, gc):
    before = srv.get("/v2/models/ens_square/stats").json()["model_stats"][0]["inference_stats"]["success"]["count"]
    msgs, code, _ = stream(gc, [sq_req(gc.pb, "st", 2)])
    assert code == grpc.StatusCode.OK and len(msgs) == 2
    st = srv.get("/v2/models/ens_square/stats").json()["model_stats"][0]
    assert st["inference_stats"]["success"]["count"] == before + 1, st
    text = requests.get(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=HANG_S).text
    # Triton observes the decoupled ensemble and its decoupled step, not the
    # identity step.
    assert 'nv_inference_first_response_histogram_ms_count{model="ens_square",version="1"}' in text
    assert 'nv_inference_first_response_histogram_ms_count{model="square_int32",version="1"}' in text
    assert 'nv_inference_first_response_histogram_ms_count{model="identity_int32"' not in text


def test_http_generate_stream(srv):
    # Ensemble responses carry sequence parameters (features.md, read first
    # 6); generate maps response parameters to fields.
    seq = ',"sequence_id":0,"sequence_start":false,"sequence_end":false'
    r = srv.post("/v2/models/ens_square/generate_stream", json={"IN": 2}, timeout=HANG_S)
    assert r.status_code == 200, r.text
    events = [e for e in r.text.split("\n\n") if e.strip()]
    assert events == ['data: {"OUT":2,"model_name":"ens_square","model_version":"1"' + seq + '}'] * 2, r.text
    r = srv.post("/v2/models/ens_square/generate", json={"IN": 1}, timeout=HANG_S)
    assert r.status_code == 200, r.text
    assert r.json() == {"OUT": 1, "model_name": "ens_square", "model_version": "1", "sequence_id": 0,
                        "sequence_start": False, "sequence_end": False}, r.text
