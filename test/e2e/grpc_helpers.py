"""Helpers for the gRPC end-to-end tests.

* Stubs: the Python message modules are generated at test time from the
  repository's proto/grpc_service.proto, proto/health.proto and
  proto/model_config.proto with `protoc --python_out` (protobuf-compiler 3.21
  matches Debian's python3-protobuf). No service stubs are generated: calls go
  through grpcio's generic API (channel.unary_unary / stream_stream with the
  method path), wrapped by `Client`, one method per RPC.
* Requests and responses: build a ModelInferRequest from (name, datatype,
  shape, value) tuples, with raw_input_contents or typed `contents`; decode
  outputs to numpy.
* Raw HTTP/2: `H2Conn` speaks HTTP/2 frames by hand over a socket (requests are
  HPACK-encoded by hand: literal without indexing, literal names); responses
  are HPACK-decoded with libnghttp2's inflater through ctypes when that
  library can be loaded (the server links it), else only frame structure is
  reported.

Everything talks to 127.0.0.1 only.
"""

import ctypes
import ctypes.util
import importlib
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import grpc
import numpy as np
import pytest

import e2e_helpers as h

PROTO_FILES = ("proto/model_config.proto", "proto/grpc_service.proto", "proto/health.proto")

SERVICE = "inference.GRPCInferenceService"
HEALTH_SERVICE = "grpc.health.v1.Health"

# Generous, never asserted on: only there so that nothing can hang.
RPC_TIMEOUT_S = 20
MAX_MESSAGE = 256 * 1024 * 1024
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.max_receive_message_length", MAX_MESSAGE),
    # Each test client gets its own connection (no subchannel sharing between
    # channels), so "32 channels" means 32 TCP connections.
    ("grpc.use_local_subchannel_pool", 1),
]

# RPC name -> (request message, response message); all in grpc_service.proto.
RPCS = {
    "ServerLive": ("ServerLiveRequest", "ServerLiveResponse"),
    "ServerReady": ("ServerReadyRequest", "ServerReadyResponse"),
    "ModelReady": ("ModelReadyRequest", "ModelReadyResponse"),
    "ServerMetadata": ("ServerMetadataRequest", "ServerMetadataResponse"),
    "ModelMetadata": ("ModelMetadataRequest", "ModelMetadataResponse"),
    "ModelInfer": ("ModelInferRequest", "ModelInferResponse"),
    "ModelStreamInfer": ("ModelInferRequest", "ModelStreamInferResponse"),
    "ModelConfig": ("ModelConfigRequest", "ModelConfigResponse"),
    "ModelStatistics": ("ModelStatisticsRequest", "ModelStatisticsResponse"),
    "RepositoryIndex": ("RepositoryIndexRequest", "RepositoryIndexResponse"),
    "RepositoryModelLoad": ("RepositoryModelLoadRequest", "RepositoryModelLoadResponse"),
    "RepositoryModelUnload": ("RepositoryModelUnloadRequest", "RepositoryModelUnloadResponse"),
    "SystemSharedMemoryStatus": ("SystemSharedMemoryStatusRequest", "SystemSharedMemoryStatusResponse"),
    "SystemSharedMemoryRegister": ("SystemSharedMemoryRegisterRequest", "SystemSharedMemoryRegisterResponse"),
    "SystemSharedMemoryUnregister": ("SystemSharedMemoryUnregisterRequest",
                                     "SystemSharedMemoryUnregisterResponse"),
    "CudaSharedMemoryStatus": ("CudaSharedMemoryStatusRequest", "CudaSharedMemoryStatusResponse"),
    "CudaSharedMemoryRegister": ("CudaSharedMemoryRegisterRequest", "CudaSharedMemoryRegisterResponse"),
    "CudaSharedMemoryUnregister": ("CudaSharedMemoryUnregisterRequest", "CudaSharedMemoryUnregisterResponse"),
    "TraceSetting": ("TraceSettingRequest", "TraceSettingResponse"),
    "LogSettings": ("LogSettingsRequest", "LogSettingsResponse"),
}


# ------------------------------------------------------------- stubs ---

class Stubs:
    """The generated modules: pb (grpc_service_pb2), mc (model_config_pb2),
    health (health_pb2)."""

    def __init__(self, pb, mc, health, out_dir):
        self.pb = pb
        self.mc = mc
        self.health = health
        self.out_dir = Path(out_dir)


def protoc_binary():
    exe = shutil.which("protoc") or "/usr/bin/protoc"
    if not Path(exe).is_file():
        raise AssertionError("protoc not found: install protobuf-compiler (apt-get install protobuf-compiler)")
    return exe


def generate_stubs(out_dir, proto_root=h.REPO_ROOT, files=PROTO_FILES):
    """protoc --python_out=out_dir -I proto_root files...; returns the Stubs.
    The modules land in out_dir/proto/ and are imported as proto.<name>_pb2."""
    proto_root = Path(proto_root)
    out_dir = Path(out_dir)
    missing = [f for f in files if not (proto_root / f).is_file()]
    if missing:
        raise AssertionError(f"proto file(s) missing under {proto_root}: {', '.join(missing)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "proto").mkdir(exist_ok=True)
    (out_dir / "proto" / "__init__.py").write_text("")
    cmd = [protoc_binary(), f"-I{proto_root}", f"--python_out={out_dir}", *files]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(proto_root))
    if r.returncode != 0:
        raise AssertionError(
            f"protoc failed ({r.returncode}): {' '.join(cmd)}\n"
            f"{r.stdout.decode('utf-8', 'replace')}{r.stderr.decode('utf-8', 'replace')}")
    return load_stubs(out_dir)


def load_stubs(out_dir):
    out_dir = str(out_dir)
    if out_dir not in sys.path:
        sys.path.insert(0, out_dir)
    # The repository root may be on sys.path too (python -m pytest adds the
    # cwd) with its own proto/ folder (no __init__.py, no *_pb2): make sure
    # `proto` resolves to the generated package.
    for name in [m for m in sys.modules if m == "proto" or m.startswith("proto.")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    mc = importlib.import_module("proto.model_config_pb2")
    pb = importlib.import_module("proto.grpc_service_pb2")
    health = importlib.import_module("proto.health_pb2")
    return Stubs(pb, mc, health, out_dir)


# ---------------------------------------------------------- fixtures ---
# Test modules import these (`from grpc_helpers import grpc_stubs, grpc_client`).
# The generated modules register in protobuf's default descriptor pool, so they
# are generated and imported once per process whichever module asks first.

_STUBS = []


@pytest.fixture(scope="session")
def grpc_stubs(tmp_path_factory):
    if not _STUBS:
        _STUBS.append(generate_stubs(tmp_path_factory.mktemp("grpc-stubs")))
    return _STUBS[0]


def grpc_target(server):
    return f"127.0.0.1:{server.grpc_port}"


def connect(server, stubs, timeout=5.0):
    """A Client to the server's gRPC port, once ServerLive answers (fails fast
    with the server's log tail when the port does not speak gRPC)."""
    c = Client(stubs, grpc_target(server))
    deadline = time.monotonic() + timeout
    while True:
        try:
            r = c.server_live(timeout=2)
            assert r.live is True, f"ServerLive: {r!r}"
            return c
        except grpc.RpcError as e:
            if time.monotonic() > deadline or not server.alive():
                c.close()
                raise AssertionError(
                    f"gRPC ServerLive on {grpc_target(server)} failed: {describe(e)}\n"
                    f"--- server log tail ---\n{server.log_tail()}")
            time.sleep(0.1)


@pytest.fixture(scope="session")
def grpc_client(server, grpc_stubs):
    c = connect(server, grpc_stubs)
    yield c
    c.close()


# ------------------------------------------------------------ client ---

class Client:
    """A grpcio channel to the server with one method per RPC.

    Unary methods take the request message (or keyword fields for it) and
    return the response message; they raise grpc.RpcError on a non-OK status.
    `*_future` variants return the grpc future."""

    def __init__(self, stubs, target, options=None):
        self.stubs = stubs
        self.pb = stubs.pb
        self.target = target
        self.channel = grpc.insecure_channel(target, options=list(options or CHANNEL_OPTIONS))
        self._calls = {}

    def close(self):
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    # -- plumbing
    def _req(self, rpc, req, fields):
        if req is None:
            req = getattr(self.pb, RPCS[rpc][0])(**fields)
        else:
            assert not fields, "pass either a request message or its fields"
        return req

    def _unary(self, rpc):
        c = self._calls.get(rpc)
        if c is None:
            resp_cls = getattr(self.pb, RPCS[rpc][1])
            c = self.channel.unary_unary(f"/{SERVICE}/{rpc}",
                                         request_serializer=lambda m: m.SerializeToString(),
                                         response_deserializer=resp_cls.FromString)
            self._calls[rpc] = c
        return c

    def call(self, rpc, req=None, timeout=RPC_TIMEOUT_S, metadata=None, **fields):
        """Any unary RPC of the service by name."""
        return self._unary(rpc)(self._req(rpc, req, fields), timeout=timeout, metadata=metadata)

    def future(self, rpc, req=None, timeout=RPC_TIMEOUT_S, metadata=None, **fields):
        return self._unary(rpc).future(self._req(rpc, req, fields), timeout=timeout, metadata=metadata)

    def raw_unary(self, path, payload, timeout=RPC_TIMEOUT_S):
        """Send `payload` bytes as the request message to `path`; the response
        message comes back as bytes."""
        c = self.channel.unary_unary(path, request_serializer=lambda b: b, response_deserializer=lambda b: b)
        return c(payload, timeout=timeout)

    # -- one method per RPC
    def server_live(self, **kw):
        return self.call("ServerLive", **kw)

    def server_ready(self, **kw):
        return self.call("ServerReady", **kw)

    def model_ready(self, name, version="", **kw):
        return self.call("ModelReady", name=name, version=version, **kw)

    def server_metadata(self, **kw):
        return self.call("ServerMetadata", **kw)

    def model_metadata(self, name, version="", **kw):
        return self.call("ModelMetadata", name=name, version=version, **kw)

    def model_config(self, name, version="", **kw):
        return self.call("ModelConfig", name=name, version=version, **kw)

    def model_statistics(self, name="", version="", **kw):
        return self.call("ModelStatistics", name=name, version=version, **kw)

    def repository_index(self, repository_name="", ready=False, **kw):
        return self.call("RepositoryIndex", repository_name=repository_name, ready=ready, **kw)

    def repository_model_load(self, model_name, repository_name="", **kw):
        return self.call("RepositoryModelLoad", model_name=model_name, repository_name=repository_name, **kw)

    def repository_model_unload(self, model_name, repository_name="", **kw):
        return self.call("RepositoryModelUnload", model_name=model_name, repository_name=repository_name, **kw)

    def system_shared_memory_status(self, name="", **kw):
        return self.call("SystemSharedMemoryStatus", name=name, **kw)

    def system_shared_memory_register(self, **kw):
        return self.call("SystemSharedMemoryRegister", **kw)

    def system_shared_memory_unregister(self, name="", **kw):
        return self.call("SystemSharedMemoryUnregister", name=name, **kw)

    def cuda_shared_memory_status(self, name="", **kw):
        return self.call("CudaSharedMemoryStatus", name=name, **kw)

    def cuda_shared_memory_register(self, **kw):
        return self.call("CudaSharedMemoryRegister", **kw)

    def cuda_shared_memory_unregister(self, name="", **kw):
        return self.call("CudaSharedMemoryUnregister", name=name, **kw)

    def trace_setting(self, **kw):
        return self.call("TraceSetting", **kw)

    def log_settings(self, **kw):
        return self.call("LogSettings", **kw)

    def model_infer(self, req, timeout=RPC_TIMEOUT_S, metadata=None):
        return self._unary("ModelInfer")(req, timeout=timeout, metadata=metadata)

    def model_infer_future(self, req, timeout=RPC_TIMEOUT_S, metadata=None):
        return self._unary("ModelInfer").future(req, timeout=timeout, metadata=metadata)

    def model_stream_infer(self, request_iterator, timeout=RPC_TIMEOUT_S, metadata=None):
        """Bidirectional stream: returns the call (iterate it for
        ModelStreamInferResponse messages; .code() once it ended)."""
        c = self.channel.stream_stream(f"/{SERVICE}/ModelStreamInfer",
                                       request_serializer=lambda m: m.SerializeToString(),
                                       response_deserializer=self.pb.ModelStreamInferResponse.FromString)
        return c(request_iterator, timeout=timeout, metadata=metadata)

    def health_check(self, service="", timeout=RPC_TIMEOUT_S):
        hp = self.stubs.health
        c = self.channel.unary_unary(f"/{HEALTH_SERVICE}/Check",
                                     request_serializer=lambda m: m.SerializeToString(),
                                     response_deserializer=hp.HealthCheckResponse.FromString)
        return c(hp.HealthCheckRequest(service=service), timeout=timeout)


def rpc_error(fn, *a, **kw):
    """Run fn expecting a grpc.RpcError; returns it (fails when fn succeeds)."""
    try:
        resp = fn(*a, **kw)
    except grpc.RpcError as e:
        return e
    raise AssertionError(f"expected an RPC error, got a response: {str(resp)[:500]!r}")


def describe(err):
    return f"{err.code()}: {err.details()!r}"


# --------------------------------------------------- infer requests ---

# datatype -> InferTensorContents field for typed contents.
CONTENTS_FIELD = {
    "BOOL": "bool_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
    "BYTES": "bytes_contents",
}


def _as_bytes(x):
    if isinstance(x, bytes):
        return x
    if isinstance(x, np.bytes_):
        return bytes(x)
    return str(x).encode()


def infer_request(pb, model, inputs, outputs=None, request_id=None, version=None, typed=False,
                  raw_override=None):
    """inputs: list of (name, datatype, shape, value).
    typed=False: data in raw_input_contents (one entry per input, in order);
    typed=True: data in each input's `contents`.
    raw_override: a list of bytes used as raw_input_contents instead (for
    count/size mismatch tests)."""
    req = pb.ModelInferRequest(model_name=model)
    if version is not None:
        req.model_version = str(version)
    if request_id is not None:
        req.id = request_id
    for name, datatype, shape, value in inputs:
        t = req.inputs.add(name=name, datatype=datatype, shape=list(shape))
        if raw_override is not None:
            continue
        if typed:
            field = CONTENTS_FIELD[datatype]
            flat = list(np.asarray(value, dtype=object).flatten())
            if datatype == "BYTES":
                getattr(t.contents, field).extend(_as_bytes(v) for v in flat)
            elif datatype == "BOOL":
                getattr(t.contents, field).extend(bool(v) for v in flat)
            elif datatype in ("FP32", "FP64"):
                getattr(t.contents, field).extend(float(v) for v in flat)
            else:
                getattr(t.contents, field).extend(int(v) for v in flat)
        else:
            req.raw_input_contents.append(h.tensor_to_raw(datatype, value))
    if raw_override is not None:
        req.raw_input_contents.extend(raw_override)
    for name in outputs or ():
        req.outputs.add(name=name)
    return req


def _typed_output(out):
    field = CONTENTS_FIELD.get(out.datatype)
    assert field is not None, f"output {out.name}: no typed contents for {out.datatype}"
    vals = list(getattr(out.contents, field))
    if out.datatype == "BYTES":
        return [bytes(v) for v in vals]
    return np.asarray(vals, dtype=h.NP_DTYPES[out.datatype]).reshape(list(out.shape))


def outputs_of(resp, require_raw=True):
    """{output name: numpy array (list of bytes for BYTES)} of a ModelInferResponse.
    require_raw: the data must be in raw_output_contents, one entry per output."""
    outs = list(resp.outputs)
    raw = list(resp.raw_output_contents)
    if require_raw or raw:
        assert len(raw) == len(outs), \
            f"{len(raw)} raw_output_contents for {len(outs)} outputs ({[o.name for o in outs]})"
    result = {}
    for i, out in enumerate(outs):
        if raw:
            assert not out.HasField("contents"), f"output {out.name}: both raw and typed contents"
            arr = h.raw_to_tensor(out.datatype, raw[i], list(out.shape))
            if out.datatype == "BYTES":
                n = int(np.prod(list(out.shape))) if len(out.shape) else 1
                assert len(arr) == n, f"output {out.name}: {len(arr)} BYTES elements for shape {list(out.shape)}"
        else:
            arr = _typed_output(out)
        assert out.name not in result, f"output {out.name} twice"
        result[out.name] = arr
    return result


# -------------------------------------------------------- raw HTTP/2 ---

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
FLAG_END_STREAM = 0x1
FLAG_ACK = 0x1
FLAG_END_HEADERS = 0x4
FLAG_PADDED = 0x8
FLAG_PRIORITY = 0x20


def frame(ftype, flags, stream_id, payload=b""):
    n = len(payload)
    return struct.pack(">BHBBI", (n >> 16) & 0xFF, n & 0xFFFF, ftype, flags, stream_id & 0x7FFFFFFF) + payload


def _hpack_int(value, prefix_bits, first_byte=0):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first_byte | value])
    out = bytearray([first_byte | limit])
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def hpack_literal(name, value):
    """Literal header field without indexing, new (literal) name, no Huffman."""
    name = name.encode() if isinstance(name, str) else name
    value = value.encode() if isinstance(value, str) else value
    return b"\x00" + _hpack_int(len(name), 7) + name + _hpack_int(len(value), 7) + value


def grpc_request_headers(path, authority="127.0.0.1", extra=()):
    hdrs = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", authority),
            ("content-type", "application/grpc"), ("te", "trailers")]
    hdrs += list(extra)
    return b"".join(hpack_literal(n, v) for n, v in hdrs)


def grpc_message(payload, compressed=False):
    """A length-prefixed gRPC message."""
    return struct.pack(">BI", 1 if compressed else 0, len(payload)) + payload


class _NV(ctypes.Structure):
    _fields_ = [("name", ctypes.POINTER(ctypes.c_uint8)), ("value", ctypes.POINTER(ctypes.c_uint8)),
                ("namelen", ctypes.c_size_t), ("valuelen", ctypes.c_size_t), ("flags", ctypes.c_uint8)]


_NGHTTP2 = None


def _nghttp2():
    global _NGHTTP2
    if _NGHTTP2 is None:
        lib = False
        names = [ctypes.util.find_library("nghttp2"), "libnghttp2.so.14", "libnghttp2.so"]
        for n in names:
            if not n:
                continue
            try:
                lib = ctypes.CDLL(n)
                break
            except OSError:
                continue
        if lib:
            lib.nghttp2_hd_inflate_new.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
            lib.nghttp2_hd_inflate_new.restype = ctypes.c_int
            lib.nghttp2_hd_inflate_del.argtypes = [ctypes.c_void_p]
            lib.nghttp2_hd_inflate_del.restype = None
            lib.nghttp2_hd_inflate_hd2.argtypes = [ctypes.c_void_p, ctypes.POINTER(_NV), ctypes.POINTER(ctypes.c_int),
                                                   ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
            lib.nghttp2_hd_inflate_hd2.restype = ctypes.c_ssize_t
            lib.nghttp2_hd_inflate_end_headers.argtypes = [ctypes.c_void_p]
            lib.nghttp2_hd_inflate_end_headers.restype = ctypes.c_int
        _NGHTTP2 = lib
    return _NGHTTP2 or None


class HpackDecoder:
    """HPACK decoding with libnghttp2's inflater (one per connection: the
    dynamic table is per connection). `available` is False when libnghttp2
    cannot be loaded; decode() then returns None."""

    def __init__(self):
        self.lib = _nghttp2()
        self.ptr = ctypes.c_void_p()
        self.available = bool(self.lib) and self.lib.nghttp2_hd_inflate_new(ctypes.byref(self.ptr)) == 0

    def close(self):
        if self.available and self.ptr:
            self.lib.nghttp2_hd_inflate_del(self.ptr)
            self.ptr = ctypes.c_void_p()
            self.available = False

    def decode(self, block):
        """A complete header block -> list of (name, value) str pairs."""
        if not self.available:
            return None
        out = []
        buf = ctypes.create_string_buffer(block, len(block))
        base = ctypes.addressof(buf)
        off = 0
        while True:
            nv = _NV()
            flags = ctypes.c_int(0)
            rest = len(block) - off
            rv = self.lib.nghttp2_hd_inflate_hd2(self.ptr, ctypes.byref(nv), ctypes.byref(flags),
                                                 ctypes.c_char_p(base + off), rest, 1)
            if rv < 0:
                raise AssertionError(f"HPACK decoding of the server's header block failed ({rv}): {block!r}")
            off += rv
            if flags.value & 0x02:  # NGHTTP2_HD_INFLATE_EMIT
                out.append((ctypes.string_at(nv.name, nv.namelen).decode("latin-1"),
                            ctypes.string_at(nv.value, nv.valuelen).decode("latin-1")))
            if flags.value & 0x01:  # NGHTTP2_HD_INFLATE_FINAL
                self.lib.nghttp2_hd_inflate_end_headers(self.ptr)
                break
            if not (flags.value & 0x02) and off >= len(block):
                break
        return out


class StreamResult:
    """What the server sent on one stream (see H2Conn.collect)."""

    def __init__(self):
        self.header_blocks = []   # list of (decoded list of (name, value) or None, end_stream)
        self.data = b""
        self.data_frames = 0
        self.rst = None            # RST_STREAM error code
        self.ended = False         # END_STREAM seen from the server
        self.goaway = None         # (last_stream_id, error code) if a GOAWAY came
        self.eof = False           # the connection closed

    def headers(self):
        """All decoded header fields of the stream (headers and trailers), or None
        when HPACK decoding is unavailable."""
        out = []
        for block, _ in self.header_blocks:
            if block is None:
                return None
            out += block
        return out

    def header(self, name):
        hs = self.headers()
        if hs is None:
            return None
        vals = [v for n, v in hs if n == name]
        return vals[-1] if vals else None

    def grpc_messages(self):
        msgs, i = [], 0
        while i < len(self.data):
            assert i + 5 <= len(self.data), "truncated gRPC message prefix in the response"
            flag, n = struct.unpack(">BI", self.data[i:i + 5])
            assert flag == 0, "compressed response message"
            assert i + 5 + n <= len(self.data), "truncated gRPC message in the response"
            msgs.append(self.data[i + 5:i + 5 + n])
            i += 5 + n
        return msgs

    def __repr__(self):
        return (f"<StreamResult headers={self.header_blocks!r} data_frames={self.data_frames} "
                f"data={self.data[:100]!r} rst={self.rst} ended={self.ended} goaway={self.goaway} eof={self.eof}>")


class H2Conn:
    """One TCP connection to the gRPC port, speaking HTTP/2 by hand."""

    def __init__(self, port, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.hpack = HpackDecoder()
        self._pending_headers = {}   # stream -> (block bytes, end_stream) awaiting CONTINUATION
        self.streams = {}            # stream id -> StreamResult
        self.goaway = None           # (last stream id, error code) of the server's GOAWAY

    def close(self):
        self.hpack.close()
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def start(self, settings=()):
        """Client preface and a SETTINGS frame (pairs of (id, value))."""
        payload = b"".join(struct.pack(">HI", k, v) for k, v in settings)
        self.send(PREFACE + frame(SETTINGS, 0, 0, payload))

    def send_headers(self, stream_id, path, end_stream=False, extra=()):
        flags = FLAG_END_HEADERS | (FLAG_END_STREAM if end_stream else 0)
        self.send(frame(HEADERS, flags, stream_id, grpc_request_headers(path, extra=extra)))

    def send_data(self, stream_id, data, end_stream=False):
        self.send(frame(DATA, FLAG_END_STREAM if end_stream else 0, stream_id, data))

    def _recv(self):
        try:
            chunk = self.sock.recv(1 << 16)
        except (ConnectionResetError, BrokenPipeError):
            chunk = b""
        if not chunk:
            raise EOFError
        self.buf += chunk

    def read_frame(self):
        """(type, flags, stream id, payload); EOFError when the connection closed;
        socket.timeout when nothing came in time."""
        while len(self.buf) < 9:
            self._recv()
        hi, lo, ftype, flags, sid = struct.unpack(">BHBBI", self.buf[:9])
        n = (hi << 16) | lo
        while len(self.buf) < 9 + n:
            self._recv()
        payload = self.buf[9:9 + n]
        self.buf = self.buf[9 + n:]
        return ftype, flags, sid & 0x7FFFFFFF, payload

    def _stream(self, sid):
        res = self.streams.get(sid)
        if res is None:
            res = self.streams[sid] = StreamResult()
        return res

    def _done(self, res):
        return res.ended or res.rst is not None

    def collect(self, stream_id, timeout=10.0):
        """Read frames until `stream_id` ends (END_STREAM or RST_STREAM from the
        server), an error GOAWAY or EOF arrives, or `timeout` passes
        (AssertionError). Frames of other streams are kept for their own
        collect(). SETTINGS are acknowledged and PINGs answered on the way."""
        res = self._stream(stream_id)
        deadline = time.monotonic() + timeout
        while not self._done(res):
            if self.goaway is not None:
                res.goaway = self.goaway
                if self.goaway[0] < stream_id or self.goaway[1] != 0:
                    return res
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no end of stream {stream_id} within {timeout}s: {res!r}")
            self.sock.settimeout(left)
            try:
                ftype, flags, sid, payload = self.read_frame()
            except EOFError:
                res.eof = True
                return res
            except socket.timeout:
                raise AssertionError(f"no end of stream {stream_id} within {timeout}s: {res!r}")
            self._handle(ftype, flags, sid, payload)
        return res

    def _ack(self, data):
        # The server may already have closed (it answered a protocol error
        # with GOAWAY): an ACK that cannot be sent is no failure, the frames
        # still to read say what happened.
        try:
            self.send(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _handle(self, ftype, flags, sid, payload):
        if ftype == SETTINGS and not flags & FLAG_ACK:
            self._ack(frame(SETTINGS, FLAG_ACK, 0))
        elif ftype == PING and not flags & FLAG_ACK:
            self._ack(frame(PING, FLAG_ACK, 0, payload))
        elif ftype == GOAWAY:
            last, code = struct.unpack(">II", payload[:8])
            self.goaway = (last & 0x7FFFFFFF, code)
        elif ftype in (HEADERS, CONTINUATION):
            if ftype == HEADERS:
                p = payload
                pad = 0
                if flags & FLAG_PADDED:
                    pad = p[0]
                    p = p[1:]
                if flags & FLAG_PRIORITY:
                    p = p[5:]
                if pad:
                    p = p[:-pad]
                block, end_stream = p, bool(flags & FLAG_END_STREAM)
            else:
                prev, end_stream = self._pending_headers.pop(sid, (b"", False))
                block = prev + payload
            if not flags & FLAG_END_HEADERS:
                self._pending_headers[sid] = (block, end_stream)
                return
            # Every block is decoded, in order: the HPACK dynamic table is per connection.
            decoded = self.hpack.decode(block) if self.hpack.available else None
            res = self._stream(sid)
            res.header_blocks.append((decoded, end_stream))
            if end_stream:
                res.ended = True
        elif ftype == DATA:
            p = payload
            if flags & FLAG_PADDED:
                p = p[1:len(p) - p[0]]
            res = self._stream(sid)
            res.data += p
            res.data_frames += 1
            if payload:
                # Keep flow control open for big responses.
                inc = struct.pack(">I", len(payload))
                self.send(frame(WINDOW_UPDATE, 0, 0, inc) + frame(WINDOW_UPDATE, 0, sid, inc))
            if flags & FLAG_END_STREAM:
                res.ended = True
        elif ftype == RST_STREAM:
            self._stream(sid).rst = struct.unpack(">I", payload[:4])[0]

    def wait_closed(self, timeout=10.0):
        """True when the server closes the connection within timeout (frames it
        sends before that, e.g. SETTINGS and GOAWAY, are read and handled;
        bytes that are not HTTP/2 frames are dropped); False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sock.settimeout(left)
            try:
                self._recv()
            except EOFError:
                return True
            except socket.timeout:
                return False
            while len(self.buf) >= 9:
                hi, lo, ftype, flags, sid = struct.unpack(">BHBBI", self.buf[:9])
                n = (hi << 16) | lo
                if ftype > CONTINUATION or n > (1 << 20):
                    self.buf = b""          # not HTTP/2 (e.g. an HTTP/1.1 answer)
                    break
                if len(self.buf) < 9 + n:
                    break
                payload, self.buf = self.buf[9:9 + n], self.buf[9 + n:]
                if ftype == GOAWAY:
                    last, code = struct.unpack(">II", payload[:8])
                    self.goaway = (last & 0x7FFFFFFF, code)
