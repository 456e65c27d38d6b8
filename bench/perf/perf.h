/*
 * bench/perf/perf.h - declarations shared by the files of inferd-perf.
 *
 * inferd-perf is a perf_analyzer-style load generator: one libuv loop drives
 * keep-alive HTTP/1.1 connections (http.c) or nghttp2 client sessions
 * (grpc.c), each carrying a request serialized once (model.c; rewritten per
 * request for sequence models by seq.c, for decoupled models by dec.c;
 * with --shared-memory its tensors are regions that shm.c creates and
 * registers), or, with --service-kind=triton_c_api, requests handed to a
 * server embedded in this process (capi.c: libtritonserver.so dlopened,
 * TRITONSERVER_ServerNew, ServerInferAsync). main.c reads the command line
 * (options.c) and runs the measurement steps (measure.c), which prints
 * perf_analyzer's report, with the server-side split read from the
 * statistics extension (stats.c).
 *
 * The unit of load is a slot: one request in flight at a time. The
 * scheduler in sched.c decides when a slot sends (closed loop: again as soon
 * as its response is in; open loop: on the rate schedule) and the transport
 * tells it when the response is complete through ifd__perf_run_done(). Every
 * function here runs on the loop thread; nothing is locked, except capi.c's
 * queue of completions, which the embedded server's callbacks fill from its
 * own thread.
 */
#ifndef IFD_BENCH_PERF_PERF_H
#define IFD_BENCH_PERF_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#define IFD_PERF_MAX_RANK 16
#define IFD_PERF_MAX_SHAPES 64
#define IFD_PERF_ERR_MAX 512

#ifndef container_of
#define container_of(ptr, type, member) \
  ((type *)((char *)(ptr)-offsetof(type, member)))
#endif

/* A growable byte buffer; {0} is an empty one. */
typedef struct ifd_perf_buf {
  char *data; /* owned */
  size_t len;
  size_t cap;
} ifd_perf_buf_t;

/* Appends n bytes. Returns 0, or UV_ENOMEM (the buffer is unchanged). */
int ifd__perf_buf_append(ifd_perf_buf_t *b, const void *p, size_t n);
/* Appends formatted text. Returns 0, or UV_ENOMEM. */
int ifd__perf_buf_printf(ifd_perf_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ifd__perf_buf_free(ifd_perf_buf_t *b);

/* One --shape NAME:D1,D2,... option. */
typedef struct ifd_perf_shape {
  char name[128];
  int64_t dims[IFD_PERF_MAX_RANK];
  int rank;
} ifd_perf_shape_t;

/* The command line, parsed once; read-only afterwards. */
/* The most pids --cpu-pid takes; with their children, the most read. */
#define IFD_PERF_CPU_PIDS_MAX 16
#define IFD_PERF_CPU_SET_MAX 256

typedef struct ifd_perf_opts {
  const char *model;   /* borrowed: argv; NULL in --raw-get/idle modes */
  const char *version; /* borrowed: argv; "" lets the server choose */
  int batch;
  char host[256];
  int port;
  char unix_path[108]; /* -u unix:PATH: a Unix domain socket; "" for TCP */
  int grpc;            /* -i grpc */
  int streaming;
  int open_loop; /* --request-rate-range given */
  double range_start, range_end, range_step;
  int max_connections;
  int grpc_connections; /* 0: min(max concurrency, 4) */
  ifd_perf_shape_t shapes[IFD_PERF_MAX_SHAPES];
  int nshapes;
  uint64_t measure_ms;
  uint64_t warmup_ms;
  int percentile;  /* -1: report the average */
  const char *csv; /* borrowed: argv */
  int zero_data;
  int http_json;
  const char *raw_get; /* borrowed: argv */
  int idle_connections;
  double idle_seconds;
  int quiet;
  const char *json_summary; /* borrowed: argv */
  /* Sequence models (perf_analyzer's options; used only when the model's
   * config has sequence_batching). */
  uint64_t seq_length;   /* --sequence-length, base length (default 20) */
  double seq_variation;  /* --sequence-length-variation, % (default 20) */
  uint64_t seq_id_start; /* --sequence-id-range start (default 1) */
  uint64_t seq_id_end;   /* its end, excluded; 0: unbounded */
  int num_sequences;     /* --num-of-sequences, open loop (default 4) */
  int idle_sequences;    /* --idle-sequences N: START N, hold them idle */
  /* Shared memory (perf_analyzer's options, shm.c). */
  int shm;                  /* --shared-memory: IFD_PERF_SHM_* */
  uint64_t output_shm_size; /* --output-shared-memory-size (default 102400) */
  /* --service-kind=triton_c_api: the server runs in this process (capi.c). */
  int capi;
  const char *server_dir;  /* borrowed: argv; --triton-server-directory */
  const char *repository;  /* borrowed: argv; --model-repository */
  const char *backend_dir; /* borrowed: argv; NULL: server_dir/backends */
  uint64_t spin_us;        /* --spin-us: poll completions before sleeping */
  /* --cpu-pid PID[,PID...]: also read those processes' CPU time; none: 0
   * pids. --cpu-children: their children's too (the Python backend's stub
   * processes), found when a window starts. */
  int cpu_pids[IFD_PERF_CPU_PIDS_MAX];
  int n_cpu_pids;
  const char *cpu_pids_arg; /* borrowed: argv; --cpu-pid as given */
  int cpu_children;
} ifd_perf_opts_t;

/* --shared-memory values. */
enum { IFD_PERF_SHM_NONE, IFD_PERF_SHM_SYSTEM, IFD_PERF_SHM_CUDA };

/* One input tensor of the model, with its generated data. */
typedef struct ifd_perf_tensor {
  char *name; /* owned */
  char datatype[16];
  int64_t shape[IFD_PERF_MAX_RANK]; /* full shape, batch dimension included */
  int rank;
  uint8_t *data; /* owned: raw bytes (BYTES: 4-byte length + string each) */
  size_t nbytes;
  size_t nelems;
} ifd_perf_tensor_t;

/* One output of the model, as its metadata gives it. */
typedef struct ifd_perf_output {
  char *name; /* owned */
  char datatype[16];
  int64_t shape[IFD_PERF_MAX_RANK]; /* metadata shape (-1: variable) */
  int rank;
} ifd_perf_output_t;

/* --shared-memory: where one tensor of the request lives. The region is
 * registered on the server under `name` and holds the tensor from offset 0;
 * `size` is the shared_memory_byte_size the request gives. */
typedef struct ifd_perf_region {
  char name[160]; /* the region's name on the server */
  char key[200];  /* system: the POSIX shared memory key ("/...") */
  void *base;     /* owned: the mapping, or the device allocation (cuda) */
  size_t size;
  int created;    /* system: the key exists in /dev/shm (unlink it) */
  int registered; /* the server has it (unregister it) */
} ifd_perf_region_t;

typedef struct ifd_perf_model {
  char *name;    /* owned */
  char *version; /* owned; "" lets the version policy choose */
  int max_batch;
  ifd_perf_tensor_t *inputs; /* owned */
  int ninputs;
  ifd_perf_output_t *outputs; /* owned */
  int noutputs;
  /* --shared-memory: one region per input, then one per output, in the
   * order of inputs and outputs (shm.c); NULL otherwise. */
  ifd_perf_region_t *regions; /* owned */
  int nregions;
  int sequence;  /* the config has sequence_batching */
  int decoupled; /* model_transaction_policy.decoupled */
} ifd_perf_model_t;

/* Cumulative server statistics of one model (all versions summed when no
 * version was given). */
typedef struct ifd_perf_stats {
  uint64_t inference_count, execution_count;
  uint64_t success_count, success_ns, fail_count;
  uint64_t queue_count, queue_ns;
  uint64_t cin_count, cin_ns;
  uint64_t cinfer_count, cinfer_ns;
  uint64_t cout_count, cout_ns;
} ifd_perf_stats_t;

typedef struct ifd_perf_run ifd_perf_run_t;
typedef struct ifd_perf_slot ifd_perf_slot_t;

/* What a transport does for the scheduler. send() starts the slot's request
 * (connecting first if needed); it returns 0, in which case the transport
 * calls ifd__perf_run_done() exactly once later, or a negative UV_E* code,
 * in which case it never will. */
typedef struct ifd_perf_slot_vt {
  int (*send)(ifd_perf_slot_t *s);
} ifd_perf_slot_vt_t;

struct ifd_perf_slot {
  const ifd_perf_slot_vt_t *vt; /* borrowed: static */
  ifd_perf_run_t *run;          /* borrowed: outlives the slot */
  uint64_t t_send;              /* uv_hrtime() when sent */
  int measured;                 /* sent inside the measurement window */
  int busy;
  int index;                  /* position in run->slots */
  ifd_perf_slot_t *next_idle; /* open loop: the free list */
  /* What send() sends: run->payload, or for a sequence model the slot's
   * own copy (seq_req) rewritten before each request by seq.c. */
  const char *req; /* borrowed: run->payload.data or seq_req.data */
  size_t req_len;
  ifd_perf_buf_t seq_req; /* owned: empty unless run->sequence */
  uint64_t seq_id;        /* the slot's sequence; 0: none yet */
  uint64_t seq_left;      /* requests left in it; 0: the next one STARTs */
  int got_first;          /* decoupled: a response of this request is in */
};

/* A connection's socket: TCP, or a Unix domain socket (-u unix:PATH). A
 * connection embeds it as `union { uv_tcp_t tcp; ifd_perf_sock_t sock; }`
 * and uses `tcp` as the stream either way (libuv dispatches on the handle's
 * type). */
typedef union ifd_perf_sock {
  uv_tcp_t tcp;
  uv_pipe_t pipe;
} ifd_perf_sock_t;

typedef struct ifd_perf_http ifd_perf_http_t;
typedef struct ifd_perf_grpc ifd_perf_grpc_t;
typedef struct ifd_perf_capi ifd_perf_capi_t;

/* The whole state of one inferd-perf process; loop thread only. */
struct ifd_perf_run {
  uv_loop_t *loop;             /* borrowed: outlives the run */
  const ifd_perf_opts_t *opts; /* borrowed */
  struct sockaddr_storage addr;
  char authority[300]; /* "host:port" for Host and :authority */

  /* The request every load slot sends, serialized once; read-only. */
  ifd_perf_buf_t payload; /* owned */

  /* Sequence models: each slot drives one sequence at a time (seq.c). */
  int sequence;           /* the model has sequence_batching */
  uint64_t seq_next;      /* perf_analyzer's curr_seq_id: ids handed out */
  size_t seq_off[3];      /* HTTP: offsets of the id, start and end values */
  uint64_t seq_starts;    /* sequences started (reported) */
  int seq_idle_phase;     /* --idle-sequences: 1 STARTs, 2 ENDs; 0 otherwise */
  uint64_t seq_idle_left; /* --idle-sequences: requests still to send */

  /* Decoupled models (gRPC streaming, closed loop): each request carries a
   * unique id and triton_enable_empty_final_response; every response is
   * counted and the first one's latency kept (dec.c). */
  int decoupled;       /* the model is decoupled */
  uint64_t dec_next;   /* request ids handed out */
  uint64_t responses;  /* responses of measured requests in the window */
  uint64_t *lat_first; /* owned: ns to the first response, per request */
  size_t nlat_first, caplat_first;

  ifd_perf_http_t *http; /* owned: NULL unless -i http */
  ifd_perf_grpc_t *grpc; /* owned: NULL unless -i grpc */
  ifd_perf_capi_t *capi; /* owned: NULL unless --service-kind=triton_c_api */

  /* Scheduler. */
  ifd_perf_slot_t **slots; /* owned array; slots owned by the transport */
  int nslots, capslots;
  ifd_perf_slot_t *idle; /* open loop: free slots */
  int issuing;           /* slots send (again) when free */
  int recording;         /* requests sent now are measured */
  int concurrency;       /* closed loop: slots [0, concurrency) send */
  double rate;           /* open loop: requests per second */
  uint64_t rate_t0, rate_issued, backlog, delayed;
  uv_timer_t rate_timer;
  uint64_t inflight;
  int fatal; /* a negative code stops the run: the transport is broken */
  char fatal_msg[IFD_PERF_ERR_MAX];

  /* The current measurement window. */
  uint64_t *lat; /* owned: ns, one per successful measured request */
  size_t nlat, caplat;
  uint64_t errors;
  char first_err[IFD_PERF_ERR_MAX];
  int have_err;
};

/* ---- options.c ---- */

/**
 * Parses the command line into *o, which the caller has zeroed (the strings
 * it keeps are borrowed from argv), and checks it. --help prints the usage on
 * stdout and exits 0. Returns 0, or -1 with the error (or the usage) printed on
 * stderr.
 */
int ifd__perf_options_parse(int argc, char **argv, ifd_perf_opts_t *o);

/* ---- sched.c ---- */

/* Called by a transport once per successful send(): the slot's response is
 * complete (ok), or the request failed (err, errlen: the first bytes of the
 * error body or message, copied if needed). May send on the slot again. */
void ifd__perf_run_done(ifd_perf_slot_t *s, int ok, const char *err,
                        size_t errlen);

/* Decoupled models: one response of the slot's request is in (a final
 * flags-only message is not a response). Counts it, and records the
 * latency of the request's first one. */
void ifd__perf_run_response(ifd_perf_slot_t *s);

/* Marks the run broken with a message; the current step stops issuing. */
void ifd__perf_run_fail(ifd_perf_run_t *run, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Runs the loop until *flag becomes non-zero or timeout_ms pass. Returns 0,
 * or UV_ETIMEDOUT. */
int ifd__perf_run_until(ifd_perf_run_t *run, const int *flag,
                        uint64_t timeout_ms);

/**
 * Starts issuing: open loop, arms the rate timer at run->rate requests per
 * second; closed loop, opens the slots missing below run->concurrency and
 * sends on each free one. Requests sent are measured if run->recording.
 * Returns 0 (a failed send marks the run failed instead, see run->fatal),
 * or UV_ENOMEM when a slot cannot be made.
 */
int ifd__perf_sched_start(ifd_perf_run_t *run);
/**
 * Stops issuing; a sequence model ends each open sequence with one last
 * request (a busy slot once its response is in). Runs the loop until no
 * request is in flight, or the run fails, or 60 s pass. Open loop: every
 * slot is back on the free list. Returns 0, or UV_ETIMEDOUT.
 */
int ifd__perf_sched_drain(ifd_perf_run_t *run);
/**
 * --idle-sequences N: STARTs sequences start..start+N-1 (one request each,
 * at most 64 in flight), prints "idle sequences: N started", holds them
 * idle for --idle-seconds, then ENDs each with one more request. Needs a
 * sequence model (run->sequence). Returns 0, or 1 when a request failed or
 * did not finish (message printed).
 */
int ifd__perf_sched_idle_sequences(ifd_perf_run_t *run);

/* ---- measure.c ---- */

/** The result of one measurement step. */
typedef struct ifd_perf_step {
  double value; /* concurrency or request rate */
  uint64_t count, errors, delayed;
  double secs, throughput;
  double avg_us, std_us;
  double p50, p90, p95, p99, pn; /* usec */
  double avg_ns, p50_ns, p99_ns; /* the same, unrounded */
  /* CPU time (user + system) over the window: this process's, and with
   * --cpu-pid the sum over those processes (and, with --cpu-children, their
   * children as they were when the window started); -1: not read. */
  double cpu_self_us, cpu_pid_us;
  int n_cpu_set; /* processes summed into cpu_pid_us */
  /* Decoupled models: responses, and latency to a request's first one. */
  int decoupled;
  uint64_t responses, first_count;
  double resp_throughput;                         /* responses per second */
  double f_avg, f_p50, f_p90, f_p95, f_p99, f_pn; /* usec */
  int have_server;
  ifd_perf_stats_t d;                                     /* server deltas */
  double s_req, s_over, s_queue, s_cin, s_cinfer, s_cout; /* usec */
  char first_err[IFD_PERF_ERR_MAX];
} ifd_perf_step_t;

/**
 * Runs one step at concurrency or request rate value: warm-up, drain,
 * statistics before, measurement window, drain, statistics after (m NULL:
 * --raw-get, no statistics). Fills *r. Returns 0 (requests that failed are
 * counted in r->errors), or a negative code with a message in err when the
 * run failed or the statistics cannot be read.
 */
int ifd__perf_measure_step(ifd_perf_run_t *run, const ifd_perf_model_t *m,
                           double value, ifd_perf_step_t *r, char *err,
                           size_t errlen);
/** The step's latency in the summary: --percentile's, or the average. */
double ifd__perf_measure_latency(const ifd_perf_opts_t *o,
                                 const ifd_perf_step_t *r);
/** Prints the step on stdout as perf_analyzer does. */
void ifd__perf_measure_print(const ifd_perf_opts_t *o,
                             const ifd_perf_step_t *r);
/**
 * Writes the n steps to o->csv in perf_analyzer's CSV layout, or to
 * o->json_summary as our JSON summary. Return 0, or a negative errno.
 */
int ifd__perf_measure_write_csv(const ifd_perf_opts_t *o,
                                const ifd_perf_step_t *st, int n);
int ifd__perf_measure_write_json(const ifd_perf_opts_t *o,
                                 const ifd_perf_step_t *st, int n);

/* ---- http.c ---- */

/* Sets up the HTTP transport. Returns 0 or UV_ENOMEM. */
int ifd__perf_http_init(ifd_perf_run_t *run);
/* A new load slot: one keep-alive connection (connected on first send)
 * sending run->payload. Returns 0 or UV_ENOMEM; the transport owns *out. */
int ifd__perf_http_slot_new(ifd_perf_run_t *run, ifd_perf_slot_t **out);
/* GET path on a connection of its own, driving the loop until the answer.
 * Returns 0 with *status and the body in *body (caller frees), or a negative
 * code with a message in err. */
int ifd__perf_http_get(ifd_perf_run_t *run, const char *path, int *status,
                       ifd_perf_buf_t *body, char *err, size_t errlen);
/* method path with an optional JSON body (body NULL: none) on a connection
 * of its own, driving the loop until the answer; as ifd__perf_http_get. */
int ifd__perf_http_request(ifd_perf_run_t *run, const char *method,
                           const char *path, const char *body, size_t body_len,
                           int *status, ifd_perf_buf_t *out, char *err,
                           size_t errlen);
/* --idle-connections: opens n connections, one GET /v2/health/live each,
 * prints "idle connections: N open", holds them for seconds. Returns 0 or a
 * negative code (message printed). */
int ifd__perf_http_idle(ifd_perf_run_t *run, int n, double seconds);
/* Closes every connection and frees the transport (runs the loop). */
void ifd__perf_http_shutdown(ifd_perf_run_t *run);

/* ---- grpc.c ---- */

/* Connects the gRPC client sessions (nconn of them). Returns 0 or a negative
 * code with a message in err. */
int ifd__perf_grpc_init(ifd_perf_run_t *run, int nconn, char *err,
                        size_t errlen);
/* A new load slot: unary ModelInfer calls, or with --streaming a slot whose
 * requests go on a ModelStreamInfer stream (its own in the closed loop).
 * Returns 0 or UV_ENOMEM; the transport owns *out. */
int ifd__perf_grpc_slot_new(ifd_perf_run_t *run, ifd_perf_slot_t **out);
/* One unary call of method (e.g. "ModelMetadata") with a packed message,
 * driving the loop until the answer. Returns 0 with *grpc_status, the
 * response message (prefix stripped) in *body (caller frees) and a
 * grpc-message in err if any, or a negative code with a message in err. */
int ifd__perf_grpc_unary(ifd_perf_run_t *run, const char *method,
                         const uint8_t *msg, size_t len, int *grpc_status,
                         ifd_perf_buf_t *body, char *err, size_t errlen);
void ifd__perf_grpc_shutdown(ifd_perf_run_t *run);

/* ---- model.c ---- */

/* Reads metadata and config of opts->model and generates the inputs.
 * Returns 0, or a negative code with a message in err. */
int ifd__perf_model_load(ifd_perf_run_t *run, ifd_perf_model_t *model,
                         char *err, size_t errlen);
/* Serializes the load request into run->payload: HTTP request bytes, or a
 * 5-byte-prefixed ModelInferRequest. Returns 0, or negative with err. */
int ifd__perf_model_payload(ifd_perf_run_t *run, const ifd_perf_model_t *m,
                            char *err, size_t errlen);
void ifd__perf_model_free(ifd_perf_model_t *m);
/* Fills m from the model's metadata and config in their KServe JSON form
 * (GET /v2/models/m and .../config). Returns 0, or negative with err. */
int ifd__perf_model_json(ifd_perf_model_t *m, const void *meta, const void *cfg,
                         char *err, size_t errlen);

/* ---- shm.c ---- */

/**
 * --shared-memory system|cuda (nothing to do for none): as perf_analyzer,
 * one region per input ("<input>_0_0", holding its data) and one per output
 * ("<output>", its byte size times -b, or --output-shared-memory-size times
 * -b when the metadata does not fix it), created here and registered over
 * the protocol under test; fills m->regions (inputs first, then outputs).
 * Regions of those names already on the server are unregistered first.
 * cuda without a CUDA runtime or a GPU fails before anything is registered.
 * Returns 0, or a negative code with a message in err; in every case the
 * caller calls ifd__perf_shm_teardown() to undo what was done.
 */
int ifd__perf_shm_setup(ifd_perf_run_t *run, ifd_perf_model_t *m, char *err,
                        size_t errlen);
/** Unregisters every region it registered (a failure is a warning on
 * stderr), frees or unmaps and unlinks them, and frees m->regions. */
void ifd__perf_shm_teardown(ifd_perf_run_t *run, ifd_perf_model_t *m);

/* ---- seq.c ---- */

/* Gives a new slot its request: run->payload, or for a sequence model its
 * own copy. Returns 0 or UV_ENOMEM. */
int ifd__perf_seq_slot_init(ifd_perf_run_t *run, ifd_perf_slot_t *s);
/* Before each send on a sequence model: perf_analyzer's rules. The first
 * request of a sequence (seq_left == 0) takes the next id of the range and
 * a length of --sequence-length +/- --sequence-length-variation % and sets
 * sequence_start; the last (seq_left == 1) sets sequence_end. Rewrites
 * s->seq_req in place (HTTP: fixed-width fields; gRPC: the parameters are
 * appended to the packed request). */
void ifd__perf_seq_next(ifd_perf_run_t *run, ifd_perf_slot_t *s);
/* Marks where the HTTP payload's sequence fields are. Returns 0, or
 * UV_EINVAL when the payload has none. */
int ifd__perf_seq_locate(ifd_perf_run_t *run);
void ifd__perf_seq_slot_free(ifd_perf_slot_t *s);

/* ---- dec.c ---- */

/* A decoupled model's slot: its own copy of the gRPC request with the
 * parameter triton_enable_empty_final_response appended and a fixed-width
 * id field. Returns 0 or UV_ENOMEM. */
int ifd__perf_dec_slot_init(ifd_perf_run_t *run, ifd_perf_slot_t *s);
/* Before each send: writes the next unique id into the slot's request. */
void ifd__perf_dec_next(ifd_perf_run_t *run, ifd_perf_slot_t *s);
/**
 * Reads the first bytes (len of them, maybe truncated) of one
 * ModelStreamInferResponse: *final is set when the response carries the
 * parameter triton_final_response true, *has_output when it has outputs.
 */
void ifd__perf_dec_parse(const uint8_t *p, size_t len, int *final,
                         int *has_output);

/* ---- capi.c ---- */

/**
 * --service-kind=triton_c_api: dlopens DIR/lib/libtritonserver.so (else
 * DIR/libtritonserver.so), creates a server on --model-repository with
 * explicit model control and the backends of --backend-directory (default
 * DIR/backends), and loads the model under test, as perf_analyzer does.
 * Returns 0, or a negative code with a message in err; in every case the
 * caller calls ifd__perf_capi_shutdown().
 */
int ifd__perf_capi_init(ifd_perf_run_t *run, char *err, size_t errlen);
/* The model's metadata and config from the embedded server (their JSON is
 * the HTTP routes'); then as ifd__perf_model_json. Returns 0 or negative. */
int ifd__perf_capi_model_load(ifd_perf_run_t *run, ifd_perf_model_t *m,
                              char *err, size_t errlen);
/* Remembers the model every slot's request is built from (borrowed: it
 * outlives the slots). Returns 0. */
int ifd__perf_capi_payload(ifd_perf_run_t *run, const ifd_perf_model_t *m);
/* A new load slot: one TRITONSERVER_InferenceRequest built once and sent
 * again after each release. Returns 0 or a negative code (message in
 * run->fatal_msg); the transport owns *out. */
int ifd__perf_capi_slot_new(ifd_perf_run_t *run, ifd_perf_slot_t **out);
/* Waits for completions until the loop's next timer is due (at most), hands
 * each one to ifd__perf_run_done(), and runs the timers that are due: what
 * uv_run(UV_RUN_ONCE) does for the socket transports. */
void ifd__perf_capi_wait(ifd_perf_run_t *run);
/* The model's statistics from the embedded server, as ifd__perf_stats_json.
 */
int ifd__perf_capi_stats(ifd_perf_run_t *run, const ifd_perf_model_t *m,
                         ifd_perf_stats_t *out, char *err, size_t errlen);
/* Frees the slots (none may be in flight), stops and deletes the server. */
void ifd__perf_capi_shutdown(ifd_perf_run_t *run);

/* ---- stats.c ---- */

/* Reads the model's cumulative statistics. Returns 0, or negative with err.
 */
int ifd__perf_stats_read(ifd_perf_run_t *run, const ifd_perf_model_t *m,
                         ifd_perf_stats_t *out, char *err, size_t errlen);
/* Adds up the model_stats of a statistics answer (a json_t *, the KServe
 * JSON of GET .../stats). Returns 0, or UV_EINVAL when it has none. */
int ifd__perf_stats_json(const void *root, ifd_perf_stats_t *s);

/** Initializes `s` as the run's kind of socket (TCP with TCP_NODELAY, or a
 *  pipe for -u unix:PATH). Returns 0 or a libuv code (nothing to close). */
int ifd__perf_sock_init(ifd_perf_run_t *run, ifd_perf_sock_t *s);

/** Connects `s` (ifd__perf_sock_init'ed) to the server; `cb` runs from the
 *  loop as for uv_tcp_connect. Returns 0 or a libuv code (close `s`). */
int ifd__perf_sock_connect(ifd_perf_run_t *run, ifd_perf_sock_t *s,
                           uv_connect_t *req, uv_connect_cb cb);

#endif /* IFD_BENCH_PERF_PERF_H */
