# backend_api/backends/python/_pb_stub.py - the stub's side of protocol v3.
#
# The main loop of triton_python_backend_stub (ipc.h): _Stub runs INIT,
# EXECUTE, FINALIZE and AUTO_COMPLETE on the main thread, packs RESULT into
# UP, and completes the calls that wait for answers (BLS, cancel, metric).
# Split out of triton_python_backend_utils.py (what models import), which
# starts it through _stub_main() and reaches it as pb_utils._STUB. How the
# threads share the work: the head of triton_python_backend_utils.py.

import asyncio
import importlib.util
import json
import os
import socket
import struct
import sys
import threading
import traceback

import numpy as np

import triton_python_backend_utils as pb
from triton_python_backend_utils import (  # noqa: F401  (one namespace)
    InferenceRequest,
    InferenceResponse,
    MSG_AUTO_COMPLETE,
    MSG_AUTO_COMPLETE_OK,
    MSG_BLS_INFER,
    MSG_BLS_RESPONSE,
    MSG_CANCEL_ANSWER,
    MSG_CANCEL_QUERY,
    MSG_ERROR,
    MSG_EXECUTE,
    MSG_EXECUTE_DONE,
    MSG_FINALIZE,
    MSG_FINALIZE_OK,
    MSG_FREE,
    MSG_INIT,
    MSG_INIT_OK,
    MSG_METRIC,
    MSG_METRIC_ANSWER,
    MSG_MODEL_CONTROL_ANSWER,
    MSG_RELEASE,
    TRITONSERVER_REQUEST_RELEASE_RESCHEDULE,
    MSG_RESPONSE,
    MSG_RESULT,
    ModelConfig,
    Tensor,
    TritonError,
    TritonModelException,
    _BlsCall,
    _FLAG_FINAL,
    _HDR,
    _U32,
    _Writer,
    _check_output,
    _numpy_to_triton,
    _parse_resp,
    _pruned,
    _resp_inline,
    _tensor_bytes,
    deserialize_bytes_tensor,
    serialize_byte_tensor,
    triton_string_to_numpy,
)


# RESULT's per-output prefixes, the same for every execute of a model: str
# name + str dtype by (name, dtype), and the struct of ndims, dims, size,
# where, 0, offset by ndims. Bounded: a model with endless names packs anew.
_OUT_HEADS = {}
_OUT_DIMS = {}


def _out_head(name, dtype):
    key = (name, dtype)
    head = _OUT_HEADS.get(key)
    if head is None:
        n = name.encode("utf-8")
        head = _U32.pack(len(n)) + n + _U32.pack(len(dtype)) + dtype.encode()
        if len(_OUT_HEADS) < 1024:
            _OUT_HEADS[key] = head
    return head


def _out_dims(ndim):
    st = _OUT_DIMS.get(ndim)
    if st is None:
        st = _OUT_DIMS[ndim] = struct.Struct("<I%dqQIIQ" % ndim)
    return st


def _exc_text(e):
    if isinstance(e, TritonModelException):
        return e.message()
    return type(e).__name__ + ": " + str(e)


class _Stub:
    def __init__(self, C):
        self.C = C
        self.sock = socket.socket(fileno=C.sock_fd)
        self.wlock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self.tasks = set()     # asyncio tasks of async executes
        self.main_ident = threading.get_ident()
        self.calls = {}        # id -> _BlsCall or [event, answer] (queries)
        self.calls_lock = threading.Lock()
        self.next_id = 0
        self.closed = False    # the socket reached EOF
        self.in_work = False   # the main thread runs a message's handler
        self.flush_pending = False
        self.model = None
        self.model_name = ""
        self.model_version = -1
        self.model_dir = ""
        self.instance_name = ""

    # -- writing (any thread) --

    def _sendv(self, bufs):
        bufs = [b if isinstance(b, bytes) else memoryview(b).cast("B")
                for b in bufs if len(b)]
        while bufs:
            n = self.sock.sendmsg(bufs[:512], [], socket.MSG_NOSIGNAL)
            while n > 0:
                first = len(bufs[0])
                if n >= first:
                    n -= first
                    bufs.pop(0)
                else:
                    bufs[0] = memoryview(bufs[0])[n:]
                    n = 0

    def send(self, typ, mid, parts=()):
        length = sum(len(p) if isinstance(p, bytes)
                     else memoryview(p).nbytes for p in parts)
        with self.wlock:
            frees = self.C.take_frees()
            bufs = []
            if frees:
                bufs.append(_HDR.pack(MSG_FREE, 0, len(frees)))
                bufs.append(frees)
            bufs.append(_HDR.pack(typ, mid, length))
            bufs.extend(parts)
            self._sendv(bufs)

    def send_error(self, mid, message, tb=""):
        m = message.encode("utf-8", "replace")
        self.send(MSG_ERROR, mid, [_U32.pack(len(m)), m,
                                   tb.encode("utf-8", "replace")])

    def send_response(self, rid, flags, resp_parts):
        """RESPONSE for rid; resp_parts: _resp_inline's, or None (no
        response: has_response 0)."""
        head = struct.pack("<II", rid, flags)
        if resp_parts is None:
            self.send(MSG_RESPONSE, 0, [head, _U32.pack(0)])
        else:
            self.send(MSG_RESPONSE, 0, [head] + resp_parts)

    def _flush_frees(self):
        self.flush_pending = False
        with self.wlock:
            frees = self.C.take_frees()
            if frees:
                self._sendv([_HDR.pack(MSG_FREE, 0, len(frees)), frees])

    def _free_notify(self):
        # The FREE queue turned non-empty. On the main thread inside a
        # handler, the handler's end flushes; elsewhere wake the loop.
        if self.in_work and threading.get_ident() == self.main_ident:
            self.flush_pending = True
            return
        self.post(self._flush_frees)

    def post(self, fn, *args):
        """Runs fn(*args) on the main thread (from any thread)."""
        self.C.post((fn, args))

    def _handle(self, item):
        """One item of the main thread's queue: a message the C reader
        queued, (type, id, payload), or a posted (fn, args)."""
        if len(item) == 3:
            typ, mid, payload = item
            if typ == self.C.WORK_EOF:
                self._end(0)
            self._work(typ, mid, payload)
        else:
            fn, args = item
            fn(*args)

    def _pump(self):
        """The asyncio loop's turn at the queue (wake_fd became readable)."""
        self.C.clear_wake()
        while True:
            item = self.C.try_work()
            if item is None:
                return
            self._handle(item)

    # -- calls that wait for an answer (any thread) --

    def _new_id(self, obj):
        with self.calls_lock:
            if self.closed:
                raise TritonModelException(
                    "the stub lost its connection to the server")
            while True:
                self.next_id = (self.next_id + 1) & 0xFFFFFFFF
                if self.next_id and self.next_id not in self.calls:
                    break
            self.calls[self.next_id] = obj
            return self.next_id

    def _query(self, typ, parts, wait=True):
        slot = [threading.Event(), None] if wait else None
        q = self._new_id(slot)
        try:
            self.send(typ, q, parts)
        except OSError:
            with self.calls_lock:
                self.calls.pop(q, None)
            raise TritonModelException(
                "the stub lost its connection to the server") from None
        if not wait:
            return None
        slot[0].wait()
        if slot[1] is None:
            raise TritonModelException(
                "the stub lost its connection to the server")
        return slot[1]

    def cancelled(self, rid):
        ans = self._query(MSG_CANCEL_QUERY, [_U32.pack(rid)])
        return len(ans) >= 4 and _U32.unpack_from(ans, 0)[0] != 0

    def metric(self, req):
        ans = json.loads(bytes(self._query(
            MSG_METRIC, [json.dumps(req).encode("utf-8")])))
        if "error" in ans:
            raise TritonModelException(ans["error"])
        return ans

    def metric_nowait(self, req):
        try:
            self._query(MSG_METRIC, [json.dumps(req).encode("utf-8")], False)
        except Exception:  # noqa: BLE001 - a deleter has no one to tell
            pass

    def bls_infer(self, req, call):
        if not req._model_name:
            raise TritonModelException(
                "BLS: InferenceRequest needs model_name")
        meta = []
        datas = []
        for t in req._inputs:
            if not isinstance(t, Tensor):
                raise TritonModelException(
                    "BLS: InferenceRequest inputs must be Tensor objects")
            arr = t.as_numpy()
            dtype, data = _tensor_bytes(arr)
            meta.append({"name": t.name(), "dtype": dtype,
                         "shape": list(arr.shape)})
            datas.append(data)
        doc = {
            "model_name": req._model_name,
            "model_version": int(req._model_version),
            "requested_output_names": list(req._outputs),
            "correlation_id": req._correlation_id,
            "request_id": req._request_id,
            "flags": int(req._flags),
            "timeout": int(req._timeout),
            "parameters": req._params,
            "decoupled": bool(call.decoupled),
            "inputs": meta,
        }
        w = _Writer()
        w.str(json.dumps(doc))
        for data in datas:
            w.u64(memoryview(data).nbytes if not isinstance(data, bytes)
                  else len(data))
            w.pad8()
            w.add(data)
        b = self._new_id(call)
        try:
            self.send(MSG_BLS_INFER, b, w.parts)
        except OSError:
            with self.calls_lock:
                self.calls.pop(b, None)
            raise TritonModelException(
                "the stub lost its connection to the server") from None

    # -- the reader thread --

    def _answer(self, typ, mid, payload):
        """Called by the C reader thread (GIL held) for every message that
        is not the main thread's: the answers to the stub's calls; typ 0
        (payload None): the socket reached its end."""
        if typ == MSG_BLS_RESPONSE:
            self._bls_response(mid, payload)
        elif typ in (MSG_CANCEL_ANSWER, MSG_METRIC_ANSWER,
                     MSG_MODEL_CONTROL_ANSWER):
            with self.calls_lock:
                slot = self.calls.pop(mid, None)
            if slot is not None:
                slot[1] = payload
                slot[0].set()
        elif typ == 0:
            self._lost()
        else:
            print("triton_python_backend_stub: unexpected message type %d"
                  % typ, file=sys.stderr)

    def _bls_response(self, b, payload):
        (flags,) = _U32.unpack_from(payload, 0)
        final = bool(flags & _FLAG_FINAL)
        with self.calls_lock:
            call = self.calls.pop(b, None) if final else self.calls.get(b)
        if call is None:
            return
        try:
            resp, _ = _parse_resp(payload, 4)
        except Exception as e:  # noqa: BLE001
            resp = InferenceResponse(error=TritonError(
                "BLS: bad response: " + _exc_text(e)))
        if resp is None and final and call.decoupled:
            resp = InferenceResponse([])  # Triton's empty final response
        call.deliver(resp, final)

    def _lost(self):
        """EOF: every waiting call fails; the stub ends."""
        with self.calls_lock:
            self.closed = True
            calls, self.calls = self.calls, {}
        for c in calls.values():
            if isinstance(c, _BlsCall):
                c.deliver(InferenceResponse(error=TritonError(
                    "the stub lost its connection to the server")), True)
            elif c is not None:
                c[0].set()
        # The main thread ends at the reader's WORK_EOF item.

    # -- the main thread --

    def _end(self, status):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)

    def _work(self, typ, mid, payload):
        self.in_work = True
        try:
            if typ == MSG_EXECUTE:
                self.execute(mid, payload)
            elif typ == MSG_INIT:
                self.initialize(mid, payload)
            elif typ == MSG_AUTO_COMPLETE:
                self.auto_complete(mid, payload)
            elif typ == MSG_FINALIZE:
                self.finalize(mid)
        except Exception as e:  # noqa: BLE001 - a bug here must not end the loop
            # The server waits for an answer: give it one.
            try:
                if typ == MSG_FINALIZE:
                    self.send(MSG_FINALIZE_OK, mid)
                    self._end(1)
                self.send_error(mid, "the stub failed: " + _exc_text(e),
                                traceback.format_exc())
            except OSError:
                pass
        finally:
            payload = None
            self.in_work = False
        if self.flush_pending:
            self._flush_frees()

    def _load_module(self, args, config):
        filename = config.get("default_model_filename") or "model.py"
        vdir = os.path.join(args["model_repository"],
                            str(args["model_version"]))
        path = os.path.join(vdir, filename)
        if not os.path.exists(path):
            raise TritonModelException(
                "Failed to load the model file '" + path + "'")
        self.model_dir = vdir
        self.model_name = args.get("model_name", "")
        try:
            self.model_version = int(args["model_version"])
        except (KeyError, ValueError):
            self.model_version = -1
        sys.path.insert(0, vdir)
        spec = importlib.util.spec_from_file_location("model", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["model"] = module
        spec.loader.exec_module(module)
        return module

    def initialize(self, mid, payload):
        try:
            args = json.loads(payload.decode("utf-8"))
            config = json.loads(args["model_config"])
            self.instance_name = args.get("model_instance_name", "")
            module = self._load_module(args, config)
            self.model = module.TritonPythonModel()
            if hasattr(self.model, "initialize"):
                self.model.initialize(args)
        except Exception as e:  # noqa: BLE001 - any user error fails the load
            self.send_error(mid, _exc_text(e), traceback.format_exc())
            return
        self.send(MSG_INIT_OK, mid)

    def auto_complete(self, mid, payload):
        try:
            args = json.loads(payload.decode("utf-8"))
            text = args["model_config"]
            config = json.loads(text)
            module = self._load_module(args, config)
            cls = module.TritonPythonModel
            if hasattr(cls, "auto_complete_config"):
                res = cls.auto_complete_config(ModelConfig(text))
                if not isinstance(res, ModelConfig):
                    raise TritonModelException(
                        "auto_complete_config function for model '"
                        + args.get("model_name", "") + "' must return a "
                        "pb_utils.ModelConfig object, got '"
                        + type(res).__name__ + "'.")
                text = json.dumps(res.as_dict())
        except Exception as e:  # noqa: BLE001
            self.send_error(mid, _exc_text(e), traceback.format_exc())
            return
        self.send(MSG_AUTO_COMPLETE_OK, mid, [text.encode("utf-8")])

    def finalize(self, mid):
        try:
            if self.model is not None and hasattr(self.model, "finalize"):
                self.model.finalize()
        except Exception:  # noqa: BLE001
            traceback.print_exc()
        self.send(MSG_FINALIZE_OK, mid)
        self._end(0)

    def _requests(self, reqs, decoupled):
        """The InferenceRequests of EXECUTE's parsed requests (tuples of
        _inferd_stub.parse_execute)."""
        requests = []
        for r in reqs:
            boff, bsize = r[2], r[3]
            block = self.C.down_block(boff, bsize)
            inputs = []
            for name, dtype, shape, off, size in r[9]:
                npt = triton_string_to_numpy(dtype)
                if size == 0:
                    arr = np.empty(shape, dtype=npt)
                    if dtype == "BYTES":
                        arr.fill(b"")
                elif dtype == "BYTES":
                    rel = off - boff
                    arr = deserialize_bytes_tensor(
                        memoryview(block)[rel:rel + size]).reshape(shape)
                else:
                    arr = np.frombuffer(
                        block, dtype=npt, count=size // np.dtype(npt).itemsize,
                        offset=off - boff).reshape(shape)
                inputs.append(Tensor(name, arr))
            requests.append(
                InferenceRequest._from_execute(r, block, inputs, decoupled))
        return requests

    def _fail_text(self, e):
        return ("Failed to process the request(s) for model instance '"
                + self.instance_name + "', message: " + _exc_text(e))

    def execute(self, mid, payload):
        try:
            decoupled, reqs = self.C.parse_execute(payload)
            requests = self._requests(reqs, decoupled)
        except Exception as e:  # noqa: BLE001
            self.send_error(mid, self._fail_text(e), traceback.format_exc())
            return
        try:
            res = self.model.execute(requests)
        except Exception as e:  # noqa: BLE001
            self._execute_failed(mid, requests, e)
            return
        if asyncio.iscoroutine(res):
            task = self.loop.create_task(res)
            self.tasks.add(task)
            task.add_done_callback(self._task_done)
            if decoupled:
                # Triton: an async execute of a decoupled model runs in the
                # background; the next execute may start meanwhile.
                task.add_done_callback(
                    lambda t: self._async_decoupled_done(t, requests))
                self.send(MSG_EXECUTE_DONE, mid)
            else:
                task.add_done_callback(
                    lambda t: self._async_done(t, mid, requests, decoupled))
            return
        # The box lets _finish drop the last references of this frame.
        box = [requests, res]
        requests = res = None
        self._finish(mid, box, decoupled)

    def _async_done(self, task, mid, requests, decoupled):
        self.in_work = True
        try:
            e = task.exception()
            if e is not None:
                self._execute_failed(mid, requests, e)
            else:
                self._finish(mid, [requests, task.result()], decoupled)
        finally:
            requests = None
            self.in_work = False
        if self.flush_pending:
            self._flush_frees()

    def _async_decoupled_done(self, task, requests):
        e = task.exception()
        if e is None and task.result() is None:
            return
        if e is None:
            e = TritonModelException(
                "Python model '" + self.model_name + "' is using the "
                "decoupled mode and the execute function must return None.")
        else:
            traceback.print_exception(e)
        err = InferenceResponse(error=TritonError(self._fail_text(e)))
        for r in requests:
            s = r._sender
            with s._lock:
                if s._closed:
                    continue
                s._closed = True
            self.send_response(r._rid, _FLAG_FINAL, _resp_inline(err))

    def _execute_failed(self, mid, requests, e):
        tb = "".join(traceback.format_exception(e))
        for r in requests:
            r._sender._close()
        self.send_error(mid, self._fail_text(e), tb)

    def _finish(self, mid, box, decoupled):
        """Answers EXECUTE; box = [requests, execute's return value] (emptied
        here, so that the requests can die before the answer goes)."""
        requests, res = box
        box.clear()
        try:
            if decoupled:
                if res is not None:
                    raise TritonModelException(
                        "Python model '" + self.model_name + "' is using the "
                        "decoupled mode and the execute function must return "
                        "None.")
                self._send_releases(requests)
                self.send(MSG_EXECUTE_DONE, mid)
                return
            if res is None:
                # The response senders answer (Triton: a non-decoupled model
                # may send its one response + FINAL with the sender, from
                # execute or later from another thread).
                self._send_releases(requests)
                self.send(MSG_EXECUTE_DONE, mid)
                return
            used = any(r._sender._used() for r in requests)
            if used:
                raise TritonModelException(
                    "Non-decoupled model cannot send a response using the "
                    "response sender and also return responses from the "
                    "execute function")
            if not isinstance(res, list):
                raise TritonModelException(
                    "Expected a list in the execute return")
            if len(res) != len(requests):
                raise TritonModelException(
                    "Number of InferenceResponse objects do not match number "
                    "of InferenceRequest objects. InferenceRequest(s) size "
                    "is:%d, and InferenceResponse(s) size is:%d"
                    % (len(requests), len(res)))
            for r, bad in zip(requests, res):
                if bad is None:
                    continue  # rescheduled, or answered through its sender
                if r._release_flags == TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
                    raise TritonModelException(
                        "Expected a None object in the execute function "
                        "return list for reschduled request, found type "
                        "'%s'." % type(bad).__name__)
                if not isinstance(bad, InferenceResponse):
                    raise TritonModelException(
                        "Expected an 'InferenceResponse' object in the execute "
                        "function return list, found type '%s'."
                        % type(bad).__name__)
            bad = None
            parts = self._pack_result(res, [r._outputs for r in requests])
        except Exception as e:  # noqa: BLE001
            self._execute_failed(mid, requests, e)
            return
        self._send_releases(requests)
        for r, resp in zip(requests, res):
            if resp is not None:
                r._sender._close()
        # Drop the requests (and with them, most often, their DOWN blocks)
        # before sending, so their FREE goes in the same write.
        requests = res = r = None
        self.send(MSG_RESULT, mid, parts)

    def _send_releases(self, requests):
        """RELEASE for each request execute rescheduled, before execute's
        answer (a rescheduled request gets no response from this execute)."""
        for r in requests:
            if r._release_flags == TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
                r._sender._close()
                self.send(MSG_RELEASE, 0, [struct.pack(
                    "<II", r._rid, TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)])

    def _pack_result(self, responses, wanted):
        """RESULT's payload; tensor data are written into UP. A None
        response is a RESP without a response (its request stays open)."""
        m = bytearray(_U32.pack(len(responses)))
        copies = []  # (UP offset, array or bytes)
        pos = 0
        for k, resp in enumerate(responses):
            if resp is None:
                m += _U32.pack(0)
                continue
            err = resp.error()
            if err is not None:
                msg = str(err.message()).encode("utf-8", "replace")
                code = int(err.code()) if hasattr(err, "code") else 1
                m += struct.pack("<IIII", 1, 1, code, len(msg))
                m += msg
                continue
            outs = _pruned(resp.output_tensors(), wanted[k])
            m += struct.pack("<III", 1, 0, len(outs))
            for t in outs:
                _check_output(t)
                arr = t.as_numpy()
                dtype = _numpy_to_triton(arr)
                if dtype == "BYTES":
                    src = serialize_byte_tensor(arr)
                    size = len(src)
                else:
                    src = arr
                    size = arr.nbytes
                pos = (pos + 63) & ~63
                m += _out_head(t.name(), dtype)
                m += _out_dims(arr.ndim).pack(arr.ndim, *arr.shape, size, 1,
                                              0, pos)
                if size:
                    copies.append((pos, src))
                pos += size
        if pos:
            up = self.C.up_view(pos)
            for off, src in copies:
                if isinstance(src, bytes):
                    up[off:off + len(src)] = src
                elif src.flags.c_contiguous:
                    up[off:off + src.nbytes] = \
                        memoryview(src.reshape(-1).view(np.uint8))
                else:
                    dst = np.frombuffer(up, dtype=src.dtype, count=src.size,
                                        offset=off).reshape(src.shape)
                    np.copyto(dst, src, casting="no")
            del up
        return [m]

    def run(self):
        self.C.set_free_notify(self._free_notify)
        self.C.start_reader(self._answer)
        asyncio.set_event_loop(self.loop)
        while True:
            if self.tasks:
                # Async executes run: the loop runs until they end, and
                # takes the queue's items meanwhile (wake_fd).
                self.C.set_looping(True)
                self.loop.add_reader(self.C.wake_fd, self._pump)
                self.loop.call_soon(self._pump)
                self.loop.run_forever()
                self.loop.remove_reader(self.C.wake_fd)
                self.C.set_looping(False)
                continue
            item = self.C.next_work()  # waits without the GIL
            self._handle(item)
            item = None

    def _task_done(self, task):
        self.tasks.discard(task)
        if not self.tasks:
            self.loop.stop()


def main(C):
    """Runs the stub over the module _inferd_stub (C) until FINALIZE or EOF."""
    pb._STUB = _Stub(C)
    pb._STUB.run()
