"""PyTorch backend, Triton's ragged batching: an input with
allow_ragged_batch reaches forward() as the batch's elements in one flat
tensor, batch_input targets (BATCH_ELEMENT_COUNT,
BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO) are more forward() arguments the
backend makes from the batch, and a BATCH_SCATTER_WITH_INPUT_SHAPE
batch_output gives each request its share shaped like its own input.

Two models run the same TorchScript module (torch_models.RaggedSums): one
with <name>__<index> names, where batch-input targets are bound by their
index, one with forward()'s argument names, where they are bound by name.
Four requests of different lengths wait for each other (preferred batch
size 4) and run as one forward().
"""

import numpy as np
import pytest

import pt_fixtures as pf
import torch_models as tm
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

RAGGED = """name: "{name}"
backend: "pytorch"
max_batch_size: 8
input [ {{ name: "{x}" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true }} ]
batch_input [
  {{ kind: BATCH_ELEMENT_COUNT target_name: "{count}" data_type: TYPE_INT32 source_input: "{x}" }},
  {{ kind: BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO target_name: "{offs}" data_type: TYPE_INT32
     source_input: "{x}" }}
]
output [
  {{ name: "{out}" data_type: TYPE_FP32 dims: [ -1 ] }},
  {{ name: "{sums}" data_type: TYPE_FP32 dims: [ 1 ] }},
  {{ name: "{counts}" data_type: TYPE_INT32 dims: [ 1 ] }}
]
batch_output [ {{ target_name: "{out}" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "{x}" }} ]
dynamic_batching {{ preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 3000000 }}
"""

NAMES = {
    "ragged_index": dict(x="INPUT__0", count="COUNT__1", offs="OFFS__2", out="OUTPUT__0",
                         sums="SUM__1", counts="COUNT__2"),
    "ragged_args": dict(x="x", count="count", offs="offs", out="doubled", sums="sums",
                        counts="counts"),
}


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pt-ragged")
    repo = tmp / "repo"
    module = tm.scripted(tm.RaggedSums())
    for name, n in NAMES.items():
        tm.write(repo, name, module, RAGGED.format(name=name, **n))
    bad = RAGGED.format(name="ragged_bad_target", **NAMES["ragged_index"]).replace(
        'batch_output [ { target_name: "OUTPUT__0"', 'batch_output [ { target_name: "NOPE__0"')
    assert "NOPE__0" in bad
    tm.write(repo, "ragged_bad_target", module, bad)
    s = pf.start(tmp / "srv", repo, wait_models=tuple(NAMES),
                 extra=["--model-control-mode=explicit"] + [f"--load-model={m}" for m in NAMES])
    yield s
    s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = pf.grpc_client(srv, grpc_stubs)
    yield c
    c.close()


@pytest.mark.parametrize("model", sorted(NAMES))
def test_ragged_batch_each_gets_its_own_share(srv, gc, model):
    n = NAMES[model]
    before = pf.model_stats(srv, model)

    def req(tag, length, proto):
        x = (np.arange(length, dtype=np.float32) + 10.0 * tag).reshape(1, length)
        return lambda: (pf.infer(proto, srv, model, [(n["x"], "FP32", [1, length], x)], gc=gc), x)

    results = pf.concurrently([req(1, 3, "binary"), req(2, 5, "grpc"), req(3, 1, "json"),
                               req(4, 7, "binary")])
    for out, x in results:
        assert out[n["out"]].shape == x.shape, (out[n["out"]].shape, x.shape)
        np.testing.assert_array_equal(out[n["out"]], x * 2.0)
        np.testing.assert_allclose(np.asarray(out[n["sums"]]).reshape(-1), [x.sum()], rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(out[n["counts"]]).reshape(-1), [x.size])
    after = pf.model_stats(srv, model)
    # The four requests ran as one forward() (preferred batch size 4).
    assert after["inference_count"] - before["inference_count"] == 4, after
    assert after["execution_count"] - before["execution_count"] == 1, after


def test_one_request_alone(srv, gc):
    """A batch of one still gets the batch inputs (count [1], offsets
    [0, n]) and its whole output."""
    n = NAMES["ragged_index"]
    x = np.arange(8, dtype=np.float32).reshape(1, 8)
    # Alone in its batch: the preferred size is never reached, the delay ends it.
    out = pf.infer("binary", srv, "ragged_index", [(n["x"], "FP32", [1, 8], x)], gc=gc)
    np.testing.assert_array_equal(out[n["out"]], x * 2.0)
    np.testing.assert_allclose(np.asarray(out[n["sums"]]).reshape(-1), [x.sum()])
    np.testing.assert_array_equal(np.asarray(out[n["counts"]]).reshape(-1), [8])


def test_batch_output_of_no_output_fails_the_load(srv):
    msg = pf.load_error(srv, "ragged_bad_target")
    assert "unknown target output name 'NOPE__0' for ragged_bad_target" in msg, msg
