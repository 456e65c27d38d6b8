/*
 * backend_api/backends/onnxruntime/internal.h - what the ONNX Runtime
 * backend's files share.
 *
 * The backend (libtriton_onnxruntime.so):
 *   onnxruntime.c  the TRITONBACKEND_* entry points, the backend's settings
 *                  (--backend-config=onnxruntime,...) and the shared OrtEnv;
 *   ort_model.c    per model: the configuration (read with jansson),
 *                  auto-complete, the outputs and batch inputs to make; per
 *                  instance: its session (own or shared) and IO binding;
 *   ort_settings.c the session options the configuration asks for;
 *   ort_check.c    the configuration checked against the session's inputs
 *                  and outputs, with Triton's texts;
 *   ort_exec.c     per execute: request tensors bound to ONNX Runtime values
 *                  over the request's own buffers, outputs written by ONNX
 *                  Runtime into the response's buffers where their shape is
 *                  known before the run (IO binding), BYTES, implicit
 *                  sequence state, ragged batching;
 *   ort_util.c     data type tables, errors, logging, configuration JSON.
 */
#ifndef IFD_ORT_INTERNAL_H
#define IFD_ORT_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/batch_io.h"
#include "../common/be_util.h"
#include "ort_api.h"
#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

/* The API table of the loaded runtime (set once in TRITONBACKEND_Initialize,
 * read-only afterwards). */
extern const OrtApi *ifd_ort;

/* The backend: one per process. */
typedef struct ort_backend {
  OrtEnv *env;                /* owned */
  int default_max_batch_size; /* --backend-config=...,default-max-batch-size */
  int global_pool;            /* enable-global-threadpool=1 */
  pthread_mutex_t load_mu;    /* serializes session creation (memory report) */
} ort_backend_t;

/* One tensor the model declares (an input, an overridable initializer or an
 * output), as ONNX Runtime reports it. */
typedef struct ort_io {
  char *name;                      /* owned */
  ONNXTensorElementDataType otype; /* 0 when not a tensor */
  int64_t *dims;                   /* owned; -1 for a dynamic dimension */
  size_t n_dims;
} ort_io_t;

typedef struct ort_io_list {
  ort_io_t *v; /* owned */
  size_t n;
  size_t n_graph; /* inputs: how many are graph inputs (the rest are
                     overridable initializers); outputs: n */
} ort_io_list_t;

/* One output the backend produces per execute: a configuration output, a
 * sequence state's output, or both (Triton then returns the state to the
 * client too). */
typedef struct ort_out {
  char *name; /* owned */
  TRITONSERVER_DataType dtype;
  int is_output;  /* named in the configuration's output */
  int is_state;   /* a sequence_batching state's output_name */
  int64_t *shape; /* owned: reshape shape if any, else dims (no batch dim) */
  size_t n_shape;
  int fixed_shape; /* no -1 in shape: its size is known before the run */
  int scalar;      /* the model's tensor has no dimension */
  int64_t *dims;   /* owned: the configured dims, when they differ from
                      shape (a reshape): what the client sees */
  size_t n_dims;
  int reshaped;         /* the configuration gives a reshape */
  char *scatter_source; /* owned: a batch_output (BATCH_SCATTER_WITH_INPUT_
                           SHAPE) takes each request's shape from this input;
                           NULL for other outputs */
} ort_out_t;

/* Session settings read from the configuration; applied to every
 * instance's session. */
typedef struct ort_settings {
  int graph_level; /* GraphOptimizationLevel */
  int execution_mode;
  int intra_op, inter_op; /* 0: ONNX Runtime's default */
  int mem_arena;          /* -1 unset, 0 off, 1 on */
  int mem_pattern;        /* -1 unset, 0 off, 1 on */
  char **session_keys;    /* owned: "session.*" parameters */
  char **session_values;  /* owned */
  size_t n_session;
  char *arena_shrinkage; /* owned: memory.enable_memory_arena_shrinkage */
  int share_session;     /* share_session_between_instances */
} ort_settings_t;

/* A session shared by the instances of one instance group. */
typedef struct ort_shared {
  char *group;         /* owned */
  OrtSession *session; /* owned */
  int refs;
} ort_shared_t;

typedef struct ort_model {
  ort_backend_t *backend;  /* borrowed: outlives every model */
  TRITONBACKEND_Model *tm; /* borrowed */
  char *name;              /* owned */
  char *path;              /* owned: the model file */
  json_t *config;          /* owned: the final configuration */
  int max_batch_size;
  ort_settings_t settings;
  ort_out_t *outs; /* owned */
  size_t n_outs;
  ifd_batch_input_t *batch_inputs; /* owned (backends/common/batch_io.h) */
  size_t n_batch_inputs;
  char **ragged; /* owned: inputs with allow_ragged_batch */
  size_t n_ragged;
  ort_io_t *reshape; /* owned: inputs with a reshape, and the shape (without
                        the batch dim) the model takes them in */
  size_t n_reshape;
  pthread_mutex_t mu;   /* guards shared */
  ort_shared_t *shared; /* owned; guarded by mu */
  size_t n_shared;
} ort_model_t;

typedef struct ort_instance {
  ort_model_t *model;  /* borrowed: outlives its instances */
  char *name;          /* owned */
  char *group;         /* owned when the session is shared, else NULL */
  OrtSession *session; /* owned unless group != NULL */
  OrtIoBinding *binding;
  OrtRunOptions *run_opts;
  OrtMemoryInfo *cpu_info;
  OrtAllocator *alloc;   /* ONNX Runtime's default allocator: not owned */
  ort_io_list_t inputs;  /* model inputs and overridable initializers */
  ort_io_list_t outputs; /* model outputs */
  size_t *out_index;     /* owned: model output index of each outs[i] */
} ort_instance_t;

/* ---- ort_util.c ---------------------------------------------------------- */

/* A TRITONSERVER_Error for a failed ORT call, or NULL when status is NULL
 * (success). Frees status. The text is Triton's: "onnx runtime error C: M";
 * ONNX Runtime's INVALID_ARGUMENT becomes TRITONSERVER_ERROR_INVALID_ARG,
 * everything else TRITONSERVER_ERROR_INTERNAL. */
TRITONSERVER_Error *ifd_ort_err(OrtStatus *status);

/* Data type tables: ONNX <-> Triton. Unknown types give
 * TRITONSERVER_TYPE_INVALID / ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED. */
TRITONSERVER_DataType ifd_ort_to_triton(ONNXTensorElementDataType t);
ONNXTensorElementDataType ifd_ort_from_triton(TRITONSERVER_DataType t);
/* "TYPE_FP32" -> FLOAT; anything else not a tensor type -> UNDEFINED. */
ONNXTensorElementDataType ifd_ort_from_config(const char *type_str);
/* FLOAT -> "TYPE_FP32"; "TYPE_INVALID" for others. */
const char *ifd_ort_config_name(ONNXTensorElementDataType t);
/* FLOAT -> "FLOAT" (ONNX's names, for messages). */
const char *ifd_ort_onnx_name(ONNXTensorElementDataType t);

/* Writes "[1,-1,3]" into buf (truncated to cap). Returns buf. */
char *ifd_ort_shape_str(const int64_t *dims, size_t n, char *buf, size_t cap);

/* Logging through the server's log. */
/* 1 when the loaded runtime's CUDA execution provider can be set up;
 * else ifd_ort_no_cuda_reason() says why. */
int ifd_ort_has_cuda(void);
const char *ifd_ort_no_cuda_reason(void);

/* "1.30.0": the loaded runtime's version. */
const char *ifd_ort_version(void);

void ifd_ort_log(TRITONSERVER_LogLevel level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reads the session's inputs (with its overridable initializers) or
 * outputs. On success the list is owned by the caller (ifd_ort_io_free). */
TRITONSERVER_Error *ifd_ort_read_ios(OrtSession *s, OrtAllocator *alloc,
                                     int outputs, ort_io_list_t *out);
void ifd_ort_io_free(ort_io_list_t *l);
const ort_io_t *ifd_ort_io_find(const ort_io_list_t *l, const char *name);

/* ---- configuration JSON (ort_util.c) ---------------------------------------
 * Readers of the model configuration as the server serializes it. */

/* A JSON integer, or a string holding one (int64 fields may be either). */
int ifd_ort_json_int(const json_t *v, long long *out);
long long ifd_ort_member_int(const json_t *o, const char *key, long long dflt);
const char *ifd_ort_member_str(const json_t *o, const char *key);
int ifd_ort_member_bool(const json_t *o, const char *key);
/* Size of array `key` of o (0 when absent). */
size_t ifd_ort_array_size(const json_t *o, const char *key);
/* The first string of array `key` of o, or NULL. */
const char *ifd_ort_first_str(const json_t *o, const char *key);
/* reshape.shape when given, else dims; *dims owned by the caller. */
TRITONSERVER_Error *ifd_ort_config_shape(const json_t *io, int64_t **dims,
                                         size_t *n);
/* parameters { key: K value { string_value: V } } -> V, or NULL. */
const char *ifd_ort_param(const json_t *config, const char *key);
/* A parameter as an int (dflt when absent), with Triton's error text. */
TRITONSERVER_Error *ifd_ort_param_int(const json_t *config, const char *key,
                                      int dflt, int *out);
/* Triton's boolean words: true/on/1 and false/off/0, any case. */
TRITONSERVER_Error *ifd_ort_parse_bool(const char *s, int *out);
/* A boolean parameter: *out -1 when absent. */
TRITONSERVER_Error *ifd_ort_param_bool(const json_t *config, const char *key,
                                       int *out);

/* ---- ort_settings.c ------------------------------------------------------ */

TRITONSERVER_Error *ifd_ort_settings_read(const json_t *config,
                                          ort_settings_t *s);
void ifd_ort_settings_free(ort_settings_t *s);
/* Creates a session over the model file for an instance of `kind` on
 * `device`; *added is the resident memory its creation added (NULL: not
 * wanted). */
TRITONSERVER_Error *ifd_ort_session_create(ort_model_t *m,
                                           TRITONSERVER_InstanceGroupKind kind,
                                           int32_t device, OrtSession **out,
                                           uint64_t *added);

/* ---- ort_check.c --------------------------------------------------------- */

/* Checks the configuration against the instance's session; fills
 * in->out_index. */
TRITONSERVER_Error *ifd_ort_check_config(ort_instance_t *in);

/* ---- ort_model.c --------------------------------------------------------- */

/* The produced output `name`, or NULL. */
ort_out_t *ifd_ort_out_find(ort_model_t *m, const char *name);

/* ModelInitialize: auto-complete, settings, outputs. On success *out is the
 * model state (freed by ifd_ort_model_free). */
TRITONSERVER_Error *ifd_ort_model_new(ort_backend_t *b, TRITONBACKEND_Model *tm,
                                      ort_model_t **out);
void ifd_ort_model_free(ort_model_t *m);

/* Creates a session for the instance (or takes its group's shared one) and
 * checks the configuration against it. */
TRITONSERVER_Error *ifd_ort_instance_new(ort_model_t *m,
                                         TRITONBACKEND_ModelInstance *ti,
                                         ort_instance_t **out);
void ifd_ort_instance_free(ort_instance_t *in);

/* ---- ort_exec.c ---------------------------------------------------------- */

/* Runs one batch; answers and releases every request. */
void ifd_ort_execute(ort_instance_t *in, TRITONBACKEND_ModelInstance *ti,
                     TRITONBACKEND_Request **requests, uint32_t n);

#endif
