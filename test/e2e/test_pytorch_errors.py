"""PyTorch backend: bad models and inputs, Triton's parameters, dynamic
batching and several instances.

* Load errors (explicit mode, one server): not TorchScript, a pickle of the
  wrong kind, a missing file, KIND_GPU on this CPU-only libtorch, input
  counts that disagree with forward(), BYTES in a batching model, bad
  parameter values; each with its text.
* A forward() that raises fails that request with the TorchScript error
  text, and the server keeps serving.
* Dynamic batching over two instances: concurrent requests of different
  batch sizes each get their own rows back.
"""

import numpy as np
import pytest
import torch

import pt_fixtures as pf
import torch_models as tm
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

W = 4
X = [("INPUT__0", "FP32", [W])]
Y = [("OUTPUT__0", "FP32", [W])]
ALL_PARAMS = dict(DISABLE_OPTIMIZED_EXECUTION="true", INFERENCE_MODE="false", ENABLE_JIT_EXECUTOR="true",
                  ENABLE_JIT_PROFILING="false", ENABLE_CACHE_CLEANING="true", ENABLE_WEIGHT_SHARING="true",
                  INTRA_OP_THREAD_COUNT="2", INTER_OP_THREAD_COUNT="2")
DYNAMIC = "dynamic_batching { max_queue_delay_microseconds: 20000 }\n"


def _tensor_pickle(path):
    torch.save(torch.zeros(3), str(path))
    return path.read_bytes()


def _build_repo(repo, tmp):
    ident = tm.scripted(tm.Identity())
    tm.write(repo, "good", ident, tm.config("good", X, Y, max_batch_size=8))
    tm.write(repo, "raises", tm.scripted(tm.Raises()), tm.config("raises", X, Y, max_batch_size=8))
    tm.write(repo, "wrong_out_type", tm.scripted(tm.ToDouble()), tm.config("wrong_out_type", X, Y, max_batch_size=8))
    tm.write(repo, "too_many_outputs", ident,
             tm.config("too_many_outputs", X, Y + [("OUTPUT__1", "FP32", [W])], max_batch_size=8))
    tm.write(repo, "dict_missing_key", tm.scripted(tm.AddSubDict()),
             tm.config("dict_missing_key", X + [("INPUT__1", "FP32", [W])], [("product", "FP32", [W])],
                       max_batch_size=8))
    tm.write(repo, "batched", tm.scripted(tm.RowSum()),
             tm.config("batched", X, [("OUTPUT__0", "FP32", [1])], max_batch_size=16,
                       extra=DYNAMIC + "instance_group [ { count: 2 kind: KIND_CPU } ]\n"))
    tm.write(repo, "params", ident, tm.config("params", X, Y, max_batch_size=8, extra=tm.parameters(**ALL_PARAMS)))
    tm.write(repo, "shared", ident,
             tm.config("shared", X, Y, max_batch_size=8, extra=tm.parameters(ENABLE_WEIGHT_SHARING="true")
                       + "instance_group [ { count: 3 kind: KIND_CPU } ]\n"))
    # Refused loads.
    tm.write(repo, "not_torchscript", b"this is not a zip archive\n", tm.config("not_torchscript", X, Y))
    tm.write(repo, "tensor_pickle", _tensor_pickle(tmp / "t.pt"), tm.config("tensor_pickle", X, Y))
    tm.write(repo, "missing_file", ident, tm.config("missing_file", X, Y), filename="other.pt")
    tm.write(repo, "gpu", ident, tm.config("gpu", X, Y, extra="instance_group [ { kind: KIND_GPU } ]\n"))
    tm.write(repo, "too_few_inputs", tm.scripted(tm.AddSub()), tm.config("too_few_inputs", X, Y))
    tm.write(repo, "bytes_batched", tm.scripted(tm.Strings()),
             tm.config("bytes_batched", [("INPUT__0", "BYTES", [1])],
                       [("OUTPUT__0", "BYTES", [1]), ("OUTPUT__1", "INT64", [1])], max_batch_size=4))
    tm.write(repo, "bad_bool", ident, tm.config("bad_bool", X, Y, extra=tm.parameters(INFERENCE_MODE="maybe")))
    tm.write(repo, "bad_int", ident, tm.config("bad_int", X, Y, extra=tm.parameters(INTRA_OP_THREAD_COUNT="two")))
    tm.write(repo, "uint16", ident,
             tm.config("uint16", [("INPUT__0", "UINT16", [W])], [("OUTPUT__0", "UINT16", [W])]))


GOOD = ("good", "raises", "wrong_out_type", "too_many_outputs", "dict_missing_key", "batched", "params", "shared")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pt-errors")
    repo = tmp / "repo"
    _build_repo(repo, tmp)
    extra = ["--model-control-mode=explicit"] + [f"--load-model={m}" for m in GOOD]
    s = pf.start(tmp / "srv", repo, wait_models=GOOD, extra=extra)
    yield s
    s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = pf.grpc_client(srv, grpc_stubs)
    yield c
    c.close()


LOAD_ERRORS = {
    "not_torchscript": "failed to load model 'not_torchscript'",
    "tensor_pickle": "failed to load model 'tensor_pickle'",
    "missing_file": "unable to find '",
    # Refused by the backend on a machine with a GPU, by the server before
    # it on one without.
    "gpu": ("only KIND_CPU instances are served", "but no GPUs are available"),
    "too_few_inputs": "unable to load model 'too_few_inputs', configuration expects 1 inputs, model provides 2",
    "bytes_batched": "Triton only supports 1 dimensional List of String as input for 'INPUT__0' for model "
                     "'bytes_batched'",
    "bad_bool": "failed to convert 'maybe' to boolean",
    "bad_int": "failed to convert 'two' to integral number",
    "uint16": "unsupported datatype TYPE_UINT16 for input 'INPUT__0' for model 'uint16'",
}


@pytest.mark.parametrize("name", sorted(LOAD_ERRORS))
def test_load_refused_with_reason(srv, name):
    msg = pf.load_error(srv, name)
    want = LOAD_ERRORS[name]
    assert any(w in msg for w in (want if isinstance(want, tuple) else (want,))), msg
    # The server still serves its models.
    v = np.ones((1, W), dtype=np.float32)
    np.testing.assert_array_equal(pf.infer("json", srv, "good", [("INPUT__0", "FP32", v.shape, v)])["OUTPUT__0"], v)


def test_not_torchscript_says_what_libtorch_said(srv):
    msg = pf.load_error(srv, "not_torchscript")
    assert "PytorchStreamReader" in msg or "zip" in msg.lower(), msg
    assert "frame #" not in msg, "libtorch's C++ backtrace leaked into the message"


@pytest.mark.parametrize("proto", pf.PROTOCOLS)
def test_forward_that_raises_fails_the_request_only(srv, gc, proto):
    bad = np.array([[1, -1, 2, 3]], dtype=np.float32)
    with pytest.raises(pf.Failed) as ei:
        pf.infer(proto, srv, "raises", [("INPUT__0", "FP32", bad.shape, bad)], gc=gc)
    assert "PyTorch execute failure" in ei.value.message
    assert "inferd-test: negative input" in ei.value.message
    good = np.array([[1, 2, 3, 4]], dtype=np.float32)
    out = pf.infer(proto, srv, "raises", [("INPUT__0", "FP32", good.shape, good)], gc=gc)
    np.testing.assert_array_equal(out["OUTPUT__0"], tm.Raises()(torch.from_numpy(good)).numpy())


def test_output_type_disagreeing_with_configuration(srv):
    v = np.ones((1, W), dtype=np.float32)
    with pytest.raises(pf.Failed) as ei:
        pf.infer("json", srv, "wrong_out_type", [("INPUT__0", "FP32", v.shape, v)])
    assert "configuration expects datatype TYPE_FP32 for output 'OUTPUT__0', model provides TYPE_FP64" \
        in ei.value.message


def test_output_index_beyond_the_results(srv):
    v = np.ones((1, W), dtype=np.float32)
    with pytest.raises(pf.Failed) as ei:
        pf.infer("binary", srv, "too_many_outputs", [("INPUT__0", "FP32", v.shape, v)])
    assert "The output OUTPUT__1 in the model configuration refers to an output index which doesn't exist. " \
           "This model has 1 outputs" in ei.value.message


def test_dictionary_without_the_output(srv):
    v = np.ones((1, W), dtype=np.float32)
    with pytest.raises(pf.Failed) as ei:
        pf.infer("json", srv, "dict_missing_key", [("INPUT__0", "FP32", v.shape, v), ("INPUT__1", "FP32", v.shape, v)])
    assert "output 'product'" in ei.value.message and "not a key" in ei.value.message


def test_wrong_shape_is_refused(srv):
    v = np.ones((1, W + 1), dtype=np.float32)
    with pytest.raises(pf.Failed) as ei:
        pf.infer("json", srv, "good", [("INPUT__0", "FP32", v.shape, v)])
    assert ei.value.code == 400, ei.value


def test_all_parameters_accepted(srv, gc):
    v = np.arange(2 * W, dtype=np.float32).reshape(2, W)
    for proto in pf.PROTOCOLS:
        out = pf.infer(proto, srv, "params", [("INPUT__0", "FP32", v.shape, v)], gc=gc)
        np.testing.assert_array_equal(out["OUTPUT__0"], v)
    log = srv.log_tail(1 << 20)
    assert "Optimized execution is disabled for model instance 'params'" in log
    assert "Inference Mode is disabled for model 'params'" in log


def test_weight_sharing_instances(srv):
    v = np.arange(W, dtype=np.float32).reshape(1, W)
    outs = pf.concurrently([lambda: pf.infer("binary", srv, "shared", [("INPUT__0", "FP32", v.shape, v)])
                            for _ in range(6)])
    for o in outs:
        np.testing.assert_array_equal(o["OUTPUT__0"], v)
    assert "Weight sharing is enabled for model instance" in srv.log_tail(1 << 20)


def test_dynamic_batching_each_request_gets_its_rows(srv, gc):
    calls = []
    for i in range(12):
        rows = 1 + i % 4
        x = (np.arange(rows * W, dtype=np.float32).reshape(rows, W) + 100 * i)
        proto = pf.PROTOCOLS[i % 3]
        calls.append((proto, x))
    outs = pf.concurrently([
        (lambda p=p, x=x: pf.infer(p, srv, "batched", [("INPUT__0", "FP32", x.shape, x)], gc=gc))
        for p, x in calls])
    for (proto, x), out in zip(calls, outs):
        expect = tm.RowSum()(torch.from_numpy(x)).numpy()
        np.testing.assert_array_equal(out["OUTPUT__0"], expect, err_msg=proto)
    stats = srv.get("/v2/models/batched/stats").json()["model_stats"][0]
    assert stats["inference_count"] == sum(x.shape[0] for _, x in calls)
