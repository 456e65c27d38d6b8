# backend_api/backends/python/_pb_wire.py - what pb_utils and the stub's
# loop share about protocol v3 (ipc.h): message types, flags and header
# structs, Triton's data type names and codes and their numpy types, the
# BYTES tensor format, the error classes, and the writer of a message's
# payload.
#
# A module of its own so that triton_python_backend_utils.py (what models
# import; it takes every name here as its own, unchanged) and _pb_stub.py
# (the loop) read one definition. It imports neither of them.

import struct

import numpy as np

# What triton_python_backend_utils takes as its own names.
__all__ = [
    "MSG_INIT", "MSG_INIT_OK", "MSG_ERROR", "MSG_EXECUTE", "MSG_RESULT",
    "MSG_FINALIZE", "MSG_FINALIZE_OK", "MSG_EXECUTE_DONE", "MSG_RESPONSE",
    "MSG_BLS_INFER", "MSG_BLS_RESPONSE", "MSG_LOG", "MSG_CANCEL_QUERY",
    "MSG_CANCEL_ANSWER", "MSG_METRIC", "MSG_METRIC_ANSWER", "MSG_FREE",
    "MSG_AUTO_COMPLETE", "MSG_AUTO_COMPLETE_OK", "MSG_MODEL_CONTROL",
    "MSG_MODEL_CONTROL_ANSWER", "MSG_RELEASE", "_FLAG_FINAL", "_HDR",
    "_U32", "_U64", "TRITONSERVER_REQUEST_FLAG_SEQUENCE_START",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_END",
    "TRITONSERVER_RESPONSE_COMPLETE_FINAL",
    "TRITONSERVER_REQUEST_RELEASE_ALL",
    "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE", "_TRITON_TO_NP", "_CODES",
    "TRITON_STRING_TO_NUMPY", "triton_string_to_numpy",
    "triton_to_numpy_type", "numpy_to_triton_type", "_NP_TO_TRITON",
    "_numpy_to_triton", "serialize_byte_tensor",
    "deserialize_bytes_tensor", "TritonError", "TritonModelException",
    "_Writer", "_tensor_bytes",
]

# Message types and flags; they match backend_api/backends/python/ipc.h.
MSG_INIT = 1
MSG_INIT_OK = 2
MSG_ERROR = 3
MSG_EXECUTE = 4
MSG_RESULT = 5
MSG_FINALIZE = 6
MSG_FINALIZE_OK = 7
MSG_EXECUTE_DONE = 8
MSG_RESPONSE = 9
MSG_BLS_INFER = 10
MSG_BLS_RESPONSE = 11
MSG_LOG = 12
MSG_CANCEL_QUERY = 13
MSG_CANCEL_ANSWER = 14
MSG_METRIC = 15
MSG_METRIC_ANSWER = 16
MSG_FREE = 17
MSG_AUTO_COMPLETE = 18
MSG_AUTO_COMPLETE_OK = 19
MSG_MODEL_CONTROL = 20
MSG_MODEL_CONTROL_ANSWER = 21
MSG_RELEASE = 22
_FLAG_FINAL = 1
_HDR = struct.Struct("<IIQ")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2

_TRITON_TO_NP = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16,
    "UINT32": np.uint32, "UINT64": np.uint64, "INT8": np.int8,
    "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "FP16": np.float16, "FP32": np.float32, "FP64": np.float64,
    "BYTES": np.object_,
}
# Triton's numeric data type codes (TRITONSERVER_DataType), for
# triton_to_numpy_type / numpy_to_triton_type.
_CODES = ["INVALID", "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8",
          "INT16", "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES"]

TRITON_STRING_TO_NUMPY = dict(_TRITON_TO_NP)
TRITON_STRING_TO_NUMPY.update({"TYPE_" + k: v for k, v in _TRITON_TO_NP.items()})
TRITON_STRING_TO_NUMPY["TYPE_STRING"] = np.object_


def triton_string_to_numpy(triton_type_string):
    """Numpy type of a Triton data type string ("TYPE_FP32" or "FP32")."""
    s = triton_type_string
    if s.startswith("TYPE_"):
        s = s[5:]
    if s == "STRING":
        s = "BYTES"
    return _TRITON_TO_NP[s]


def triton_to_numpy_type(data_type):
    """Numpy type of a Triton data type code (1 BOOL ... 13 BYTES)."""
    if 1 <= data_type < len(_CODES):
        return _TRITON_TO_NP[_CODES[data_type]]
    return None


def numpy_to_triton_type(data_type):
    """Triton data type code of a numpy type, or None."""
    if data_type == np.object_ or data_type == np.bytes_:
        return 13
    for i in range(1, 13):
        if np.dtype(_TRITON_TO_NP[_CODES[i]]) == np.dtype(data_type):
            return i
    return None


_NP_TO_TRITON = {np.dtype(v): k for k, v in _TRITON_TO_NP.items()
                 if k != "BYTES"}


def _numpy_to_triton(arr):
    dt = arr.dtype
    k = _NP_TO_TRITON.get(dt)
    if k is not None:
        return k
    if dt == np.object_ or dt.kind in ("S", "U"):
        return "BYTES"
    raise TritonModelException("unsupported numpy data type " + str(dt))


def serialize_byte_tensor(arr):
    """Triton's BYTES format: each element as a 4-byte length + its bytes."""
    parts = []
    for item in np.asarray(arr, dtype=np.object_).ravel(order="C"):
        if isinstance(item, str):
            item = item.encode("utf-8")
        elif not isinstance(item, (bytes, bytearray)):
            item = str(item).encode("utf-8")
        parts.append(_U32.pack(len(item)))
        parts.append(bytes(item))
    return b"".join(parts)


def deserialize_bytes_tensor(buf):
    out = []
    mv = memoryview(buf)
    off = 0
    while off + 4 <= len(mv):
        (n,) = _U32.unpack_from(mv, off)
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


class _Writer:
    """A message payload as a list of buffers, with its length so far (the
    padding of ipc.h counts from the payload's start)."""

    def __init__(self):
        self.parts = []
        self.pos = 0

    def add(self, b):
        if len(b):
            self.parts.append(b)
            self.pos += len(b)

    def u32(self, v):
        self.add(_U32.pack(v))

    def u64(self, v):
        self.add(_U64.pack(v))

    def str(self, s):
        b = s.encode("utf-8", "replace")
        self.add(_U32.pack(len(b)) + b)

    def pad8(self):
        n = (-self.pos) & 7
        if n:
            self.add(b"\0" * n)


def _tensor_bytes(arr):
    """(triton dtype, C-order bytes-like) of an output array."""
    dtype = _numpy_to_triton(arr)
    if dtype == "BYTES":
        return dtype, serialize_byte_tensor(arr)
    a = np.ascontiguousarray(arr).reshape(-1)
    return dtype, memoryview(a.view(np.uint8))
