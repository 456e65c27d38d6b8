"""ONNX Runtime backend: every Triton data type ONNX has, fixed and dynamic
dims, two inputs and two outputs, over HTTP JSON, HTTP binary and gRPC.

One inferd serves a repository of models generated with onnx.helper
(onnx_models.py); expected outputs are computed with numpy. The reference is
Triton's onnxruntime backend: `backend: "onnxruntime"` or
`platform: "onnxruntime_onnx"`, model.onnx as the default file, ONNX element
types mapped one to one onto Triton's (STRING is TYPE_STRING / BYTES).
"""

import numpy as np
import pytest

import onnx_models as om
import ort_fixtures as of
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

ROWS, COLS = 3, 4


def _identity_config(name, datatype, platform=False):
    backend = 'platform: "onnxruntime_onnx"' if platform else 'backend: "onnxruntime"'
    return om.config(name, [("INPUT0", datatype, [COLS])], [("OUTPUT0", datatype, [COLS])],
                     max_batch_size=8, backend=backend)


def _build_repo(repo):
    for t in om.TYPES:
        name = f"id_{t.lower()}"
        om.write_model(repo, name, om.identity(t, [None, COLS]), _identity_config(name, t))
    om.write_model(repo, "id_platform", om.identity("FP32", [None, COLS]),
                   _identity_config("id_platform", "FP32", platform=True))
    # Fixed dims, no batching: [2, 3].
    om.write_model(repo, "fixed", om.identity("FP32", [2, 3]),
                   om.config("fixed", [("INPUT0", "FP32", [2, 3])], [("OUTPUT0", "FP32", [2, 3])]))
    # Every dim dynamic, no batching.
    om.write_model(repo, "dynamic", om.identity("INT64", [None, "W"]),
                   om.config("dynamic", [("INPUT0", "INT64", [-1, -1])], [("OUTPUT0", "INT64", [-1, -1])]))
    # Two inputs, two outputs: Triton's own add/sub test models.
    om.write_model(repo, "addsub_fp32", om.add_sub("FP32", "FP32", [None, "W"]),
                   om.config("addsub_fp32", [("INPUT0", "FP32", [-1]), ("INPUT1", "FP32", [-1])],
                             [("OUTPUT0", "FP32", [-1]), ("OUTPUT1", "FP32", [-1])], max_batch_size=8))
    om.write_model(repo, "addsub_int32_int8", om.add_sub("INT32", "INT8", [None, 16]),
                   om.config("addsub_int32_int8", [("INPUT0", "INT32", [16]), ("INPUT1", "INT32", [16])],
                             [("OUTPUT0", "INT8", [16]), ("OUTPUT1", "INT8", [16])], max_batch_size=8))


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ort-types")
    repo = tmp / "repo"
    _build_repo(repo)
    s = of.start(tmp / "srv", repo, wait_models=("id_fp32", "addsub_fp32"))
    yield s
    s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = of.grpc_client(srv, grpc_stubs)
    yield c
    c.close()


def _call(proto, srv, gc, model, inputs, outputs=None):
    try:
        return of.infer(proto, srv, model, inputs, outputs=outputs, gc=gc)
    except of.Failed as e:
        raise AssertionError(f"{model} over {proto}: {e}\n--- server log ---\n{srv.log_tail(3000)}")


# ------------------------------------------------------------- values ---

def _values(datatype, proto):
    """A [ROWS, COLS] tensor of `datatype` with the type's edge values; JSON
    gets no inf/nan (JSON has no such numbers)."""
    n = ROWS * COLS
    if datatype == "BOOL":
        return np.array([i % 3 == 0 for i in range(n)], dtype=bool).reshape(ROWS, COLS)
    if datatype == "BYTES":
        items = [b"", b"a", b"hello", b"with space", "\u00fcn\u00efc\u00f6d\u00e9".encode(), b"x" * 300,
                 b"7", b'"quoted"', b"back\\slash", b"tab\there", b"last but one", b"z"]
        if proto != "json":
            items[7] = b"\xff\xfe not utf-8"
        return items
    if datatype == "BF16":
        # Raw bfloat16 patterns: 1.0, -2.0, 0.5, max finite, smallest normal,
        # -0.0, 3.140625, 1e10-ish, and four more ordinary values.
        return np.array([0x3F80, 0xC000, 0x3F00, 0x7F7F, 0x0080, 0x8000, 0x4049, 0x5015,
                         0x4120, 0xC2C8, 0x3E80, 0x4480], dtype=np.uint16).reshape(ROWS, COLS)
    dt = om.np_dtype(datatype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if datatype == "UINT64" and proto == "json":
            # Above INT64_MAX in JSON: test_json_uint64_above_int64_max.
            info = np.iinfo(np.int64)
        lo = 0 if dt.kind == "u" else int(info.min)
        base = [lo, info.max, 0, 1, info.max - 1, lo + 1 if lo else 2, 7, 42,
                int(info.max) // 3, int(info.max) // 2, 100 % (int(info.max) + 1), 9]
        return np.array(base, dtype=dt).reshape(ROWS, COLS)
    info = np.finfo(dt)
    base = [0.0, -0.0, 1.0, -1.5, float(info.max), float(-info.max), float(info.tiny), 0.1,
            1.0 / 3.0, 1234.5, -7.25, float(info.eps)]
    if proto != "json":
        base[-2:] = [np.inf, -np.inf]
    return np.array(base, dtype=dt).reshape(ROWS, COLS)


def _assert_same(datatype, got, want):
    if datatype == "BYTES":
        assert list(got) == list(want)
        return
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    if datatype in ("FP16", "FP32", "FP64"):
        # Bit-exact, -0.0 included.
        np.testing.assert_array_equal(got.view(f"u{want.dtype.itemsize}"), want.view(f"u{want.dtype.itemsize}"))
    else:
        np.testing.assert_array_equal(got, want)


# -------------------------------------------------------------- tests ---

@pytest.mark.parametrize("proto", of.PROTOCOLS)
@pytest.mark.parametrize("datatype", om.IDENTITY_TYPES)
def test_identity_every_type(srv, gc, proto, datatype):
    x = _values(datatype, proto)
    model = f"id_{datatype.lower()}"
    out = _call(proto, srv, gc, model, [("INPUT0", datatype, [ROWS, COLS], x)])
    assert list(out) == ["OUTPUT0"], out
    assert of.infer.last["OUTPUT0"] == (datatype, [ROWS, COLS])
    _assert_same(datatype, out["OUTPUT0"], x)


@pytest.mark.parametrize("proto", ["binary", "grpc"])
def test_bf16_identity(srv, gc, proto):
    """TYPE_BF16: ONNX Runtime's CPU Identity takes bfloat16. Either the
    model loads and the bits come back unchanged, or (as Triton's ORT
    backend before BF16 support) the load is refused naming the type."""
    idx = of.index(srv)
    state, reason = idx["id_bf16"]
    if state != "READY":
        assert "BF16" in reason or "BFLOAT16" in reason, (state, reason)
        pytest.skip(f"the backend refuses TYPE_BF16: {reason}")
    x = _values("BF16", proto)
    out = _call(proto, srv, gc, "id_bf16", [("INPUT0", "BF16", [ROWS, COLS], x)])
    assert of.infer.last["OUTPUT0"] == ("BF16", [ROWS, COLS])
    np.testing.assert_array_equal(np.asarray(out["OUTPUT0"]).view(np.uint16), x)


def test_every_identity_model_is_ready(srv):
    idx = of.index(srv)
    states = {t: idx.get(f"id_{t.lower()}", ("<missing>", "")) for t in om.IDENTITY_TYPES}
    bad = {t: st for t, st in states.items() if st[0] != "READY"}
    assert not bad, bad


def test_platform_onnxruntime_onnx_spelling(srv, gc):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    for proto in of.PROTOCOLS:
        out = _call(proto, srv, gc, "id_platform", [("INPUT0", "FP32", [2, 4], x)])
        np.testing.assert_array_equal(out["OUTPUT0"], x)
    cfg = of.model_config(srv, "id_platform")
    assert cfg["platform"] == "onnxruntime_onnx" and cfg["backend"] == "onnxruntime", cfg


@pytest.mark.parametrize("proto", of.PROTOCOLS)
def test_fixed_dims(srv, gc, proto):
    x = np.array([[1.5, -2.0, 3.25], [0.0, 8.0, -0.5]], dtype=np.float32)
    out = _call(proto, srv, gc, "fixed", [("INPUT0", "FP32", [2, 3], x)])
    assert of.infer.last["OUTPUT0"] == ("FP32", [2, 3])
    np.testing.assert_array_equal(out["OUTPUT0"], x)


@pytest.mark.parametrize("shape", [[1, 3], [3, 2], [4, 3], [1, 1]])
def test_fixed_dims_wrong_shape_is_400(srv, gc, shape):
    x = np.zeros(shape, dtype=np.float32)
    for proto in of.PROTOCOLS:
        with pytest.raises(of.Failed) as e:
            of.infer(proto, srv, "fixed", [("INPUT0", "FP32", shape, x)], gc=gc)
        assert e.value.code in (400, "INVALID_ARGUMENT"), e.value
        assert "INPUT0" in e.value.message, e.value.message
    # The server keeps serving the model.
    ok = np.ones([2, 3], dtype=np.float32)
    np.testing.assert_array_equal(_call("binary", srv, gc, "fixed", [("INPUT0", "FP32", [2, 3], ok)])["OUTPUT0"], ok)


@pytest.mark.parametrize("proto", of.PROTOCOLS)
def test_dynamic_dims_take_any_shape(srv, gc, proto):
    for shape in ([1, 1], [3, 5], [7, 2], [2, 64]):
        x = (np.arange(np.prod(shape), dtype=np.int64) * 1000003 - 2 ** 40).reshape(shape)
        out = _call(proto, srv, gc, "dynamic", [("INPUT0", "INT64", shape, x)])
        assert of.infer.last["OUTPUT0"] == ("INT64", shape)
        np.testing.assert_array_equal(out["OUTPUT0"], x)


@pytest.mark.parametrize("proto", of.PROTOCOLS)
def test_two_inputs_two_outputs_fp32(srv, gc, proto):
    for width in (1, 5, 33):
        a = (np.arange(2 * width, dtype=np.float32).reshape(2, width) - 3.0) * 0.5
        b = np.full((2, width), 0.25, dtype=np.float32) * np.arange(1, width + 1, dtype=np.float32)
        out = _call(proto, srv, gc, "addsub_fp32",
                    [("INPUT0", "FP32", [2, width], a), ("INPUT1", "FP32", [2, width], b)])
        assert set(out) == {"OUTPUT0", "OUTPUT1"}
        np.testing.assert_array_equal(out["OUTPUT0"], a + b)
        np.testing.assert_array_equal(out["OUTPUT1"], a - b)


@pytest.mark.parametrize("proto", of.PROTOCOLS)
def test_two_inputs_two_outputs_int32_to_int8(srv, gc, proto):
    a = np.arange(32, dtype=np.int32).reshape(2, 16) - 10
    b = np.arange(32, dtype=np.int32)[::-1].reshape(2, 16) // 3
    out = _call(proto, srv, gc, "addsub_int32_int8",
                [("INPUT0", "INT32", [2, 16], a), ("INPUT1", "INT32", [2, 16], b)])
    assert of.infer.last["OUTPUT0"] == ("INT8", [2, 16]) and of.infer.last["OUTPUT1"] == ("INT8", [2, 16])
    np.testing.assert_array_equal(out["OUTPUT0"], (a + b).astype(np.int8))
    np.testing.assert_array_equal(out["OUTPUT1"], (a - b).astype(np.int8))


@pytest.mark.parametrize("proto", of.PROTOCOLS)
@pytest.mark.parametrize("wanted", [["OUTPUT1"], ["OUTPUT0"], ["OUTPUT1", "OUTPUT0"]])
def test_requested_output_subset(srv, gc, proto, wanted):
    a = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
    b = np.array([[0.5, 0.5, 4.0]], dtype=np.float32)
    out = _call(proto, srv, gc, "addsub_fp32",
                [("INPUT0", "FP32", [1, 3], a), ("INPUT1", "FP32", [1, 3], b)], outputs=wanted)
    assert sorted(out) == sorted(wanted)
    want = {"OUTPUT0": a + b, "OUTPUT1": a - b}
    for name in wanted:
        np.testing.assert_array_equal(out[name], want[name])


def test_mismatched_dynamic_widths_fail_cleanly(srv, gc):
    """INPUT0 [1,3] + INPUT1 [1,4]: the config allows both (dims [-1]) but
    the model cannot add them; ONNX Runtime's error comes back as the
    request's error, and the server keeps serving."""
    a = np.ones((1, 3), dtype=np.float32)
    b = np.ones((1, 4), dtype=np.float32)
    for proto in of.PROTOCOLS:
        with pytest.raises(of.Failed) as e:
            of.infer(proto, srv, "addsub_fp32", [("INPUT0", "FP32", [1, 3], a), ("INPUT1", "FP32", [1, 4], b)],
                     gc=gc)
        assert e.value.code in (400, 500, "INVALID_ARGUMENT", "INTERNAL"), e.value
        assert e.value.message.strip(), e.value
    out = _call("grpc", srv, gc, "addsub_fp32", [("INPUT0", "FP32", [1, 3], a), ("INPUT1", "FP32", [1, 3], a)])
    np.testing.assert_array_equal(out["OUTPUT0"], a + a)


def test_wrong_datatype_is_400(srv, gc):
    x = np.zeros((1, COLS), dtype=np.int32)
    for proto in of.PROTOCOLS:
        with pytest.raises(of.Failed) as e:
            of.infer(proto, srv, "id_fp32", [("INPUT0", "INT32", [1, COLS], x)], gc=gc)
        assert e.value.code in (400, "INVALID_ARGUMENT"), e.value
        assert "INPUT0" in e.value.message, e.value.message


def test_metadata_lists_types_and_shapes(srv):
    r = srv.get("/v2/models/addsub_int32_int8")
    assert r.status_code == 200, r.text
    md = r.json()
    assert md["platform"] == "onnxruntime_onnx", md
    assert {(t["name"], t["datatype"], tuple(t["shape"])) for t in md["inputs"]} == {
        ("INPUT0", "INT32", (-1, 16)), ("INPUT1", "INT32", (-1, 16))}
    assert {(t["name"], t["datatype"], tuple(t["shape"])) for t in md["outputs"]} == {
        ("OUTPUT0", "INT8", (-1, 16)), ("OUTPUT1", "INT8", (-1, 16))}


def test_json_uint64_above_int64_max(srv):
    """JSON numbers up to 2^64-1 are valid UINT64 data (Triton parses them
    as uint64); they must come back exactly."""
    data = [2 ** 64 - 1, 2 ** 63, 2 ** 63 + 12345, 0]
    body = {"inputs": [{"name": "INPUT0", "datatype": "UINT64", "shape": [1, COLS], "data": data}]}
    r = srv.post("/v2/models/id_uint64/infer", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == data


def test_server_exits_0_after_serving_onnx_models(tmp_path):
    """SIGTERM after an ONNX model was loaded and asked: the models unload,
    the backend is finalized and unloaded, and inferd exits 0."""
    repo = tmp_path / "repo"
    om.write_model(repo, "m", om.identity("FP32", [None, COLS]), _identity_config("m", "FP32"))
    s = of.start(tmp_path / "srv", repo, wait_models=("m",))
    try:
        x = np.ones((1, COLS), dtype=np.float32)
        np.testing.assert_array_equal(of.infer("binary", s, "m", [("INPUT0", "FP32", [1, COLS], x)])["OUTPUT0"], x)
    finally:
        s.stop(check=False)
    assert s.proc.returncode == 0, f"exit status {s.proc.returncode}\n{s.log_tail(2000)}"
