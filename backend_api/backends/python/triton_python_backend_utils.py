# backend_api/backends/python/triton_python_backend_utils.py - pb_utils.
#
# What `import triton_python_backend_utils as pb_utils` finds inside a model
# of inferd's Python backend: Triton's documented model.py API (Tensor,
# InferenceRequest with BLS exec/async_exec, InferenceResponse, the response
# sender of decoupled models, Logger, MetricFamily/Metric, ModelConfig for
# auto_complete_config, TritonError, model control, PreferredMemory,
# InferenceTrace, ...) and the stub's side of protocol v2
# (ipc.h), _stub_main() (the loop itself is _pb_stub.py; the wire's
# constants, data types and errors are _pb_wire.py's, ModelConfig is
# _pb_model_config.py's, all of them this module's names too):
#   - a reader thread (C, in the stub: it waits without the GIL) owns the
#     socket's reading and dispatches every message: INIT/EXECUTE/FINALIZE/
#     AUTO_COMPLETE go to the main thread's queue (execute runs there, like
#     Triton's one execute thread), which the main thread waits on, or
#     drains from an asyncio loop while an `async def execute` (a task on
#     it) runs; BLS_RESPONSE, CANCEL_ANSWER, METRIC_ANSWER and
#     MODEL_CONTROL_ANSWER complete the
#     call that waits for them (_Stub._answer, under the GIL);
#   - any thread sends, under one lock (a response sender's thread, Logger,
#     a BLS call); the queued FREEs of DOWN blocks go first in the same write;
#   - inputs are numpy arrays over the request's DOWN block (_inferd_stub.
#     DownBlock: no copy; the block is freed when nothing uses it), execute's
#     outputs are written once into UP; RESPONSE and BLS tensors travel inline.
# Not here: GPU tensors (everything is CPU), child traces for BLS, cancelling
# a BLS call (docs/backends.md lists what differs from Triton and why).

import asyncio
import importlib
import importlib.util
import json
import os
import queue
import struct
import sys
import threading

import numpy as np

# The wire's constants, data types, errors and payload writer
# (_pb_wire.py: its __all__), and ModelConfig (_pb_model_config.py), live in
# modules beside this one; they are this module's names, as before.
def _beside(name):
    """The module name.py beside this file: imported as usual where this
    folder is on sys.path (the stub's), else loaded from its file (a tool
    that loads this file by its path)."""
    if importlib.util.find_spec(name) is not None:
        return importlib.import_module(name)
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_wire = _beside("_pb_wire")
for _n in _wire.__all__:
    globals()[_n] = getattr(_wire, _n)
ModelConfig = _beside("_pb_model_config").ModelConfig
del _wire, _n

# What a model sees of them names this module, as before the split.
for _o in (triton_string_to_numpy, triton_to_numpy_type, numpy_to_triton_type,
           serialize_byte_tensor, deserialize_bytes_tensor, TritonError,
           TritonModelException, ModelConfig):
    _o.__module__ = __name__
del _o


class _Capsule:
    """Lets np.from_dlpack take a bare DLPack capsule (CPU memory)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


class Tensor:
    def __init__(self, name, array, triton_dtype=None):
        if not isinstance(array, np.ndarray):
            raise TritonModelException(
                "Tensor data must be a numpy array, got " + type(array).__name__)
        if triton_dtype is not None:
            want = triton_string_to_numpy(triton_dtype) \
                if isinstance(triton_dtype, str) \
                else triton_to_numpy_type(triton_dtype)
            if want is not None and array.dtype != want:
                array = array.view(want)
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

    def to_dlpack(self):
        """A DLPack capsule over this tensor's memory (no copy)."""
        a = self._array
        if a.dtype == np.object_:
            raise TritonModelException(
                "DLPack does not support data type BYTES")
        if not a.flags.writeable:
            a = a.copy()  # numpy exports writable arrays only
        return a.__dlpack__()

    def __dlpack__(self, stream=None):
        """The DLPack protocol (np.from_dlpack(tensor), torch.from_dlpack),
        as Triton's Tensor implements it; CPU memory, so `stream` is unused."""
        return self.to_dlpack()

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    @staticmethod
    def from_dlpack(name, capsule):
        """A Tensor over the memory of a DLPack capsule or of any object
        with __dlpack__ (CPU memory only; no copy)."""
        obj = capsule if hasattr(capsule, "__dlpack__") else _Capsule(capsule)
        try:
            arr = np.from_dlpack(obj)
        except (RuntimeError, TypeError, BufferError) as e:
            raise TritonModelException(
                "Tensor.from_dlpack: " + str(e)) from None
        return Tensor(name, arr)


class InferenceResponse:
    def __init__(self, output_tensors=None, error=None, parameters=None):
        self._outputs = list(output_tensors) if output_tensors else []
        if error is not None and not isinstance(error, TritonError):
            error = TritonError(str(error))
        self._error = error
        self._parameters = parameters

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        p = self._parameters
        return p if isinstance(p, str) else json.dumps(p or {})


class InferenceResponseSender:
    """Sends the responses of one request (request.get_response_sender());
    Triton's rules: after a FINAL nothing more; a non-decoupled model sends
    exactly one response and a FINAL (and its execute returns None)."""

    def __init__(self, rid, decoupled, outputs):
        self._rid = rid
        self._decoupled = decoupled
        self._outputs = outputs  # the request's requested output names
        self._lock = threading.Lock()
        self._closed = False
        self._sent = 0
        self._held = None  # non-decoupled: the response waiting for FINAL

    def send(self, response=None, flags=0):
        if response is not None and not isinstance(response, InferenceResponse):
            raise TritonModelException(
                "Unable to send response. Expected an InferenceResponse "
                "object, got '" + type(response).__name__ + "'.")
        with self._lock:
            if not self._decoupled:
                if response is not None and self._sent > 0:
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot "
                        "send more than one response.")
                if response is None and flags == _FLAG_FINAL \
                        and self._sent == 0:
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot "
                        "send complete final before sending a response.")
            if self._closed:
                raise TritonModelException(
                    "Unable to send response. Response sender has been closed.")
            if flags != _FLAG_FINAL and flags != 0:
                raise TritonModelException(
                    "Unable to send response. Unsupported flag provided.")
            if flags == 0 and response is None:
                raise TritonModelException(
                    "Inference Response object must be provided when the "
                    "response flags is set to zero.")
            # Packing checks the response: a bad one changes no state.
            resp = _resp_inline(response, self._outputs) \
                if response is not None else None
            if response is not None:
                self._sent += 1
            if not self._decoupled and flags == 0:
                # One response per request: it goes with the FINAL.
                self._held = resp
                return
            if flags == _FLAG_FINAL:
                self._closed = True
            if resp is None:
                resp, self._held = self._held, None
            _STUB.send_response(self._rid, flags, resp)

    def is_cancelled(self):
        return _STUB.cancelled(self._rid)

    def _used(self):
        return self._sent > 0 or self._closed

    def _close(self):
        with self._lock:
            self._closed = True


class MemoryType(int):
    """Where a BLS call's outputs should go (Triton's PreferredMemory
    MemoryType: GPU 0, CPU 1)."""

    def __repr__(self):
        return {0: "MemoryType.TRITONSERVER_MEMORY_GPU",
                1: "MemoryType.TRITONSERVER_MEMORY_CPU"}.get(
                    int(self), "MemoryType(%d)" % int(self))


TRITONSERVER_MEMORY_GPU = MemoryType(0)
TRITONSERVER_MEMORY_CPU = MemoryType(1)
MemoryType.TRITONSERVER_MEMORY_GPU = TRITONSERVER_MEMORY_GPU
MemoryType.TRITONSERVER_MEMORY_CPU = TRITONSERVER_MEMORY_CPU
_MEMORY_DEFAULT = MemoryType(2)


class PreferredMemory:
    """PreferredMemory(preferred_memory_type, preferred_device_id=0): where
    a BLS request would like its outputs (InferenceRequest's
    preferred_memory). inferd's Python tensors live in CPU memory, so the
    outputs arrive there whatever is preferred."""

    def __init__(self, preferred_memory_type, preferred_device_id=0):
        if preferred_memory_type is None or preferred_device_id is None:
            raise TypeError("PreferredMemory arguments must not be None")
        if int(preferred_memory_type) not in (0, 1, 2):
            raise TypeError("PreferredMemory preferred_memory_type must be "
                            "TRITONSERVER_MEMORY_GPU or TRITONSERVER_MEMORY_CPU")
        self._type = MemoryType(int(preferred_memory_type))
        self._device_id = int(preferred_device_id)


class InferenceTrace:
    """The trace of a request (request.trace()), or one given to a BLS
    InferenceRequest(trace=...). get_context() is the trace context the
    request came with (OpenTelemetry's, as a JSON string), or None."""

    def __init__(self, context=None):
        self._context = context or None

    def get_context(self):
        return self._context


class _ResponseIterator:
    """The responses of a decoupled BLS call, as they arrive."""

    def __init__(self, call):
        self._call = call

    def __iter__(self):
        return self

    def __next__(self):
        item = self._call.q.get()
        if item is None:
            self._call.q.put(None)  # stays ended
            raise StopIteration
        return item

    def cancel(self):
        pass


ResponseIterator = _ResponseIterator


class _BlsCall:
    """One BLS call in flight. exec: the caller waits on q. async_exec: fut
    completes with the response (default) or, for decoupled=True, with an
    iterator as soon as the first response (or the end) came, the rest
    arriving in q as they come (Triton's async_exec(decoupled=True) also
    returns before the callee ends)."""

    def __init__(self, decoupled, loop=None):
        self.decoupled = decoupled
        self.q = queue.SimpleQueue()  # InferenceResponse..., then None
        self.loop = loop              # async_exec: completes self.fut
        self.fut = loop.create_future() if loop is not None else None
        self.got = []
        self.scheduled = False        # _complete is on its way (reader)

    def deliver(self, resp, final):
        if self.fut is not None and not self.decoupled:
            if resp is not None:
                self.got.append(resp)
            if final:
                self.loop.call_soon_threadsafe(self._complete)
            return
        if resp is not None:
            self.q.put(resp)
        if final:
            self.q.put(None)
        if self.fut is not None and not self.scheduled:
            self.scheduled = True
            self.loop.call_soon_threadsafe(self._complete)

    def _complete(self):
        if self.fut.done():
            return
        if self.decoupled:
            self.fut.set_result(_ResponseIterator(self))
        else:
            self.fut.set_result(_one_response(self.got))


def _one_response(got):
    for r in got:
        return r
    return InferenceResponse(error=TritonError(
        "BLS request got no response", TritonError.INTERNAL))


def _model_name_str(name):
    """A BLS model name as text. Triton's argument is a pybind11 string: a
    str or a bytes object (numpy.str_ and numpy.bytes_ are subclasses), so
    `as_numpy()[0]` of a BYTES tensor works as Triton's BLS example uses it."""
    if name is None or isinstance(name, str):
        return None if name is None else str(name)
    if isinstance(name, (bytes, bytearray)):
        try:
            return bytes(name).decode("utf-8")
        except UnicodeDecodeError:
            raise TritonModelException(
                "InferenceRequest model_name is not valid UTF-8") from None
    raise TypeError("InferenceRequest model_name must be a str or bytes, got "
                    + type(name).__name__)


class InferenceRequest:
    """A request given to execute, or a BLS request the model builds:
    InferenceRequest(model_name=, inputs=, requested_output_names=, ...)
    then exec() / exec(decoupled=True) / await async_exec()."""

    def __init__(self, model_name=None, inputs=None,
                 requested_output_names=None, request_id="",
                 correlation_id=0, model_version=-1, flags=0, timeout=0,
                 preferred_memory=None, trace=None, parameters=None):
        self._model_name = _model_name_str(model_name)
        if preferred_memory is None:
            preferred_memory = PreferredMemory(_MEMORY_DEFAULT, 0)
        if not isinstance(preferred_memory, PreferredMemory):
            raise TypeError("InferenceRequest preferred_memory must be a "
                            "PreferredMemory, got "
                            + type(preferred_memory).__name__)
        self._preferred_memory = preferred_memory
        if trace is None:
            trace = InferenceTrace()
        if not isinstance(trace, InferenceTrace):
            raise TypeError("InferenceRequest trace must be an InferenceTrace, "
                            "got " + type(trace).__name__)
        self._trace = trace
        if not isinstance(correlation_id, (int, str)):
            raise TritonModelException(
                "Correlation ID must be integer or string")
        self._inputs = list(inputs) if inputs else []
        self._outputs = list(requested_output_names or [])
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._model_version = model_version
        self._flags = flags
        self._timeout = timeout
        if parameters is None:
            parameters = {}
        if isinstance(parameters, str):
            self._params = json.loads(parameters)
        elif isinstance(parameters, dict):
            self._params = parameters
        else:
            raise TritonModelException(
                "InferenceRequest parameters must be a dict or a JSON string")
        for k, v in self._params.items():
            if not isinstance(k, str) or \
                    not isinstance(v, (str, int, bool, float)):
                raise TritonModelException(
                    "Expected keys of type str and values of type str, int, "
                    "bool or float in the request parameters")
        self._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        self._rid = None     # a request given to execute: its rid
        self._block = None   # and its DOWN block (kept alive by the request)
        self._sender = None

    @classmethod
    def _from_execute(cls, r, block, inputs, decoupled):
        """A request given to execute: r is one tuple of
        _inferd_stub.parse_execute (rid, flags, block offset, block size,
        id, correlation id, trace context, outputs, parameters, inputs)."""
        rid, flags, _, _, rq_id, corr, tctx, outputs, params, _ = r
        req = cls(inputs=inputs, requested_output_names=outputs,
                  request_id=rq_id, correlation_id=corr, flags=flags,
                  parameters=params)
        req._model_name = _STUB.model_name
        req._model_version = _STUB.model_version
        req._trace = InferenceTrace(tctx)
        req._rid = rid
        req._block = block
        req._sender = InferenceResponseSender(rid, decoupled, req._outputs)
        return req

    def inputs(self):
        return self._inputs

    def request_id(self):
        return self._request_id

    def correlation_id(self):
        return self._correlation_id

    def flags(self):
        return self._flags

    def set_flags(self, flags):
        """Sets the request's flags (TRITONSERVER_REQUEST_FLAG_SEQUENCE_*),
        as a BLS request sends them."""
        self._flags = int(flags)

    def trace(self):
        return self._trace

    def model_name(self):
        return self._model_name

    def model_version(self):
        return self._model_version

    def timeout(self):
        return self._timeout

    def requested_output_names(self):
        return self._outputs

    def parameters(self):
        return json.dumps(self._params)

    def set_release_flags(self, flags):
        """How the server releases this request when execute returns:
        TRITONSERVER_REQUEST_RELEASE_RESCHEDULE puts it back for a later
        execute (Triton's request rescheduling; the model's scheduler must
        allow it, else the request fails with the server's error). A
        rescheduled request of a default model has None in execute's
        returned list; a decoupled model reschedules before execute
        returns."""
        self._release_flags = int(flags)

    def is_cancelled(self):
        if self._rid is None:
            return False
        return _STUB.cancelled(self._rid)

    def get_response_sender(self):
        if self._sender is None:
            raise TritonModelException(
                "Only a request given to execute has a response sender")
        return self._sender

    def exec(self, decoupled=False):
        """Runs this request on model_name; blocks. Returns its
        InferenceResponse, or with decoupled=True an iterator of them."""
        call = _BlsCall(decoupled)
        _STUB.bls_infer(self, call)
        if decoupled:
            return _ResponseIterator(call)
        got = []
        while True:
            r = call.q.get()
            if r is None:
                return _one_response(got)
            got.append(r)

    def async_exec(self, decoupled=False):
        """Like exec, as an awaitable (use it in an `async def execute`)."""
        loop = asyncio.get_event_loop()
        call = _BlsCall(decoupled, loop)
        _STUB.bls_infer(self, call)
        return call.fut


def get_model_dir():
    """The folder of the model's version (where model.py is), as Triton's
    stub defines it."""
    return _STUB.model_dir if _STUB is not None else ""


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


def using_decoupled_model_transaction_policy(model_config):
    """Whether the configuration (a dict) makes the model decoupled: its
    model_transaction_policy's `decoupled`, False without a policy (as in
    Triton, a policy without `decoupled` raises KeyError)."""
    if "model_transaction_policy" in model_config:
        return model_config["model_transaction_policy"]["decoupled"]
    return False


# ---- model control (BLS) ------------------------------------------------------

def _model_control(what, doc, blobs=()):
    if _STUB is None:
        raise TritonModelException(what + "the model is not running in a stub")
    w = _Writer()
    w.str(json.dumps(doc))
    for b in blobs:
        w.add(b)
    ans = json.loads(bytes(_STUB._query(MSG_MODEL_CONTROL, w.parts)))
    if "error" in ans:
        raise TritonModelException(what + ans["error"])
    return ans


def load_model(model_name, config="", files=None):
    """Loads (or reloads) model_name through the server's model control,
    as the repository API's load does: `config` a model configuration in
    JSON (or ""), `files` {"file:<version>/<name>": bytes}. Returns once
    the model loaded; raises TritonModelException when it did not."""
    model_name = _model_name_str(model_name)
    if config is None:
        config = ""
    if not isinstance(config, str):
        raise TypeError("load_model config must be a str, got "
                        + type(config).__name__)
    keys, blobs = [], []
    if files is not None:
        if not isinstance(files, dict):
            raise TritonModelException(
                "failed to load model '" + model_name + "', files should be "
                "a dictionary of file paths and file contents")
        for k, v in files.items():
            if not isinstance(k, str) or \
                    not isinstance(v, (bytes, bytearray, memoryview)):
                raise TritonModelException(
                    "failed to load model '" + model_name + "', files should "
                    "be a dictionary of file paths (str) and file contents "
                    "(bytes)")
            v = bytes(v)
            keys.append([k, len(v)])
            blobs.append(v)
    _model_control("Failed to load model: ", {
        "op": "load", "name": model_name, "config": config,
        "files": keys}, blobs)


def unload_model(model_name, unload_dependents=False):
    """Starts unloading model_name (and, with unload_dependents, the models
    that depend on it); returns once the unload began."""
    _model_control("Failed to unload model: ", {
        "op": "unload", "name": _model_name_str(model_name),
        "unload_dependents": bool(unload_dependents)})


def is_model_ready(model_name, model_version=""):
    """Whether model_name (version model_version: a string, "" for the
    latest) is ready."""
    if not isinstance(model_version, str):
        raise TypeError("is_model_ready model_version must be a str, got "
                        + type(model_version).__name__)
    return bool(_model_control("Failed to check model readiness: ", {
        "op": "ready", "name": _model_name_str(model_name),
        "version": model_version})["ready"])


# ---- Logger -------------------------------------------------------------------

class LogLevel:
    """TRITONSERVER_LogLevel values."""
    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3


class Logger:
    """Messages into the server's log, with the model file's name and line.
    Levels as in Triton: Logger.INFO ... (and Logger.LogLevel.INFO ...)."""
    LogLevel = LogLevel
    INFO = LogLevel.INFO
    WARNING = LogLevel.WARNING
    ERROR = LogLevel.ERROR
    VERBOSE = LogLevel.VERBOSE

    @staticmethod
    def log(message, level=LogLevel.INFO):
        _log(level, message, 2)

    @staticmethod
    def log_info(message):
        _log(LogLevel.INFO, message, 2)

    @staticmethod
    def log_warn(message):
        _log(LogLevel.WARNING, message, 2)

    @staticmethod
    def log_error(message):
        _log(LogLevel.ERROR, message, 2)

    @staticmethod
    def log_verbose(message):
        _log(LogLevel.VERBOSE, message, 2)


def _log(level, message, depth):
    try:
        f = sys._getframe(depth)
        filename, line = f.f_code.co_filename, f.f_lineno
    except ValueError:
        filename, line = "", 0
    msg = str(message)
    if _STUB is None:
        print(msg, file=sys.stderr)
        return
    fb = filename.encode("utf-8", "replace")
    mb = msg.encode("utf-8", "replace")
    _STUB.send(MSG_LOG, 0, [struct.pack("<III", int(level), line, len(fb)), fb,
                            _U32.pack(len(mb)), mb])


# ---- metrics ------------------------------------------------------------------

class MetricFamily:
    """A metric family of the server's /metrics (Triton's custom metrics)."""
    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2

    def __init__(self, name, description, kind):
        if kind not in (self.COUNTER, self.GAUGE, self.HISTOGRAM):
            raise TritonModelException(
                "MetricFamily kind must be COUNTER, GAUGE or HISTOGRAM")
        self._name = name
        self._kind = kind
        self._handle = None
        self._handle = _STUB.metric({
            "op": "family_new", "name": name, "description": description,
            "kind": kind})["handle"]

    def Metric(self, labels=None, buckets=None):
        return Metric(self, labels, buckets)

    def __del__(self):
        if self._handle is not None and _STUB is not None:
            _STUB.metric_nowait({"op": "family_delete", "handle": self._handle})


class Metric:
    """One labelled metric of a MetricFamily."""

    def __init__(self, family, labels=None, buckets=None):
        self._handle = None
        labels = labels or {}
        if not isinstance(labels, dict):
            raise TypeError("Metric labels must be a dict of strings, got "
                            + type(labels).__name__)
        for k, v in labels.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TritonModelException(
                    "Metric labels must map strings to strings")
        if family._kind == MetricFamily.HISTOGRAM:
            if buckets is None:
                raise TritonModelException(
                    "Missing required buckets for histogram metric")
            req = {"op": "metric_new", "family": family._handle,
                   "labels": labels, "buckets": [float(b) for b in buckets]}
        else:
            if buckets is not None:
                raise TritonModelException(
                    "Unexpected buckets for a metric that is not a histogram")
            req = {"op": "metric_new", "family": family._handle,
                   "labels": labels}
        self._family = family  # the family outlives its metrics
        self._kind = family._kind
        self._handle = _STUB.metric(req)["handle"]

    def increment(self, value):
        _STUB.metric({"op": "increment", "handle": self._handle,
                      "value": float(value)})

    def set(self, value):
        _STUB.metric({"op": "set", "handle": self._handle,
                      "value": float(value)})

    def observe(self, value):
        _STUB.metric({"op": "observe", "handle": self._handle,
                      "value": float(value)})

    def value(self):
        return _STUB.metric({"op": "value", "handle": self._handle})["value"]

    def __del__(self):
        if self._handle is not None and _STUB is not None:
            _STUB.metric_nowait({"op": "metric_delete", "handle": self._handle})


# ---- the stub's side of the protocol ------------------------------------------

_STUB = None  # the _Stub of this process, once _stub_main runs


def _check_output(t):
    if not isinstance(t, Tensor):
        raise TritonModelException(
            "Expected a 'Tensor' object in the output_tensors of an "
            "InferenceResponse, found type '" + type(t).__name__ + "'.")


def _resp_inline(resp, wanted=None):
    """RESP (has_response 1, inline data) of `resp` as a list of buffers,
    padded for a start at offset 8 of its payload (RESPONSE's rid and flags
    come first). Outputs not in `wanted` (when given) are left out."""
    w = _Writer()
    w.pos = 8
    _pack_resp_inline(w, resp, wanted)
    return w.parts


def _pruned(outs, wanted):
    if not wanted:
        return outs
    return [t for t in outs if not isinstance(t, Tensor) or t.name() in wanted]


def _pack_resp_inline(w, resp, wanted=None):
    """Appends RESP (has_response 1, inline data) for `resp` to w."""
    w.u32(1)
    err = resp.error()
    if err is not None:
        w.u32(1)
        w.u32(int(err.code()) if hasattr(err, "code") else 1)
        w.str(str(err.message()))
        return
    outs = _pruned(resp.output_tensors(), wanted)
    w.u32(0)
    w.u32(len(outs))
    for t in outs:
        _check_output(t)
        arr = t.as_numpy()
        dtype, data = _tensor_bytes(arr)
        w.str(t.name())
        w.str(dtype)
        w.add(struct.pack("<I%dq" % arr.ndim, arr.ndim, *arr.shape))
        w.add(struct.pack("<QII", len(data), 0, 0))
        w.pad8()
        w.add(data)


def _parse_resp(buf, off):
    """Reads a RESP at buf[off:]; returns (InferenceResponse or None, off).
    Tensor data are numpy views of buf (a bytearray: writable, no copy)."""
    (has,) = _U32.unpack_from(buf, off)
    off += 4
    if not has:
        return None, off
    (is_err,) = _U32.unpack_from(buf, off)
    off += 4
    if is_err:
        code, n = struct.unpack_from("<II", buf, off)
        off += 8
        msg = bytes(buf[off:off + n]).decode("utf-8", "replace")
        return InferenceResponse(error=TritonError(msg, code)), off + n
    (n_out,) = _U32.unpack_from(buf, off)
    off += 4
    outs = []
    for _ in range(n_out):
        (n,) = _U32.unpack_from(buf, off)
        name = bytes(buf[off + 4:off + 4 + n]).decode("utf-8")
        off += 4 + n
        (n,) = _U32.unpack_from(buf, off)
        dtype = bytes(buf[off + 4:off + 4 + n]).decode("ascii")
        off += 4 + n
        (ndims,) = _U32.unpack_from(buf, off)
        off += 4
        shape = struct.unpack_from("<%dq" % ndims, buf, off)
        off += 8 * ndims
        size, where, _ = struct.unpack_from("<QII", buf, off)
        off += 16
        if where != 0:
            raise TritonModelException("a BLS response with data in UP")
        off += (-off) & 7
        npt = triton_string_to_numpy(dtype)
        if dtype == "BYTES":
            arr = deserialize_bytes_tensor(
                memoryview(buf)[off:off + size]).reshape(shape)
        elif size == 0:
            arr = np.empty(shape, dtype=npt)
        else:
            arr = np.frombuffer(buf, dtype=npt,
                                count=size // np.dtype(npt).itemsize,
                                offset=off).reshape(shape)
        off += size
        outs.append(Tensor(name, arr))
    return InferenceResponse(outs), off


class SharedMemory:
    """The stub's shared memory, as Triton's c_python_backend_utils.
    shared_memory shows it (not part of the public API; Triton's tests use
    free_memory() to see that nothing leaks across a stub restart)."""

    def __init__(self, C):
        self._C = C

    def free_memory(self):
        """Bytes of the input segment not held by this stub's requests."""
        return int(self._C.seg_max) - int(self._C.down_held())


def _c_module(C):
    """c_python_backend_utils: Triton's stub module, under its name, with
    the same classes as pb_utils and `shared_memory`."""
    import types
    m = types.ModuleType("c_python_backend_utils")
    for name in ("TritonError", "TritonModelException", "Tensor",
                 "InferenceRequest", "InferenceResponse",
                 "InferenceResponseSender", "ResponseIterator", "Logger",
                 "LogLevel", "Metric", "MetricFamily", "PreferredMemory",
                 "MemoryType", "TRITONSERVER_MEMORY_GPU",
                 "TRITONSERVER_MEMORY_CPU", "InferenceTrace", "load_model",
                 "unload_model", "is_model_ready"):
        setattr(m, name, globals()[name])
    m.SharedMemory = SharedMemory
    m.shared_memory = SharedMemory(C)
    return m


def _stub_main():
    import _inferd_stub
    import _pb_stub
    sys.modules["c_python_backend_utils"] = _c_module(_inferd_stub)
    # A model's print() shows up when printed, as in a terminal.
    for f in (sys.stdout, sys.stderr):
        try:
            f.reconfigure(line_buffering=True)
        except (AttributeError, ValueError):
            pass
    _pb_stub.main(_inferd_stub)
