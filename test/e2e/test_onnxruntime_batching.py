"""ONNX Runtime backend: dynamic batching, several instances, statistics.

A batch the dynamic batcher forms from requests of different batch sizes
(and different protocols) runs as one ONNX Runtime call; each request must
get back its own rows. Several instances (instance_group count > 1, one
session each in Triton) answer correctly under concurrent load. The model
statistics count what ran (Triton's statistics extension: success counts,
batch_stats per batch size) and memory_usage is well formed.

Batching is made likely without timing assertions: the batcher waits up to
max_queue_delay_microseconds (2 s) for a preferred batch size of 8, which
the concurrent requests of a test add up to exactly.
"""


import numpy as np
import pytest

import onnx_models as om
import ort_fixtures as of
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

W = 4


def _cfg(name, max_batch_size, extra, dims=(W,)):
    d = list(dims)
    return om.config(name, [("INPUT0", "FP32", d), ("INPUT1", "FP32", d)],
                     [("OUTPUT0", "FP32", d), ("OUTPUT1", "FP32", d)], max_batch_size=max_batch_size, extra=extra)


BATCHER = "dynamic_batching { preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 2000000 }\n"


# Ragged batching (Triton's ragged_batching.md): requests of different
# lengths are concatenated into one 1-D tensor for the model, and the output
# is scattered back with each request's input shape.
RAGGED = """name: "ragged"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
batch_output [ { target_name: "OUTPUT0" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "INPUT0" } ]
dynamic_batching { max_queue_delay_microseconds: 500000 }
"""

RAGGED_COUNT = """name: "ragged_count"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true } ]
batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "COUNT" data_type: TYPE_INT32 source_input: "INPUT0" } ]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] },
  { name: "OUT_COUNT" data_type: TYPE_INT32 dims: [ 1 ] }
]
batch_output [ { target_name: "OUTPUT0" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "INPUT0" } ]
dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 1000000 }
"""


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ort-batching")
    repo = tmp / "repo"
    fixed = om.add_sub("FP32", "FP32", [None, W])
    om.write_model(repo, "batched", fixed, config=_cfg("batched", 8, BATCHER))
    om.write_model(repo, "batched_var", om.add_sub("FP32", "FP32", [None, "W"]),
                   config=_cfg("batched_var", 8, BATCHER, dims=(-1,)))
    om.write_model(repo, "instances", fixed,
                   config=_cfg("instances", 8, "instance_group [ { count: 3 kind: KIND_CPU } ]\n"
                                            "dynamic_batching { }\n"))
    om.write_model(repo, "ragged", om.scale(np.float32(2.0), [None]), config=RAGGED)
    om.write_model(repo, "ragged_count", om.ragged_with_count(), config=RAGGED_COUNT)
    om.write_model(repo, "shared", fixed,
                   config=_cfg("shared", 8, "instance_group [ { count: 3 kind: KIND_CPU } ]\ndynamic_batching { }\n"
                                          'parameters { key: "share_session_between_instances" '
                                          'value: { string_value: "true" } }\n'))
    om.write_model(repo, "stats", fixed, config=_cfg("stats", 8, "dynamic_batching { }\n"))
    s = of.start(tmp / "srv", repo, wait_models=("batched", "batched_var", "instances", "shared", "stats"))
    of.wait_not_loading(s, ["ragged", "ragged_count"])
    yield s
    s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = of.grpc_client(srv, grpc_stubs)
    yield c
    c.close()


def _inputs(tag, rows, width=W):
    a = (np.arange(rows * width, dtype=np.float32).reshape(rows, width) + 1000.0 * tag)
    b = np.full((rows, width), float(tag) * 0.5, dtype=np.float32)
    return a, b




def _request(srv, gc, proto, model, tag, rows, width=W):
    a, b = _inputs(tag, rows, width)

    def fn():
        out = of.infer(proto, srv, model, [("INPUT0", "FP32", [rows, width], a), ("INPUT1", "FP32", [rows, width], b)],
                       gc=gc)
        return out, a, b
    return fn


def _check(results):
    for out, a, b in results:
        assert out["OUTPUT0"].shape == a.shape, (out["OUTPUT0"].shape, a.shape)
        np.testing.assert_array_equal(out["OUTPUT0"], a + b)
        np.testing.assert_array_equal(out["OUTPUT1"], a - b)


def test_mixed_batch_sizes_get_their_own_rows(srv, gc):
    before = of.model_stats(srv, "batched")
    sizes = [1, 3, 2, 2]  # adds up to the preferred batch size, 8
    protos = ["binary", "json", "grpc", "binary"]
    results = of.concurrently([_request(srv, gc, p, "batched", i + 1, n)
                                 for i, (p, n) in enumerate(zip(protos, sizes))])
    _check(results)
    after = of.model_stats(srv, "batched")
    done = after["inference_stats"]["success"]["count"] - before["inference_stats"]["success"]["count"]
    assert done == len(sizes), after
    runs = after["execution_count"] - before["execution_count"]
    assert 1 <= runs < len(sizes), f"the {len(sizes)} requests were not batched ({runs} executions)"
    assert after["inference_count"] - before["inference_count"] == sum(sizes), after


def test_repeated_mixed_batches(srv, gc):
    for round_ in range(5):
        sizes = [4, 1, 1, 2] if round_ % 2 else [2, 2, 2, 2]
        results = of.concurrently([_request(srv, gc, "binary", "batched", 10 * round_ + i, n)
                                     for i, n in enumerate(sizes)])
        _check(results)


def test_different_shapes_are_not_mixed_up(srv, gc):
    """Variable dims: requests of widths 3 and 5 cannot share a batch
    (no ragged batching configured); each still gets its own answer."""
    reqs = [_request(srv, gc, "binary", "batched_var", 1, 2, 3), _request(srv, gc, "grpc", "batched_var", 2, 3, 5),
            _request(srv, gc, "json", "batched_var", 3, 1, 3), _request(srv, gc, "binary", "batched_var", 4, 2, 5)]
    _check(of.concurrently(reqs))


def test_batch_over_max_batch_size_is_refused(srv):
    a, b = _inputs(1, 9)
    with pytest.raises(of.Failed) as e:
        of.infer("binary", srv, "batched", [("INPUT0", "FP32", [9, W], a), ("INPUT1", "FP32", [9, W], b)])
    assert e.value.code == 400, e.value


@pytest.mark.parametrize("model", ["instances", "shared"])
def test_several_instances_under_concurrent_load(srv, gc, model):
    """Three instances, each with its own session ('instances') or sharing
    one (share_session_between_instances: 'shared'), answer eight clients."""
    threads, per_thread = 8, 15
    before = of.model_stats(srv, model)

    def worker(t):
        def fn():
            outs = []
            for k in range(per_thread):
                rows = 1 + (t + k) % 4
                proto = ("binary", "grpc", "json")[(t + k) % 3]
                outs.append(_request(srv, gc, proto, model, t * 100 + k, rows)())
            return outs
        return fn

    results = of.concurrently([worker(t) for t in range(threads)])
    for outs in results:
        _check(outs)
    after = of.model_stats(srv, model)
    assert after["inference_stats"]["success"]["count"] - before["inference_stats"]["success"]["count"] \
        == threads * per_thread
    assert after["inference_stats"]["fail"]["count"] == before["inference_stats"]["fail"]["count"]


def test_instances_listed_in_config(srv):
    cfg = of.model_config(srv, "instances")
    assert sum(g["count"] for g in cfg["instance_group"]) == 3, cfg
    assert all(g["kind"] == "KIND_CPU" for g in cfg["instance_group"]), cfg


def test_statistics_after_inferences(srv, gc):
    st0 = of.model_stats(srv, "stats")
    assert st0["inference_stats"]["success"]["count"] == 0, st0
    # Sequentially: each request is its own execution (batch of its size).
    for i, rows in enumerate([1, 2, 2, 3]):
        _check([_request(srv, gc, "binary", "stats", i, rows)()])
    # One failing request (wrong shape) is refused before it runs.
    a, b = _inputs(0, 1, W + 1)
    with pytest.raises(of.Failed):
        of.infer("binary", srv, "stats", [("INPUT0", "FP32", [1, W + 1], a), ("INPUT1", "FP32", [1, W + 1], b)])
    st = of.model_stats(srv, "stats")
    inf = st["inference_stats"]
    assert inf["success"]["count"] == 4, st
    assert st["inference_count"] == 8 and st["execution_count"] == 4, st
    for key in ("queue", "compute_input", "compute_infer", "compute_output"):
        assert inf[key]["count"] == 4, (key, st)
        assert inf[key]["ns"] >= 0, (key, st)
    assert inf["compute_infer"]["ns"] > 0, st
    batches = {b["batch_size"]: b["compute_infer"]["count"] for b in st["batch_stats"]}
    assert batches == {1: 1, 2: 2, 3: 1}, st["batch_stats"]
    assert st["last_inference"] > 0, st


def test_memory_usage_is_well_formed(srv):
    st = of.model_stats(srv, "stats")
    usage = st.get("memory_usage", [])
    assert isinstance(usage, list), st
    for u in usage:
        assert u["type"] in ("CPU", "CPU_PINNED", "GPU"), u
        assert isinstance(u["id"], int) and int(u["byte_size"]) > 0, u


def test_ragged_batch_each_gets_its_own_length(srv, gc):
    """Requests of lengths 3, 5, 1 and 7 (shape [1, n]) batched as one ragged
    1-D input; each answer has its own request's shape and values."""
    state, reason = of.index(srv)["ragged"]
    assert state == "READY", f"the ragged model does not load: {reason}"
    def req(tag, n, proto):
        x = (np.arange(n, dtype=np.float32) + 10.0 * tag).reshape(1, n)

        def fn():
            return of.infer(proto, srv, "ragged", [("INPUT0", "FP32", [1, n], x)], gc=gc), x
        return fn

    results = of.concurrently([req(1, 3, "binary"), req(2, 5, "grpc"), req(3, 1, "json"), req(4, 7, "binary")])
    for out, x in results:
        assert out["OUTPUT0"].shape == x.shape, (out["OUTPUT0"].shape, x.shape)
        np.testing.assert_array_equal(out["OUTPUT0"], x * 2.0)


def test_ragged_batch_with_element_count_batch_input(srv, gc):
    """batch_input BATCH_ELEMENT_COUNT: the model gets each request's element
    count; echoed per request (OUT_COUNT [1]), it must be that request's
    own length, and OUTPUT0 its own values doubled."""
    state, reason = of.index(srv)["ragged_count"]
    assert state == "READY", f"the ragged_count model does not load: {reason}"

    def req(tag, n, proto):
        x = (np.arange(n, dtype=np.float32) - 10.0 * tag).reshape(1, n)
        return lambda: (of.infer(proto, srv, "ragged_count", [("INPUT0", "FP32", [1, n], x)], gc=gc), x, n)

    before = of.model_stats(srv, "ragged_count")
    for out, x, n in of.concurrently([req(1, 3, "binary"), req(2, 5, "grpc"), req(3, 1, "json"),
                                        req(4, 7, "binary")]):
        np.testing.assert_array_equal(out["OUTPUT0"], x * 2.0)
        np.testing.assert_array_equal(np.asarray(out["OUT_COUNT"]).reshape(-1), [n])
    # Different lengths, one run (preferred batch size 4): the dynamic
    # batcher joins requests whose ragged inputs differ in shape.
    after = of.model_stats(srv, "ragged_count")
    assert after["inference_count"] - before["inference_count"] == 4, after
    assert after["execution_count"] - before["execution_count"] == 1, after
