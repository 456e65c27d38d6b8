/*
 * backend_api/backends/python/internal.h - what the files of the Python
 * backend (libtriton_python.so) share.
 *
 * The files: python.c (the backend's entry points, model state,
 * auto_complete_config), spawn.c (starting and reaping a stub process),
 * proc.c (a stub's life: the reader thread, restart, calls from the
 * instance thread), shm.c (the DOWN segment's
 * allocator), exec.c (EXECUTE, RESULT, RESPONSE, decoupled requests), bls.c
 * (BLS on the in-process API), ops.c (LOG, CANCEL_QUERY, METRIC), wire.c
 * (text buffers, framing, RESP decoding). The protocol: ipc.h.
 *
 * Threads of one instance: its instance thread (initialize, execute,
 * finalize; it reads the socket itself while an EXECUTE runs) and its
 * reader thread (every other message from the stub, BLS answers,
 * restarts). Lock order: ifd__py_instance_t.rmu, then .mu, then .wmu;
 * ifd__py_chan_t.mu and ifd__py_down_t.mu are leaves.
 */
#ifndef IFD_PY_INTERNAL_H
#define IFD_PY_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc.h"
#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

/* What the files share stays inside the library: only the TRITONBACKEND_*
 * entry points (declared above) are exported. */
#pragma GCC visibility push(hidden)

/* ---- wire.c: text buffers, framing, decoding ------------------------------
 */

/* A growable byte buffer; `oom` set on any allocation failure. */
typedef struct ifd__py_buf {
  char *p; /* owned */
  size_t len, cap;
  int oom;
} ifd__py_buf_t;

void ifd__py_buf_add(ifd__py_buf_t *b, const void *s, size_t n);
void ifd__py_buf_fmt(ifd__py_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s (n bytes) as a JSON string literal. */
void ifd__py_buf_jstr(ifd__py_buf_t *b, const char *s, size_t n);
void ifd__py_buf_jcstr(ifd__py_buf_t *b, const char *s);
/* Appends a u32 / u64 / "str" (u32 length + bytes) of ipc.h. */
void ifd__py_buf_u32(ifd__py_buf_t *b, uint32_t v);
void ifd__py_buf_u64(ifd__py_buf_t *b, uint64_t v);
void ifd__py_buf_str(ifd__py_buf_t *b, const char *s, size_t n);
/* Zero bytes up to a multiple of 8 of b->len - base. */
void ifd__py_buf_pad8(ifd__py_buf_t *b, size_t base);

/* Writes the whole of p (n bytes); 0 or -EPIPE. */
int ifd__py_write_all(int fd, const void *p, size_t n);
/* Reads exactly n bytes; 0, or -EPIPE at EOF or on an error. */
int ifd__py_read_all(int fd, void *p, size_t n);
/* Reads one message: *payload is malloc'ed and NUL-terminated (the caller
 * frees it). 0, -EPIPE (EOF), -EPROTO (too long) or -ENOMEM. */
int ifd__py_recv(int fd, ifd_py_hdr_t *h, char **payload);
/* Writes header and payload (no lock: callers hold their own). */
int ifd__py_send(int fd, uint32_t type, uint32_t id, const void *payload,
                 size_t len);

/* A cursor over a payload. */
typedef struct ifd__py_rd {
  const char *base; /* borrowed: the payload's start (for pad-to-8) */
  const char *p, *end;
} ifd__py_rd_t;

/* Each returns 0, or -1 when the payload is too short. */
int ifd__py_rd_bytes(ifd__py_rd_t *r, void *dst, size_t n);
int ifd__py_rd_u32(ifd__py_rd_t *r, uint32_t *v);
int ifd__py_rd_u64(ifd__py_rd_t *r, uint64_t *v);
/* A "str": *s points into the payload (not NUL-terminated). */
int ifd__py_rd_str(ifd__py_rd_t *r, const char **s, uint32_t *n);
int ifd__py_rd_pad8(ifd__py_rd_t *r);

TRITONSERVER_Error *ifd__py_errorf(TRITONSERVER_Error_Code code,
                                   const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ifd__py_log(TRITONSERVER_LogLevel level, const char *file, int line,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define IFD_PY_LOG(level, ...) \
  ifd__py_log(level, __FILE__, __LINE__, __VA_ARGS__)
/* Logs err (if any) with `what` and deletes it. */
void ifd__py_log_error(TRITONSERVER_Error *err, const char *what);
uint64_t ifd__py_now_ns(void);

/* ---- shm.c: the DOWN segment's allocator ----------------------------------
 */

typedef struct ifd__py_range {
  uint64_t off, size;
  uint32_t gen; /* used blocks: the stub generation they were given to */
} ifd__py_range_t;

/* First fit over a free list sorted by offset; the memfd grows with
 * ftruncate as blocks are needed, never past `limit`. Thread-safe. */
typedef struct ifd__py_down {
  pthread_mutex_t mu;
  int fd;                  /* borrowed: the memfd */
  uint64_t size;           /* guarded by mu: the file's size */
  uint64_t limit;          /* IFD_PY_SEG_MAX (tests use less) */
  ifd__py_range_t *free_r; /* owned, guarded by mu: sorted, coalesced */
  size_t n_free, cap_free;
  ifd__py_range_t *used; /* owned, guarded by mu: unsorted */
  size_t n_used, cap_used;
} ifd__py_down_t;

/* Block alignment in DOWN (and of each input inside a block). */
#define IFD_PY_DOWN_ALIGN 64u

void ifd__py_down_init(ifd__py_down_t *d, int fd, uint64_t limit);
void ifd__py_down_destroy(ifd__py_down_t *d);
/**
 * Allocates a block of at least `size` bytes (IFD_PY_DOWN_ALIGN aligned;
 * size 0 gets a block too) for stub generation `gen`, growing the file.
 * Returns 0 with *off set, -ENOSPC when the segment would pass its limit,
 * -ENOMEM, or -errno of ftruncate.
 */
int ifd__py_down_alloc(ifd__py_down_t *d, uint64_t size, uint32_t gen,
                       uint64_t *off);
/** Frees the block at `off`. 0, or -ENOENT when no block starts there. */
int ifd__py_down_free(ifd__py_down_t *d, uint64_t off);
/** Frees every block of generation `gen` (its stub died). */
void ifd__py_down_free_gen(ifd__py_down_t *d, uint32_t gen);

/* ---- the model ------------------------------------------------------------
 */

typedef struct ifd__py_model {
  TRITONSERVER_Server *server; /* borrowed: outlives the model */
  char *env_dir; /* owned: the execution environment's folder; NULL: none */
} ifd__py_model_t;

/* ---- env.c: EXECUTION_ENV_PATH -------------------------------------------
 */

/**
 * The execution environment of a model whose configuration (JSON) has
 * EXECUTION_ENV_PATH: *env_dir (malloc'ed) is its folder, the archive
 * extracted first when it is one; NULL when the configuration has none.
 * Returns NULL, or the error (Triton's texts) that fails the model's load.
 */
TRITONSERVER_Error *ifd__py_env_prepare(const char *config, size_t len,
                                        const char *model_dir, char **env_dir);
/** Removes the extracted environments (backend finalize). */
void ifd__py_env_cleanup(void);

/* The response allocator of BLS calls (CPU, malloc): lives as long as the
 * backend. */
extern TRITONSERVER_ResponseAllocator *ifd__py_bls_alloc;

/* ---- the cross-thread channel -------------------------------------------- */

/* One answer for the reader to write: a BLS response (msg_type 0) or a
 * ready-made message (msg_type != 0: a MODEL_CONTROL_ANSWER). */
typedef struct ifd__py_item {
  struct ifd__py_item *next;
  uint32_t call_id, gen, flags;
  TRITONSERVER_InferenceResponse *resp; /* owned; NULL: a FINAL flag only */
  uint32_t msg_type;                    /* 0: a BLS response */
  char *msg;                            /* owned: msg_type's payload */
  size_t msg_len;
} ifd__py_item_t;

/* What callbacks on other threads hand the reader: reference-counted, so a
 * BLS call that outlives its instance still has somewhere to answer. */
typedef struct ifd__py_chan {
  pthread_mutex_t mu;
  int evfd;   /* owned: the reader polls it */
  int refs;   /* guarded by mu */
  bool alive; /* guarded by mu: false once the instance finalized */
  ifd__py_item_t *head, *tail; /* guarded by mu */
} ifd__py_chan_t;

/** Wakes the reader (eventfd). */
void ifd__py_chan_wake(ifd__py_chan_t *c);
/** Queues `it` for the reader (any thread) and wakes it on the queue's
 * empty-to-non-empty transition. Returns 0, or -1 when the instance is
 * gone (the item stays the caller's). */
int ifd__py_chan_push(ifd__py_chan_t *c, ifd__py_item_t *it);
/** Frees an item and what it owns. */
void ifd__py_item_free(ifd__py_item_t *it);
/** Drops a reference; the last one frees the channel and its queue. */
void ifd__py_chan_put(ifd__py_chan_t *c);

/* ---- the instance ------------------------------------------------------- */

typedef enum ifd__py_state {
  IFD_PY_STARTING, /* INIT sent, no answer yet */
  IFD_PY_READY,
  IFD_PY_FAILED,  /* no stub: it could not start */
  IFD_PY_STOPPING /* finalize: the reader ends */
} ifd__py_state_t;

/* A request between its EXECUTE and its FINAL response. */
typedef struct ifd__py_open {
  uint32_t rid;
  uint32_t batch;                         /* the id of its EXECUTE */
  TRITONBACKEND_Request *req;             /* owned until released */
  TRITONBACKEND_ResponseFactory *factory; /* owned; NULL until needed */
  uint64_t t_start, t_done;               /* t_done: EXECUTE answered */
} ifd__py_open_t;

/* A BLS_INFER handed from the reader to the instance thread. */
typedef struct ifd__py_bls_req {
  struct ifd__py_bls_req *next;
  uint32_t id, gen;
  char *payload; /* owned */
  size_t len;
} ifd__py_bls_req_t;

/* A metric or family the stub created (METRIC). */
typedef struct ifd__py_handle {
  uint64_t h;
  int is_family;
  void *p; /* owned: TRITONSERVER_MetricFamily or _Metric */
} ifd__py_handle_t;

typedef struct ifd__py_instance {
  TRITONBACKEND_ModelInstance *instance; /* borrowed: outlives this */
  ifd__py_model_t *model;                /* borrowed: outlives this */
  char *model_name, *inst_name;          /* owned */
  char *args_json;                       /* owned: the INIT payload */
  char stub_path[PATH_MAX];
  char backend_dir[PATH_MAX];
  bool decoupled;
  bool batching; /* max_batch_size > 0: requests carry a batch dimension */

  int down_fd, up_fd;        /* owned memfds, for the instance's life */
  char *up_base;             /* owned mapping of IFD_PY_SEG_MAX (read only) */
  _Atomic uint64_t up_known; /* UP bytes known to exist (any thread) */
  ifd__py_down_t down;
  char *down_base; /* owned mapping of IFD_PY_SEG_MAX */

  ifd__py_chan_t *chan; /* a reference */
  pthread_t reader;
  bool reader_started;

  /* Reading the socket: one reader at a time, the holder of rmu. The
   * reader thread reads through epfd; while the instance thread waits for
   * an EXECUTE's answer it takes the socket out of epfd and reads it
   * itself (one wake-up fewer per execute, and BLS calls then go out on
   * the instance thread). */
  pthread_mutex_t rmu;
  int epfd;        /* owned: the reader's epoll set (evfd, sock) */
  bool inst_reads; /* guarded by rmu: the instance thread reads */
  int reg_fd;      /* guarded by rmu: the socket in epfd; -1: none */
  char *rbuf;      /* owned, guarded by rmu: bytes read, not dispatched */
  size_t rpos, rlen, rcap;

  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_mutex_t wmu; /* socket writes; sock and gen change under rmu, mu
                        * and wmu */

  /* guarded by mu (sock and gen: by mu and wmu) */
  ifd__py_state_t state;
  uint32_t gen; /* the stub's generation: +1 on each death */
  pid_t pid;    /* the stub; 0: none */
  int sock;     /* our end of the socketpair; -1: none */
  uint32_t next_id;
  uint32_t init_id;   /* the INIT in flight (STARTING) */
  bool restart_req;   /* execute asks the reader for a restart */
  bool ever_ready;    /* a stub initialized once: deaths restart it */
  char fail_msg[512]; /* why the stub is FAILED */
  uint32_t wait_id;   /* the answer the instance thread waits for */
  bool wait_done, wait_died;
  ifd_py_hdr_t wait_hdr;
  char *wait_payload; /* owned by the waiter once wait_done */
  /* While the instance thread waits for an EXECUTE's answer, BLS calls go
   * out from it (exec_wait), so they carry the execute's call chain and
   * the server's BLS deadlock rule sees them; else the reader sends them. */
  bool exec_wait;
  ifd__py_bls_req_t *bls_head, *bls_tail; /* owned */
  ifd__py_open_t *open;                   /* owned array */
  size_t n_open, cap_open;
  uint32_t next_rid;

  ifd__py_handle_t *handles; /* owned; reader thread only */
  size_t n_handles, cap_handles;
  uint64_t next_handle;
} ifd__py_instance_t;

/* ---- spawn.c ---------------------------------------------------------------
 */

/**
 * Starts a stub process with the descriptors of ipc.h; with env_dir (an
 * execution environment, env.c) through bash, which sources its
 * bin/activate first. Returns 0 with *pid and *sock (our end, owned by the
 * caller), or -1 with the reason in msg.
 */
int ifd__py_spawn(const char *stub_path, const char *backend_dir,
                  const char *model, const char *inst, const char *env_dir,
                  int down_fd, int up_fd, pid_t *pid, int *sock, char *msg,
                  size_t msg_len);
/** Reaps pid, waiting up to wait_ms for it to exit on its own before
 * SIGKILL; how it ended goes in `how`. */
void ifd__py_reap(pid_t pid, int wait_ms, char *how, size_t n);

/* ---- proc.c ----------------------------------------------------------------
 */

/**
 * Creates the segments and the channel, spawns the stub, starts the reader
 * and runs the model's initialize (INIT). On error everything is undone
 * (ifd__py_instance_stop) and the error returned.
 */
TRITONSERVER_Error *ifd__py_instance_start(ifd__py_instance_t *in);
/** Runs the model's finalize (30 s at most), stops the reader, reaps the
 * stub, fails requests still open and frees what the instance holds (not
 * `in` itself). */
void ifd__py_instance_stop(ifd__py_instance_t *in);
/**
 * Waits until the stub is READY (asking for a restart when it FAILED),
 * then registers a call: *gen and the id to send. Returns NULL, or the
 * error to fail the batch with.
 */
TRITONSERVER_Error *ifd__py_call_begin(ifd__py_instance_t *in, uint32_t *gen,
                                       uint32_t *id);
/** Sends a message of generation gen's stub (writes under wmu). 0, or
 * -EPIPE when that stub is gone. */
int ifd__py_send_gen(ifd__py_instance_t *in, uint32_t gen, uint32_t type,
                     uint32_t id, const void *payload, size_t len);
/** Sends under wmu to the current stub (reader thread). */
int ifd__py_send_now(ifd__py_instance_t *in, uint32_t type, uint32_t id,
                     const void *payload, size_t len);
/**
 * Sends EXECUTE `id` (payload) to generation gen's stub and reads the
 * socket itself until its answer. Returns 0 with *h and *payload (the
 * caller frees it), or -EPIPE when the stub died meanwhile (its open
 * requests have been failed).
 */
int ifd__py_call_exec(ifd__py_instance_t *in, uint32_t gen, uint32_t id,
                      const char *msg, size_t msg_len, ifd_py_hdr_t *h,
                      char **payload);
/** The text of an ERROR payload: logs message and traceback, and returns
 * the message as an error of `code`. */
TRITONSERVER_Error *ifd__py_error_payload(ifd__py_instance_t *in, const char *p,
                                          size_t len);
/** Makes sure UP holds [0, end): 0, or -1 (beyond what the stub wrote).
 * Any thread, no lock. */
int ifd__py_up_check(ifd__py_instance_t *in, uint64_t end);

/* ---- exec.c ----------------------------------------------------------------
 */

/** TRITONBACKEND_ModelInstanceExecute's body. */
void ifd__py_execute(ifd__py_instance_t *in, TRITONBACKEND_Request **requests,
                     uint32_t count);
/** RESPONSE (reader thread). */
void ifd__py_on_response(ifd__py_instance_t *in, const char *p, size_t len);
/** RELEASE (the reading thread): releases an open request with the
 * stub's flags (rescheduling); one the server refuses fails with its
 * reason. */
void ifd__py_on_release(ifd__py_instance_t *in, const char *p, size_t len);
/** Removes and returns (under mu, which the caller holds) every open
 * request; batch 0: all, else those of that EXECUTE. *n set. Returns a
 * malloc'ed array (NULL when none or out of memory: then failed in place). */
ifd__py_open_t *ifd__py_claim(ifd__py_instance_t *in, uint32_t batch,
                              size_t *n);
/** Fails claimed requests with `msg` (copied) and releases them; the
 * caller still frees the array. */
void ifd__py_fail_claimed(ifd__py_instance_t *in, ifd__py_open_t *o, size_t n,
                          TRITONSERVER_Error_Code code, const char *msg);
/**
 * Fills `resp` from one RESP at r (has_response already read). Returns
 * NULL, or an error for a malformed RESP (the stub's fault); *user_err is
 * the response's own error (is_error), for the caller to send.
 */
TRITONSERVER_Error *ifd__py_fill(ifd__py_instance_t *in,
                                 TRITONBACKEND_Response *resp, ifd__py_rd_t *r,
                                 TRITONSERVER_Error **user_err);

/* ---- bls.c -----------------------------------------------------------------
 */

/** BLS_INFER (reader thread): sends the call, or answers its error. Takes
 * payload (malloc'ed): the call's inputs point into it. */
void ifd__py_bls_infer(ifd__py_instance_t *in, uint32_t id, char *payload,
                       size_t len);
/** Creates / deletes ifd__py_bls_alloc (backend initialize / finalize). */
TRITONSERVER_Error *ifd__py_bls_init(void);
void ifd__py_bls_fini(void);
/** Writes the queued BLS answers (reader thread). */
void ifd__py_bls_drain(ifd__py_instance_t *in);

/* ---- ops.c -----------------------------------------------------------------
 */

void ifd__py_on_log(ifd__py_instance_t *in, const char *p, size_t len);
void ifd__py_on_cancel_query(ifd__py_instance_t *in, uint32_t id, const char *p,
                             size_t len);
void ifd__py_on_metric(ifd__py_instance_t *in, uint32_t id, const char *p,
                       size_t len);
/** Deletes every metric and family the stub created (it died, or ends). */
void ifd__py_metrics_clear(ifd__py_instance_t *in);
/** MODEL_CONTROL (the reading thread): readiness is answered at once;
 * a load or an unload, which may take long, runs on a thread of its own
 * whose answer the reader writes. Takes payload (malloc'ed). */
void ifd__py_on_model_control(ifd__py_instance_t *in, uint32_t id,
                              char *payload, size_t len);

/* ---- python.c --------------------------------------------------------------
 */

/** INFERD_ModelInstanceSetReady when the server has it (else nothing). */
void ifd__py_set_ready(ifd__py_instance_t *in, bool ready);

#pragma GCC visibility pop

#endif
