"""ONNX Runtime backend: a stateful ONNX model under the sequence batcher
with implicit state (Triton's "Implicit State Management").

The model (onnx_models.accumulator) computes OUTPUT = INPUT + INPUT_STATE
and OUTPUT_STATE = the same sum. The config names INPUT_STATE/OUTPUT_STATE
in sequence_batching.state, not in input/output: Triton's ORT backend counts
the state inputs among the inputs the model must have
(ModelInstanceState: expected_input_cnt += states) and reads the state
output from the model. The output state of request i is the input state of
request i+1 of the same sequence; a new sequence starts from initial_state
(zero_data, or data_file under the model's initial_state/ folder). The
client gets OUTPUT_STATE only where the output section lists it.
"""

import threading

import numpy as np
import pytest

import onnx_models as om
import ort_fixtures as of
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

WIDTH = 3


def _cfg(name, initial, outputs=("OUTPUT",), instances=1):
    outs = ",\n".join(f'  {{ name: "{o}" data_type: TYPE_INT32 dims: [ {WIDTH} ] }}' for o in outputs)
    return f"""name: "{name}"
backend: "onnxruntime"
max_batch_size: 2
sequence_batching {{
  max_sequence_idle_microseconds: 10000000
  state [
    {{
      input_name: "INPUT_STATE"
      output_name: "OUTPUT_STATE"
      data_type: TYPE_INT32
      dims: [ {WIDTH} ]
      initial_state: {{
        data_type: TYPE_INT32
        dims: [ {WIDTH} ]
        {initial}
        name: "initial state"
      }}
    }}
  ]
}}
input [ {{ name: "INPUT" data_type: TYPE_INT32 dims: [ {WIDTH} ] }} ]
output [
{outs}
]
instance_group [ {{ count: {instances} kind: KIND_CPU }} ]
"""


INIT_FROM_FILE = np.array([100, 200, 300], dtype=np.int32)

CONTROLS = """  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
"""


def _ctrl_cfg(name):
    """acc_file's config plus the START and CORRID controls, and OUT_CORRID
    as an output."""
    cfg = _cfg(name, 'data_file: "init.bin"', outputs=("OUTPUT",))
    cfg = cfg.replace("sequence_batching {\n", "sequence_batching {\n" + CONTROLS)
    return cfg.replace("output [\n", 'output [\n  { name: "OUT_CORRID" data_type: TYPE_UINT64 dims: [ 1 ] },\n')


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ort-state")
    repo = tmp / "repo"
    model = om.accumulator(WIDTH)
    om.write_model(repo, "acc", model, config=_cfg("acc", "zero_data: true", instances=2))
    om.write_model(repo, "acc_debug", model,
                   config=_cfg("acc_debug", "zero_data: true", outputs=("OUTPUT", "OUTPUT_STATE")))
    mdir = om.write_model(repo, "acc_file", model, config=_cfg("acc_file", 'data_file: "init.bin"'))
    (mdir / "initial_state").mkdir()
    (mdir / "initial_state" / "init.bin").write_bytes(INIT_FROM_FILE.tobytes())
    for name, start_width in (("acc_ctrl", 1), ("acc_ctrl_bad_start", 2)):
        mdir = om.write_model(repo, name, om.accumulator_with_controls(WIDTH, start_width),
                              config=_ctrl_cfg(name))
        (mdir / "initial_state").mkdir()
        (mdir / "initial_state" / "init.bin").write_bytes(INIT_FROM_FILE.tobytes())
    oldest = _cfg("acc_oldest", "zero_data: true").replace(
        "sequence_batching {\n",
        "sequence_batching {\n  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 2 ] "
        "max_queue_delay_microseconds: 200000 }\n")
    om.write_model(repo, "acc_oldest", model, config=oldest)
    # A variable-size state: dims [-1], initial zeros of shape [2]; the state
    # takes the shape of what the model returns.
    var_cfg = _cfg("acc_var", "zero_data: true")
    for old, new in ((f"dims: [ {WIDTH} ]\n      initial_state", "dims: [ -1 ]\n      initial_state"),
                     (f"        dims: [ {WIDTH} ]\n        zero_data", "        dims: [ 2 ]\n        zero_data"),
                     (f'"INPUT" data_type: TYPE_INT32 dims: [ {WIDTH} ]', '"INPUT" data_type: TYPE_INT32 dims: [ -1 ]'),
                     (f'"OUTPUT" data_type: TYPE_INT32 dims: [ {WIDTH} ]',
                      '"OUTPUT" data_type: TYPE_INT32 dims: [ -1 ]')):
        var_cfg = var_cfg.replace(old, new)
    assert var_cfg.count("[ -1 ]") == 3 and "dims: [ 2 ]" in var_cfg, var_cfg
    om.write_model(repo, "acc_var", om.accumulator("W"), config=var_cfg)
    # The state output does not exist in the model: the load must fail.
    om.write_model(repo, "acc_bad_state", model,
                   config=_cfg("acc_bad_state", "zero_data: true").replace('"OUTPUT_STATE"', '"NO_SUCH_STATE"'))
    s = of.start(tmp / "srv", repo, wait_models=("acc", "acc_debug", "acc_file", "acc_oldest", "acc_var"))
    of.wait_not_loading(s, ["acc_bad_state", "acc_ctrl", "acc_ctrl_bad_start"])
    yield s
    s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = of.grpc_client(srv, grpc_stubs)
    yield c
    c.close()


def _step(srv, gc, proto, model, seq_id, value, start=False, end=False, outputs=None):
    x = np.asarray(value, dtype=np.int32).reshape(1, WIDTH)
    params = {"sequence_id": seq_id}
    if start:
        params["sequence_start"] = True
    if end:
        params["sequence_end"] = True
    return of.infer(proto, srv, model, [("INPUT", "INT32", [1, WIDTH], x)], outputs=outputs, gc=gc,
                    parameters=params)


@pytest.mark.parametrize("proto", of.PROTOCOLS)
def test_accumulates_over_a_sequence(srv, gc, proto):
    steps = [[1, 2, 3], [10, 20, 30], [100, 200, 300], [-5, 0, 5]]
    total = np.zeros(WIDTH, dtype=np.int32)
    seq = {"json": 1001, "binary": 1002, "grpc": 1003}[proto]
    for i, v in enumerate(steps):
        out = _step(srv, gc, proto, "acc", seq, v, start=(i == 0), end=(i == len(steps) - 1))
        total = total + np.asarray(v, dtype=np.int32)
        assert list(out) == ["OUTPUT"], out
        np.testing.assert_array_equal(out["OUTPUT"].reshape(WIDTH), total, err_msg=f"step {i}")


def test_new_sequence_starts_from_zero(srv, gc):
    for run in range(2):
        out = _step(srv, gc, "binary", "acc", 2001, [7, 8, 9], start=True)
        np.testing.assert_array_equal(out["OUTPUT"].reshape(WIDTH), [7, 8, 9], err_msg=f"run {run}")
        out = _step(srv, gc, "binary", "acc", 2001, [1, 1, 1], end=True)
        np.testing.assert_array_equal(out["OUTPUT"].reshape(WIDTH), [8, 9, 10], err_msg=f"run {run}")


def test_interleaved_sequences_keep_their_own_state(srv, gc):
    ids = [3001, 3002, 3003]
    totals = {s: np.zeros(WIDTH, dtype=np.int32) for s in ids}
    for step in range(5):
        for k, s in enumerate(ids):
            v = np.array([step + 1, (k + 1) * 10, -(step * k)], dtype=np.int32)
            proto = of.PROTOCOLS[(step + k) % 3]
            out = _step(srv, gc, proto, "acc", s, v, start=(step == 0), end=(step == 4))
            totals[s] = totals[s] + v
            np.testing.assert_array_equal(out["OUTPUT"].reshape(WIDTH), totals[s], err_msg=f"seq {s} step {step}")


def test_string_correlation_id(srv, gc):
    out = _step(srv, gc, "json", "acc", "seq-alpha", [1, 2, 3], start=True)
    np.testing.assert_array_equal(out["OUTPUT"].reshape(WIDTH), [1, 2, 3])
    out = _step(srv, gc, "grpc", "acc", "seq-alpha", [1, 2, 3], end=True)
    np.testing.assert_array_equal(out["OUTPUT"].reshape(WIDTH), [2, 4, 6])


def test_output_state_returned_when_listed(srv, gc):
    out = _step(srv, gc, "binary", "acc_debug", 4001, [2, 3, 4], start=True)
    assert set(out) == {"OUTPUT", "OUTPUT_STATE"}, out
    np.testing.assert_array_equal(out["OUTPUT_STATE"].reshape(WIDTH), [2, 3, 4])
    out = _step(srv, gc, "grpc", "acc_debug", 4001, [1, 1, 1], end=True, outputs=["OUTPUT_STATE"])
    assert list(out) == ["OUTPUT_STATE"], out
    np.testing.assert_array_equal(out["OUTPUT_STATE"].reshape(WIDTH), [3, 4, 5])


def test_output_state_not_listed_is_not_an_output(srv, gc):
    with pytest.raises(of.Failed) as e:
        _step(srv, gc, "binary", "acc", 4002, [1, 1, 1], start=True, end=True, outputs=["OUTPUT_STATE"])
    assert e.value.code == 400 and "OUTPUT_STATE" in e.value.message, e.value


def test_initial_state_from_data_file(srv, gc):
    out = _step(srv, gc, "json", "acc_file", 5001, [1, 2, 3], start=True)
    np.testing.assert_array_equal(out["OUTPUT"].reshape(WIDTH), INIT_FROM_FILE + [1, 2, 3])
    out = _step(srv, gc, "json", "acc_file", 5001, [1, 1, 1], end=True)
    np.testing.assert_array_equal(out["OUTPUT"].reshape(WIDTH), INIT_FROM_FILE + [2, 3, 4])


def test_state_name_missing_from_model_fails_load(srv):
    state, reason = of.index(srv)["acc_bad_state"]
    assert state == "UNAVAILABLE", (state, reason)
    assert "NO_SUCH_STATE" in reason, reason


def test_request_without_sequence_id_is_refused(srv, gc):
    x = np.ones((1, WIDTH), dtype=np.int32)
    with pytest.raises(of.Failed) as e:
        of.infer("binary", srv, "acc", [("INPUT", "INT32", [1, WIDTH], x)])
    assert e.value.code == 400, e.value
    # The model keeps serving sequences.
    out = _step(srv, gc, "binary", "acc", 6001, [4, 4, 4], start=True, end=True)
    np.testing.assert_array_equal(out["OUTPUT"].reshape(WIDTH), [4, 4, 4])


@pytest.mark.parametrize("proto", of.PROTOCOLS)
def test_control_inputs_reach_the_model(srv, gc, proto):
    """START is 1 on the first request only (the model then ignores the
    initial state [100, 200, 300]); CORRID carries the correlation ID."""
    state, reason = of.index(srv)["acc_ctrl"]
    assert state == "READY", reason
    seq = {"json": 7001, "binary": 2 ** 40 + 7, "grpc": 7003}[proto]
    out = _step(srv, gc, proto, "acc_ctrl", seq, [1, 2, 3], start=True)
    np.testing.assert_array_equal(out["OUTPUT"].reshape(WIDTH), [1, 2, 3])
    np.testing.assert_array_equal(out["OUT_CORRID"].reshape(1), [seq])
    out = _step(srv, gc, proto, "acc_ctrl", seq, [10, 10, 10])
    np.testing.assert_array_equal(out["OUTPUT"].reshape(WIDTH), [11, 12, 13])
    out = _step(srv, gc, proto, "acc_ctrl", seq, [1, 1, 1], end=True)
    np.testing.assert_array_equal(out["OUTPUT"].reshape(WIDTH), [12, 13, 14])
    np.testing.assert_array_equal(out["OUT_CORRID"].reshape(1), [seq])


def test_control_input_of_wrong_dims_fails_load(srv):
    """Triton: "unable to load model 'x', sequence control 'START' in model
    has dims [2] but dims [1] is expected"."""
    state, reason = of.index(srv)["acc_ctrl_bad_start"]
    assert state == "UNAVAILABLE", (state, reason)
    assert "'START'" in reason and "[2]" in reason and "[1]" in reason, reason


@pytest.mark.parametrize("model", ["acc", "acc_oldest"])
def test_concurrent_sequences_batched_keep_their_state(srv, gc, model):
    """Four sequences step concurrently; the sequence batcher may run them in
    one batch (direct: one slot each; oldest: batches of 2), so the state
    tensors of several sequences travel through one ONNX Runtime call. Each
    sequence must still see only its own running sum."""
    steps = 6
    errors = []
    barrier = threading.Barrier(4)

    def run(k):
        try:
            seq = 9000 + 10 * k + (1 if model == "acc_oldest" else 0)
            total = np.zeros(WIDTH, dtype=np.int32)
            barrier.wait(timeout=30)
            for i in range(steps):
                v = np.array([k + 1, 100 * (k + 1), i * (k + 1)], dtype=np.int32)
                out = _step(srv, gc, of.PROTOCOLS[(k + i) % 3], model, seq, v, start=(i == 0), end=(i == steps - 1))
                total = total + v
                got = out["OUTPUT"].reshape(WIDTH)
                if not np.array_equal(got, total):
                    errors.append(f"sequence {seq} step {i}: got {got.tolist()}, want {total.tolist()}")
                    return
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(f"sequence {k}: {e}")

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a sequence did not finish"
    assert not errors, errors


@pytest.mark.parametrize("proto", ["binary", "grpc"])
def test_variable_size_state(srv, gc, proto):
    """State dims [-1] with an initial state of zeros of shape [2]: a
    sequence of width-2 requests accumulates as usual."""
    seq = {"binary": 11001, "grpc": 11002}[proto]
    total = np.zeros(2, dtype=np.int32)
    for i, v in enumerate([[1, 2], [30, 40], [-5, 5]]):
        x = np.asarray(v, dtype=np.int32).reshape(1, 2)
        params = {"sequence_id": seq, "sequence_start": i == 0, "sequence_end": i == 2}
        out = of.infer(proto, srv, "acc_var", [("INPUT", "INT32", [1, 2], x)], gc=gc,
                       parameters={k: v for k, v in params.items() if v is not False})
        total = total + x.reshape(2)
        assert of.infer.last["OUTPUT"] == ("INT32", [1, 2])
        np.testing.assert_array_equal(out["OUTPUT"].reshape(2), total, err_msg=f"step {i}")
