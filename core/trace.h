/*
 * core/trace.h - Triton's trace extension (mode "triton"): trace settings,
 * sampling, per-request trace records and the trace file.
 *
 * The settings are Triton's: a global one (from --trace-config / --trace-*
 * at start, changed by POST /v2/trace/setting) and per-model overrides
 * (POST /v2/models/<m>/trace/setting) whose fields fall back to the global
 * one until given. Every setting counts the requests of its models; with
 * level TIMESTAMPS or TENSORS every rate-th request gets a trace until
 * `count` traces were made (-1: no end).
 *
 * Cost: the server keeps one flag, true only while some setting can sample;
 * ifd_request_submit tests it once per request. An untraced request carries
 * a NULL trace and nothing else. A traced request's timestamps come from
 * the times core already keeps for statistics (queue, execute, compute)
 * plus a few stamps on the loop (receive, send, release), read when the
 * request is freed: instance threads never touch the trace.
 *
 * The record is Triton's JSON (server/docs/user_guide/trace.md): per trace
 * {"id","model_name","model_version"[,"request_id"][,"parent_id"]}, then
 * one {"id","timestamps":[{"name","ns"}]} per timestamp, and at TENSORS
 * {"id","activity","tensor":{"name","data","shape","dtype"}}. An ensemble's
 * steps are child traces (parent_id) written with their parent's. Traces
 * collect in their setting; they go to `<file>.<n>` every log_frequency
 * traces (or when count runs out), else to `<file>` as one JSON array when
 * the setting is replaced or the server stops. Files are written by a
 * writer thread, never on the loop.
 *
 * Everything here runs on the loop thread.
 */
#ifndef IFD_CORE_TRACE_H
#define IFD_CORE_TRACE_H

#include <stdint.h>

#include "base/error.h"

typedef struct ifd_server ifd_server_t;
typedef struct ifd_request ifd_request_t;
typedef struct ifd_response ifd_response_t;
typedef struct ifd_trace_mgr ifd_trace_mgr_t;
typedef struct ifd_output ifd_output_t;
typedef struct ifd_trace ifd_trace_t;

/**
 * An application's trace object (the in-process API's
 * TRITONSERVER_InferenceTrace, backend_api/capi/capi_trace.c) that a request
 * reports to instead of the trace file. Embedded first in that object.
 * Every call runs on the loop thread.
 */
typedef struct ifd_trace_sink {
  const struct ifd_trace_sink_ops *ops; /* borrowed: static */
} ifd_trace_sink_t;

typedef struct ifd_trace_sink_ops {
  /** A TENSOR_BACKEND_OUTPUT of the traced request (level TENSORS). */
  void (*output)(ifd_trace_sink_t *sink, const ifd_output_t *o);
  /** The request is done: `t` holds its timestamps, `req` its model,
   *  id and inputs (both borrowed for the call). Called once; the sink
   *  hands itself back to its owner here (Triton's release callback). */
  void (*done)(ifd_trace_sink_t *sink, const ifd_request_t *req,
               const ifd_trace_t *t);
  /** A child trace's sink (an ensemble step's), or NULL. */
  ifd_trace_sink_t *(*spawn)(ifd_trace_sink_t *sink);
  /** The sink's trace id and level. */
  uint64_t (*id)(ifd_trace_sink_t *sink);
} ifd_trace_sink_ops_t;

/* Trace levels, TRITONSERVER_InferenceTraceLevel's bits (0: OFF). */
#define IFD_TRACE_TIMESTAMPS 0x4
#define IFD_TRACE_TENSORS 0x8

/** The points of a request a trace stamps, in the order they happen. */
typedef enum ifd_trace_point {
  IFD_TP_RECV_START = 0, /* HTTP_RECV_START / GRPC_WAITREAD_START */
  IFD_TP_RECV_END,       /* HTTP_RECV_END / GRPC_WAITREAD_END */
  IFD_TP_REQUEST_START,
  IFD_TP_QUEUE_START,
  IFD_TP_COMPUTE_START,
  IFD_TP_COMPUTE_INPUT_END,
  IFD_TP_COMPUTE_OUTPUT_START,
  IFD_TP_COMPUTE_END,
  IFD_TP_RESPONSE_COMPLETE, /* INFER_RESPONSE_COMPLETE */
  IFD_TP_REQUEST_END,
  IFD_TP_SEND_START, /* HTTP_SEND_START / GRPC_SEND_START */
  IFD_TP_SEND_END,
  IFD_TP_COUNT
} ifd_trace_point_t;

/** Which front end received the traced request (names its timestamps). */
typedef enum ifd_trace_proto {
  IFD_TRACE_PROTO_NONE = 0,
  IFD_TRACE_PROTO_HTTP,
  IFD_TRACE_PROTO_GRPC,
} ifd_trace_proto_t;

/** One request's trace. Owned by its request (req->trace). */
struct ifd_trace {
  uint64_t id;
  uint64_t parent_id; /* 0: a root trace */
  int level;          /* IFD_TRACE_* bits of the setting that sampled it */
  ifd_trace_proto_t proto;
  uint64_t ts[IFD_TP_COUNT];      /* ns, CLOCK_MONOTONIC; 0: not stamped */
  struct ifd_trace_group *group;  /* counted: the record it writes into */
  struct ifd_trace_text *outputs; /* owned: TENSOR_BACKEND_OUTPUT records
                                     so far (TENSORS); NULL when none */
  ifd_trace_sink_t *sink; /* borrowed: the application's trace object this
                             one reports to (group NULL then), until done */
  char *request_id;       /* owned: a child's request id, copied when it is made
                             (the step borrows its parent's, which may go first);
                             NULL: the request's own id */
};

/** The request id a trace reports for `req` (loop thread). */
const char *ifd_trace_request_id(const ifd_request_t *req,
                                 const ifd_trace_t *t);

/** A new trace id, unique in the process (any thread). */
uint64_t ifd_trace_new_id(void);

/**
 * Traces `req` (before its submit, loop thread) into `sink` at `level`
 * (IFD_TRACE_* bits), with the sink's id and `parent_id`. The request's
 * own sampling is then skipped. 0, or IFD_ENOMEM.
 */
int ifd_trace_attach(ifd_request_t *req, ifd_trace_sink_t *sink, int level,
                     uint64_t parent_id);

/** Settings as given at start (app/options.c, the C API). */
typedef struct ifd_trace_config {
  int level;              /* IFD_TRACE_* bits; 0: OFF */
  uint32_t rate;          /* every rate-th request; 0 never */
  int32_t count;          /* traces left; -1: unlimited */
  uint32_t log_frequency; /* traces per indexed file; 0: one file */
  const char *file;       /* borrowed: NULL or "" for none */
} ifd_trace_config_t;

/** Tritonserver's defaults: OFF, rate 1000, count -1, log_frequency 0. */
void ifd_trace_config_default(ifd_trace_config_t *c);

/**
 * A settings change (POST .../trace/setting, the TraceSetting RPC): has_*
 * set a field, clear_* give a model's field back to the global setting (on
 * the global one, back to the start-up value).
 */
typedef struct ifd_trace_update {
  int has_level, clear_level, level;
  int has_rate, clear_rate;
  uint32_t rate;
  int has_count, clear_count;
  int32_t count;
  int has_log_frequency, clear_log_frequency;
  uint32_t log_frequency;
} ifd_trace_update_t;

/** A setting as read back; `file` borrowed until the next change. */
typedef struct ifd_trace_view {
  int level;
  uint32_t rate;
  int32_t count;
  uint32_t log_frequency;
  const char *file;
} ifd_trace_view_t;

/**
 * Creates the manager for `s` from `cfg` (copied). 0, or IFD_ENOMEM.
 * Called by ifd_server_new.
 */
int ifd__trace_init(ifd_server_t *s, const ifd_trace_config_t *cfg);

/**
 * Drops the server's settings: traces still collected are written, the
 * writer thread finishes its files and is joined (ifd_server_free; the
 * only place that waits, at exit). A request still traced afterwards keeps
 * what it needs alive.
 */
void ifd__trace_fini(ifd_server_t *s);

/** The setting that applies to `model` (NULL or "": the global one). */
void ifd_trace_get(ifd_server_t *s, const char *model, ifd_trace_view_t *out);

/**
 * Applies `u` to the global setting (model NULL or "") or to `model`'s.
 * Returns 0, or IFD_EINVAL with Triton's text in `err` ("Attempting to set
 * invalid trace setting :<why>") when the result could trace but is
 * invalid; nothing changes then.
 */
int ifd_trace_update(ifd_server_t *s, const char *model,
                     const ifd_trace_update_t *u, ifd_errmsg_t *err);

/** Samples `req` (model resolved) against its setting; sets req->trace
 *  when it is traced. ifd_request_submit calls it only while tracing can
 *  sample. */
void ifd__trace_sample(ifd_request_t *req);

/** Gives `child` (an ensemble step) a child trace of `parent`'s. */
void ifd_trace_child(ifd_request_t *child, const ifd_request_t *parent);

/** Stamps `point` now (no-op when already stamped). */
void ifd_trace_stamp(ifd_trace_t *t, ifd_trace_point_t point);

/** A response of a traced request is delivered: INFER_RESPONSE_COMPLETE
 *  for the final one, TENSOR_BACKEND_OUTPUT records at TENSORS. */
void ifd__trace_response(ifd_request_t *req, const ifd_response_t *resp);

/** The request is being freed: its record is completed and handed to its
 *  setting (req->trace freed, set NULL). */
void ifd__trace_finish(ifd_request_t *req);

/** The name Triton gives `point` for `proto`. */
const char *ifd_trace_point_name(ifd_trace_point_t point,
                                 ifd_trace_proto_t proto);

#endif
