"""ONNX Runtime backend: the model configuration against the model.

The reference is Triton's onnxruntime backend (src/onnxruntime.cc,
ModelState::AutoCompleteConfig / AutoCompleteMaxBatch / AutoCompleteIO and
ModelInstanceState::ValidateInputs / ValidateOutputs, with
CompareDimsSupported and backend_common's CheckAllowedModelInput/Output), its
README ("Default Max Batch Size": 4 unless
--backend-config=onnxruntime,default-max-batch-size=N; dynamic batching added
when max_batch_size > 1 and no scheduler is given) and the ONNX cases of
Triton's qa/L0_model_config (autofill_noplatform/onnx/*/expected,
autofill_noplatform_success/onnx/*/expected), reproduced here with generated
models of the same shape as Triton's onnx_int32_int8_int8 (INPUT0/INPUT1
INT32 [-1,16] -> OUTPUT0 = sum, OUTPUT1 = difference, INT8).

Messages are compared on their substance (model, tensor, expected vs got),
with Triton's own wording where it has been stable.
"""

import numpy as np
import pytest

import e2e_helpers as h
import onnx_models as om
import ort_fixtures as of
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

A = np.arange(32, dtype=np.int32).reshape(2, 16) - 7
B = (np.arange(32, dtype=np.int32).reshape(2, 16) * 3) % 11


def _addsub():
    return om.add_sub("INT32", "INT8", [None, 16])


def _addsub_nobatch():
    return om.add_sub("INT32", "INT8", [16])


def _io(in0="INPUT0", in1="INPUT1", t0="INT32", t1="INT32", d0=(16,), d1=(16,)):
    return [(in0, t0, list(d0)), (in1, t1, list(d1))]


def _oo(out0="OUTPUT0", out1="OUTPUT1", t0="INT8", t1="INT8", d0=(16,), d1=(16,)):
    return [(out0, t0, list(d0)), (out1, t1, list(d1))]


def _check_addsub(srv, name, a=A, b=B):
    out = of.infer("binary", srv, name, [("INPUT0", "INT32", list(a.shape), a), ("INPUT1", "INT32", list(b.shape), b)])
    np.testing.assert_array_equal(out["OUTPUT0"], (a + b).astype(np.int8))
    np.testing.assert_array_equal(out["OUTPUT1"], (a - b).astype(np.int8))


def _tensors(cfg, kind):
    return {t["name"]: (t["data_type"], [int(d) for d in t["dims"]]) for t in cfg.get(kind, [])}


# ---------------------------------------------------------- auto-complete ---

@pytest.fixture(scope="module")
def auto_srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ort-auto")
    repo = tmp / "repo"
    om.write_model(repo, "no_config", _addsub())
    om.write_model(repo, "no_config_no_batch", _addsub_nobatch())
    om.write_model(repo, "empty_config", _addsub(), config="")
    om.write_model(repo, "max_batch_size_set", _addsub(), config="max_batch_size: 8\n")
    om.write_model(repo, "platform_only", _addsub(), config='platform: "onnxruntime_onnx"\n')
    om.write_model(repo, "batch_only_dim", om.identity("FP32", [None]))
    om.write_model(repo, "auto_dynamic", om.add_sub("FP32", "FP32", [None, "W"]))
    om.write_model(repo, "auto_scalar", om.scalar_add())
    om.write_model(repo, "auto_sequence", _addsub(), config="sequence_batching { }\n")
    om.write_model(repo, "auto_fixed_output", om.sum_over_batch())
    om.write_model(repo, "inputs_given", _addsub(),
                   config='backend: "onnxruntime"\nmax_batch_size: 2\n' + om.io_block("input", _io()))
    s = of.start(tmp / "srv", repo)
    yield s
    s.stop(check=True)


def test_no_config_batching_model(auto_srv):
    """autofill_noplatform_success/onnx/no_config: the first dim of every
    input and output is dynamic, so the model batches: max_batch_size is the
    default-max-batch-size (4), dims drop the batch dim, and the dynamic
    batcher is added since max_batch_size > 1."""
    cfg = of.model_config(auto_srv, "no_config")
    assert cfg["name"] == "no_config"
    assert cfg["platform"] == "onnxruntime_onnx", cfg
    assert cfg["backend"] == "onnxruntime", cfg
    assert cfg["max_batch_size"] == 4, cfg
    assert _tensors(cfg, "input") == {"INPUT0": ("TYPE_INT32", [16]), "INPUT1": ("TYPE_INT32", [16])}, cfg
    assert _tensors(cfg, "output") == {"OUTPUT0": ("TYPE_INT8", [16]), "OUTPUT1": ("TYPE_INT8", [16])}, cfg
    assert "dynamic_batching" in cfg, cfg
    assert cfg.get("default_model_filename") == "model.onnx", cfg
    assert [g["kind"] for g in cfg["instance_group"]] == ["KIND_CPU"], cfg
    _check_addsub(auto_srv, "no_config")
    # Batch 4 is allowed, 5 is not.
    a4, b4 = np.vstack([A, A]), np.vstack([B, B])
    _check_addsub(auto_srv, "no_config", a4, b4)
    with pytest.raises(of.Failed) as e:
        of.infer("binary", auto_srv, "no_config",
                 [("INPUT0", "INT32", [5, 16], np.zeros((5, 16), np.int32)),
                  ("INPUT1", "INT32", [5, 16], np.zeros((5, 16), np.int32))])
    assert e.value.code == 400, e.value


def test_no_config_fixed_model_does_not_batch(auto_srv):
    """autofill_noplatform_success/onnx/no_config_no_batch: fixed first
    dims, so max_batch_size stays 0, dims are the model's, no dynamic batcher."""
    cfg = of.model_config(auto_srv, "no_config_no_batch")
    assert cfg["max_batch_size"] == 0, cfg
    assert _tensors(cfg, "input") == {"INPUT0": ("TYPE_INT32", [16]), "INPUT1": ("TYPE_INT32", [16])}, cfg
    assert _tensors(cfg, "output") == {"OUTPUT0": ("TYPE_INT8", [16]), "OUTPUT1": ("TYPE_INT8", [16])}, cfg
    assert "dynamic_batching" not in cfg or cfg["dynamic_batching"] is None, cfg
    _check_addsub(auto_srv, "no_config_no_batch", A[0], B[0])


@pytest.mark.parametrize("name", ["empty_config", "platform_only"])
def test_empty_or_platform_only_config_is_completed(auto_srv, name):
    """autofill_noplatform_success/onnx/empty_config (and a config that only
    names the platform): completed exactly as with no config at all."""
    cfg = of.model_config(auto_srv, name)
    assert cfg["platform"] == "onnxruntime_onnx" and cfg["backend"] == "onnxruntime", cfg
    assert cfg["max_batch_size"] == 4, cfg
    assert _tensors(cfg, "input") == {"INPUT0": ("TYPE_INT32", [16]), "INPUT1": ("TYPE_INT32", [16])}, cfg
    assert _tensors(cfg, "output") == {"OUTPUT0": ("TYPE_INT8", [16]), "OUTPUT1": ("TYPE_INT8", [16])}, cfg
    _check_addsub(auto_srv, name)


def test_max_batch_size_set_is_kept(auto_srv):
    """autofill_noplatform_success/onnx/max_batch_size_set: a given
    max_batch_size is kept; inputs and outputs are filled in."""
    cfg = of.model_config(auto_srv, "max_batch_size_set")
    assert cfg["max_batch_size"] == 8, cfg
    assert _tensors(cfg, "input") == {"INPUT0": ("TYPE_INT32", [16]), "INPUT1": ("TYPE_INT32", [16])}, cfg
    assert _tensors(cfg, "output") == {"OUTPUT0": ("TYPE_INT8", [16]), "OUTPUT1": ("TYPE_INT8", [16])}, cfg
    a8 = np.vstack([A] * 4)
    b8 = np.vstack([B] * 4)
    _check_addsub(auto_srv, "max_batch_size_set", a8, b8)


def test_only_inputs_given_outputs_completed(auto_srv):
    """Inputs in the config, no outputs: AutoCompleteIO fills the outputs
    only; the given max_batch_size (2) stays."""
    cfg = of.model_config(auto_srv, "inputs_given")
    assert cfg["max_batch_size"] == 2, cfg
    assert _tensors(cfg, "output") == {"OUTPUT0": ("TYPE_INT8", [16]), "OUTPUT1": ("TYPE_INT8", [16])}, cfg
    _check_addsub(auto_srv, "inputs_given")


def test_batch_only_dim_gets_dims_1_and_empty_reshape(auto_srv):
    """A tensor whose only dim is the batch dim: AutoCompleteIO writes
    dims [1] with reshape { shape: [] } (max_batch_size > 0)."""
    cfg = of.model_config(auto_srv, "batch_only_dim")
    assert cfg["max_batch_size"] == 4, cfg
    for kind in ("input", "output"):
        (t,) = cfg[kind]
        assert t["data_type"] == "TYPE_FP32" and [int(d) for d in t["dims"]] == [1], cfg
        assert [int(d) for d in t["reshape"]["shape"]] == [], cfg
    x = np.array([[1.5], [-2.0], [4.0]], dtype=np.float32)
    out = of.infer("binary", auto_srv, "batch_only_dim", [("INPUT0", "FP32", [3, 1], x)])
    assert of.infer.last["OUTPUT0"] == ("FP32", [3, 1])
    np.testing.assert_array_equal(out["OUTPUT0"], x)


def test_sequence_model_gets_no_dynamic_batcher(auto_srv):
    """AutoCompleteMaxBatch adds dynamic_batching only when the config has
    neither a dynamic nor a sequence batcher."""
    cfg = of.model_config(auto_srv, "auto_sequence")
    assert cfg["max_batch_size"] == 4, cfg
    assert "sequence_batching" in cfg and cfg["sequence_batching"] is not None, cfg
    assert "dynamic_batching" not in cfg or cfg["dynamic_batching"] is None, cfg


def test_completed_config_same_over_grpc(auto_srv, grpc_stubs):  # noqa: F811
    c = of.grpc_client(auto_srv, grpc_stubs)
    try:
        cfg = c.model_config("no_config").config
    finally:
        c.close()
    assert cfg.max_batch_size == 4 and cfg.platform == "onnxruntime_onnx" and cfg.backend == "onnxruntime"
    assert {(i.name, tuple(i.dims)) for i in cfg.input} == {("INPUT0", (16,)), ("INPUT1", (16,))}
    assert {(o.name, tuple(o.dims)) for o in cfg.output} == {("OUTPUT0", (16,)), ("OUTPUT1", (16,))}
    assert cfg.HasField("dynamic_batching")


def test_fixed_first_output_dim_means_no_batching(auto_srv):
    """AutoCompleteMaxBatch: every input AND output needs a dynamic first
    dim for batching; an output [1, 4] keeps max_batch_size 0 and the full
    dims."""
    cfg = of.model_config(auto_srv, "auto_fixed_output")
    assert cfg["max_batch_size"] == 0, cfg
    assert _tensors(cfg, "input") == {"INPUT0": ("TYPE_FP32", [-1, 4])}, cfg
    assert _tensors(cfg, "output") == {"OUTPUT0": ("TYPE_FP32", [1, 4])}, cfg
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = of.infer("binary", auto_srv, "auto_fixed_output", [("INPUT0", "FP32", [3, 4], x)])
    np.testing.assert_array_equal(out["OUTPUT0"], x.sum(axis=0, keepdims=True))


def test_dynamic_inner_dim_completed_as_minus_1(auto_srv):
    cfg = of.model_config(auto_srv, "auto_dynamic")
    assert cfg["max_batch_size"] == 4, cfg
    assert _tensors(cfg, "input") == {"INPUT0": ("TYPE_FP32", [-1]), "INPUT1": ("TYPE_FP32", [-1])}, cfg
    assert _tensors(cfg, "output") == {"OUTPUT0": ("TYPE_FP32", [-1]), "OUTPUT1": ("TYPE_FP32", [-1])}, cfg
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = of.infer("json", auto_srv, "auto_dynamic", [("INPUT0", "FP32", [2, 3], a), ("INPUT1", "FP32", [2, 3], a)])
    np.testing.assert_array_equal(out["OUTPUT0"], a + a)


def test_scalar_model_completed_as_dims_1(auto_srv):
    """Rank-0 tensors cannot batch: max_batch_size 0 and dims [1] without a
    reshape (AutoCompleteIO); a request of shape [1] runs the scalar model
    and the output comes back with the config's shape [1]."""
    cfg = of.model_config(auto_srv, "auto_scalar")
    assert cfg["max_batch_size"] == 0, cfg
    assert _tensors(cfg, "input") == {"INPUT0": ("TYPE_FP32", [1]), "INPUT1": ("TYPE_FP32", [1])}, cfg
    assert _tensors(cfg, "output") == {"OUTPUT0": ("TYPE_FP32", [1])}, cfg
    assert all("reshape" not in t for t in cfg["input"] + cfg["output"]), cfg
    for proto in ("json", "binary"):
        out = of.infer(proto, auto_srv, "auto_scalar", [("INPUT0", "FP32", [1], np.array([1.25], np.float32)),
                                                        ("INPUT1", "FP32", [1], np.array([2.5], np.float32))])
        assert of.infer.last["OUTPUT0"] == ("FP32", [1])
        np.testing.assert_array_equal(out["OUTPUT0"], np.array([3.75], np.float32))


@pytest.mark.parametrize("flag,want", [
    ("--backend-config=onnxruntime,default-max-batch-size=8", 8),
    ("--backend-config=default-max-batch-size=2", 2),
    ("--backend-config=onnxruntime,default-max-batch-size=1", 1),
    ("--backend-config=onnxruntime,default-max-batch-size=0", 0),
])
def test_default_max_batch_size_backend_config(tmp_path, flag, want):
    """README "Default Max Batch Size": the autofilled max_batch_size is
    default-max-batch-size (per backend or global); with 0 the model does
    not batch and the dims keep the dynamic first dim; dynamic batching only
    when max_batch_size > 1."""
    repo = tmp_path / "repo"
    om.write_model(repo, "m", _addsub())
    srv = of.start(tmp_path / "srv", repo, wait_models=("m",), extra=[flag])
    try:
        cfg = of.model_config(srv, "m")
        assert cfg["max_batch_size"] == want, cfg
        dims = [16] if want else [-1, 16]
        assert _tensors(cfg, "input") == {"INPUT0": ("TYPE_INT32", dims), "INPUT1": ("TYPE_INT32", dims)}, cfg
        assert ("dynamic_batching" in cfg and cfg["dynamic_batching"] is not None) == (want > 1), cfg
        if want == 1:
            _check_addsub(srv, "m", A[:1], B[:1])
        else:
            _check_addsub(srv, "m")
    finally:
        srv.stop(check=True)


@pytest.mark.parametrize("flag", ["--strict-model-config=true", "--disable-auto-complete-config"])
def test_strict_refuses_model_without_config(tmp_path, flag):
    """With auto-complete off, a model without config.pbtxt does not load;
    a model with a complete config loads and answers beside it."""
    repo = tmp_path / "repo"
    om.write_model(repo, "no_config", _addsub())
    om.write_model(repo, "full", _addsub(),
                   config=om.config("full", _io(), _oo(), max_batch_size=4))
    om.write_model(repo, "partial", _addsub(), config='backend: "onnxruntime"\nmax_batch_size: 4\n')
    srv = of.start(tmp_path / "srv", repo, wait_models=("full",), extra=[flag])
    try:
        idx = of.wait_not_loading(srv, ["no_config", "full", "partial"])
        assert idx["full"][0] == "READY", idx
        state, reason = idx["no_config"]
        assert state != "READY" and not of.ready(srv, "no_config"), idx
        assert reason and "config" in reason.lower(), reason
        # Nothing is completed: the backend checks the config as given
        # (ValidateInputs: "configuration expects 0 inputs, model provides 2").
        state, reason = idx["partial"]
        assert state != "READY", idx
        assert "expects 0 inputs, model provides 2" in reason, reason
        _check_addsub(srv, "full")
    finally:
        srv.stop(check=True)


def test_strict_config_reports_what_was_given(tmp_path):
    """--strict-model-config=true leaves the config as written: no
    dynamic_batching is added and max_batch_size stays as given."""
    repo = tmp_path / "repo"
    om.write_model(repo, "full", _addsub(), config=om.config("full", _io(), _oo(), max_batch_size=4))
    srv = of.start(tmp_path / "srv", repo, wait_models=("full",), extra=["--strict-model-config=true"])
    try:
        cfg = of.model_config(srv, "full")
        assert cfg["max_batch_size"] == 4 and ("dynamic_batching" not in cfg or cfg["dynamic_batching"] is None), cfg
    finally:
        srv.stop(check=True)


# -------------------------------------------- configs that disagree ---

MISMATCH = {
    # name: (config text, substrings the error must carry (any group of alternatives))
    "bad_input_dims": (
        om.config("bad_input_dims", _io(d0=(16, 1)), _oo(), max_batch_size=1),
        ["'INPUT0'", ("[-1,16]", "[16]"), ("[-1,16,1]", "[16,1]")]),
    "bad_input_type": (
        om.config("bad_input_type", _io(t1="FP32"), _oo(), max_batch_size=1),
        ["'INPUT1'", "TYPE_FP32", "TYPE_INT32"]),
    "bad_output_dims": (
        om.config("bad_output_dims", _io(), _oo(d1=(1,)), max_batch_size=1),
        ["'OUTPUT1'", ("[-1,16]", "[16]"), ("[-1,1]", "[1]")]),
    "bad_output_type": (
        om.config("bad_output_type", _io(), _oo(t0="INT16"), max_batch_size=1),
        ["'OUTPUT0'", "TYPE_INT16", "TYPE_INT8"]),
    "unknown_input": (
        om.config("unknown_input", _io(in1="INPUT_UNKNOWN"), _oo(), max_batch_size=1),
        ["unexpected inference input 'INPUT_UNKNOWN', allowed inputs are: INPUT0, INPUT1"]),
    "unknown_output": (
        om.config("unknown_output", _io(), [("OUTPUT_UNKNOWN", "INT8", [16])], max_batch_size=1),
        ["unexpected inference output 'OUTPUT_UNKNOWN', allowed outputs are: OUTPUT0, OUTPUT1"]),
    "too_many_inputs": (
        om.config("too_many_inputs", _io() + [("INPUT_EXTRA", "INT32", [16])], _oo(), max_batch_size=1),
        ["configuration expects 3 inputs, model provides 2"]),
    "too_few_inputs": (
        om.config("too_few_inputs", _io()[:1], _oo(), max_batch_size=1),
        ["configuration expects 1 inputs, model provides 2"]),
    # Batching asked of a model whose first dim is fixed (CompareDimsSupported).
    "batching_fixed_model": (
        om.config("batching_fixed_model", _io(), _oo(), max_batch_size=8),
        ["'INPUT0'", "first dimension must be -1", "[16]"]),
    # No batching, but the config drops the model's dynamic first dim.
    "nobatch_rank_mismatch": (
        om.config("nobatch_rank_mismatch", _io(), _oo(), max_batch_size=0),
        ["'INPUT0'", "the model expects 2 dimensions (shape [-1,16])",
         "the model configuration specifies 1 dimensions (shape [16])"]),
    # allow_ragged_batch needs a model input of shape [-1].
    "ragged_not_1d": (
        om.config("ragged_not_1d", _io(), _oo(), max_batch_size=4).replace(
            'name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ]',
            'name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] allow_ragged_batch: true'),
        ["'INPUT0'", "[-1]", "[-1,16]", "ragged"]),
    # autofill_noplatform/onnx/bad_max_batch_size: outputs left to
    # auto-complete, max_batch_size 1 on a model that cannot batch.
    "bad_max_batch_size": (
        'backend: "onnxruntime"\nmax_batch_size: 1\n' + om.io_block("input", _io()),
        ["autofill failed for model 'bad_max_batch_size': model does not support batching "
         "while non-zero max_batch_size is specified"]),
}

FIXED_MODELS = {"batching_fixed_model", "bad_max_batch_size"}


@pytest.fixture(scope="module")
def explicit_srv(tmp_path_factory):
    """An explicit-mode server over every mismatch and bad model, plus 'good'."""
    tmp = tmp_path_factory.mktemp("ort-explicit")
    repo = tmp / "repo"
    for name, (cfg, _) in MISMATCH.items():
        om.write_model(repo, name, _addsub_nobatch() if name in FIXED_MODELS else _addsub(), config=cfg)
    om.write_model(repo, "good", _addsub(), config=om.config("good", _io(), _oo(), max_batch_size=4))
    _write_bad_models(repo)
    s = of.start(tmp / "srv", repo, extra=["--model-control-mode=explicit", "--load-model=good"],
                 wait_models=("good",))
    yield s
    s.stop(check=True)


def _has(message, want):
    return any(w in message for w in want) if isinstance(want, tuple) else want in message


@pytest.mark.parametrize("name", sorted(MISMATCH))
def test_config_disagreeing_with_model_fails_load(explicit_srv, name):
    msg = of.load_error(explicit_srv, name)
    missing = [w for w in MISMATCH[name][1] if not _has(msg, w)]
    assert not missing, f"{name}: message lacks {missing}: {msg}"
    if name != "bad_max_batch_size":
        assert f"'{name}'" in msg, f"the message does not name the model: {msg}"
    assert not of.ready(explicit_srv, name)
    # The server keeps serving the model that loaded.
    _check_addsub(explicit_srv, "good")
    state, reason = of.index(explicit_srv)[name]
    assert state == "UNAVAILABLE" and reason, (state, reason)


# --------------------------------------------------------- bad models ---

def _write_bad_models(repo):
    good = _addsub().SerializeToString()
    om.write_model(repo, "corrupt", bytes(range(256)) * 8, config=om.config("corrupt", _io(), _oo(), 4))
    om.write_model(repo, "truncated", good[: len(good) // 2], config=om.config("truncated", _io(), _oo(), 4))
    om.write_model(repo, "empty_file", b"", config=om.config("empty_file", _io(), _oo(), 4))
    om.write_model(repo, "unknown_op", om.unknown_operator(),
                   config=om.config("unknown_op", [("INPUT0", "FP32", [4])], [("OUTPUT0", "FP32", [4])], 4))
    missing = repo / "no_model_file"
    (missing / "1").mkdir(parents=True)
    (missing / "config.pbtxt").write_text(om.config("no_model_file", _io(), _oo(), 4))
    om.write_external_data_model(repo, "external_weights", om.scale([0.5, -2.0, 3.0, 10.0], [None, 4]),
                                 config=om.config("external_weights", [("INPUT0", "FP32", [4])],
                                                  [("OUTPUT0", "FP32", [4])], 4))
    om.write_external_data_model(repo, "external_custom_dir", om.scale([1.0, 2.0, 3.0, 4.0], [None, 4]),
                                 folder="weights.onnx",
                                 config=om.config("external_custom_dir", [("INPUT0", "FP32", [4])],
                                                  [("OUTPUT0", "FP32", [4])], 4,
                                                  extra='default_model_filename: "weights.onnx"\n'))
    om.write_model(repo, "custom_filename", _addsub(), filename="custom.onnx",
                   config=om.config("custom_filename", _io(), _oo(), 4,
                                    extra='default_model_filename: "custom.onnx"\n'))


@pytest.mark.parametrize("name,words", [
    ("corrupt", ("onnx", "protobuf", "pars")),
    ("truncated", ("onnx", "protobuf", "pars")),
    ("empty_file", ("onnx", "protobuf", "pars", "empty")),
    ("unknown_op", ("NoSuchOperator",)),
    ("no_model_file", ("model.onnx",)),
])
def test_bad_model_fails_load_cleanly(explicit_srv, name, words):
    msg = of.load_error(explicit_srv, name)
    assert name in msg, f"the message does not name the model: {msg}"
    assert any(w.lower() in msg.lower() for w in words), f"{name}: expected one of {words} in: {msg}"
    assert not of.ready(explicit_srv, name)
    assert explicit_srv.alive()
    _check_addsub(explicit_srv, "good")


def test_external_weights_folder_loads(explicit_srv):
    """model.onnx/ as a folder holding model.onnx and its external weights
    (Triton: 'If the model path is a directory then the actual model is
    <dir>/model.onnx')."""
    r = of.load(explicit_srv, "external_weights")
    assert r.status_code == 200, r.text
    x = np.array([[1.0, 1.0, 1.0, 1.0], [2.0, -4.0, 0.5, 0.25]], dtype=np.float32)
    for proto in ("json", "binary"):
        out = of.infer(proto, explicit_srv, "external_weights", [("INPUT0", "FP32", [2, 4], x)])
        np.testing.assert_array_equal(out["OUTPUT0"], x * np.array([0.5, -2.0, 3.0, 10.0], dtype=np.float32))


def test_default_model_filename_naming_a_folder(explicit_srv):
    """default_model_filename 'weights.onnx' is a folder: the model is
    weights.onnx/model.onnx, its weights beside it."""
    r = of.load(explicit_srv, "external_custom_dir")
    assert r.status_code == 200, r.text
    x = np.array([[1.0, 1.0, 2.0, -1.0]], dtype=np.float32)
    out = of.infer("binary", explicit_srv, "external_custom_dir", [("INPUT0", "FP32", [1, 4], x)])
    np.testing.assert_array_equal(out["OUTPUT0"], x * np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32))


def test_default_model_filename(explicit_srv):
    r = of.load(explicit_srv, "custom_filename")
    assert r.status_code == 200, r.text
    _check_addsub(explicit_srv, "custom_filename")
    assert of.model_config(explicit_srv, "custom_filename")["default_model_filename"] == "custom.onnx"


def test_failed_load_then_fixed_config_loads(explicit_srv, tmp_path):
    """A refused model loads once its config is fixed (nothing of the failed
    attempt sticks)."""
    repo = explicit_srv.repos[0]
    name = "bad_input_type"
    of.load_error(explicit_srv, name)
    cfg_path = repo / name / "config.pbtxt"
    original = cfg_path.read_text()
    try:
        cfg_path.write_text(om.config(name, _io(), _oo(), max_batch_size=1))
        r = of.load(explicit_srv, name)
        assert r.status_code == 200, r.text
        _check_addsub(explicit_srv, name, A[:1], B[:1])
    finally:
        cfg_path.write_text(original)
        of.unload(explicit_srv, name)


def test_versions_run_their_own_model_files(tmp_path):
    """Versions 1 and 2 of one model (version_policy all) hold different
    model.onnx files; each version answers with its own."""
    repo = tmp_path / "repo"
    cfg = om.config("v", [("INPUT0", "FP32", [4])], [("OUTPUT0", "FP32", [4])], 4,
                    extra="version_policy: { all { } }\n")
    om.write_model(repo, "v", om.scale([1.0, 1.0, 1.0, 1.0], [None, 4]), config=cfg, version=1)
    om.write_model(repo, "v", om.scale([2.0, 3.0, 4.0, 5.0], [None, 4]), config=cfg, version=2)
    srv = of.start(tmp_path / "srv", repo, wait_models=("v",))
    try:
        x = np.array([[1.0, 2.0, 3.0, 4.0]], dtype=np.float32)
        for version, w in (("1", [1.0, 1.0, 1.0, 1.0]), ("2", [2.0, 3.0, 4.0, 5.0])):
            r = h.infer_binary(srv, "v", [("INPUT0", "FP32", [1, 4], x)], version=version,
                               parameters={"binary_data_output": True})
            assert r.status_code == 200, r.text
            header, vals = h.parse_infer_response(r)
            assert header["model_version"] == version
            np.testing.assert_array_equal(vals["OUTPUT0"], x * np.array(w, dtype=np.float32))
    finally:
        srv.stop(check=True)


def test_reload_picks_up_a_new_model_file(tmp_path):
    """Explicit mode: replacing model.onnx and loading again serves the new
    model (the old session is not kept)."""
    repo = tmp_path / "repo"
    cfg = om.config("r", [("INPUT0", "FP32", [4])], [("OUTPUT0", "FP32", [4])], 4)
    mdir = om.write_model(repo, "r", om.scale([2.0, 2.0, 2.0, 2.0], [None, 4]), config=cfg)
    srv = of.start(tmp_path / "srv", repo, extra=["--model-control-mode=explicit", "--load-model=r"],
                   wait_models=("r",))
    try:
        x = np.array([[1.0, -1.0, 0.5, 3.0]], dtype=np.float32)
        np.testing.assert_array_equal(of.infer("binary", srv, "r", [("INPUT0", "FP32", [1, 4], x)])["OUTPUT0"], x * 2)
        om.write_model(repo, "r", om.scale([-3.0, -3.0, -3.0, -3.0], [None, 4]))
        r = of.load(srv, "r")
        assert r.status_code == 200, r.text
        np.testing.assert_array_equal(of.infer("binary", srv, "r", [("INPUT0", "FP32", [1, 4], x)])["OUTPUT0"], x * -3)
        assert (mdir / "1" / "model.onnx").is_file()
    finally:
        srv.stop(check=True)


# ------------------------------------------------------ optional inputs ---

DEFAULT = np.array([10.0, 20.0, 30.0, 40.0], dtype=np.float32)


def test_optional_input_backed_by_an_initializer(tmp_path):
    """An input that is also an initializer is an overridable initializer in
    ONNX Runtime; Triton's backend lets the config mark it optional: not
    counted among the required inputs, and a request may leave it out (the
    initializer's value is used) or send it (it overrides)."""
    repo = tmp_path / "repo"
    om.write_model(repo, "opt", om.add_default(DEFAULT), config=(
        'backend: "onnxruntime"\nmax_batch_size: 0\n'
        'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },\n'
        '        { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] optional: true } ]\n'
        'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'))
    # Optional inputs are not for batching models (Triton: "optional input
    # 'INPUT1' is not supported for models that support batching").
    om.write_model(repo, "opt_batch", om.add_default(DEFAULT, batch=True), config=(
        'backend: "onnxruntime"\nmax_batch_size: 4\n'
        'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },\n'
        '        { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] optional: true } ]\n'
        'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'))
    srv = of.start(tmp_path / "srv", repo, wait_models=("opt",))
    try:
        x = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
        y = np.array([0.5, 0.5, -1.0, -2.0], dtype=np.float32)
        for proto in ("json", "binary"):
            out = of.infer(proto, srv, "opt", [("INPUT0", "FP32", [4], x)])
            np.testing.assert_array_equal(out["OUTPUT0"], x + DEFAULT)
            out = of.infer(proto, srv, "opt", [("INPUT0", "FP32", [4], x), ("INPUT1", "FP32", [4], y)])
            np.testing.assert_array_equal(out["OUTPUT0"], x + y)
        state, reason = of.wait_not_loading(srv, ["opt_batch"])["opt_batch"]
        assert state == "UNAVAILABLE", (state, reason)
        assert "optional input 'INPUT1'" in reason and "batching" in reason, reason
    finally:
        srv.stop(check=True)
