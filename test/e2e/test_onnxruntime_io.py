"""ONNX Runtime backend: inputs and outputs whose size or content the
request decides, where binding ORT values straight to the request's and
response's buffers (IO binding) is easiest to get wrong.

- outputs larger than the inputs (Concat) and outputs whose values are
  computed from the request's shape (Shape, ReduceSum);
- BYTES outputs computed by the model (Cast to STRING) and BYTES through
  Concat, alone and in dynamic batches of several requests;
- zero-element tensors, and a 16 MiB tensor over binary HTTP and gRPC;
- requests of one batch asking for different outputs.

Expected values from numpy; every batch test checks that each request gets
its own rows.
"""


import numpy as np
import pytest

import onnx_models as om
import ort_fixtures as of
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

BATCHER = "dynamic_batching { preferred_batch_size: [ 6 ] max_queue_delay_microseconds: 1000000 }\n"
BIG = 4 << 20  # FP32 elements: 16 MiB


def _repo(repo):
    om.write_model(repo, "concat", om.concat_self("FP32"),
                   config=om.config("concat", [("INPUT0", "FP32", [-1])], [("OUTPUT0", "FP32", [-1])], 8,
                                    extra=BATCHER))
    om.write_model(repo, "concat_bytes", om.concat_self("BYTES", 3),
                   config=om.config("concat_bytes", [("INPUT0", "BYTES", [3])], [("OUTPUT0", "BYTES", [6])], 8,
                                    extra=BATCHER))
    om.write_model(repo, "shape_of", om.shape_of(),
                   config=om.config("shape_of", [("INPUT0", "FP32", [-1, -1])],
                                    [("OUTPUT0", "INT64", [2]), ("OUTPUT1", "FP32", [1])]))
    om.write_model(repo, "to_string", om.cast_to_string("INT32", 4),
                   config=om.config("to_string", [("INPUT0", "INT32", [4])], [("OUTPUT0", "BYTES", [4])], 8,
                                    extra=BATCHER))
    om.write_model(repo, "big", om.identity("FP32", [None]),
                   config=om.config("big", [("INPUT0", "FP32", [-1])], [("OUTPUT0", "FP32", [-1])]))
    om.write_model(repo, "addsub", om.add_sub("FP32", "FP32", [None, 4]),
                   config=om.config("addsub", [("INPUT0", "FP32", [4]), ("INPUT1", "FP32", [4])],
                                    [("OUTPUT0", "FP32", [4]), ("OUTPUT1", "FP32", [4])], 8,
                                    extra="dynamic_batching { preferred_batch_size: [ 2 ] "
                                          "max_queue_delay_microseconds: 1000000 }\n"))


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ort-io")
    _repo(tmp / "repo")
    s = of.start(tmp / "srv", tmp / "repo", wait_models=("concat", "concat_bytes", "shape_of", "to_string", "big",
                                                         "addsub"))
    yield s
    s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = of.grpc_client(srv, grpc_stubs)
    yield c
    c.close()




# ------------------------------------------------------------- sizes ---

@pytest.mark.parametrize("proto", of.PROTOCOLS)
def test_output_larger_than_input(srv, gc, proto):
    for rows, width in ((1, 1), (2, 3), (3, 17)):
        x = np.arange(rows * width, dtype=np.float32).reshape(rows, width) - 5.5
        out = of.infer(proto, srv, "concat", [("INPUT0", "FP32", [rows, width], x)], gc=gc)
        assert of.infer.last["OUTPUT0"] == ("FP32", [rows, 2 * width])
        np.testing.assert_array_equal(out["OUTPUT0"], np.concatenate([x, x], axis=1))


def test_output_larger_than_input_in_a_batch(srv, gc):
    def req(tag, rows, proto):
        x = (np.arange(rows * 5, dtype=np.float32).reshape(rows, 5) + 100.0 * tag)
        return lambda: (of.infer(proto, srv, "concat", [("INPUT0", "FP32", [rows, 5], x)], gc=gc), x)

    for out, x in of.concurrently([req(1, 1, "binary"), req(2, 2, "grpc"), req(3, 3, "json")]):
        np.testing.assert_array_equal(out["OUTPUT0"], np.concatenate([x, x], axis=1))


@pytest.mark.parametrize("proto", of.PROTOCOLS)
def test_outputs_computed_from_the_shape(srv, gc, proto):
    for shape in ([2, 3], [1, 1], [5, 7]):
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) * 0.5
        out = of.infer(proto, srv, "shape_of", [("INPUT0", "FP32", shape, x)], gc=gc)
        assert of.infer.last["OUTPUT0"] == ("INT64", [2]) and of.infer.last["OUTPUT1"] == ("FP32", [1])
        np.testing.assert_array_equal(out["OUTPUT0"], np.array(shape, dtype=np.int64))
        np.testing.assert_array_equal(out["OUTPUT1"], np.array([x.sum()], dtype=np.float32))


@pytest.mark.parametrize("proto", ["binary", "grpc"])
def test_zero_element_input(srv, gc, proto):
    """A [3, 0] tensor has no elements: Shape still answers [3, 0] and the
    sum is 0 (Triton accepts zero-sized dims in requests)."""
    x = np.zeros((3, 0), dtype=np.float32)
    out = of.infer(proto, srv, "shape_of", [("INPUT0", "FP32", [3, 0], x)], gc=gc)
    np.testing.assert_array_equal(out["OUTPUT0"], np.array([3, 0], dtype=np.int64))
    np.testing.assert_array_equal(out["OUTPUT1"], np.array([0.0], dtype=np.float32))


def test_zero_element_output(srv, gc):
    x = np.zeros((2, 0), dtype=np.float32)
    out = of.infer("binary", srv, "concat", [("INPUT0", "FP32", [2, 0], x)], gc=gc)
    assert of.infer.last["OUTPUT0"] == ("FP32", [2, 0])
    assert np.asarray(out["OUTPUT0"]).size == 0


@pytest.mark.parametrize("proto", ["binary", "grpc"])
def test_16_mib_tensor(srv, gc, proto):
    x = (np.arange(BIG, dtype=np.float32) % 1000.0) - 500.25
    out = of.infer(proto, srv, "big", [("INPUT0", "FP32", [BIG], x)], gc=gc)
    assert of.infer.last["OUTPUT0"] == ("FP32", [BIG])
    np.testing.assert_array_equal(out["OUTPUT0"], x)


# ------------------------------------------------------------- BYTES ---

WORDS = [b"", b"a", b"hello world", b"x" * 1000, "\u00e9t\u00e9".encode(), b"7"]


@pytest.mark.parametrize("proto", of.PROTOCOLS)
def test_bytes_concat(srv, gc, proto):
    items = [WORDS[0], WORDS[1], WORDS[2], WORDS[3], WORDS[4], WORDS[5]]
    out = of.infer(proto, srv, "concat_bytes", [("INPUT0", "BYTES", [2, 3], items)], gc=gc)
    assert of.infer.last["OUTPUT0"] == ("BYTES", [2, 6])
    rows = [items[0:3], items[3:6]]
    assert list(out["OUTPUT0"]) == [w for r in rows for w in r + r]


def test_bytes_concat_in_a_batch(srv, gc):
    def req(tag, rows, proto):
        items = [f"{tag}-{i}-".encode() + b"#" * (i * tag % 7) for i in range(rows * 3)]
        return lambda: (of.infer(proto, srv, "concat_bytes", [("INPUT0", "BYTES", [rows, 3], items)], gc=gc),
                        items, rows)

    results = of.concurrently([req(1, 2, "binary"), req(2, 1, "grpc"), req(3, 3, "json")])
    for out, items, rows in results:
        want = []
        for r in range(rows):
            row = items[3 * r:3 * r + 3]
            want += row + row
        assert list(out["OUTPUT0"]) == want


@pytest.mark.parametrize("proto", of.PROTOCOLS)
def test_bytes_output_computed_by_the_model(srv, gc, proto):
    x = np.array([[-5, 0, 7, 2147483647], [123456789, -2147483648, 42, 1]], dtype=np.int32)
    out = of.infer(proto, srv, "to_string", [("INPUT0", "INT32", [2, 4], x)], gc=gc)
    assert of.infer.last["OUTPUT0"] == ("BYTES", [2, 4])
    assert list(out["OUTPUT0"]) == [str(int(v)).encode() for v in x.flatten()]


def test_bytes_output_in_a_batch(srv, gc):
    def req(tag, rows, proto):
        x = (np.arange(rows * 4, dtype=np.int32).reshape(rows, 4) * (tag * 1001)) - tag
        return lambda: (of.infer(proto, srv, "to_string", [("INPUT0", "INT32", [rows, 4], x)], gc=gc), x)

    for out, x in of.concurrently([req(1, 3, "grpc"), req(2, 1, "binary"), req(3, 2, "json")]):
        assert list(out["OUTPUT0"]) == [str(int(v)).encode() for v in x.flatten()]


# ---------------------------------------------------- outputs asked ---

def test_requests_of_one_batch_ask_for_different_outputs(srv, gc):
    a1 = np.arange(4, dtype=np.float32).reshape(1, 4)
    b1 = np.full((1, 4), 10.0, dtype=np.float32)
    a2 = np.arange(8, dtype=np.float32).reshape(2, 4) * -1.0
    b2 = np.full((2, 4), 0.5, dtype=np.float32)

    def req(a, b, outputs, proto):
        return lambda: of.infer(proto, srv, "addsub", [("INPUT0", "FP32", list(a.shape), a),
                                                       ("INPUT1", "FP32", list(b.shape), b)],
                                outputs=outputs, gc=gc)

    r1, r2 = of.concurrently([req(a1, b1, ["OUTPUT1"], "binary"), req(a2, b2, ["OUTPUT0"], "grpc")])
    assert list(r1) == ["OUTPUT1"] and list(r2) == ["OUTPUT0"], (r1, r2)
    np.testing.assert_array_equal(r1["OUTPUT1"], a1 - b1)
    np.testing.assert_array_equal(r2["OUTPUT0"], a2 + b2)
