"""Shared memory over gRPC: the SystemSharedMemory{Status,Register,Unregister}
and CudaSharedMemory{...} RPCs, and ModelInfer / ModelStreamInfer tensors in
shared memory (parameters shared_memory_region, shared_memory_offset,
shared_memory_byte_size).

Expected answers are tritonserver 2.47's (conformance data,
features/features.md section 5 and item 12 of "Read first"), except its two
shared-memory defects (item 9), which inferd must not have: several regions on
one key work, and a region's offset is applied once.

POSIX shared-memory objects are made with Python's
multiprocessing.shared_memory; each test uses its own region names and
removes what it registered. Everything talks to 127.0.0.1.
"""

import ctypes
import itertools
import os
import shutil
import time
from multiprocessing import shared_memory

import grpc
import numpy as np
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as g
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

SC = grpc.StatusCode
WAIT_S = 30
PAGE = 4096
ENS_REPO = h.REPO_ROOT / "test" / "models" / "ens_repo"
_SEQ = itertools.count()


def sleep_config(name):
    # One instance, and a log line once a request sleeps: a test can hold the
    # instance and know that the next request is queued behind it.
    return (
        f'name: "{name}"\nbackend: "sleep"\nmax_batch_size: 0\n'
        'input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
        'output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
        'instance_group [ { count: 1 kind: KIND_CPU } ]\n'
        'parameters { key: "poll_cancel" value: { string_value: "1" } }\n')


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("shm-grpc")
    repo = h.copy_repo(tmp / "repo", models=["identity_fp32", "identity_int32", "identity_multi"])
    for m in ("ensemble_identity", "step1_identity", "step2_identity"):
        shutil.copytree(ENS_REPO / m, repo / m)
    so = h.sleep_backend_so()
    assert so.is_file(), f"test backend not built at {so}; run `make` first"
    d = repo / "sleep_one"
    (d / "1").mkdir(parents=True)
    (d / "config.pbtxt").write_text(sleep_config("sleep_one"))
    shutil.copy2(so, d / so.name)
    s = h.start_server(tmp / "srv", [repo],
                       wait_models=("identity_fp32", "identity_int32", "identity_multi",
                                    "ensemble_identity", "sleep_one"))
    try:
        yield s
    finally:
        s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = g.connect(srv, grpc_stubs)
    yield c
    c.close()


# ------------------------------------------------------------ helpers ---

class Obj:
    """A POSIX shared-memory object of `size` bytes, removed on close."""

    def __init__(self, size=8192):
        self.shm = shared_memory.SharedMemory(create=True, size=size,
                                              name=f"ifd_gshm_{os.getpid()}_{next(_SEQ)}")
        self.key = "/" + self.shm.name
        self.buf = self.shm.buf

    def write(self, offset, arr):
        b = np.ascontiguousarray(arr).tobytes()
        self.buf[offset:offset + len(b)] = b

    def read(self, offset, dtype, count):
        return np.frombuffer(bytes(self.buf[offset:offset + count * np.dtype(dtype).itemsize]), dtype=dtype)

    def close(self):
        self.buf = None
        self.shm.close()
        self.shm.unlink()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


def unique(prefix):
    return f"{prefix}_{next(_SEQ)}"


def register(gc, name, obj, byte_size, offset=0):
    return gc.system_shared_memory_register(name=name, key=obj.key, offset=offset, byte_size=byte_size)


def place(tensor, region, byte_size, offset=None):
    """Sets the shared-memory parameters of a request's input or output."""
    tensor.parameters["shared_memory_region"].string_param = region
    tensor.parameters["shared_memory_byte_size"].int64_param = byte_size
    if offset is not None:
        tensor.parameters["shared_memory_offset"].int64_param = offset


def shm_request(pb, model="identity_int32", shape=(1, 4), in_region=None, in_size=16, in_offset=None,
                out_region=None, out_size=16, out_offset=None, inp="INPUT0", out="OUTPUT0"):
    req = pb.ModelInferRequest(model_name=model)
    t = req.inputs.add(name=inp, datatype="INT32", shape=list(shape))
    if in_region is not None:
        place(t, in_region, in_size, in_offset)
    o = req.outputs.add(name=out)
    if out_region is not None:
        place(o, out_region, out_size, out_offset)
    return req


def status_map(resp):
    return {k: (v.name, v.key, v.offset, v.byte_size) for k, v in resp.regions.items()}


def expect(fn, code, details, *a, **kw):
    e = g.rpc_error(fn, *a, **kw)
    assert e.code() == code, g.describe(e)
    if details is not None:
        assert e.details() == details, g.describe(e)
    return e


def server_maps(srv):
    with open(f"/proc/{srv.proc.pid}/maps") as f:
        return f.read().splitlines()


def wait_log(srv, text, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while text not in srv.log_path.read_text(errors="replace"):
        assert srv.alive(), srv.log_tail()
        if time.monotonic() > deadline:
            raise AssertionError(f"no {text!r} in the server log\n{srv.log_tail()}")
        time.sleep(0.05)


def wait_pending(srv, model, n, timeout=WAIT_S):
    key = f'nv_inference_pending_request_count{{model="{model}",version="1"}} {n}'
    deadline = time.monotonic() + timeout
    while True:
        text = requests.get(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=WAIT_S).text
        if key in text.splitlines():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"never {n} pending\n{text}")
        time.sleep(0.05)


# ------------------------------------------- section 5, the gRPC rows ---

def test_section5_grpc_rows(gc):
    """The gRPC records of features.md section 5, in their order."""
    gc.system_shared_memory_unregister()  # a clean table (name "" = all)
    assert status_map(gc.system_shared_memory_status()) == {}
    with Obj() as o_in, Obj() as o_out, Obj() as o_nooff, Obj() as o_page, Obj() as o_g:
        o_in.write(0, np.array([1, 2, 3, 4], dtype=np.int32))
        assert register(gc, "input_region", o_in, 64) is not None
        register(gc, "output_region", o_out, 64)
        gc.system_shared_memory_register(name="nooffset_region", key=o_nooff.key, byte_size=64)
        register(gc, "page_region", o_page, 64, offset=PAGE)

        # Status of all: a map by name; offset 0 is proto3's default.
        st = gc.system_shared_memory_status()
        assert status_map(st) == {
            "input_region": ("input_region", o_in.key, 0, 64),
            "nooffset_region": ("nooffset_region", o_nooff.key, 0, 64),
            "output_region": ("output_region", o_out.key, 0, 64),
            "page_region": ("page_region", o_page.key, PAGE, 64),
        }
        st = gc.system_shared_memory_status(name="output_region")
        assert status_map(st) == {"output_region": ("output_region", o_out.key, 0, 64)}
        expect(gc.system_shared_memory_status, SC.NOT_FOUND,
               "Unable to find system shared memory region: 'nope'", name="nope")

        register(gc, "g_region", o_g, 32)
        expect(register, SC.ALREADY_EXISTS, "shared memory region 'g_region' already in manager",
               gc, "g_region", o_g, 32)
        missing = f"/ifd_gshm_nope_{os.getpid()}"
        expect(gc.system_shared_memory_register, SC.INTERNAL,
               f"Unable to open shared memory region: '{missing}'",
               name="g_missing", key=missing, byte_size=32)
        assert "g_missing" not in status_map(gc.system_shared_memory_status())

        # Input and output in shared memory: an empty raw_output_contents
        # entry, the bytes in the region.
        req = shm_request(gc.pb, in_region="input_region", out_region="g_region", out_size=32)
        req.id = "shm-g"
        r = gc.model_infer(req)
        assert r.id == "shm-g" and r.model_name == "identity_int32" and r.model_version == "1"
        assert [(o.name, o.datatype, list(o.shape)) for o in r.outputs] == [("OUTPUT0", "INT32", [1, 4])]
        assert list(r.raw_output_contents) == [b""]
        assert list(o_g.read(0, np.int32, 4)) == [1, 2, 3, 4]

        gc.system_shared_memory_unregister(name="g_region")
        gc.system_shared_memory_unregister(name="nope")  # unknown: OK
        assert "g_region" not in status_map(gc.system_shared_memory_status())
        gc.system_shared_memory_unregister(name="output_region")
        assert set(status_map(gc.system_shared_memory_status())) == {
            "input_region", "nooffset_region", "page_region"}
        gc.system_shared_memory_unregister()
        assert status_map(gc.system_shared_memory_status()) == {}
        expect(gc.model_infer, SC.NOT_FOUND, "Unable to find shared memory region: 'input_region'",
               shm_request(gc.pb, in_region="input_region"))


# --------------------------------------------------------- registering ---

def test_register_errors(gc):
    """Triton's answers for bad offsets and sizes (section 5's HTTP rows,
    here with their gRPC codes)."""
    with Obj(8192) as o:
        for name, offset, size, text in [
            ("past", 8192 + PAGE, 64, "invalid args"),
            ("over", PAGE, 8192, "invalid args"),
            ("zero", 0, 0, "unable to process address spaceInvalid argument"),
            ("odd", 16, 64, "unable to process address spaceInvalid argument"),
        ]:
            n = unique(name)
            e = expect(register, SC.INVALID_ARGUMENT,
                       f"failed to register shared memory region '{n}': {text}",
                       gc, n, o, size, offset=offset)
            assert n not in status_map(gc.system_shared_memory_status()), g.describe(e)
    # A request that is not a SystemSharedMemoryRegisterRequest.
    e = g.rpc_error(gc.raw_unary, f"/{g.SERVICE}/SystemSharedMemoryRegister", b"\x0a\x05ab")
    assert e.code() == SC.INVALID_ARGUMENT, g.describe(e)


def test_several_regions_on_one_key_and_page_offset(gc):
    """Triton's defects (item 9) not reproduced: two regions on one key both
    work, and a region at offset 4096 reads the bytes at 4096 of the object."""
    a, b = unique("key_a"), unique("key_b")
    with Obj(3 * PAGE) as o:
        o.write(0, np.array([10, 11, 12, 13], dtype=np.int32))
        o.write(PAGE, np.array([20, 21, 22, 23], dtype=np.int32))
        register(gc, a, o, 64)
        register(gc, b, o, 64, offset=PAGE)
        try:
            for region, want in ((a, [10, 11, 12, 13]), (b, [20, 21, 22, 23])):
                r = gc.model_infer(shm_request(gc.pb, in_region=region))
                np.testing.assert_array_equal(g.outputs_of(r)["OUTPUT0"], [want])
            # Output into the page region lands at 4096 + 32 of the object.
            req = shm_request(gc.pb, in_region=a, out_region=b, out_offset=32, out_size=16)
            r = gc.model_infer(req)
            assert list(r.raw_output_contents) == [b""]
            assert list(o.read(PAGE + 32, np.int32, 4)) == [10, 11, 12, 13]
        finally:
            gc.system_shared_memory_unregister(name=a)
            gc.system_shared_memory_unregister(name=b)


def test_register_unregister_cycles_leave_no_mapping(srv, gc):
    """Register/unregister cycles leave no mapping of the object behind
    (unmapping completes before the unregister answers), and the server's
    mapping count does not grow with the cycles. A few lines of slack: the
    allocator of a sanitizer build maps memory of its own as it goes."""
    name = unique("cycle")
    cycles = 200
    with Obj(PAGE) as o:
        for _ in range(20):  # every thread-pool thread has run a job
            register(gc, name, o, PAGE)
            gc.system_shared_memory_unregister(name=name)
        before = len(server_maps(srv))
        for i in range(cycles):
            register(gc, name, o, PAGE)
            if i == 0:
                assert [line for line in server_maps(srv) if o.shm.name in line]
            gc.system_shared_memory_unregister(name=name)
        after = server_maps(srv)
        assert not [line for line in after if o.shm.name in line]
        assert len(after) - before < cycles // 10, (before, len(after))


# ----------------------------------------------------------- inference ---

@pytest.fixture
def regions(gc):
    """An input region (64 bytes holding 1, 2, 3, 4 as INT32) and an output
    region (64 bytes), unregistered after the test."""
    with Obj() as oi, Obj() as oo:
        oi.write(0, np.array([1, 2, 3, 4], dtype=np.int32))
        ri, ro = unique("in"), unique("out")
        register(gc, ri, oi, 64)
        register(gc, ro, oo, 64)
        try:
            yield ri, oi, ro, oo
        finally:
            gc.system_shared_memory_unregister(name=ri)
            gc.system_shared_memory_unregister(name=ro)


def test_input_in_shm_output_raw(gc, regions):
    ri, _, _, _ = regions
    r = gc.model_infer(shm_request(gc.pb, in_region=ri))
    np.testing.assert_array_equal(g.outputs_of(r)["OUTPUT0"], [[1, 2, 3, 4]])
    # At offset 8 of the region: the last two values.
    r = gc.model_infer(shm_request(gc.pb, shape=(1, 2), in_region=ri, in_size=8, in_offset=8))
    np.testing.assert_array_equal(g.outputs_of(r)["OUTPUT0"], [[3, 4]])


def test_output_in_shm_stream(gc, regions):
    """ModelStreamInfer answers a placed output the same way."""
    ri, _, ro, oo = regions
    req = shm_request(gc.pb, in_region=ri, out_region=ro, out_offset=16)
    out = list(gc.model_stream_infer(iter([req])))
    assert len(out) == 1 and out[0].error_message == "", out
    assert list(out[0].infer_response.raw_output_contents) == [b""]
    assert list(oo.read(16, np.int32, 4)) == [1, 2, 3, 4]


def test_stream_error_then_answer(gc, regions):
    """On a stream, a request naming an unknown region gets an error message
    and the stream goes on: the next request is answered."""
    ri, _, ro, oo = regions
    bad = shm_request(gc.pb, in_region="nope")
    bad.id = "bad"
    good = shm_request(gc.pb, in_region=ri, out_region=ro)
    good.id = "good"
    oo.write(0, np.zeros(4, dtype=np.int32))
    out = list(gc.model_stream_infer(iter([bad, good])))
    assert len(out) == 2, out
    assert out[0].error_message == "Unable to find shared memory region: 'nope'", out[0]
    assert out[0].infer_response.id == "bad"
    assert out[1].error_message == "" and out[1].infer_response.id == "good", out[1]
    assert list(out[1].infer_response.raw_output_contents) == [b""]
    assert list(oo.read(0, np.int32, 4)) == [1, 2, 3, 4]


def test_mixed_raw_typed_and_shm(gc, regions):
    """identity_multi with one input raw (or typed) and one in shared memory;
    one output raw, one in shared memory. raw_input_contents holds entries
    for the inputs not in shared memory only."""
    ri, oi, ro, oo = regions
    oi.write(16, np.array([7, 8, 9], dtype=np.int32))
    x = np.array([[0.5, -1.5]], dtype=np.float32)
    pb = gc.pb
    for typed in (False, True):
        req = pb.ModelInferRequest(model_name="identity_multi")
        t0 = req.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 2])
        if typed:
            t0.contents.fp32_contents.extend(x.flatten().tolist())
        else:
            req.raw_input_contents.append(x.tobytes())
        t1 = req.inputs.add(name="INPUT1", datatype="INT32", shape=[1, 3])
        place(t1, ri, 12, 16)
        req.outputs.add(name="OUTPUT0")
        place(req.outputs.add(name="OUTPUT1"), ro, 12, 4)
        oo.write(0, np.zeros(16, dtype=np.int32))
        r = gc.model_infer(req)
        assert [o.name for o in r.outputs] == ["OUTPUT0", "OUTPUT1"]
        assert len(r.raw_output_contents) == 2
        np.testing.assert_array_equal(np.frombuffer(r.raw_output_contents[0], np.float32), x.flatten())
        assert r.raw_output_contents[1] == b""
        assert list(oo.read(4, np.int32, 3)) == [7, 8, 9]
    # A raw entry for the input in shared memory too: one too many.
    req = pb.ModelInferRequest(model_name="identity_multi")
    req.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 2])
    place(req.inputs.add(name="INPUT1", datatype="INT32", shape=[1, 3]), ri, 12, 16)
    req.raw_input_contents.extend([x.tobytes(), np.array([7, 8, 9], np.int32).tobytes()])
    e = expect(gc.model_infer, SC.INVALID_ARGUMENT, None, req)
    assert "raw_input_contents" in e.details(), g.describe(e)


def test_inference_errors(gc, regions):
    ri, _, ro, _ = regions
    pb = gc.pb
    bad = f"Invalid offset + byte size for shared memory region: '{ri}'"
    cases = [
        # unknown regions
        (shm_request(pb, in_region="nope"), SC.NOT_FOUND, "Unable to find shared memory region: 'nope'"),
        (shm_request(pb, in_region=ri, out_region="nope"), SC.NOT_FOUND,
         "Unable to find shared memory region: 'nope'"),
        # bounds
        (shm_request(pb, shape=(1, 32), in_region=ri, in_size=128), SC.INVALID_ARGUMENT, bad),
        (shm_request(pb, in_region=ri, in_offset=56), SC.INVALID_ARGUMENT, bad),
        (shm_request(pb, in_region=ri, out_region=ro, out_size=128), SC.INVALID_ARGUMENT,
         f"Invalid offset + byte size for shared memory region: '{ro}'"),
        (shm_request(pb, in_region=ri, in_size=-16), SC.INVALID_ARGUMENT, bad),
        # A negative offset is a huge one as uint64 (as in Triton): past the
        # region's end, Triton's "Invalid offset" text.
        (shm_request(pb, in_region=ri, in_offset=-8), SC.INVALID_ARGUMENT,
         f"Invalid offset for shared memory region: '{ri}'"),
        (shm_request(pb, in_region=ri, in_offset=64), SC.INVALID_ARGUMENT,
         f"Invalid offset for shared memory region: '{ri}'"),
        # byte size not matching the shape (core's check)
        (shm_request(pb, in_region=ri, in_size=12), SC.INVALID_ARGUMENT,
         "[request id: <id_unknown>] input byte size mismatch for input 'INPUT0' for model "
         "'identity_int32'. Expected 16, got 12"),
    ]
    for req, code, text in cases:
        expect(gc.model_infer, code, text, req)

    # An output region too small for the output (the backend's buffer
    # request fails, Triton's INTERNAL).
    expect(gc.model_infer, SC.INTERNAL,
           "shared memory size specified with the request for output 'OUTPUT0' (8 bytes) should be at "
           "least 16 bytes to hold the results",
           shm_request(pb, in_region=ri, out_region=ro, out_size=8))

    # Triton's parameter rules (ParseSharedMemoryParams).
    def req_with(**params):
        req = shm_request(pb)
        for k, (kind, v) in params.items():
            setattr(req.inputs[0].parameters[k], kind, v)
        return req

    rules = [
        (dict(shared_memory_region=("string_param", ri)),
         "'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter "
         "for tensor 'INPUT0'"),
        (dict(shared_memory_byte_size=("int64_param", 16)),
         "'shared_memory_byte_size' can not be specified without 'shared_memory_region' parameter "
         "for tensor 'INPUT0'"),
        (dict(shared_memory_offset=("int64_param", 0)),
         "'shared_memory_offset' can not be specified without 'shared_memory_region' parameter "
         "for tensor 'INPUT0'"),
        (dict(shared_memory_region=("int64_param", 1), shared_memory_byte_size=("int64_param", 16)),
         "invalid value type for 'shared_memory_region' parameter for tensor 'INPUT0', expected "
         "string_param."),
        (dict(shared_memory_region=("string_param", ri), shared_memory_byte_size=("string_param", "16")),
         "invalid value type for 'shared_memory_byte_size' parameter for tensor 'INPUT0', expected "
         "int64_param."),
        (dict(shared_memory_region=("string_param", ri), shared_memory_byte_size=("int64_param", 16),
              shared_memory_offset=("uint64_param", 0)),
         "invalid value type for 'shared_memory_offset' parameter for tensor 'INPUT0', expected "
         "int64_param."),
    ]
    for params, text in rules:
        expect(gc.model_infer, SC.INVALID_ARGUMENT, text, req_with(**params))

    # Data given twice: typed contents and a region.
    req = shm_request(pb, in_region=ri)
    req.inputs[0].contents.int_contents.extend([1, 2, 3, 4])
    expect(gc.model_infer, SC.INVALID_ARGUMENT,
           "unexpected 'content' provided when using shared memory for input tensor 'INPUT0' for model "
           "'identity_int32'", req)
    # An output in shared memory cannot be a classification.
    req = shm_request(pb, in_region=ri, out_region=ro)
    req.outputs[0].parameters["classification"].int64_param = 2
    expect(gc.model_infer, SC.INVALID_ARGUMENT,
           "output can't set both 'shared_memory_region' and 'classification'", req)
    # The server goes on serving.
    r = gc.model_infer(shm_request(gc.pb, in_region=ri))
    np.testing.assert_array_equal(g.outputs_of(r)["OUTPUT0"], [[1, 2, 3, 4]])


def test_ensemble_input_and_output_in_shm(gc, regions):
    ri, _, ro, oo = regions
    req = shm_request(gc.pb, model="ensemble_identity", in_region=ri, out_region=ro, inp="IN", out="OUT")
    r = gc.model_infer(req)
    assert [(o.name, list(o.shape)) for o in r.outputs] == [("OUT", [1, 4])]
    assert list(r.raw_output_contents) == [b""]
    assert list(oo.read(0, np.int32, 4)) == [1, 2, 3, 4]


def test_unregister_while_in_use(srv, gc):
    """A region unregistered while a queued request uses it stays mapped
    until that request is done: the request reads its input and writes its
    output there, and the unregister answers OK at once."""
    ri, ro = unique("busy_in"), unique("busy_out")
    with Obj(PAGE) as oi, Obj(PAGE) as oo:
        oi.write(0, np.array([0], dtype=np.int32))  # sleep 0 ms
        register(gc, ri, oi, 4)
        register(gc, ro, oo, 4)
        pb = gc.pb
        # Hold the model's one instance.
        head = pb.ModelInferRequest(model_name="sleep_one", id="head")
        head.inputs.add(name="IN", datatype="INT32", shape=[1])
        head.raw_input_contents.append(np.array([1500], np.int32).tobytes())
        f_head = gc.model_infer_future(head)
        try:
            wait_log(srv, "sleep: request 'head' sleeping")
            req = shm_request(pb, model="sleep_one", shape=(1,), in_region=ri, in_size=4,
                              out_region=ro, out_size=4, inp="IN", out="OUT")
            req.id = "queued"
            f = gc.model_infer_future(req)
            wait_pending(srv, "sleep_one", 1)  # decoded: it holds both regions
            gc.system_shared_memory_unregister(name=ri)
            gc.system_shared_memory_unregister(name=ro)
            st = status_map(gc.system_shared_memory_status())
            assert ri not in st and ro not in st
            expect(gc.model_infer, SC.NOT_FOUND, f"Unable to find shared memory region: '{ri}'",
                   shm_request(pb, model="sleep_one", shape=(1,), in_region=ri, in_size=4, inp="IN",
                               out="OUT"))
            oo.write(0, np.array([-1], dtype=np.int32))
            r = f.result(timeout=WAIT_S)
            assert list(r.raw_output_contents) == [b""]
            assert list(oo.read(0, np.int32, 1)) == [0]
        finally:
            f_head.result(timeout=WAIT_S)


# ---------------------------------------------------------------- CUDA ---

class CudaRt:
    """The few CUDA runtime calls a client needs to share device memory
    (through ctypes: no Python CUDA package), or `None` attributes when the
    runtime or a device is missing."""

    H2D, D2H = 1, 2

    def __init__(self):
        self.lib = None
        self.devices = 0
        for name in ("libcudart.so", "/usr/local/cuda/lib64/libcudart.so"):
            try:
                self.lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if self.lib is None:
            return
        n = ctypes.c_int(0)
        if self.lib.cudaGetDeviceCount(ctypes.byref(n)) == 0:
            self.devices = n.value

    def check(self, rc, what):
        assert rc == 0, f"{what} failed: cudaError {rc}"

    def malloc(self, n):
        p = ctypes.c_void_p()
        self.check(self.lib.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)), "cudaMalloc")
        return p

    def free(self, p):
        self.lib.cudaFree(p)

    def ipc_handle(self, p):
        h = ctypes.create_string_buffer(64)
        self.check(self.lib.cudaIpcGetMemHandle(h, p), "cudaIpcGetMemHandle")
        return h.raw

    def to_device(self, p, arr):
        b = np.ascontiguousarray(arr).tobytes()
        self.check(self.lib.cudaMemcpy(p, b, ctypes.c_size_t(len(b)), self.H2D), "cudaMemcpy")

    def from_device(self, p, dtype, count):
        n = count * np.dtype(dtype).itemsize
        b = ctypes.create_string_buffer(n)
        self.check(self.lib.cudaMemcpy(b, p, ctypes.c_size_t(n), self.D2H), "cudaMemcpy")
        return np.frombuffer(b.raw, dtype=dtype)


_CUDA = []


def cuda():
    if not _CUDA:
        _CUDA.append(CudaRt())
    return _CUDA[0]


@pytest.mark.gpu
def test_cuda_shared_memory_on_gpu(gc):
    """With a GPU: a region from another process's device allocation (its
    raw CUDA IPC handle) registers, shows in the CUDA status (not the
    system one), refuses its name twice, is resolved by requests, and
    unregisters."""
    rt = cuda()
    if rt.devices == 0:
        pytest.skip("no CUDA device (or no libcudart): CUDA shared memory needs a GPU (make test-gpu)")
    name_in, name_out = unique("cuda_in"), unique("cuda_out")
    d_in, d_out = rt.malloc(64), rt.malloc(64)
    try:
        rt.to_device(d_in, np.array([5, 6, 7, 8], dtype=np.int32))
        rt.to_device(d_out, np.zeros(16, dtype=np.int32))
        gc.cuda_shared_memory_register(name=name_in, raw_handle=rt.ipc_handle(d_in), device_id=0, byte_size=64)
        gc.cuda_shared_memory_register(name=name_out, raw_handle=rt.ipc_handle(d_out), device_id=0,
                                       byte_size=64)
        try:
            st = gc.cuda_shared_memory_status(name=name_in)
            assert {k: (v.name, v.device_id, v.byte_size) for k, v in st.regions.items()} == {
                name_in: (name_in, 0, 64)}
            assert name_in not in status_map(gc.system_shared_memory_status())
            expect(gc.cuda_shared_memory_register, SC.ALREADY_EXISTS,
                   f"shared memory region '{name_in}' already in manager",
                   name=name_in, raw_handle=rt.ipc_handle(d_in), device_id=0, byte_size=64)
            # Requests resolve CUDA regions like system ones (bounds checked
            # against the region). Inference into device memory needs a GPU
            # backend (the identity backend refuses device buffers): the
            # CUDA test backend's tests cover it.
            expect(gc.model_infer, SC.INVALID_ARGUMENT,
                   f"Invalid offset + byte size for shared memory region: '{name_in}'",
                   shm_request(gc.pb, in_region=name_in, in_offset=56))
            assert list(rt.from_device(d_in, np.int32, 4)) == [5, 6, 7, 8]
        finally:
            gc.cuda_shared_memory_unregister(name=name_in)
            gc.cuda_shared_memory_unregister(name=name_out)
        assert len(gc.cuda_shared_memory_status().regions) == 0
    finally:
        rt.free(d_in)
        rt.free(d_out)


def test_cuda_shared_memory_without_gpu(gc):
    """Item 12 of "Read first": on a server without a GPU, CUDA register is
    refused with INVALID_ARGUMENT, status is empty, the status of one region
    is NOT_FOUND (Triton says "system"), unregister answers OK."""
    if cuda().devices > 0:
        pytest.skip("a GPU is present: CUDA shared memory is tested by test_cuda_shared_memory_on_gpu")
    expect(gc.cuda_shared_memory_register, SC.INVALID_ARGUMENT,
           "failed to register CUDA shared memory region: 'cuda_region', GPUs not supported",
           name="cuda_region", raw_handle=bytes(64), device_id=0, byte_size=64)
    assert len(gc.cuda_shared_memory_status().regions) == 0
    expect(gc.cuda_shared_memory_status, SC.NOT_FOUND,
           "Unable to find system shared memory region: 'cuda_region'", name="cuda_region")
    gc.cuda_shared_memory_unregister(name="cuda_region")
    gc.cuda_shared_memory_unregister()
    # The system table is not the CUDA one.
    name = unique("sys_not_cuda")
    with Obj(PAGE) as o:
        register(gc, name, o, 64)
        try:
            expect(gc.cuda_shared_memory_status, SC.NOT_FOUND,
                   f"Unable to find system shared memory region: '{name}'", name=name)
            gc.cuda_shared_memory_unregister(name=name)  # not a CUDA region: untouched
            assert name in status_map(gc.system_shared_memory_status())
        finally:
            gc.system_shared_memory_unregister(name=name)
