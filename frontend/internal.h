/*
 * frontend/internal.h - what the files of the HTTP front end share.
 *
 *   http_app.c    one listener: net/http1.h's transport, its handler table
 *                 and the application object (ifd_http_t)
 *   http_meta.c   JSON of core's metadata, statistics and repository index
 *   json_scan.c   a JSON validator and cursor helpers for the infer decoder
 *   http_routes.c the route matcher and the KServe v2 handlers
 *   http_infer.c  one infer exchange: decode, submit, answer the slot
 *   http_infer_decode.c  infer request JSON/binary body into ifd_request_t
 *   http_infer_data.c    an input's JSON `data` into its tensor buffer
 *   http_infer_encode.c  infer response into its JSON/binary body
 *   http_generate.c      one generate / generate_stream exchange
 *   http_generate_map.c  generate JSON body <-> request, response <-> JSON
 *   http_shm.c    the system and CUDA shared-memory extensions' routes
 *
 * A response slot is the unit that ties them together: the transport
 * (net/http1.c) appends one to its connection's FIFO per parsed request, a
 * handler fills it (at once, or later from the request's on_response), and
 * the transport writes the ready slots at the head of the FIFO in one
 * uv_write. The slot here begins with the transport's ifd_http1_slot_t.
 */
#ifndef IFD_FRONTEND_INTERNAL_H
#define IFD_FRONTEND_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/error.h"
#include "base/half.h"
#include "base/jsonw.h"
#include "core/infer.h"
#include "core/server.h"
#include "frontend/frontend.h"
#include "net/http1.h"

/* ---- JSON scanning (json_scan.c) --------------------------------------- */

/** Values nest at most this deep (a scalar counts one level), as in jansson. */
#define IFD_JSON_MAX_DEPTH 2048

/** Where and why validation failed. */
typedef struct ifd_jerr {
  size_t pos;    /* byte offset of the offending text */
  char text[64]; /* NUL-terminated reason */
} ifd_jerr_t;

/** A number in validated JSON text. */
typedef struct ifd_jnum {
  int is_int;  /* no '.', 'e' or 'E' and it fits int64_t: i holds it */
  int is_uint; /* no '.', 'e' or 'E' and not negative: u holds it (up to
                  UINT64_MAX, so is_int may be 0) */
  int64_t i;
  uint64_t u;
  double d; /* the value as jansson's json_number_value() gave it (an
               integer above INT64_MAX: rounded to a double) */
} ifd_jnum_t;

/**
 * Checks that `s` (n bytes) is one JSON text as jansson's json_loadb() with
 * JSON_ALLOW_NUL accepts it (top-level object or array), save that
 * non-negative integers go up to UINT64_MAX (jansson's stop at INT64_MAX).
 * Returns 0, or -1
 * with *e set. Allocates nothing (save one copy for a real number within a
 * decade of overflow) and never recurses.
 */
int ifd__json_validate(const char *s, size_t n, ifd_jerr_t *e);

/* The functions below read text that ifd__json_validate() accepted; `end`
 * bounds every read. */

/** Returns p advanced past JSON whitespace. */
const char *ifd__json_ws(const char *p, const char *end);
/** p at a value's first byte: returns the byte after the value. */
const char *ifd__json_skip(const char *p, const char *end);
/** p at a string's opening quote: returns its decoded length; *esc is set
 *  when it holds escapes (else the decoded bytes are the raw ones). */
size_t ifd_json_strlen(const char *p, const char *end, int *esc);
/** p at a string's opening quote: writes its decoded bytes (as many as
 *  ifd_json_strlen() counts, no NUL) to out; returns the byte after it. */
const char *ifd_json_strcpy(const char *p, const char *end, char *out);
/** p at a number: parses it into *num (reals rounded exactly as strtod()
 *  rounds them); returns the byte after it. */
const char *ifd__json_number(const char *p, const char *end, ifd_jnum_t *num);
/** p at a number: *out is the number as (float)strtod() gives it (FP32
 *  tensors round through the double, as Triton's do), mostly without
 *  strtod(); returns the byte after it. */
const char *ifd__json_number_f32(const char *p, const char *end, float *out);
/** p at an object (after whitespace): the first byte of the value of its
 *  first member named `key` (at most 64 bytes), as rapidjson's FindMember
 *  finds it; NULL when p is not at an object or no member has that name. */
const char *ifd__json_find(const char *p, const char *end, const char *key);

/* Cursor helpers over validated text (v NULL or at `end`: none). */

/** What a scalar's first byte says it is. */
int ifd__json_is_num(const char *v, const char *end);
int ifd__json_is_str(const char *v, const char *end);
int ifd__json_is_bool(const char *v, const char *end);
int ifd__json_is_obj(const char *v, const char *end);
int ifd__json_is_arr(const char *v, const char *end);
/** Whether v is an integer (no '.', 'e', 'E') that fits int64_t; its value
 *  in *x. */
int ifd__json_get_int(const char *v, const char *end, int64_t *x);
/** Whether v is a non-negative integer (up to UINT64_MAX, as Triton's
 *  AsUInt reads unsigned fields); its value in *x. */
int ifd__json_get_uint(const char *v, const char *end, uint64_t *x);

/** An object key: q at its opening quote, n raw bytes before the closing
 * one, esc when they hold escapes. */
typedef struct ifd_jkey {
  const char *q;
  size_t n;
  int esc;
} ifd_jkey_t;

/** Steps through an object's members. *pp is at the '{' or after the
 *  previous member's value (the caller skips it). Returns 1 with the key and
 *  *val at the value's first byte, or 0 after the closing '}'. */
int ifd__json_member(const char **pp, const char *end, ifd_jkey_t *k,
                     const char **val);
/** Steps through an array's elements like ifd__json_member(). */
int ifd__json_element(const char **pp, const char *end, const char **val);
/** Whether the key decodes to `lit` (a field name of at most 20 bytes). */
int ifd__json_key_is(const ifd_jkey_t *k, const char *end, const char *lit);

/* ---- metadata JSON (http_meta.c) --------------------------------------- */

/* Each appends the compact JSON body of one route to `b`, rendered by
 * core/render_json.h (the in-process API's text too). An allocation failure
 * sets b->oom. */

/** GET /v2: {"name","version","extensions"}. */
void ifd__json_server_info(ifd_hbuf_t *b, const ifd_server_info_t *info);
/** GET /v2/models/m: {"name","versions","platform","inputs","outputs"}. */
void ifd__json_model_info(ifd_hbuf_t *b, const ifd_model_info_t *info);
/** GET /v2/models/m/config: the configuration as protobuf's JSON mapping. */
void ifd__json_model_config(ifd_hbuf_t *b, const ifd_model_t *m);
/** The statistics extension: {"model_stats":[...]} of `n` entries. */
void ifd__json_stats(ifd_hbuf_t *b, const ifd_stats_entry_t *e, size_t n);
/** POST /v2/repository/index: [{"name","version","state","reason"}], the
 *  version left out of whole-model rows and the reason when there is none. */
void ifd__json_repo_index(ifd_hbuf_t *b, const ifd_index_entry_t *e, size_t n);

/* ---- routes (http_routes.c) ------------------------------------------- */

typedef enum ifd_http_route {
  IFD_ROUTE_NOT_FOUND = 0,   /* unknown path: 404 */
  IFD_ROUTE_BAD_METHOD,      /* known path, wrong method: 405 */
  IFD_ROUTE_SERVER_META,     /* GET /v2 */
  IFD_ROUTE_LIVE,            /* GET /v2/health/live */
  IFD_ROUTE_READY,           /* GET /v2/health/ready */
  IFD_ROUTE_MODEL_META,      /* GET /v2/models/m[/versions/v] */
  IFD_ROUTE_MODEL_READY,     /* GET .../ready */
  IFD_ROUTE_MODEL_CONFIG,    /* GET .../config */
  IFD_ROUTE_INFER,           /* POST .../infer */
  IFD_ROUTE_GENERATE,        /* POST .../generate */
  IFD_ROUTE_GENERATE_STREAM, /* POST .../generate_stream */
  IFD_ROUTE_REPO_INDEX,      /* POST /v2/repository/index */
  IFD_ROUTE_REPO_LOAD,       /* POST /v2/repository/models/m/load */
  IFD_ROUTE_REPO_UNLOAD,     /* POST /v2/repository/models/m/unload */
  IFD_ROUTE_ALL_STATS,       /* GET /v2/models/stats */
  IFD_ROUTE_MODEL_STATS,     /* GET /v2/models/m[/versions/v]/stats */
  IFD_ROUTE_LOGGING,         /* GET or POST /v2/logging */
  IFD_ROUTE_TRACE,           /* GET or POST /v2[/models/<m>]/trace/setting */
  IFD_ROUTE_SHM_STATUS,      /* GET /v2/{system,cuda}sharedmemory
                                [/region/r]/status */
  IFD_ROUTE_SHM_REGISTER,    /* POST .../region/r/register */
  IFD_ROUTE_SHM_UNREGISTER,  /* POST /v2/...sharedmemory[/region/r]/
                                unregister */
} ifd_http_route_t;

/** Pieces a route matched; both point into the path (not decoded). */
typedef struct ifd_route_match {
  ifd_http_route_t route; /* the path's route, also when the method is
                             wrong (IFD_ROUTE_BAD_METHOD returned) */
  const char *model;      /* borrowed: path; NULL when the route has none */
  size_t model_len;
  const char *version; /* borrowed: path; NULL when no /versions/v */
  size_t version_len;
  const char *region; /* borrowed: path; the shared-memory region of a
                         /region/r route, NULL when none */
  size_t region_len;
  int shm_cuda; /* a shared-memory route: 1 cudasharedmemory, 0 system */
} ifd_route_match_t;

/**
 * Matches `path` (no query string) in one pass over its segments. Returns the
 * route, IFD_ROUTE_BAD_METHOD for a known path with another method, or
 * IFD_ROUTE_NOT_FOUND.
 */
ifd_http_route_t ifd__http_route(ifd_http_method_t method, const char *path,
                                 size_t len, ifd_route_match_t *m);

/** Percent-decodes `n` bytes of `s` into `out` (room for n bytes). Returns
 *  the decoded length, or -1 for a malformed escape. */
long ifd__http_url_decode(const char *s, size_t n, char *out);

/* ---- response slots (http_app.c over net/http1.h) ----------------------- */

typedef struct ifd_http_job ifd_http_job_t;
typedef struct ifd_http_gen ifd_http_gen_t;

/** The KServe v2 application's response slot: the transport's part first,
 *  then what the handlers keep for the exchange. */
typedef struct ifd_http_slot {
  ifd_http1_slot_t t;    /* embedded, first: the transport's part */
  ifd_request_t *req;    /* counted (the protocol's reference); NULL
                            for routes that build no request */
  ifd_response_t *resp;  /* owned once answered; freed after the write */
  ifd_http_job_t *job;   /* borrowed: JSON work on the thread pool for
                            this slot (http_infer.c), NULL when none */
  ifd_load_call_t *load; /* borrowed: the model load this slot waits for
                            (http_routes.c), NULL when none; forgotten
                            if the connection closes first */
  ifd_shm_call_t *shm;   /* borrowed: the shared-memory register or
                            unregister this slot waits for (http_shm.c),
                            NULL when none; forgotten if the connection
                            closes first */
  ifd_http_gen_t *gen;   /* borrowed: the generate exchange of this
                            slot, in slot->req's pool (http_generate.c);
                            NULL when none */
  uint64_t json_offload; /* JSON bodies this large go to the thread pool */
  const char *fwd;       /* borrowed: slot->req's pool; headers to forward as
                            parameters (net/forward.h's pairs) */
  size_t fwd_len;
  uint32_t fwd_n;
  unsigned answered : 1;   /* a response was taken (never answer twice) */
  unsigned binary_all : 1; /* binary_data_output: every output binary */
  unsigned sagemaker : 1;  /* SageMaker: a binary answer says its JSON
                              size in Content-Type (http_cloud.c) */
} ifd_http_slot_t;

/**
 * Answers a shared-memory route (http_shm.c): status at once, register and
 * unregister once the region table has mapped or unmapped off the loop
 * (slot->shm meanwhile). Reads msg->body; the caller frees it.
 */
void ifd__http_shm_route(ifd_server_t *srv, ifd_http_slot_t *slot,
                         const ifd_route_match_t *m, const ifd_http_msg_t *msg);

/** Routes and answers one message (http_routes.c): takes msg->body (frees
 *  it or hands it to a request) and always ends with the slot finished, now
 *  or later from a response callback. */
void ifd__http_dispatch(ifd_http_t *h, ifd_http_slot_t *slot,
                        ifd_http_msg_t *msg);

/** Answers one matched route (http_routes.c): what ifd__http_dispatch
 *  does once ifd__http_route has matched `m` (route `r`), for the cloud
 *  endpoints that map their paths onto the KServe v2 handlers. Takes
 *  msg->body as ifd__http_dispatch does. */
void ifd__http_run_route(ifd_http_t *h, ifd_http_slot_t *slot,
                         ifd_http_msg_t *msg, ifd_http_route_t r,
                         const ifd_route_match_t *m);

/** Answers `slot` with the metrics text (http_routes.c): GET /metrics. */
void ifd__http_reply_metrics(ifd_server_t *srv, ifd_http_slot_t *slot,
                             const struct ifd_metrics *mx);

/** Routes one message of a cloud endpoint (http_cloud.c): SageMaker's
 *  /ping and /invocations, Vertex AI's health and predict routes and its
 *  redirect header. Takes msg->body as ifd__http_dispatch does. */
void ifd__http_cloud_dispatch(ifd_http_t *h, const ifd_http_cloud_t *cloud,
                              ifd_http_slot_t *slot, ifd_http_msg_t *msg);

/** SageMaker's multi-model endpoint (http_mme.c): answers a request on a
 *  /models path (*named: a name follows; *invoke: ".../invoke"). */
void ifd__http_mme(ifd_http_t *h, const struct ifd_http_cloud *cloud,
                   ifd_http_slot_t *s, ifd_http_msg_t *msg, int named,
                   int invoke);

/** Was `name` (n bytes) loaded through the multi-model endpoint? */
int ifd__http_mme_has(ifd_http_t *h, const char *name, size_t n);

/** Where a front end keeps its multi-model endpoint (http_app.c). */
struct ifd_mme **ifd__http_mme_ref(ifd_http_t *h);

/** The front end is gone: its multi-model endpoint stops waiting and goes
 *  once its steps in flight end (http_mme.c; NULL: nothing). */
void ifd__http_mme_close(struct ifd_mme *mme);

/** The loop of a front end (http_app.c). */
uv_loop_t *ifd__http_loop(const ifd_http_t *h);

/** Answers 403 when `route`'s API group is restricted and the request lacks
 *  its header; 1 when it answered (http_routes.c). */
int ifd__http_refuse_restricted(ifd_http_t *h, ifd_http_slot_t *s,
                                const ifd_http_msg_t *msg,
                                ifd_http_route_t route);

/** The cloud endpoint a front end serves, or NULL (http_app.c). */
const ifd_http_cloud_t *ifd__http_cloud(const ifd_http_t *h);

/** The --http-restricted-api rules of a front end, or NULL (http_app.c). */
const struct ifd_restrict *ifd__http_restrict(const ifd_http_t *h);

/** The metrics settings of a front end (metrics listener or not). */
const struct ifd_metrics *ifd__http_metrics(const ifd_http_t *h,
                                            int *metrics_only);
/** The core server the front end serves (http_app.c). */
ifd_server_t *ifd__http_server(const ifd_http_t *h);

/** The transport of a front end (http_app.c): the fuzz and allocation
 *  tests feed its connection set (its first member) directly. */
ifd_http1_t *ifd__http_transport(const ifd_http_t *h);

/* The transport's answers (net/http1.h) on the application's slot. */

/** ifd_http1_slot_finish: status line and headers, `body`, then `nbin`
 *  buffers borrowed until the slot is freed (e.g. output tensors of
 *  slot->resp). */
static inline void ifd__http_slot_finish(ifd_http_slot_t *slot, int status,
                                         const char *ctype, ifd_hbuf_t *body,
                                         const uv_buf_t *bin, unsigned nbin,
                                         int64_t hdr_len) {
  ifd_http1_slot_finish(&slot->t, status, ctype, body, bin, nbin, hdr_len);
}

/** A settings request's JSON body (the logging and trace extensions) as an
 *  object, owned by the caller (json_decref). NULL when it is not one:
 *  `slot` is then answered 500 "failed to parse the request JSON buffer:
 *  ..." as tritonserver answers (frontend/logging.c). */
struct json_t *ifd__http_json_object(ifd_http_slot_t *slot,
                                     const ifd_http_msg_t *msg);

/** The same under Content-Type `ctype`: tritonserver sends the JSON error
 *  of an inference response (a backend's error, an output region too
 *  small) as text/plain. */
static inline void ifd__http_slot_error_as(ifd_http_slot_t *slot, int status,
                                           const char *ctype, const char *msg) {
  ifd_http1_slot_error_as(&slot->t, status, ctype, msg);
}

/** Completes `slot` with {"error": msg} and `status`. */
static inline void ifd__http_slot_error(ifd_http_slot_t *slot, int status,
                                        const char *msg) {
  ifd_http1_slot_error_as(&slot->t, status, "application/json", msg);
}

/** The HTTP status of IFD_E* `code` on this slot's front end: Triton's
 *  (frontend/status.h), but 429 for IFD_EOVERLOADED under
 *  --overload-status=429 (the transport then adds Retry-After);
 *  http_app.c. */
int ifd__http_slot_status(const ifd_http_slot_t *slot, int code);

/** Streamed answers (net/http1.h): begin, queue a piece, end. */
static inline int ifd__http_slot_stream_begin(ifd_http_slot_t *slot, int status,
                                              const char *ctype) {
  return ifd_http1_slot_stream_begin(&slot->t, status, ctype);
}
static inline int ifd__http_slot_stream_put(ifd_http_slot_t *slot,
                                            ifd_hbuf_t *body) {
  return ifd_http1_slot_stream_put(&slot->t, body);
}
static inline void ifd__http_slot_stream_end(ifd_http_slot_t *slot) {
  ifd_http1_slot_stream_end(&slot->t);
}

/** Frees a slot that is no longer in any FIFO (orphans, tests), its
 *  request and response with it. */
void ifd__http_slot_free(ifd_http_slot_t *slot);

/** Tells the infer exchange that `slot` became an orphan (its connection
 *  closed) while slot->job is set: a job not yet started is cancelled. The
 *  job's completion frees the slot either way. */
void ifd__http_infer_cancel(ifd_http_slot_t *slot);

/* ---- infer exchange (http_infer.c) ------------------------------------ */

/**
 * Runs one infer exchange into `slot`: decodes the body that `req` owns
 * (req->body, `body_len` bytes, the first `json_len` of them JSON), submits
 * the request and answers the slot with its first response, or answers an
 * error at once. Takes the caller's reference to `req`; model name and
 * version must be set. The slot is always finished, now or later.
 *
 * A JSON header of slot->json_offload bytes or more is decoded on the libuv
 * thread pool, and a response whose JSON outputs hold that many tensor bytes
 * is encoded there; the slot holds the request meanwhile (slot->req set,
 * slot->answered clear), so a connection that closes leaves it an orphan
 * for the job to free.
 */
void ifd__http_infer_start(ifd_http_slot_t *slot, ifd_request_t *req,
                           size_t body_len, size_t json_len);

/* ---- infer bodies (http_infer_decode.c, http_infer_encode.c) ----------- */

/* ifd_output_req_t.proto_flags bits owned by HTTP. */
#define IFD_HTTP_OUT_BINARY 1u

/** A tensor the request places in shared memory, as decoded: resolved on
 *  the loop (ifd__http_infer_resolve_shm), since the region table is the
 *  loop's and decoding may run on a worker. */
typedef struct ifd_http_shm_place {
  const char *region; /* borrowed: request pool (NUL-terminated) */
  size_t region_len;
  uint64_t offset;    /* shared_memory_offset, 0 when absent */
  uint64_t byte_size; /* shared_memory_byte_size, 0 when absent */
  uint32_t index;     /* in req->inputs or req->outputs */
  int output;         /* 1: req->outputs[index], 0: req->inputs[index] */
} ifd_http_shm_place_t;

/** What decoding learned that only the HTTP layer needs. */
typedef struct ifd_http_infer_info {
  int binary_all;            /* parameters.binary_data_output */
  ifd_http_shm_place_t *shm; /* borrowed: request pool; n_shm entries */
  uint32_t n_shm;
  uint32_t cap_shm; /* entries allocated at shm */
} ifd_http_infer_info_t;

/**
 * Decodes an infer request body into `req` (pool, fields zeroed or as set by
 * ifd_request_new; model name/version are the caller's). The first
 * `json_len` bytes of `body` are JSON; the rest are binary tensors for the
 * inputs with parameters.binary_data_size, in input order. Inputs point
 * into `body` (zero copy), so it must live as long as req (req->body).
 * JSON `data` is decoded once into a buffer from req->pool. Tensors in
 * shared memory are listed in info->shm (their data left NULL) for
 * ifd__http_infer_resolve_shm on the loop.
 *
 * Returns 0, or IFD_EINVAL (malformed JSON, bad field, data not matching
 * shape or type, body shorter than the declared sizes), IFD_ENOMEM; `err`
 * names the field.
 */
int ifd__http_infer_decode(ifd_request_t *req, const char *body,
                           size_t body_len, size_t json_len,
                           ifd_http_infer_info_t *info, ifd_errmsg_t *err);

/**
 * Converts the JSON `data` of input `in` (its dtype, name and shape set;
 * [data, data_end) of the validated text that ends at `end`) into one
 * buffer from req's pool: exactly `count` elements (the shape's), else
 * IFD_EINVAL with Triton's shape message in `err`; IFD_ENOMEM
 * (http_infer_data.c).
 */
int ifd__http_infer_data(ifd_request_t *req, ifd_input_t *in, const char *data,
                         const char *data_end, const char *end, int64_t count,
                         ifd_errmsg_t *err);

/**
 * Triton's raw binary request (Inference-Header-Content-Length: 0): the
 * whole `body` (body_len bytes) is the data of the only input of model
 * config `c` (the model named `model_name`), named, typed and shaped from
 * the config: a leading 1 when the model batches, its one -1 dim set from
 * the byte count; a BYTES input must be of shape [1] and gets the 4-byte
 * length prepended (a copy in req->pool). The data is used in place
 * otherwise (body must live as long as req). Every output is binary
 * (info->binary_all). Returns 0, or IFD_EINVAL with Triton's text (several
 * inputs, several -1 dims, BYTES not [1]), IFD_ENOMEM.
 */
int ifd__http_infer_raw(ifd_request_t *req, const ifd_model_config_t *c,
                        const char *model_name, const char *body,
                        size_t body_len, ifd_http_infer_info_t *info,
                        ifd_errmsg_t *err);

/**
 * Loop thread, after a successful decode: points every input and output
 * that `info` places in shared memory at its region (ifd_shm_use: the
 * request then holds the region until it is freed). Returns 0, or
 * IFD_ENOTFOUND (no such region) / IFD_EINVAL (outside the region) with
 * Triton's text in `err`.
 */
int ifd__http_infer_resolve_shm(ifd_request_t *req,
                                const ifd_http_infer_info_t *info,
                                ifd_errmsg_t *err);

/**
 * Serializes a successful response as its JSON header into `out` (appended)
 * and lists the binary outputs' buffers in `bin` (borrowed from resp; room
 * for resp->n_outputs entries; empty outputs included) with their count in
 * *nbin: *nbin > 0 means the body is JSON followed by binary data.
 * `model_version` is the executed version (-1 prints ""). Returns 0 or
 * IFD_EINTERNAL (an output whose bytes do not match its shape) / IFD_ENOMEM
 * with `err`.
 */
int ifd__http_infer_serialize(const ifd_request_t *req,
                              const ifd_response_t *resp, int64_t model_version,
                              int binary_all, ifd_hbuf_t *out, uv_buf_t *bin,
                              unsigned *nbin, ifd_errmsg_t *err);

/**
 * The tensor bytes that ifd__http_infer_serialize() would write as JSON
 * `data` for this response (the outputs sent as binary data excluded): the
 * measure of its encoding cost.
 */
uint64_t ifd__http_infer_json_bytes(const ifd_request_t *req,
                                    const ifd_response_t *resp, int binary_all);

/** Appends the data of output `o` as JSON: its element alone when it holds
 *  exactly one, else a flat array. Returns 0, or IFD_EINTERNAL with `err`
 *  (bytes that do not match its datatype and shape). */
int ifd__http_json_output_data(ifd_hbuf_t *b, const ifd_output_t *o,
                               ifd_errmsg_t *err);

/** Appends the value of parameter `p` as JSON. */
void ifd__http_json_param_value(ifd_hbuf_t *b, const ifd_param_t *p);

/* ---- generate extension (http_generate_map.c, http_generate.c) --------- */

/**
 * Maps a generate body (`len` bytes of JSON: one object) onto `req` as
 * Triton does: a member named like one of the model's `n_inputs` inputs
 * (the model metadata's, whose -1 dims count as 1) becomes that input, its
 * value a scalar or an array (nested arrays flattened) of exactly as many
 * elements as that shape holds; a member "parameters" holding an object
 * gives its members as parameters; every other member becomes a request
 * parameter (string, integer, real or boolean; triton_* keys are refused as
 * on the infer route). Everything is copied into
 * the request's pool: `body` may go afterwards.
 *
 * Returns 0, or IFD_EINVAL with Triton's message in `err` ("failed to parse
 * the request JSON buffer: ...", "Unable to parse 'data': Shape does not
 * match true shape of 'data' field", "Unable to parse 'data': attempt to
 * access JSON non-signed-integer as signed-integer", ...), or IFD_ENOMEM.
 */
int ifd__http_generate_decode(ifd_request_t *req, const char *body, size_t len,
                              const ifd_tensor_info_t *inputs, size_t n_inputs,
                              ifd_errmsg_t *err);

/**
 * Appends a successful response as generate's flat JSON object: each
 * output as a member (in byte order of the names; its data as
 * ifd__http_json_output_data writes it), then "model_name",
 * "model_version" (`version` < 0: ""), then each response parameter.
 * Returns 0, IFD_EINTERNAL (an output whose bytes do not match its shape)
 * or IFD_ENOMEM, with `err`.
 */
int ifd__http_generate_encode(ifd_hbuf_t *b, const ifd_response_t *resp,
                              const char *model_name, int64_t version,
                              ifd_errmsg_t *err);

/**
 * Runs one generate (`stream` 0) or generate_stream (`stream` 1) exchange
 * into `slot`: maps the body that `req` owns (req->body, `body_len` bytes)
 * against the model's inputs, submits the request, and answers. Refusals
 * before submission answer at once with their status (404 unknown model,
 * 400 bad body or inputs). Once submitted the answer is 200 with chunked
 * transfer coding: generate sends the single response's JSON once the
 * request completes (or {"error"} when the model sent other than exactly
 * one response); generate_stream sends one Server-Sent Event
 * "data: {...}\n\n" per response as each arrives. Takes the caller's
 * reference to `req` (model name and version set). The slot is always
 * finished, now or later; a connection that closes first leaves it an
 * orphan that the request's final response frees.
 */
void ifd__http_generate_start(ifd_http_slot_t *slot, ifd_request_t *req,
                              size_t body_len, int stream);

#endif
