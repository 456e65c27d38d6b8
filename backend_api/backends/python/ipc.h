/*
 * backend_api/backends/python/ipc.h - the protocol between libtriton_python.so
 * and its stub process (version 3: bidirectional, decoupled, BLS; a binary
 * EXECUTE since version 3).
 *
 * One stub per model instance (plus a short-lived one per model for
 * auto_complete_config). Descriptors the stub is given:
 *   IFD_PY_SOCK_FD  a stream socketpair end: framed messages, both ways;
 *   IFD_PY_DOWN_FD  the DOWN segment (memfd): the SERVER writes (request
 *                   inputs), the stub reads; only the server grows it;
 *   IFD_PY_UP_FD    the UP segment (memfd): the STUB writes (execute
 *                   outputs), the server reads; only the stub grows it.
 * Each side maps each segment ONCE with IFD_PY_SEG_MAX bytes of address
 * space (MAP_SHARED | MAP_NORESERVE; the file is smaller and grows with
 * ftruncate), so pointers into a segment never move.
 *
 * Every message: ifd_py_hdr_t {type, id, length} + `length` payload bytes.
 * Integers little-endian (native: both ends share the host). "str" below is
 * u32 byte length + UTF-8 bytes (no NUL). "JSON" is UTF-8 JSON text.
 * Tensor bytes are raw C-order element bytes; BYTES tensors use Triton's
 * format (per element u32 length + bytes).
 *
 * SERVER -> STUB
 *  INIT           id=n  JSON: Triton's initialize(args) keys (all strings:
 *                       model_config, model_instance_kind, model_instance_name,
 *                       model_instance_device_id, model_repository,
 *                       model_version, model_name)
 *                       -> INIT_OK (empty) or ERROR
 *  AUTO_COMPLETE  id=n  JSON {model_config (JSON string), model_repository,
 *                       model_version, model_name}: import model.py, call
 *                       TritonPythonModel.auto_complete_config if present
 *                       -> AUTO_COMPLETE_OK (JSON: the config, unchanged when
 *                       the method is absent) or ERROR. Then FINALIZE (the
 *                       model's finalize is not called: no instance exists).
 *  EXECUTE        id=n  u32 decoupled (0/1), u32 count, then count x REQ:
 *                       u32 rid, u32 flags, u64 block offset, u64 block
 *                       size, str id, u32 corr_kind then (0) u64
 *                       correlation id or (1) str correlation id, u32
 *                       has_trace then (1) str trace_context, u32 n, n x
 *                       str requested output name, u32 n, n x PARAM, u32
 *                       n, n x INPUT. PARAM: str key, u32 kind
 *                       (IFD_PY_PARAM_*), then STR: str, INT: i64, BOOL:
 *                       u32, DOUBLE: f64, NULL: nothing. INPUT: str name,
 *                       str dtype ("FP32", "BYTES", ...), u32 ndims, i64
 *                       dims[ndims], u64 offset (absolute, in DOWN), u64
 *                       size. No padding anywhere (fields unaligned).
 *                       `rid` names the request in RESPONSE and CANCEL_QUERY
 *                       until its FINAL response. `block` is the request's
 *                       one allocation in DOWN (every input of the request
 *                       lies inside it; absolute offsets); the stub frees it
 *                       with FREE when nothing in Python uses it any more.
 *                       -> RESULT (execute returned a list), EXECUTE_DONE
 *                       (execute returned None: responses come or came as
 *                       RESPONSE), or ERROR (execute raised or returned a
 *                       wrong value: every request of the batch without a
 *                       FINAL response yet fails with the message).
 *  FINALIZE       id=n  empty -> FINALIZE_OK (model's finalize ran); the stub
 *                       then exits 0.
 *  BLS_RESPONSE   id=b  (b: the stub's BLS call id) one response of a BLS
 *                       call: u32 flags (IFD_PY_FLAG_FINAL), then RESP (below).
 *                       The last one of a call has FINAL; a FINAL with
 *                       has_response 0 only ends a decoupled stream.
 *  CANCEL_ANSWER  id=q  u32 cancelled (0/1)
 *  MODEL_CONTROL_ANSWER id=q  JSON {"ready": bool} (ready) | {} (load,
 *                       unload done) | {"error": str, "code": u32}
 *  METRIC_ANSWER  id=q  JSON {"handle": u64} | {"value": double} | {} or
 *                       {"error": str, "code": u32}
 *
 * STUB -> SERVER
 *  INIT_OK, AUTO_COMPLETE_OK, EXECUTE_DONE, FINALIZE_OK  id = the request's
 *  RESULT         id=n  u32 count (= requests), then count x RESP; tensor
 *                       data of RESULT lies in UP (`where` = 1 below); the
 *                       stub does not touch UP again until the next EXECUTE.
 *  ERROR          id=n  str message, then the Python traceback (the rest of
 *                       the payload, may be empty); the server logs both.
 *  RESPONSE       id=0  u32 rid, u32 flags (IFD_PY_FLAG_FINAL), then RESP
 *                       (inline data). From response_sender.send(), any
 *                       thread, any time until the rid's FINAL. No answer.
 *  BLS_INFER      id=b  str JSON {model_name, model_version (int, -1:
 *                       latest), requested_output_names: [str],
 *                       correlation_id: int or str, request_id: str, flags:
 *                       u32 (sequence start/end), timeout: u64 microseconds
 *                       (0: none), parameters: {k: str|int|bool|float},
 *                       decoupled: bool, inputs: [{name, dtype, shape}]},
 *                       then per input: u64 size + pad to 8 + its bytes, in
 *                       input order (the u64 right after the previous bytes,
 *                       unaligned; the pad is to a multiple of 8 from the
 *                       start of the payload, as in RESP). -> BLS_RESPONSE x
 *                       n (ids = b).
 *  LOG            id=0  u32 level (TRITONSERVER_LogLevel), u32 line, str
 *                       file, str message. No answer.
 *  CANCEL_QUERY   id=q  u32 rid -> CANCEL_ANSWER (0 for an unknown rid).
 *  METRIC         id=q  JSON {"op": one of
 *                        "family_new" {name, description, kind: 0 counter,
 *                                      1 gauge, 2 histogram} -> handle,
 *                        "family_delete" {handle},
 *                        "metric_new" {family, labels: {k: v}, buckets:
 *                                      [double] (histograms)} -> handle,
 *                        "metric_delete" {handle},
 *                        "increment" {handle, value}, "set" {handle, value},
 *                        "observe" {handle, value}, "value" {handle} -> value}
 *                       -> METRIC_ANSWER
 *  FREE           id=0  u64 offset x n (payload/8): DOWN blocks (the
 *                       `block` offsets of EXECUTE) the stub no longer uses.
 *  RELEASE        id=0  u32 rid, u32 flags (TRITONSERVER_REQUEST_RELEASE_*):
 *                       request.set_release_flags(RESCHEDULE); sent before
 *                       the EXECUTE's answer: the server releases the open
 *                       request with those flags (back to its scheduler),
 *                       and it gets no response from this EXECUTE (its RESP
 *                       in RESULT has has_response 0). No answer.
 *  MODEL_CONTROL  id=q  str JSON {"op": "load" | "unload" | "ready", name,
 *                       version (str, "" latest: ready), config (str, JSON
 *                       or ""), unload_dependents (bool), files: [[key,
 *                       size]...] (load: "file:<version>/<name>" keys)},
 *                       then the files' bytes one after another, in order
 *                       (pb_utils.load_model / unload_model /
 *                       is_model_ready) -> MODEL_CONTROL_ANSWER. A load
 *                       answers once the model loaded (or failed); an
 *                       unload once it began.
 *
 * RESP (one response):
 *   u32 has_response (0: none, nothing follows; RESPONSE/BLS_RESPONSE only;
 *                     RESULT's RESPs carry it too; the stub sends 1 there)
 *   u32 is_error
 *   is_error: u32 code (TRITONSERVER_Error_Code), str message
 *   else:     u32 n_outputs; per output: str name, str dtype, u32 ndims,
 *             i64 dims[ndims], u64 size, u32 where (0: inline, 1: UP), u32 0,
 *             then where=1: u64 offset (in UP);
 *                  where=0: pad to a multiple of 8 from the start of the
 *                           payload, then `size` bytes.
 *
 * Ids: n are the server's (instance side, one at a time); b and q are the
 * stub's (unique among its calls in flight). Both directions may interleave
 * messages freely; each side has ONE reader that never blocks on a write
 * of its own side, so neither side can deadlock the other.
 */
#ifndef IFD_PY_IPC_H
#define IFD_PY_IPC_H

#include <stdint.h>

#define IFD_PY_SOCK_FD 3
#define IFD_PY_DOWN_FD 4
#define IFD_PY_UP_FD 5

/* Address space each side maps per segment (16 GiB): the largest batch of
 * inputs or outputs one execute can carry. */
#define IFD_PY_SEG_MAX ((uint64_t)16 << 30)

/* EXECUTE's PARAM kinds (NULL: a parameter type the stub cannot show; it
 * reads as None). */
enum {
  IFD_PY_PARAM_STR = 0,
  IFD_PY_PARAM_INT = 1,
  IFD_PY_PARAM_BOOL = 2,
  IFD_PY_PARAM_DOUBLE = 3,
  IFD_PY_PARAM_NULL = 4,
};

/* RESPONSE / BLS_RESPONSE flags: TRITONSERVER_RESPONSE_COMPLETE_FINAL. */
#define IFD_PY_FLAG_FINAL 1u

enum {
  IFD_PY_MSG_INIT = 1,
  IFD_PY_MSG_INIT_OK = 2,
  IFD_PY_MSG_ERROR = 3,
  IFD_PY_MSG_EXECUTE = 4,
  IFD_PY_MSG_RESULT = 5,
  IFD_PY_MSG_FINALIZE = 6,
  IFD_PY_MSG_FINALIZE_OK = 7,
  IFD_PY_MSG_EXECUTE_DONE = 8,
  IFD_PY_MSG_RESPONSE = 9,
  IFD_PY_MSG_BLS_INFER = 10,
  IFD_PY_MSG_BLS_RESPONSE = 11,
  IFD_PY_MSG_LOG = 12,
  IFD_PY_MSG_CANCEL_QUERY = 13,
  IFD_PY_MSG_CANCEL_ANSWER = 14,
  IFD_PY_MSG_METRIC = 15,
  IFD_PY_MSG_METRIC_ANSWER = 16,
  IFD_PY_MSG_FREE = 17,
  IFD_PY_MSG_AUTO_COMPLETE = 18,
  IFD_PY_MSG_AUTO_COMPLETE_OK = 19,
  IFD_PY_MSG_MODEL_CONTROL = 20,
  IFD_PY_MSG_MODEL_CONTROL_ANSWER = 21,
  IFD_PY_MSG_RELEASE = 22,
};

/* The header before every payload. */
typedef struct ifd_py_hdr {
  uint32_t type;   /* IFD_PY_MSG_* */
  uint32_t id;     /* see "Ids" above */
  uint64_t length; /* payload bytes that follow */
} ifd_py_hdr_t;

#endif
