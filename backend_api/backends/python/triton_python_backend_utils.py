# backend_api/backends/python/triton_python_backend_utils.py - pb_utils.
#
# What `import triton_python_backend_utils as pb_utils` finds inside a model
# of inferd's Python backend: Triton's documented model.py API (Tensor,
# InferenceRequest, InferenceResponse, TritonError, ...) and the stub's main
# loop (_stub_main), which talks to libtriton_python.so over the socket and
# the shared-memory segment described in ipc.h. Inputs are numpy arrays over
# the segment (no copy); outputs are written into it after execute.
# Not in this slice: decoupled models, BLS, Logger, MetricFamily,
# auto_complete_config.

import importlib.util
import json
import mmap
import os
import socket
import struct
import sys
import traceback

import numpy as np

# Message types; they match backend_api/backends/python/ipc.h.
MSG_INIT = 1
MSG_INIT_OK = 2
MSG_ERROR = 3
MSG_EXECUTE = 4
MSG_RESULT = 5
MSG_FINALIZE = 6
MSG_FINALIZE_OK = 7
_HDR = struct.Struct("<IIQ")

_TRITON_TO_NP = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16,
    "UINT32": np.uint32, "UINT64": np.uint64, "INT8": np.int8,
    "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "FP16": np.float16, "FP32": np.float32, "FP64": np.float64,
    "BYTES": np.object_,
}


def triton_string_to_numpy(triton_type_string):
    """Numpy type of a Triton data type string ("TYPE_FP32" or "FP32")."""
    s = triton_type_string
    if s.startswith("TYPE_"):
        s = s[5:]
    if s == "STRING":
        s = "BYTES"
    return _TRITON_TO_NP[s]


def _numpy_to_triton(arr):
    dt = arr.dtype
    if dt == np.object_ or dt.kind in ("S", "U"):
        return "BYTES"
    for k, v in _TRITON_TO_NP.items():
        if k != "BYTES" and np.dtype(v) == dt:
            return k
    raise TritonModelException("unsupported numpy data type " + str(dt))


def serialize_byte_tensor(arr):
    """Triton's BYTES format: each element as a 4-byte length + its bytes."""
    parts = []
    for item in np.asarray(arr, dtype=np.object_).ravel(order="C"):
        if isinstance(item, str):
            item = item.encode("utf-8")
        elif not isinstance(item, (bytes, bytearray)):
            item = str(item).encode("utf-8")
        parts.append(struct.pack("<I", len(item)))
        parts.append(bytes(item))
    return b"".join(parts)


def deserialize_bytes_tensor(buf):
    out = []
    mv = memoryview(buf)
    off = 0
    while off + 4 <= len(mv):
        (n,) = struct.unpack_from("<I", mv, off)
        off += 4
        out.append(bytes(mv[off:off + n]))
        off += n
    return np.array(out, dtype=np.object_)


class TritonError(Exception):
    """An error in a response; codes match TRITONSERVER_Error_Code."""
    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7

    def __init__(self, message, code=INTERNAL):
        super().__init__(message)
        self._message = message
        self._code = code

    def message(self):
        return self._message

    def code(self):
        return self._code


class TritonModelException(Exception):
    def __init__(self, msg):
        super().__init__(msg)
        self._msg = msg

    def message(self):
        return self._msg


class Tensor:
    def __init__(self, name, array):
        if not isinstance(array, np.ndarray):
            raise TritonModelException(
                "Tensor data must be a numpy array, got " + type(array).__name__)
        self._name = name
        self._array = array

    def name(self):
        return self._name

    def as_numpy(self):
        return self._array

    def is_cpu(self):
        return True

    def shape(self):
        return list(self._array.shape)

    def triton_dtype(self):
        return _numpy_to_triton(self._array)


class InferenceRequest:
    """A request given to execute (BLS exec is not in this slice)."""

    def __init__(self, inputs, request_id="", correlation_id=0,
                 requested_output_names=(), parameters="{}"):
        self._inputs = list(inputs)
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._outputs = list(requested_output_names)
        self._parameters = parameters if isinstance(parameters, str) \
            else json.dumps(parameters)

    def inputs(self):
        return self._inputs

    def request_id(self):
        return self._request_id

    def correlation_id(self):
        return self._correlation_id

    def requested_output_names(self):
        return self._outputs

    def parameters(self):
        return self._parameters

    def is_cancelled(self):
        return False

    def exec(self, *args, **kwargs):
        raise TritonModelException(
            "BLS (InferenceRequest.exec) is not supported by inferd yet")

    async_exec = exec


class InferenceResponse:
    def __init__(self, output_tensors=None, error=None):
        self._outputs = list(output_tensors) if output_tensors else []
        if error is not None and not isinstance(error, TritonError):
            error = TritonError(str(error))
        self._error = error

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error


def get_input_tensor_by_name(request, name):
    for t in request.inputs():
        if t.name() == name:
            return t
    return None


def get_output_tensor_by_name(response, name):
    for t in response.output_tensors():
        if t.name() == name:
            return t
    return None


def get_input_config_by_name(model_config, name):
    for c in model_config.get("input", []):
        if c.get("name") == name:
            return c
    return None


def get_output_config_by_name(model_config, name):
    for c in model_config.get("output", []):
        if c.get("name") == name:
            return c
    return None


# ---- the stub's side of the protocol ------------------------------------------

class _Stub:
    def __init__(self, sock_fd, shm_fd):
        self.sock = socket.socket(fileno=sock_fd)
        self.shm_fd = shm_fd
        self.model = None
        self.instance_name = ""

    def _recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return bytes(buf)

    def recv(self):
        typ, mid, length = _HDR.unpack(self._recv_exact(_HDR.size))
        return typ, mid, self._recv_exact(length)

    def send(self, typ, mid, payload):
        self.sock.sendall(_HDR.pack(typ, mid, len(payload)) + payload)

    def send_error(self, mid, message, tb=""):
        m = message.encode("utf-8", "replace")
        t = tb.encode("utf-8", "replace")
        self.send(MSG_ERROR, mid, struct.pack("<I", len(m)) + m + t)

    def initialize(self, mid, payload):
        args = json.loads(payload.decode("utf-8"))
        config = json.loads(args["model_config"])
        self.instance_name = args.get("model_instance_name", "")
        filename = config.get("default_model_filename") or "model.py"
        vdir = os.path.join(args["model_repository"], args["model_version"])
        path = os.path.join(vdir, filename)
        try:
            if not os.path.exists(path):
                raise TritonModelException(
                    "Failed to load the model file '" + path + "'")
            sys.path.insert(0, vdir)
            spec = importlib.util.spec_from_file_location("model", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules["model"] = module
            spec.loader.exec_module(module)
            self.model = module.TritonPythonModel()
            if hasattr(self.model, "initialize"):
                self.model.initialize(args)
        except Exception as e:  # noqa: BLE001 - any user error fails the load
            self.send_error(mid, _exc_text(e), traceback.format_exc())
            return
        self.send(MSG_INIT_OK, mid, b"")

    def execute(self, mid, payload):
        msg = json.loads(payload.decode("utf-8"))
        in_size = msg["in_size"]
        mm = mmap.mmap(self.shm_fd, in_size) if in_size > 0 else None
        requests = []
        for r in msg["requests"]:
            inputs = []
            for i in r["inputs"]:
                shape = tuple(i["shape"])
                off, size = i["offset"], i["size"]
                if i["dtype"] == "BYTES":
                    arr = deserialize_bytes_tensor(
                        memoryview(mm)[off:off + size]).reshape(shape)
                elif size == 0:
                    arr = np.zeros(shape, dtype=triton_string_to_numpy(i["dtype"]))
                else:
                    arr = np.frombuffer(
                        memoryview(mm)[off:off + size],
                        dtype=triton_string_to_numpy(i["dtype"])).reshape(shape)
                inputs.append(Tensor(i["name"], arr))
            requests.append(InferenceRequest(
                inputs, r.get("id", ""), r.get("correlation_id", 0),
                r.get("outputs", []), json.dumps(r.get("parameters", {}))))
        try:
            responses = self.model.execute(requests)
            if not isinstance(responses, list):
                raise TritonModelException(
                    "Expected a list in the execute return")
            if len(responses) != len(requests):
                raise TritonModelException(
                    "Number of InferenceResponse objects do not match number "
                    "of InferenceRequest objects. InferenceRequest(s) size "
                    "is:%d, and InferenceResponse(s) size is:%d"
                    % (len(requests), len(responses)))
            for resp in responses:
                if not isinstance(resp, InferenceResponse):
                    raise TritonModelException(
                        "Expected an 'InferenceResponse' object in the execute "
                        "function return list, found type '%s'."
                        % type(resp).__name__)
            out = self._pack(responses, msg["out_offset"])
        except Exception as e:  # noqa: BLE001
            self.send_error(
                mid, "Failed to process the request(s) for model instance '"
                + self.instance_name + "', message: " + _exc_text(e),
                traceback.format_exc())
            return
        self.send(MSG_RESULT, mid, out)

    def _pack(self, responses, out_offset):
        blobs = []  # (offset, bytes-like)
        meta = [struct.pack("<I", len(responses))]
        pos = 0
        for resp in responses:
            err = resp.error()
            if err is not None:
                m = str(err.message()).encode("utf-8", "replace")
                meta.append(struct.pack("<III", 1, int(err.code()), len(m)) + m)
                continue
            outs = resp.output_tensors()
            meta.append(struct.pack("<II", 0, len(outs)))
            for t in outs:
                arr = t.as_numpy()
                dtype = _numpy_to_triton(arr)
                if dtype == "BYTES":
                    data = serialize_byte_tensor(arr)
                else:
                    data = memoryview(np.ascontiguousarray(arr)).cast("B")
                pos = (pos + 63) & ~63
                blobs.append((pos, data))
                name = t.name().encode("utf-8")
                dt = dtype.encode()
                meta.append(struct.pack("<I", len(name)) + name
                            + struct.pack("<I", len(dt)) + dt
                            + struct.pack("<I", arr.ndim)
                            + struct.pack("<%dq" % arr.ndim, *arr.shape)
                            + struct.pack("<QQ", out_offset + pos, len(data)))
                pos += len(data)
        if pos > 0:
            need = out_offset + pos
            if os.fstat(self.shm_fd).st_size < need:
                os.ftruncate(self.shm_fd, need)
            mm = mmap.mmap(self.shm_fd, pos, offset=out_offset)
            for off, data in blobs:
                mm[off:off + len(data)] = data
            mm.close()
        return b"".join(meta)

    def run(self):
        while True:
            try:
                typ, mid, payload = self.recv()
            except (EOFError, OSError):
                return
            if typ == MSG_INIT:
                self.initialize(mid, payload)
            elif typ == MSG_EXECUTE:
                self.execute(mid, payload)
            elif typ == MSG_FINALIZE:
                try:
                    if self.model is not None and hasattr(self.model, "finalize"):
                        self.model.finalize()
                except Exception:  # noqa: BLE001
                    traceback.print_exc()
                self.send(MSG_FINALIZE_OK, mid, b"")
                return


def _exc_text(e):
    if isinstance(e, TritonModelException):
        return e.message()
    return type(e).__name__ + ": " + str(e)


def _stub_main():
    import _inferd_stub
    _Stub(_inferd_stub.sock_fd, _inferd_stub.shm_fd).run()
