"""ONNX Runtime backend: the model parameters Triton's onnxruntime backend
documents (README "Model Config Options"), the graph optimization level,
the backend's command-line options, and KIND_GPU where no GPU is usable.

Reference: triton-inference-server/onnxruntime_backend README and
src/onnxruntime.cc (ModelState::ModelState reads execution_mode,
intra_op_thread_count, inter_op_thread_count, enable_mem_arena,
enable_mem_pattern, session.use_device_allocator_for_initializers,
optimization.graph.level: -1 basic, 1 extended, 2 disabled, else all; the
instance reads memory.enable_memory_arena_shrinkage into its run options).
Bad values fail the load: execution_mode other than 0/1 ("Expected values
for execution_mode are 0 or 1 but got N"), a boolean that is not
true/false/on/off/1/0 ("failed to convert 'x' to boolean"), a thread count
that is no integer ("failed to convert 'x' to integral number").
"""

import os
import subprocess

import numpy as np
import pytest

import e2e_helpers as h
import onnx_models as om
import ort_fixtures as of

X = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 2.0
Y = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)


def _param(key, value):
    return f'parameters {{ key: "{key}" value: {{ string_value: "{value}" }} }}\n'


GOOD = {
    "p_intra_threads": _param("intra_op_thread_count", "2"),
    "p_inter_threads": _param("inter_op_thread_count", "2") + _param("execution_mode", "1"),
    "p_threads_zero": _param("intra_op_thread_count", "0") + _param("inter_op_thread_count", "0"),
    "p_exec_sequential": _param("execution_mode", "0"),
    "p_exec_parallel": _param("execution_mode", "1"),
    "p_arena_off": _param("enable_mem_arena", "0"),
    "p_arena_on": _param("enable_mem_arena", "true"),
    "p_pattern_off": _param("enable_mem_pattern", "false"),
    "p_pattern_on": _param("enable_mem_pattern", "1"),
    "p_arena_shrinkage": _param("memory.enable_memory_arena_shrinkage", "cpu:0"),
    "p_device_alloc_init": _param("session.use_device_allocator_for_initializers", "1"),
    "p_session_spinning": _param("session.intra_op.allow_spinning", "0")
    + _param("session.inter_op.allow_spinning", "0"),
    "p_level_basic": "optimization { graph { level: -1 } }\n",
    "p_level_extended": "optimization { graph { level: 1 } }\n",
    "p_level_disabled": "optimization { graph { level: 2 } }\n",
    "p_level_all": "optimization { graph { level: 0 } }\n",
    "p_arena_off_word": _param("enable_mem_arena", "off") + _param("enable_mem_pattern", "ON"),
    "p_level_other": "optimization { graph { level: 5 } }\n",
    "p_unknown_key": _param("my_own_setting", "whatever"),
    "p_share_session": _param("share_session_between_instances", "true")
    + "instance_group [ { count: 3 kind: KIND_CPU } ]\n",
    "p_everything": _param("intra_op_thread_count", "1") + _param("inter_op_thread_count", "1")
    + _param("execution_mode", "0") + _param("enable_mem_arena", "1") + _param("enable_mem_pattern", "0")
    + _param("memory.enable_memory_arena_shrinkage", "cpu:0")
    + "optimization { graph { level: 1 } }\n",
}

BAD = {
    # name: (extra config, words the load error must carry)
    "b_exec_mode": (_param("execution_mode", "2"), ["execution_mode are 0 or 1 but got 2"]),
    "b_arena": (_param("enable_mem_arena", "maybe"), ["maybe"]),
    "b_pattern": (_param("enable_mem_pattern", "sometimes"), ["sometimes"]),
    "b_intra": (_param("intra_op_thread_count", "many"), ["many"]),
    "b_inter": (_param("inter_op_thread_count", "lots"), ["lots"]),
    "b_exec_mode_text": (_param("execution_mode", "fast"), ["fast"]),
    # Triton: "unknown Execution Accelerator 'openvino' is requested" where
    # the runtime has no OpenVINO.
    "b_cpu_accelerator": ("optimization { execution_accelerators { cpu_execution_accelerator: "
                          "[ { name: \"openvino\" } ] } }\n",
                          ["unknown Execution Accelerator 'openvino' is requested"]),
    "b_op_library": ('model_operations { op_library_filename: [ "/nonexistent/libinferd_custom_ops.so" ] }\n',
                     ["libinferd_custom_ops.so"]),
}


def _cfg(name, extra):
    return om.config(name, [("INPUT0", "FP32", [-1]), ("INPUT1", "FP32", [-1])],
                     [("OUTPUT0", "FP32", [-1]), ("OUTPUT1", "FP32", [-1])], max_batch_size=4, extra=extra)


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ort-params")
    repo = tmp / "repo"
    model = om.add_sub("FP32", "FP32", [None, "W"])
    for name, extra in list(GOOD.items()) + [(n, e) for n, (e, _) in BAD.items()]:
        om.write_model(repo, name, model, config=_cfg(name, extra))
    s = of.start(tmp / "srv", repo, wait_models=("p_intra_threads",))
    of.wait_not_loading(s, list(GOOD) + list(BAD))
    yield s
    s.stop(check=True)


@pytest.mark.parametrize("name", sorted(GOOD))
def test_parameter_accepted_and_model_answers(srv, name):
    state, reason = of.index(srv)[name]
    assert state == "READY", f"{name}: {state} {reason}\n{srv.log_tail(3000)}"
    for proto in ("json", "binary"):
        out = of.infer(proto, srv, name, [("INPUT0", "FP32", [3, 4], X), ("INPUT1", "FP32", [3, 4], Y)])
        np.testing.assert_array_equal(out["OUTPUT0"], X + Y)
        np.testing.assert_array_equal(out["OUTPUT1"], X - Y)


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_parameter_value_fails_load(srv, name):
    state, reason = of.index(srv)[name]
    assert state == "UNAVAILABLE", (state, reason)
    missing = [w for w in BAD[name][1] if w not in reason]
    assert not missing, f"{name}: reason lacks {missing}: {reason}"
    assert not of.ready(srv, name)


def test_bad_parameters_leave_others_serving(srv):
    out = of.infer("binary", srv, "p_everything", [("INPUT0", "FP32", [3, 4], X), ("INPUT1", "FP32", [3, 4], Y)])
    np.testing.assert_array_equal(out["OUTPUT0"], X + Y)


def test_parameters_shown_in_config(srv):
    cfg = of.model_config(srv, "p_inter_threads")
    params = {k: v["string_value"] for k, v in cfg["parameters"].items()}
    assert params == {"inter_op_thread_count": "2", "execution_mode": "1"}, cfg
    assert of.model_config(srv, "p_level_extended")["optimization"]["graph"]["level"] == 1


# ------------------------------------------------- backend options ---

def test_global_threadpool_backend_config(tmp_path):
    """README "Thread Pools": --backend-config=onnxruntime,enable-global-threadpool=1
    with intra/inter op counts from the backend config; models load and
    answer (their own thread counts are then ignored)."""
    repo = tmp_path / "repo"
    model = om.add_sub("FP32", "FP32", [None, "W"])
    om.write_model(repo, "g1", model, config=_cfg("g1", _param("intra_op_thread_count", "3")))
    om.write_model(repo, "g2", model, config=_cfg("g2", ""))
    srv = of.start(tmp_path / "srv", repo, wait_models=("g1", "g2"), extra=[
        "--backend-config=onnxruntime,enable-global-threadpool=1",
        "--backend-config=onnxruntime,intra_op_thread_count=2",
        "--backend-config=onnxruntime,inter_op_thread_count=1"])
    try:
        for name in ("g1", "g2"):
            out = of.infer("binary", srv, name, [("INPUT0", "FP32", [3, 4], X), ("INPUT1", "FP32", [3, 4], Y)])
            np.testing.assert_array_equal(out["OUTPUT1"], X - Y)
    finally:
        srv.stop(check=True)


# --------------------------------------------------------------- GPU ---

def _gpu_usable():
    if not os.path.exists("/dev/nvidia0"):
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _cuda_provider():
    """True when a CUDA execution provider library sits beside the runtime
    the backend loads (ONNX Runtime's CPU-only builds have none)."""
    return any(p.name.startswith("libonnxruntime_providers_cuda")
               for p in of.backend_so().parent.iterdir()) if of.backend_so().is_file() else False


@pytest.mark.skipif(_gpu_usable() and _cuda_provider(),
                    reason="a GPU and a CUDA-enabled ONNX Runtime are present: KIND_GPU may load here")
def test_kind_gpu_without_gpu_fails_load_clearly(tmp_path):
    """KIND_GPU on a machine without a usable GPU, or with one but a CPU-only
    ONNX Runtime: the load fails naming the GPU problem, the server keeps
    serving the CPU model beside it."""
    repo = tmp_path / "repo"
    model = om.add_sub("FP32", "FP32", [None, "W"])
    om.write_model(repo, "on_gpu", model,
                   config=_cfg("on_gpu", "instance_group [ { count: 1 kind: KIND_GPU } ]\n"))
    om.write_model(repo, "on_gpu_ids", model,
                   config=_cfg("on_gpu_ids", "instance_group [ { count: 1 kind: KIND_GPU gpus: [ 0 ] } ]\n"))
    om.write_model(repo, "on_cpu", model, config=_cfg("on_cpu", "instance_group [ { count: 1 kind: KIND_CPU } ]\n"))
    srv = of.start(tmp_path / "srv", repo, wait_models=("on_cpu",))
    try:
        idx = of.wait_not_loading(srv, ["on_gpu", "on_gpu_ids", "on_cpu"])
        for name in ("on_gpu", "on_gpu_ids"):
            state, reason = idx[name]
            assert state == "UNAVAILABLE", (name, state, reason)
            assert "GPU" in reason or "CUDA" in reason, (name, reason)
        out = of.infer("binary", srv, "on_cpu", [("INPUT0", "FP32", [3, 4], X), ("INPUT1", "FP32", [3, 4], Y)])
        np.testing.assert_array_equal(out["OUTPUT0"], X + Y)
    finally:
        srv.stop(check=True)


# ------------------------------------------------------------ warmup ---

def _warmup(name, dims, data="zero_data: true", batch=2, datatype="TYPE_FP32"):
    return (f'model_warmup [ {{ name: "{name}" batch_size: {batch} inputs [\n'
            f'  {{ key: "INPUT0" value: {{ data_type: {datatype} dims: [ {dims} ] {data} }} }},\n'
            f'  {{ key: "INPUT1" value: {{ data_type: {datatype} dims: [ {dims} ] {data} }} }} ] }} ]\n')


def test_warmup_runs_through_onnx_runtime(tmp_path):
    """model_warmup samples (zero and random data) run on the ONNX model
    before it is ready; a sample the model cannot take (width 3 and 5 do
    not add) fails the load with Triton's "failed to run warmup sample"."""
    repo = tmp_path / "repo"
    model = om.add_sub("FP32", "FP32", [None, "W"])
    om.write_model(repo, "warm", model, config=_cfg(
        "warm", _warmup("zeros", "4") + _warmup("random", "4", "random_data: true", batch=1)))
    bad = _cfg("warm_bad", "") + (
        'model_warmup [ { name: "mismatch" batch_size: 1 inputs [\n'
        '  { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [ 3 ] zero_data: true } },\n'
        '  { key: "INPUT1" value: { data_type: TYPE_FP32 dims: [ 5 ] zero_data: true } } ] } ]\n')
    om.write_model(repo, "warm_bad", model, config=bad)
    srv = of.start(tmp_path / "srv", repo, wait_models=("warm",))
    try:
        out = of.infer("binary", srv, "warm", [("INPUT0", "FP32", [3, 4], X), ("INPUT1", "FP32", [3, 4], Y)])
        np.testing.assert_array_equal(out["OUTPUT0"], X + Y)
        state, reason = of.wait_not_loading(srv, ["warm_bad"])["warm_bad"]
        assert state == "UNAVAILABLE", (state, reason)
        assert "failed to run warmup sample 'mismatch'" in reason, reason
    finally:
        srv.stop(check=True)


# ------------------------------------------------- backend settings ---

def test_bad_backend_setting_fails_only_onnx_models(tmp_path):
    """--backend-config=onnxruntime,default-max-batch-size=abc: the backend's
    initialization fails (Triton: "failed to convert 'abc' to integral
    number"), so its models do not load; the server still serves the
    models of other backends."""
    repo = tmp_path / "repo"
    om.write_model(repo, "m", om.add_sub("FP32", "FP32", [None, "W"]), config=_cfg("m", ""))
    h.copy_repo(repo, models=["identity_fp32"])
    srv = of.start(tmp_path / "srv", repo, wait_models=("identity_fp32",),
                   extra=["--backend-config=onnxruntime,default-max-batch-size=abc"])
    try:
        state, reason = of.wait_not_loading(srv, ["m"])["m"]
        assert state == "UNAVAILABLE", (state, reason)
        assert "abc" in reason, reason
        r = h.infer_json(srv, "identity_fp32", [("INPUT0", "FP32", [1, 16], [0.5] * 16)])
        assert r.status_code == 200, r.text
    finally:
        srv.stop(check=True)
