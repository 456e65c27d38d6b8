"""ONNX test models for the ONNX Runtime backend's e2e tests.

Every model is built at test time with Debian's python3-onnx (`onnx.helper`,
opset 17, IR version 8) and written into a model repository folder under the
test's tmp_path; nothing binary is committed. The expected outputs are
computed with numpy by the tests (ONNX Runtime has no Debian package).

The data types: `TYPES` maps each Triton data type that ONNX has to its ONNX
element type, its model-configuration name and the numpy dtype its bytes
travel in (BF16 travels as its raw 16-bit patterns in uint16: numpy has no
bfloat16).

Model builders return an `onnx.ModelProto`; `write_model` puts one into a
repository (`<repo>/<name>/<version>/model.onnx`, plus `config.pbtxt` when a
config text is given).
"""

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8

# Triton datatype -> (ONNX element type, model config data_type, numpy dtype).
TYPES = {
    "BOOL": (TensorProto.BOOL, "TYPE_BOOL", np.dtype("?")),
    "UINT8": (TensorProto.UINT8, "TYPE_UINT8", np.dtype("<u1")),
    "UINT16": (TensorProto.UINT16, "TYPE_UINT16", np.dtype("<u2")),
    "UINT32": (TensorProto.UINT32, "TYPE_UINT32", np.dtype("<u4")),
    "UINT64": (TensorProto.UINT64, "TYPE_UINT64", np.dtype("<u8")),
    "INT8": (TensorProto.INT8, "TYPE_INT8", np.dtype("<i1")),
    "INT16": (TensorProto.INT16, "TYPE_INT16", np.dtype("<i2")),
    "INT32": (TensorProto.INT32, "TYPE_INT32", np.dtype("<i4")),
    "INT64": (TensorProto.INT64, "TYPE_INT64", np.dtype("<i8")),
    "FP16": (TensorProto.FLOAT16, "TYPE_FP16", np.dtype("<f2")),
    "FP32": (TensorProto.FLOAT, "TYPE_FP32", np.dtype("<f4")),
    "FP64": (TensorProto.DOUBLE, "TYPE_FP64", np.dtype("<f8")),
    "BF16": (TensorProto.BFLOAT16, "TYPE_BF16", np.dtype("<u2")),
    "BYTES": (TensorProto.STRING, "TYPE_STRING", np.dtype(object)),
}

# Triton datatypes that ONNX Runtime's CPU Identity is documented to take and
# Triton's ORT backend maps (BF16 is tested on its own: Triton's backend did
# not map it for a long time).
IDENTITY_TYPES = [t for t in TYPES if t != "BF16"]


def elem(datatype):
    return TYPES[datatype][0]


def config_type(datatype):
    return TYPES[datatype][1]


def np_dtype(datatype):
    return TYPES[datatype][2]


# ----------------------------------------------------------- building ---

def value_info(name, datatype, shape):
    """A graph input/output; a dim that is None or a string is dynamic
    (a string names it: ONNX Runtime reports both as -1)."""
    dims = ["N" if d is None else d for d in shape]
    return helper.make_tensor_value_info(name, elem(datatype), dims)


def make_model(nodes, inputs, outputs, initializers=(), name="inferd_test", extra_opsets=()):
    graph = helper.make_graph(list(nodes), name, list(inputs), list(outputs),
                              initializer=list(initializers))
    opsets = [helper.make_opsetid("", OPSET)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="inferd-e2e")
    model.ir_version = IR_VERSION
    return model


def checked(model):
    """The model, after onnx's own checker (skipped for models that are
    deliberately outside the standard, e.g. unknown operators)."""
    onnx.checker.check_model(model)
    return model


def identity(datatype, shape, in_name="INPUT0", out_name="OUTPUT0"):
    """OUTPUT0 = INPUT0 of `datatype` and `shape`."""
    return checked(make_model(
        [helper.make_node("Identity", [in_name], [out_name])],
        [value_info(in_name, datatype, shape)],
        [value_info(out_name, datatype, shape)]))


def add_sub(in_type, out_type, shape):
    """Triton's own test model shape (qa_model_repository onnx_<in>_<out>_<out>):
    OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, cast to `out_type`
    when it differs from `in_type`."""
    nodes = [helper.make_node("Add", ["INPUT0", "INPUT1"], ["SUM"]),
             helper.make_node("Sub", ["INPUT0", "INPUT1"], ["DIFF"])]
    if in_type == out_type:
        nodes += [helper.make_node("Identity", ["SUM"], ["OUTPUT0"]),
                  helper.make_node("Identity", ["DIFF"], ["OUTPUT1"])]
    else:
        nodes += [helper.make_node("Cast", ["SUM"], ["OUTPUT0"], to=elem(out_type)),
                  helper.make_node("Cast", ["DIFF"], ["OUTPUT1"], to=elem(out_type))]
    return checked(make_model(
        nodes,
        [value_info("INPUT0", in_type, shape), value_info("INPUT1", in_type, shape)],
        [value_info("OUTPUT0", out_type, shape), value_info("OUTPUT1", out_type, shape)]))


def scalar_add():
    """OUTPUT0 = INPUT0 + INPUT1 on rank-0 FP32 tensors (scalars)."""
    return checked(make_model(
        [helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"])],
        [value_info("INPUT0", "FP32", []), value_info("INPUT1", "FP32", [])],
        [value_info("OUTPUT0", "FP32", [])]))


def scale(weights, shape):
    """OUTPUT0 = INPUT0 * W (FP32), W a constant initializer of `weights`
    (broadcast over the leading dims): the model for external weights."""
    w = numpy_helper.from_array(np.asarray(weights, dtype=np.float32), name="W")
    return checked(make_model(
        [helper.make_node("Mul", ["INPUT0", "W"], ["OUTPUT0"])],
        [value_info("INPUT0", "FP32", shape)],
        [value_info("OUTPUT0", "FP32", shape)],
        initializers=[w]))


def accumulator(width):
    """The stateful model for the sequence batcher's implicit state:
    OUTPUT = INPUT + INPUT_STATE and OUTPUT_STATE = the same sum
    (INT32, shape [batch, width])."""
    shape = [None, width]
    return checked(make_model(
        [helper.make_node("Add", ["INPUT", "INPUT_STATE"], ["SUM"]),
         helper.make_node("Identity", ["SUM"], ["OUTPUT"]),
         helper.make_node("Identity", ["SUM"], ["OUTPUT_STATE"])],
        [value_info("INPUT", "INT32", shape), value_info("INPUT_STATE", "INT32", shape)],
        [value_info("OUTPUT", "INT32", shape), value_info("OUTPUT_STATE", "INT32", shape)]))


def concat_self(datatype, width=None):
    """OUTPUT0 = Concat(INPUT0, INPUT0, axis=1): the output is twice the
    input's width (its size is known only from the request)."""
    return checked(make_model(
        [helper.make_node("Concat", ["INPUT0", "INPUT0"], ["OUTPUT0"], axis=1)],
        [value_info("INPUT0", datatype, [None, width if width else "W"])],
        [value_info("OUTPUT0", datatype, [None, 2 * width if width else "W2"])]))


def shape_of():
    """OUTPUT0 = Shape(INPUT0) (INT64 [2]) and OUTPUT1 = ReduceSum of all
    elements (FP32 [1]), no batching: outputs whose values depend on the
    request, not only their sizes."""
    axes = numpy_helper.from_array(np.array([0, 1], dtype=np.int64), name="AXES")
    return checked(make_model(
        [helper.make_node("Shape", ["INPUT0"], ["OUTPUT0"]),
         helper.make_node("ReduceSum", ["INPUT0", "AXES"], ["SUM"], keepdims=0),
         helper.make_node("Reshape", ["SUM", "ONE"], ["OUTPUT1"])],
        [value_info("INPUT0", "FP32", ["H", "W"])],
        [value_info("OUTPUT0", "INT64", [2]), value_info("OUTPUT1", "FP32", [1])],
        initializers=[axes, numpy_helper.from_array(np.array([1], dtype=np.int64), name="ONE")]))


def cast_to_string(datatype, width):
    """OUTPUT0 = Cast(INPUT0, to=STRING): a BYTES output computed by the
    model (batch dim first)."""
    return checked(make_model(
        [helper.make_node("Cast", ["INPUT0"], ["OUTPUT0"], to=TensorProto.STRING)],
        [value_info("INPUT0", datatype, [None, width])],
        [value_info("OUTPUT0", "BYTES", [None, width])]))


def accumulator_with_controls(width, start_width=1):
    """The accumulator with sequence control inputs: START (INT32 [batch, 1],
    1 on a sequence's first request) resets the state, CORRID (UINT64
    [batch, 1]) is echoed as OUT_CORRID:
    OUTPUT = OUTPUT_STATE = INPUT + INPUT_STATE * (1 - START).
    start_width != 1 makes a START the sequence batcher cannot feed."""
    shape = [None, width]
    one = numpy_helper.from_array(np.array(1, dtype=np.int32), name="ONE")
    start_in = "START" if start_width == 1 else "START_SLICE"
    nodes = []
    if start_width != 1:
        starts = numpy_helper.from_array(np.array([0], dtype=np.int64), name="S0")
        ends = numpy_helper.from_array(np.array([1], dtype=np.int64), name="S1")
        axes = numpy_helper.from_array(np.array([1], dtype=np.int64), name="SA")
        nodes.append(helper.make_node("Slice", ["START", "S0", "S1", "SA"], ["START_SLICE"]))
        extra = [starts, ends, axes]
    else:
        extra = []
    nodes += [helper.make_node("Sub", ["ONE", start_in], ["KEEP"]),
              helper.make_node("Mul", ["INPUT_STATE", "KEEP"], ["KEPT"]),
              helper.make_node("Add", ["INPUT", "KEPT"], ["SUM"]),
              helper.make_node("Identity", ["SUM"], ["OUTPUT"]),
              helper.make_node("Identity", ["SUM"], ["OUTPUT_STATE"]),
              helper.make_node("Identity", ["CORRID"], ["OUT_CORRID"])]
    return checked(make_model(
        nodes,
        [value_info("INPUT", "INT32", shape), value_info("INPUT_STATE", "INT32", shape),
         value_info("START", "INT32", [None, start_width]), value_info("CORRID", "UINT64", [None, 1])],
        [value_info("OUTPUT", "INT32", shape), value_info("OUTPUT_STATE", "INT32", shape),
         value_info("OUT_CORRID", "UINT64", [None, 1])],
        initializers=[one] + extra))


def ragged_with_count():
    """Ragged batching with a batch input: INPUT0 (FP32 [total elements],
    the requests concatenated) -> OUTPUT0 = INPUT0 * 2 (scattered back by a
    batch_output), and COUNT (INT32 [requests], Triton's shape for
    BATCH_ELEMENT_COUNT: each request's element count) -> OUT_COUNT = COUNT
    reshaped to [requests, 1]."""
    two = numpy_helper.from_array(np.array(2.0, dtype=np.float32), name="TWO")
    shape = numpy_helper.from_array(np.array([-1, 1], dtype=np.int64), name="COLUMN")
    return checked(make_model(
        [helper.make_node("Mul", ["INPUT0", "TWO"], ["OUTPUT0"]),
         helper.make_node("Reshape", ["COUNT", "COLUMN"], ["OUT_COUNT"])],
        [value_info("INPUT0", "FP32", [None]), value_info("COUNT", "INT32", ["R"])],
        [value_info("OUTPUT0", "FP32", [None]), value_info("OUT_COUNT", "INT32", [None, 1])],
        initializers=[two, shape]))


def add_default(default, batch=False):
    """OUTPUT0 = INPUT0 + INPUT1 (FP32 [4], or [batch, 4]) where INPUT1 is
    also an initializer holding `default`: ONNX Runtime lists it as an
    overridable initializer, which Triton's backend accepts as an optional
    request input."""
    shape = [None, 4] if batch else [4]
    init = np.asarray(default, dtype=np.float32).reshape([1, 4] if batch else [4])
    return checked(make_model(
        [helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"])],
        [value_info("INPUT0", "FP32", shape), value_info("INPUT1", "FP32", shape)],
        [value_info("OUTPUT0", "FP32", shape)],
        initializers=[numpy_helper.from_array(init, name="INPUT1")]))


def sum_over_batch():
    """OUTPUT0 = ReduceSum(INPUT0, axis 0, keepdims): input [N, 4] (dynamic
    first dim), output [1, 4] (fixed first dim), so the model cannot batch."""
    axes = numpy_helper.from_array(np.array([0], dtype=np.int64), name="AXES")
    return checked(make_model(
        [helper.make_node("ReduceSum", ["INPUT0", "AXES"], ["OUTPUT0"], keepdims=1)],
        [value_info("INPUT0", "FP32", [None, 4])],
        [value_info("OUTPUT0", "FP32", [1, 4])],
        initializers=[axes]))


def unknown_operator():
    """A node whose operator no runtime has: op_type 'NoSuchOperator' in the
    made-up domain 'org.inferd.missing' (not passed through the checker)."""
    return make_model(
        [helper.make_node("NoSuchOperator", ["INPUT0"], ["OUTPUT0"], domain="org.inferd.missing")],
        [value_info("INPUT0", "FP32", [None, 4])],
        [value_info("OUTPUT0", "FP32", [None, 4])],
        extra_opsets=[("org.inferd.missing", 1)])


# ------------------------------------------------------------ writing ---

def write_model(repo, name, model, config=None, version=1, filename="model.onnx"):
    """Writes `model` (a ModelProto, or raw bytes for broken files) as
    <repo>/<name>/<version>/<filename>, and `config` (text) as its
    config.pbtxt when given. Returns the model folder."""
    mdir = Path(repo) / name
    vdir = mdir / str(version)
    vdir.mkdir(parents=True, exist_ok=True)
    path = vdir / filename
    if isinstance(model, (bytes, bytearray)):
        path.write_bytes(bytes(model))
    else:
        onnx.save(model, str(path))
    if config is not None:
        (mdir / "config.pbtxt").write_text(config)
    return mdir


def write_external_data_model(repo, name, model, config=None, version=1, folder="model.onnx"):
    """Writes `model` as a folder <repo>/<name>/<version>/<folder>/ holding
    model.onnx with every initializer in the external file 'weights.bin'
    beside it (Triton's layout for models with external weights)."""
    mdir = Path(repo) / name
    folder = mdir / str(version) / folder
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(folder / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    assert (folder / "weights.bin").is_file(), "onnx did not write the external weights"
    if config is not None:
        (mdir / "config.pbtxt").write_text(config)
    return mdir


# ------------------------------------------------------------ configs ---

def io_block(kind, tensors):
    """kind 'input' or 'output'; tensors: [(name, datatype, dims)] -> pbtxt."""
    items = ",\n".join(
        f'  {{ name: "{n}" data_type: {config_type(d) if d in TYPES else d} '
        f'dims: [ {", ".join(str(x) for x in dims)} ] }}'
        for n, d, dims in tensors)
    return f"{kind} [\n{items}\n]\n"


def config(name, inputs=(), outputs=(), max_batch_size=0, backend='backend: "onnxruntime"', extra=""):
    """A config.pbtxt text. inputs/outputs: [(name, datatype, dims)];
    datatype is a Triton datatype (e.g. "FP32") or a config name
    (e.g. "TYPE_FP32")."""
    text = f'name: "{name}"\n{backend}\nmax_batch_size: {max_batch_size}\n'
    if inputs:
        text += io_block("input", inputs)
    if outputs:
        text += io_block("output", outputs)
    return text + extra
