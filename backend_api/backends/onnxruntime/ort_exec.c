/*
 * backend_api/backends/onnxruntime/ort_exec.c - one execution of the ONNX
 * Runtime backend: a batch of requests in, one RunWithBinding, a response
 * per request out.
 *
 * Copies are kept to what the formats force:
 * - inputs: a request's tensor that sits in one CPU buffer (the server's
 *   request body, or a shared-memory region) is handed to ONNX Runtime as
 *   it is (CreateTensorWithDataAsOrtValue over the request's bytes); the
 *   requests of a batch are gathered once into one contiguous tensor; BYTES
 *   are rewritten once into the C strings ONNX Runtime takes;
 * - outputs: for a batch of one request, an output whose shape the
 *   configuration fixes is allocated in the response first and bound, so
 *   ONNX Runtime writes its result straight into the response's buffer;
 *   other outputs are bound to ONNX Runtime's allocator and copied once
 *   into each request's response (a batch must be split anyway).
 * Errors of one request become that request's error response; an error of
 * the run itself answers every request of the batch with it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define ERR_ARG TRITONSERVER_ERROR_INVALID_ARG
#define ERR_INTERNAL TRITONSERVER_ERROR_INTERNAL

typedef struct bound {
  size_t out;      /* index into model->outs */
  OrtValue *value; /* owned: our value over the response's buffer, or NULL */
  int zero_copy;   /* ONNX Runtime writes into response 0's buffer */
} bound_t;

typedef struct exec {
  ort_instance_t *in;
  ort_model_t *m;
  TRITONBACKEND_Request **reqs;
  uint32_t n;
  TRITONBACKEND_Response **resp; /* NULL once answered (error) */
  int64_t *batch;                /* per request: rows (1 without batching) */
  int64_t total;
  unsigned char *wants; /* n x n_outs: request r asked for output i */
  OrtValue **in_vals;   /* owned */
  size_t n_in_vals;
  void **bufs; /* owned: gathered inputs, string copies */
  size_t n_bufs;
  bound_t *bound; /* owned */
  size_t n_bound;
} exec_t;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void log_err(TRITONSERVER_Error *e, const char *what) {
  if (e == NULL) return;
  ifd_ort_log(TRITONSERVER_LOG_ERROR, "%s: %s", what,
              TRITONSERVER_ErrorMessage(e));
  TRITONSERVER_ErrorDelete(e);
}

/* Sends e (not freed) as request r's final response unless answered. */
static void send_error(exec_t *x, uint32_t r, TRITONSERVER_Error *e) {
  if (x->resp[r] == NULL) return;
  log_err(TRITONBACKEND_ResponseSend(x->resp[r],
                                     TRITONSERVER_RESPONSE_COMPLETE_FINAL, e),
          "failed to send onnxruntime backend response");
  x->resp[r] = NULL;
}

/* Answers request r with e (owned, freed here) unless already answered. */
static void answer_error(exec_t *x, uint32_t r, TRITONSERVER_Error *e) {
  send_error(x, r, e);
  TRITONSERVER_ErrorDelete(e);
}

/* Answers every open request with e (owned). */
static void answer_all(exec_t *x, TRITONSERVER_Error *e) {
  for (uint32_t r = 0; r < x->n; r++) send_error(x, r, e);
  TRITONSERVER_ErrorDelete(e);
}

static int keep_buf(exec_t *x, void *p) {
  void **grown = realloc(x->bufs, (x->n_bufs + 1) * sizeof(void *));
  if (grown == NULL) {
    free(p);
    return -1;
  }
  x->bufs = grown;
  x->bufs[x->n_bufs++] = p;
  return 0;
}

static TRITONSERVER_Error *keep_value(exec_t *x, OrtValue *v) {
  OrtValue **grown = realloc(x->in_vals, (x->n_in_vals + 1) * sizeof(*grown));
  if (grown == NULL) {
    ifd_ort->ReleaseValue(v);
    return ifd_be_errf(ERR_INTERNAL, "out of memory");
  }
  x->in_vals = grown;
  x->in_vals[x->n_in_vals++] = v;
  return NULL;
}

static int64_t elements(const int64_t *d, size_t n) {
  int64_t c = 1;
  for (size_t i = 0; i < n; i++) c *= d[i];
  return c;
}

static TRITONSERVER_Error *bind_batch_input(exec_t *x,
                                            const ifd_batch_input_t *bi);

/* The shape of request r's input `source` (a batch input's source, a
 * ragged input, a batch output's shape source). */
static TRITONSERVER_Error *source_shape(exec_t *x, uint32_t r,
                                        const char *source,
                                        const int64_t **shape, uint32_t *nd) {
  TRITONBACKEND_Input *input = NULL;
  TRITONSERVER_Error *e =
      TRITONBACKEND_RequestInput(x->reqs[r], source, &input);
  if (e == NULL)
    e = TRITONBACKEND_InputProperties(input, NULL, NULL, shape, nd, NULL, NULL);
  return e;
}

/* ---- inputs ---- */

static int is_ragged(const ort_model_t *m, const char *name) {
  for (size_t i = 0; i < m->n_ragged; i++)
    if (strcmp(m->ragged[i], name) == 0) return 1;
  return 0;
}

/* Copies all of one request's input into dst (exactly `size` bytes). */
static TRITONSERVER_Error *copy_input(TRITONBACKEND_Input *input, uint32_t nbuf,
                                      char *dst, uint64_t size) {
  uint64_t off = 0;
  for (uint32_t b = 0; b < nbuf; b++) {
    const void *src = NULL;
    uint64_t len = 0;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    TRITONSERVER_Error *e =
        TRITONBACKEND_InputBuffer(input, b, &src, &len, &mt, &mt_id);
    if (e != NULL) return e;
    if (mt == TRITONSERVER_MEMORY_GPU && len > 0)
      return ifd_be_errf(ERR_ARG,
                         "onnxruntime backend: inputs in GPU memory are not "
                         "supported on a CPU instance");
    if (len > size - off)
      return ifd_be_errf(ERR_INTERNAL, "input buffers exceed the input size");
    if (len > 0) memcpy(dst + off, src, len);
    off += len;
  }
  if (off != size)
    return ifd_be_errf(ERR_INTERNAL,
                       "input buffers are shorter than the input");
  return NULL;
}

/* A fixed-size input: the request's own buffer when it is the only
 * request and its tensor is one CPU buffer, else one gathered copy. */
static TRITONSERVER_Error *bind_fixed(exec_t *x, const char *name,
                                      ONNXTensorElementDataType ot,
                                      const int64_t *shape, size_t nd) {
  TRITONBACKEND_Input *input = NULL;
  uint64_t size = 0, total = 0, off = 0;
  uint32_t nbuf = 0;
  char *dst;
  OrtValue *v = NULL;
  TRITONSERVER_Error *e;

  if (x->n == 1) {
    e = TRITONBACKEND_RequestInput(x->reqs[0], name, &input);
    if (e == NULL)
      e = TRITONBACKEND_InputProperties(input, NULL, NULL, NULL, NULL, &size,
                                        &nbuf);
    if (e != NULL) return e;
    if (nbuf == 1) {
      const void *src = NULL;
      uint64_t len = 0;
      TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
      int64_t mt_id = 0;
      e = TRITONBACKEND_InputBuffer(input, 0, &src, &len, &mt, &mt_id);
      if (e != NULL) return e;
      if (mt != TRITONSERVER_MEMORY_GPU) {
        e = ifd_ort_err(ifd_ort->CreateTensorWithDataAsOrtValue(
            x->in->cpu_info, (void *)src, len, shape, nd, ot, &v));
        if (e == NULL) e = keep_value(x, v);
        if (e == NULL)
          e = ifd_ort_err(ifd_ort->BindInput(x->in->binding, name, v));
        return e;
      }
    }
  }
  for (uint32_t r = 0; r < x->n; r++) {
    e = TRITONBACKEND_RequestInput(x->reqs[r], name, &input);
    if (e == NULL)
      e = TRITONBACKEND_InputProperties(input, NULL, NULL, NULL, NULL, &size,
                                        NULL);
    if (e != NULL) return e;
    total += size;
  }
  dst = malloc(total > 0 ? total : 1);
  if (dst == NULL || keep_buf(x, dst) < 0)
    return ifd_be_errf(ERR_INTERNAL, "out of memory for input '%s'", name);
  for (uint32_t r = 0; r < x->n; r++) {
    e = TRITONBACKEND_RequestInput(x->reqs[r], name, &input);
    if (e == NULL)
      e = TRITONBACKEND_InputProperties(input, NULL, NULL, NULL, NULL, &size,
                                        &nbuf);
    if (e == NULL) e = copy_input(input, nbuf, dst + off, size);
    if (e != NULL) {
      /* Only this request's rows are lost: zero them, answer it. */
      memset(dst + off, 0, size);
      answer_error(x, r, e);
    }
    off += size;
  }
  e = ifd_ort_err(ifd_ort->CreateTensorWithDataAsOrtValue(
      x->in->cpu_info, dst, total, shape, nd, ot, &v));
  if (e == NULL) e = keep_value(x, v);
  if (e == NULL) e = ifd_ort_err(ifd_ort->BindInput(x->in->binding, name, v));
  return e;
}

/* Splits one request's serialized BYTES (<u32 length><bytes>...) into
 * count C strings at out[0..count), copied into `text` (NUL after each).
 * Returns the number of strings read; on a malformed buffer sets *err. */
static size_t split_strings(const char *buf, uint64_t len, int64_t count,
                            const char *name, char *text, const char **out,
                            TRITONSERVER_Error **err) {
  uint64_t off = 0;
  int64_t i;
  *err = NULL;
  for (i = 0; i < count; i++) {
    uint32_t l;
    if (len - off < sizeof(uint32_t)) {
      *err =
          ifd_be_errf(ERR_ARG,
                      "incomplete string length for inference input '%s', "
                      "expecting %zu bytes but only %llu bytes available",
                      name, sizeof(uint32_t), (unsigned long long)(len - off));
      return (size_t)i;
    }
    memcpy(&l, buf + off, sizeof(l));
    off += sizeof(l);
    if (l > len - off) {
      *err = ifd_be_errf(ERR_ARG,
                         "incomplete string data for inference input '%s', "
                         "expecting string of length %u but only %llu bytes "
                         "available",
                         name, l, (unsigned long long)(len - off));
      return (size_t)i;
    }
    memcpy(text, buf + off, l);
    text[l] = '\0';
    out[i] = text;
    text += l + 1;
    off += l;
  }
  if (off != len)
    *err = ifd_be_errf(ERR_ARG,
                       "expected %lld strings for inference input '%s', got "
                       "more data (%llu of %llu bytes used)",
                       (long long)count, name, (unsigned long long)off,
                       (unsigned long long)len);
  return (size_t)i;
}

static TRITONSERVER_Error *bind_strings(exec_t *x, const char *name,
                                        const int64_t *shape, size_t nd) {
  int64_t count = elements(shape, nd), at = 0;
  const char **ptrs;
  OrtValue *v = NULL;
  TRITONSERVER_Error *e;
  ptrs = calloc((size_t)(count > 0 ? count : 1), sizeof(char *));
  if (ptrs == NULL || keep_buf(x, (void *)ptrs) < 0)
    return ifd_be_errf(ERR_INTERNAL, "out of memory for input '%s'", name);
  for (uint32_t r = 0; r < x->n; r++) {
    TRITONBACKEND_Input *input = NULL;
    const int64_t *rshape = NULL;
    uint32_t rnd = 0, nbuf = 0;
    uint64_t size = 0;
    int64_t rcount;
    char *raw, *text;
    size_t got;
    e = TRITONBACKEND_RequestInput(x->reqs[r], name, &input);
    if (e == NULL)
      e = TRITONBACKEND_InputProperties(input, NULL, NULL, &rshape, &rnd, &size,
                                        &nbuf);
    if (e != NULL) return e;
    rcount = elements(rshape, rnd);
    if (rcount > count - at)
      return ifd_be_errf(ERR_INTERNAL, "string input '%s' overruns its batch",
                         name);
    /* One copy holds the raw bytes, then the strings with their NULs. */
    raw = malloc(size + size + (size_t)rcount + 1);
    if (raw == NULL || keep_buf(x, raw) < 0)
      return ifd_be_errf(ERR_INTERNAL, "out of memory for input '%s'", name);
    text = raw + size;
    e = copy_input(input, nbuf, raw, size);
    got = e == NULL
              ? split_strings(raw, size, rcount, name, text, ptrs + at, &e)
              : 0;
    if (e != NULL) {
      for (int64_t i = (int64_t)got; i < rcount; i++) ptrs[at + i] = "";
      answer_error(x, r, e);
    }
    at += rcount;
  }
  for (; at < count; at++) ptrs[at] = "";
  e = ifd_ort_err(ifd_ort->CreateTensorAsOrtValue(
      x->in->alloc, shape, nd, ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, &v));
  if (e == NULL) e = keep_value(x, v);
  if (e == NULL)
    e = ifd_ort_err(ifd_ort->FillStringTensor(v, ptrs, (size_t)count));
  if (e == NULL) e = ifd_ort_err(ifd_ort->BindInput(x->in->binding, name, v));
  return e;
}

static TRITONSERVER_Error *bind_inputs(exec_t *x) {
  uint32_t count = 0;
  TRITONSERVER_Error *e = TRITONBACKEND_RequestInputCount(x->reqs[0], &count);
  for (uint32_t j = 0; e == NULL && j < count; j++) {
    TRITONBACKEND_Input *input = NULL;
    const char *name = NULL;
    TRITONSERVER_DataType dt;
    const int64_t *shape = NULL;
    uint32_t nd = 0;
    int64_t full[64];
    const ort_io_t *mio;
    e = TRITONBACKEND_RequestInputByIndex(x->reqs[0], j, &input);
    if (e == NULL)
      e = TRITONBACKEND_InputProperties(input, &name, &dt, &shape, &nd, NULL,
                                        NULL);
    if (e != NULL) break;
    mio = ifd_ort_io_find(&x->in->inputs, name);
    if (mio == NULL) {
      e = ifd_be_errf(ERR_ARG, "unexpected inference input '%s' for model '%s'",
                      name, x->m->name);
      break;
    }
    if (nd > sizeof(full) / sizeof(full[0])) {
      e = ifd_be_errf(ERR_ARG, "input '%s' has too many dimensions", name);
      break;
    }
    memcpy(full, shape, nd * sizeof(int64_t));
    if (x->m->n_ragged > 0 && is_ragged(x->m, name)) {
      /* A ragged input is the whole batch flattened. */
      int64_t sum = 0;
      for (uint32_t r = 0; e == NULL && r < x->n; r++) {
        const int64_t *rs = NULL;
        uint32_t rnd = 0;
        e = source_shape(x, r, name, &rs, &rnd);
        if (e == NULL) sum += elements(rs, rnd);
      }
      if (e != NULL) break;
      full[0] = sum;
      nd = 1;
    } else if (x->m->max_batch_size > 0 && nd > 0) {
      full[0] = x->total;
    }
    for (size_t k = 0; k < x->m->n_reshape; k++) {
      const ort_io_t *rs = &x->m->reshape[k];
      size_t at = x->m->max_batch_size > 0 ? 1 : 0;
      if (strcmp(rs->name, name) != 0) continue;
      if (at + rs->n_dims > sizeof(full) / sizeof(full[0])) break;
      /* The model's shape: the batch, then the reshape. */
      full[0] = x->total;
      memcpy(full + at, rs->dims, rs->n_dims * sizeof(int64_t));
      nd = (uint32_t)(at + rs->n_dims);
      break;
    }
    /* A scalar model input takes a scalar value. */
    if (mio->n_dims == 0) nd = 0;
    if (dt == TRITONSERVER_TYPE_BYTES)
      e = bind_strings(x, name, full, nd);
    else
      e = bind_fixed(x, name, ifd_ort_from_triton(dt), full, nd);
  }
  for (size_t i = 0; e == NULL && i < x->m->n_batch_inputs; i++)
    e = bind_batch_input(x, &x->m->batch_inputs[i]);
  return e;
}

/* Makes one batch_input tensor (Triton's values and shapes for each kind,
 * backends/common/batch_io.h) and binds it to each of its targets. */
static TRITONSERVER_Error *bind_batch_input(exec_t *x,
                                            const ifd_batch_input_t *bi) {
  int64_t shape[2], count;
  size_t nd;
  char *buf;
  ifd_shape_ref_t *src = calloc(x->n > 0 ? x->n : 1, sizeof(*src));
  TRITONSERVER_Error *e = NULL;
  /* keep_buf frees what it cannot keep. */
  if (src == NULL || keep_buf(x, src) < 0)
    return ifd_be_errf(ERR_INTERNAL, "out of memory for batch input");
  for (uint32_t r = 0; r < x->n; r++) {
    e = source_shape(x, r, bi->source, &src[r].dims, &src[r].nd);
    if (e != NULL) return e;
  }
  nd = ifd_batch_input_shape(bi->kind, src, x->n, shape);
  count = ifd_batch_elements(shape, nd);
  buf = calloc((size_t)(count > 0 ? count : 1), 4);
  if (buf == NULL || keep_buf(x, buf) < 0)
    return ifd_be_errf(ERR_INTERNAL, "out of memory for batch input");
  ifd_batch_input_fill(bi->kind, bi->dtype, src, x->n, buf, count);
  for (size_t t = 0; t < bi->n_targets; t++) {
    OrtValue *v = NULL;
    e = ifd_ort_err(ifd_ort->CreateTensorWithDataAsOrtValue(
        x->in->cpu_info, buf, (size_t)count * 4, shape, nd,
        bi->dtype == TRITONSERVER_TYPE_FP32
            ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT
            : ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32,
        &v));
    if (e == NULL) e = keep_value(x, v);
    if (e == NULL)
      e = ifd_ort_err(ifd_ort->BindInput(x->in->binding, bi->targets[t], v));
    if (e != NULL) return e;
  }
  return NULL;
}

/* ---- outputs ---- */

/* Which outputs each request asked for (all of them when it named none:
 * the server reports the configuration's outputs then). */
static TRITONSERVER_Error *read_wants(exec_t *x) {
  size_t k = x->m->n_outs;
  x->wants = calloc((size_t)x->n * (k > 0 ? k : 1), 1);
  if (x->wants == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
  for (uint32_t r = 0; r < x->n; r++) {
    uint32_t count = 0;
    TRITONSERVER_Error *e =
        TRITONBACKEND_RequestOutputCount(x->reqs[r], &count);
    for (uint32_t j = 0; e == NULL && j < count; j++) {
      const char *name = NULL;
      e = TRITONBACKEND_RequestOutputName(x->reqs[r], j, &name);
      for (size_t i = 0; e == NULL && i < k; i++)
        if (x->m->outs[i].is_output && strcmp(x->m->outs[i].name, name) == 0)
          x->wants[r * k + i] = 1;
    }
    if (e != NULL) answer_error(x, r, e);
  }
  return NULL;
}

static int wanted(const exec_t *x, size_t i) {
  if (x->m->outs[i].is_state) return 1;
  for (uint32_t r = 0; r < x->n; r++)
    if (x->resp[r] != NULL && x->wants[r * x->m->n_outs + i]) return 1;
  return 0;
}

/* The shape the client is answered in for `batch` rows of output o: the
 * configured dims after the batch dim (they differ from what the model
 * makes only with a reshape). Returns the dim count, 0 if it does not fit
 * in out[65]. */
static size_t client_shape(const exec_t *x, const ort_out_t *o, int64_t batch,
                           int64_t *out) {
  size_t n = 0;
  if (o->n_dims + 1 > 65) return 0;
  if (x->m->max_batch_size > 0) out[n++] = batch;
  for (size_t d = 0; d < o->n_dims; d++) out[n++] = o->dims[d];
  return n;
}

/* Binds output i into response 0's own buffer when it qualifies (else
 * leaves b->zero_copy 0: the caller binds it to ONNX Runtime's allocator). */
static TRITONSERVER_Error *bind_direct(exec_t *x, size_t i, bound_t *b) {
  const ort_out_t *o = &x->m->outs[i];
  int64_t shape[65];
  size_t nd = 0;
  uint64_t bytes;
  TRITONBACKEND_Output *out = NULL;
  void *buf = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  TRITONSERVER_Error *e;
  if (x->n != 1 || x->resp[0] == NULL || o->is_state || !o->fixed_shape ||
      o->scatter_source != NULL || o->scalar ||
      o->dtype == TRITONSERVER_TYPE_BYTES ||
      o->dtype == TRITONSERVER_TYPE_INVALID || !x->wants[i] ||
      o->n_shape + 1 > sizeof(shape) / sizeof(shape[0]))
    return NULL;
  if (x->m->max_batch_size > 0) shape[nd++] = x->batch[0];
  for (size_t d = 0; d < o->n_shape; d++) shape[nd++] = o->shape[d];
  bytes =
      (uint64_t)elements(shape, nd) * TRITONSERVER_DataTypeByteSize(o->dtype);
  if (o->reshaped) {
    /* The client's shape is the configured dims; the model's the reshape. */
    int64_t cshape[65];
    size_t cn = client_shape(x, o, x->batch[0], cshape);
    if (cn == 0) return NULL;
    e = TRITONBACKEND_ResponseOutput(x->resp[0], &out, o->name, o->dtype,
                                     cshape, (uint32_t)cn);
  } else {
    e = TRITONBACKEND_ResponseOutput(x->resp[0], &out, o->name, o->dtype, shape,
                                     (uint32_t)nd);
  }
  if (e == NULL) e = TRITONBACKEND_OutputBuffer(out, &buf, bytes, &mt, &mt_id);
  if (e != NULL) return e;
  if (mt == TRITONSERVER_MEMORY_GPU)
    return ifd_be_errf(ERR_INTERNAL, "output '%s' was given GPU memory",
                       o->name);
  e = ifd_ort_err(ifd_ort->CreateTensorWithDataAsOrtValue(
      x->in->cpu_info, buf, bytes, shape, nd, ifd_ort_from_triton(o->dtype),
      &b->value));
  if (e == NULL)
    e = ifd_ort_err(ifd_ort->BindOutput(x->in->binding, o->name, b->value));
  if (e == NULL) b->zero_copy = 1;
  return e;
}

static TRITONSERVER_Error *bind_outputs(exec_t *x) {
  x->bound = calloc(x->m->n_outs + 1, sizeof(bound_t));
  if (x->bound == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
  for (size_t i = 0; i < x->m->n_outs; i++) {
    bound_t *b = &x->bound[x->n_bound];
    TRITONSERVER_Error *e;
    if (!wanted(x, i)) continue;
    b->out = i;
    x->n_bound++;
    e = bind_direct(x, i, b);
    if (e == NULL && !b->zero_copy)
      e = ifd_ort_err(ifd_ort->BindOutputToDevice(
          x->in->binding, x->m->outs[i].name, x->in->cpu_info));
    if (e != NULL) return e;
  }
  return NULL;
}

/* Where one request's rows of an output go: its response, or its
 * sequence's state. Returns the destination buffer (CPU) in *dst. */
static TRITONSERVER_Error *output_dest(exec_t *x, uint32_t r,
                                       const ort_out_t *o, int state,
                                       const int64_t *shape, size_t nd,
                                       uint64_t bytes, void **dst,
                                       TRITONBACKEND_State **st) {
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  TRITONSERVER_Error *e;
  *st = NULL;
  if (state) {
    e = TRITONBACKEND_StateNew(st, x->reqs[r], o->name, o->dtype, shape,
                               (uint32_t)nd);
    if (e == NULL) e = TRITONBACKEND_StateBuffer(*st, dst, bytes, &mt, &mt_id);
  } else {
    TRITONBACKEND_Output *out = NULL;
    e = TRITONBACKEND_ResponseOutput(x->resp[r], &out, o->name, o->dtype, shape,
                                     (uint32_t)nd);
    if (e == NULL) e = TRITONBACKEND_OutputBuffer(out, dst, bytes, &mt, &mt_id);
  }
  if (e == NULL && mt == TRITONSERVER_MEMORY_GPU && bytes > 0)
    e = ifd_be_errf(ERR_INTERNAL, "output '%s' was given GPU memory", o->name);
  return e;
}

/* Serializes elements [first, first+count) of a string tensor as Triton's
 * BYTES (<u32 length><bytes>...). */
static void write_strings(char *dst, const char *content, const size_t *offs,
                          size_t total_len, size_t n_all, size_t first,
                          size_t count) {
  for (size_t e = first; e < first + count; e++) {
    size_t end = e + 1 < n_all ? offs[e + 1] : total_len;
    uint32_t l = (uint32_t)(end - offs[e]);
    memcpy(dst, &l, sizeof(l));
    memcpy(dst + sizeof(l), content + offs[e], l);
    dst += sizeof(l) + l;
  }
}

/* Splits one ONNX Runtime output into the requests' responses and states. */
static TRITONSERVER_Error *scatter(exec_t *x, const bound_t *b, OrtValue *v) {
  const ort_out_t *o = &x->m->outs[b->out];
  OrtTensorTypeAndShapeInfo *info = NULL;
  int64_t dims[65];
  size_t nd = 0, n_all, total_len = 0;
  char *data = NULL;
  size_t *offs = NULL;
  char *content = NULL;
  uint64_t row_bytes = 0, row_elems = 0;
  uint64_t off_bytes = 0, off_elems = 0;
  int strings = o->dtype == TRITONSERVER_TYPE_BYTES;
  TRITONSERVER_Error *e = ifd_ort_err(ifd_ort->GetTensorTypeAndShape(v, &info));
  if (e == NULL) e = ifd_ort_err(ifd_ort->GetDimensionsCount(info, &nd));
  if (e == NULL && nd > sizeof(dims) / sizeof(dims[0]))
    e = ifd_be_errf(ERR_INTERNAL, "output '%s' has too many dims", o->name);
  if (e == NULL) e = ifd_ort_err(ifd_ort->GetDimensions(info, dims, nd));
  if (info != NULL) ifd_ort->ReleaseTensorTypeAndShapeInfo(info);
  if (e != NULL) return e;
  if (nd == 0) {
    /* A scalar: its shape is the configuration's. */
    nd = o->n_shape;
    memcpy(dims, o->shape, nd * sizeof(int64_t));
  }
  n_all = (size_t)elements(dims, nd);
  if (strings) {
    e = ifd_ort_err(ifd_ort->GetStringTensorDataLength(v, &total_len));
    if (e != NULL) return e;
    content = malloc(total_len + 1);
    offs = calloc(n_all + 1, sizeof(size_t));
    if (content == NULL || offs == NULL) {
      free(content);
      free(offs);
      return ifd_be_errf(ERR_INTERNAL, "out of memory");
    }
    e = ifd_ort_err(
        ifd_ort->GetStringTensorContent(v, content, total_len, offs, n_all));
    if (e != NULL) goto out;
  } else {
    e = ifd_ort_err(ifd_ort->GetTensorMutableData(v, (void **)&data));
    if (e != NULL) return e;
  }
  if (x->m->max_batch_size > 0 && nd > 0) {
    row_elems = dims[0] > 0 ? n_all / (uint64_t)dims[0] : 0;
    row_bytes = row_elems * TRITONSERVER_DataTypeByteSize(o->dtype);
  }
  for (uint32_t r = 0; r < x->n; r++) {
    int64_t shape[65], cshape[65];
    uint64_t elems = n_all, bytes;
    size_t rnd = nd;
    memcpy(shape, dims, nd * sizeof(int64_t));
    if (o->scatter_source != NULL) {
      /* BATCH_SCATTER_WITH_INPUT_SHAPE: the configured shape, each -1
       * taken from the request's source input at the same position. */
      const int64_t *s = NULL;
      uint32_t snd = 0;
      TRITONSERVER_Error *se = source_shape(x, r, o->scatter_source, &s, &snd);
      if (se != NULL) {
        answer_error(x, r, se);
        continue;
      }
      const ifd_shape_ref_t sref = {s, snd};
      rnd = ifd_batch_scatter_shape(x->m->max_batch_size > 0, o->shape,
                                    o->n_shape, &sref, shape, 64);
      elems = (uint64_t)elements(shape, rnd);
    } else if (x->m->max_batch_size > 0 && nd > 0) {
      shape[0] = x->batch[r];
      elems = row_elems * (uint64_t)x->batch[r];
    }
    if (strings) {
      size_t end =
          off_elems + elems < n_all ? offs[off_elems + elems] : total_len;
      bytes = (end - (off_elems < n_all ? offs[off_elems] : total_len)) +
              elems * sizeof(uint32_t);
    } else if (o->scatter_source != NULL) {
      bytes = elems * TRITONSERVER_DataTypeByteSize(o->dtype);
      if (off_bytes + bytes > n_all * TRITONSERVER_DataTypeByteSize(o->dtype)) {
        answer_error(x, r,
                     ifd_be_errf(ERR_INTERNAL,
                                 "output '%s' is smaller than its requests' "
                                 "source input '%s' shapes",
                                 o->name, o->scatter_source));
        continue;
      }
    } else {
      bytes = x->m->max_batch_size > 0 && nd > 0
                  ? row_bytes * (uint64_t)x->batch[r]
                  : n_all * TRITONSERVER_DataTypeByteSize(o->dtype);
    }
    for (int state = 0; state < 2 && x->resp[r] != NULL; state++) {
      void *dst = NULL;
      TRITONBACKEND_State *st = NULL;
      TRITONSERVER_Error *re;
      if (state ? !o->is_state : !x->wants[r * x->m->n_outs + b->out]) continue;
      size_t cn = !state && o->reshaped && o->scatter_source == NULL
                      ? client_shape(x, o, x->batch[r], cshape)
                      : 0;
      if (cn > 0) {
        re = output_dest(x, r, o, state, cshape, cn, bytes, &dst, &st);
      } else {
        re = output_dest(x, r, o, state, shape, rnd, bytes, &dst, &st);
      }
      if (re == NULL && bytes > 0) {
        if (strings)
          write_strings(dst, content, offs, total_len, n_all, off_elems, elems);
        else
          memcpy(dst, data + off_bytes, bytes);
      }
      if (re == NULL && st != NULL) re = TRITONBACKEND_StateUpdate(st);
      if (re != NULL) answer_error(x, r, re);
    }
    off_elems += elems;
    off_bytes += bytes;
  }
out:
  free(content);
  free(offs);
  return e;
}

static TRITONSERVER_Error *read_outputs(exec_t *x) {
  OrtValue **vals = NULL;
  size_t count = 0;
  TRITONSERVER_Error *e = ifd_ort_err(ifd_ort->GetBoundOutputValues(
      x->in->binding, x->in->alloc, &vals, &count));
  if (e != NULL) return e;
  if (count != x->n_bound)
    e = ifd_be_errf(ERR_INTERNAL,
                    "Retrieved output count is not equal to expected count.");
  for (size_t i = 0; e == NULL && i < count; i++)
    if (!x->bound[i].zero_copy) e = scatter(x, &x->bound[i], vals[i]);
  for (size_t i = 0; i < count; i++) ifd_ort->ReleaseValue(vals[i]);
  if (vals != NULL)
    TRITONSERVER_ErrorDelete(
        ifd_ort_err(ifd_ort->AllocatorFree(x->in->alloc, vals)));
  return e;
}

/* ---- one execution ---- */

static void cleanup(exec_t *x) {
  ifd_ort->ClearBoundInputs(x->in->binding);
  ifd_ort->ClearBoundOutputs(x->in->binding);
  for (size_t i = 0; i < x->n_in_vals; i++)
    ifd_ort->ReleaseValue(x->in_vals[i]);
  for (size_t i = 0; i < x->n_bound; i++)
    if (x->bound[i].value != NULL) ifd_ort->ReleaseValue(x->bound[i].value);
  for (size_t i = 0; i < x->n_bufs; i++) free(x->bufs[i]);
  free(x->in_vals);
  free(x->bufs);
  free(x->bound);
  free(x->wants);
  free(x->resp);
  free(x->batch);
}

void ifd_ort_execute(ort_instance_t *in, TRITONBACKEND_ModelInstance *ti,
                     TRITONBACKEND_Request **requests, uint32_t n) {
  exec_t x;
  uint64_t exec_start = now_ns(), compute_start, compute_end, exec_end;
  TRITONSERVER_Error *e = NULL;
  int any_ok = 0;

  memset(&x, 0, sizeof(x));
  x.in = in;
  x.m = in->model;
  x.reqs = requests;
  x.n = n;
  x.resp = calloc(n, sizeof(*x.resp));
  x.batch = calloc(n, sizeof(*x.batch));
  if (x.resp == NULL || x.batch == NULL) {
    free(x.resp);
    free(x.batch);
    for (uint32_t r = 0; r < n; r++)
      log_err(TRITONBACKEND_RequestRelease(requests[r],
                                           TRITONSERVER_REQUEST_RELEASE_ALL),
              "failed releasing request");
    return;
  }
  for (uint32_t r = 0; r < n; r++) {
    x.batch[r] = 1;
    if (x.m->max_batch_size > 0) {
      TRITONBACKEND_Input *input = NULL;
      const int64_t *shape = NULL;
      uint32_t nd = 0;
      TRITONSERVER_Error *be =
          TRITONBACKEND_RequestInputByIndex(requests[r], 0, &input);
      if (be == NULL)
        be = TRITONBACKEND_InputProperties(input, NULL, NULL, &shape, &nd, NULL,
                                           NULL);
      if (be == NULL && nd > 0) x.batch[r] = shape[0];
      TRITONSERVER_ErrorDelete(be);
    }
    x.total += x.batch[r];
    log_err(TRITONBACKEND_ResponseNew(&x.resp[r], requests[r]),
            "failed to create response");
  }

  e = read_wants(&x);
  if (e == NULL) e = bind_inputs(&x);
  if (e == NULL) e = bind_outputs(&x);
  compute_start = now_ns();
  if (e == NULL)
    e = ifd_ort_err(
        ifd_ort->RunWithBinding(in->session, in->run_opts, in->binding));
  compute_end = now_ns();
  if (e == NULL) e = read_outputs(&x);
  if (e != NULL) answer_all(&x, e);
  exec_end = now_ns();

  for (uint32_t r = 0; r < n; r++) {
    int ok = x.resp[r] != NULL;
    if (ok) {
      log_err(TRITONBACKEND_ResponseSend(
                  x.resp[r], TRITONSERVER_RESPONSE_COMPLETE_FINAL, NULL),
              "failed to send onnxruntime backend response");
      any_ok = 1;
    }
    log_err(TRITONBACKEND_ModelInstanceReportStatistics(
                ti, requests[r], ok, exec_start, compute_start, compute_end,
                exec_end),
            "failed reporting request statistics");
    log_err(TRITONBACKEND_RequestRelease(requests[r],
                                         TRITONSERVER_REQUEST_RELEASE_ALL),
            "failed releasing request");
  }
  if (any_ok)
    log_err(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                ti, (uint64_t)x.total, exec_start, compute_start, compute_end,
                exec_end),
            "failed reporting batch request statistics");
  cleanup(&x);
}
