/*
 * test/models/backends/seqacc/seqacc.c - the "seqacc" test backend: an
 * accumulator per sequence, for the sequence batcher's end-to-end tests.
 *
 * README: built as libtriton_seqacc.so; uses the public Triton ABI only.
 * Input INPUT (INT32, exactly one element per request) plus the control
 * inputs the sequence batcher adds (START, END, READY, CORRID: whichever
 * the model's sequence_batching names, under the names it gives them).
 *
 * Model config parameters ({"string_value": ...}):
 *   mode             "slot" (default): one accumulator per batch position
 *                    i of each instance, as Triton's qa `sequence` backend
 *                    keeps them (the direct strategy). START resets slot i,
 *                    READY=0 marks a null request that leaves it alone.
 *                    "corrid": accumulators keyed by the CORRID value, as
 *                    Triton's `dyna_sequence` backend keeps them (the oldest
 *                    strategy). START resets the entry, END adds the integer
 *                    CORRID to the output (1001: 5, 3, 2 -> 1011) and forgets
 *                    the entry; a request without START for an unknown
 *                    CORRID is an error.
 *   execute_delay_ms N: sleeps N ms per execute (forces backlog/batching).
 *
 * Outputs (each only when requested; declare in the config those a test
 * reads): OUTPUT (INT32, INPUT's shape) the accumulated value; SLOT (batch
 * position), INSTANCE (0, 1, ... in instance creation order), BATCH (the
 * number of requests of this execute, null ones included), OUT_START,
 * OUT_END, OUT_READY (the control values seen: 0/1, or -1 when the config
 * has no such control), all INT32 of INPUT's shape; OUT_CORRID (BYTES, one
 * element per request) the CORRID value seen, in decimal for integers (""
 * without one).
 *
 * Strict on purpose, so that a scheduler mistake shows as an error response
 * naming it: a control input the config names but the request lacks, of
 * another data type or shape ([1, 1] when the model batches, else [1]), a
 * CORRID that differs from the request's correlation ID, a batch position
 * beyond max(1, max_batch_size). Like Triton's sequence test backends it
 * reads the request's correlation ID with TRITONBACKEND_RequestCorrelationId
 * (or ...IdString when the CORRID control is TYPE_STRING), so a string
 * sequence_id on an integer model fails here, in the backend.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#define TESTBE_NAME "seqacc"
#include "../common/testbe.h"

#define NAME_MAX_LEN 64
#define CORRID_MAX_LEN 256

enum { MODE_SLOT, MODE_CORRID };

/* One control input the config declares; name[0] == 0 when it does not. */
typedef struct control {
  char name[NAME_MAX_LEN];
  TRITONSERVER_DataType dtype; /* expected data type of the input */
} control_t;

typedef struct model_state {
  int mode;
  long execute_delay_ms;
  int max_batch_size; /* 0: the model does not batch */
  control_t start, end, ready, corrid;
  atomic_int next_instance; /* INSTANCE numbers, in creation order */
} model_state_t;

/* An accumulator of the corrid mode. */
typedef struct entry {
  char *key; /* owned: the CORRID in decimal, or the string CORRID */
  int32_t acc;
} entry_t;

/* Only the instance's own execute thread touches it. */
typedef struct instance_state {
  model_state_t *model; /* borrowed: the model outlives its instances */
  int32_t id;
  int32_t *slots; /* owned: max(1, max_batch_size) accumulators */
  uint32_t n_slots;
  entry_t *entries; /* owned, with each key */
  size_t n_entries, cap_entries;
} instance_state_t;

/* What one request carried. */
typedef struct seen {
  bool null;                 /* a null request: correlation ID 0 */
  int32_t start, end, ready; /* 0/1, or -1 without that control */
  bool has_corrid;
  bool corrid_is_int;
  uint64_t corrid_u64;
  char corrid[CORRID_MAX_LEN + 1];
  int32_t value;    /* INPUT's element */
  int64_t shape[8]; /* INPUT's shape */
  uint32_t dims;
} seen_t;

static void sleep_ms(long ms) {
  if (ms <= 0) return;
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) != 0)
    ;
}

static TRITONSERVER_Error *errorf(TRITONSERVER_Error_Code code, const char *fmt,
                                  ...) __attribute__((format(printf, 2, 3)));

static TRITONSERVER_Error *errorf(TRITONSERVER_Error_Code code, const char *fmt,
                                  ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return TRITONSERVER_ErrorNew(code, buf);
}

/* ---- the model config (a text scan of its JSON, no JSON library) ------ */

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

/* The value after the first `"key" :` in [from, end) (end NULL: the string's
 * end), or NULL. */
static const char *after_key(const char *from, const char *end,
                             const char *key) {
  size_t klen = strlen(key);
  for (const char *p = from; *p != '\0' && (end == NULL || p < end); p++) {
    if (*p != '"' || strncmp(p + 1, key, klen) != 0 || p[1 + klen] != '"')
      continue;
    const char *q = skip_ws(p + klen + 2);
    if (*q == ':') return skip_ws(q + 1);
  }
  return NULL;
}

/* Copies the JSON string at p (which must start with '"') into out; false
 * when p is no string or it does not fit. Escapes are not expected. */
static bool read_string(const char *p, char *out, size_t cap) {
  size_t n = 0;
  if (p == NULL || *p != '"') return false;
  for (p++; *p != '"'; p++) {
    if (*p == '\0' || n + 1 >= cap) return false;
    out[n++] = *p;
  }
  out[n] = '\0';
  return true;
}

/* A parameter's string_value, or false. */
static bool param_string(const char *json, const char *key, char *out,
                         size_t cap) {
  const char *params = after_key(json, NULL, "parameters");
  const char *p = params != NULL ? after_key(params, NULL, key) : NULL;
  if (p == NULL) return false;
  return read_string(after_key(p, NULL, "string_value"), out, cap);
}

/* A non-empty JSON array at p ("[" then something other than "]"). */
static bool nonempty_array(const char *p) {
  return p != NULL && *p == '[' && *skip_ws(p + 1) != ']';
}

static TRITONSERVER_DataType config_dtype(const char *name) {
  static const struct {
    const char *cfg;
    TRITONSERVER_DataType t;
  } map[] = {{"TYPE_UINT64", TRITONSERVER_TYPE_UINT64},
             {"TYPE_INT64", TRITONSERVER_TYPE_INT64},
             {"TYPE_UINT32", TRITONSERVER_TYPE_UINT32},
             {"TYPE_INT32", TRITONSERVER_TYPE_INT32},
             {"TYPE_STRING", TRITONSERVER_TYPE_BYTES},
             {"TYPE_FP32", TRITONSERVER_TYPE_FP32},
             {"TYPE_BOOL", TRITONSERVER_TYPE_BOOL}};
  for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
    if (strcmp(name, map[i].cfg) == 0) return map[i].t;
  return TRITONSERVER_TYPE_INVALID;
}

/*
 * Finds the control of `kind` ("CONTROL_SEQUENCE_START", ...) in the
 * sequence_batching section: its input's name is the last "name" before the
 * kind (control_input entries are {"name": ..., "control": [{"kind": ...}]}),
 * its object the braces around the kind. Leaves c->name empty when absent.
 */
static TRITONSERVER_Error *find_control(const char *json, const char *kind,
                                        control_t *c) {
  char quoted[64];
  const char *seq = after_key(json, NULL, "sequence_batching");
  memset(c, 0, sizeof(*c));
  if (seq == NULL) return NULL;
  snprintf(quoted, sizeof(quoted), "\"%s\"", kind);
  const char *k = strstr(seq, quoted);
  if (k == NULL) return NULL;
  const char *name = NULL;
  for (const char *p = k; p > seq; p--)
    if (strncmp(p, "\"name\"", 6) == 0) {
      name = after_key(p, NULL, "name");
      break;
    }
  if (!read_string(name, c->name, sizeof(c->name)))
    return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                  "seqacc: no input name for %s in the config", kind);
  const char *obj = k;
  while (obj > seq && *obj != '{') obj--;
  const char *obj_end = strchr(k, '}');
  if (strcmp(kind, "CONTROL_SEQUENCE_CORRID") == 0) {
    char t[32];
    if (!read_string(after_key(obj, obj_end, "data_type"), t, sizeof(t)) ||
        (c->dtype = config_dtype(t)) == TRITONSERVER_TYPE_INVALID)
      return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                    "seqacc: unsupported CORRID data type in the config");
  } else if (nonempty_array(after_key(obj, obj_end, "int32_false_true"))) {
    c->dtype = TRITONSERVER_TYPE_INT32;
  } else if (nonempty_array(after_key(obj, obj_end, "fp32_false_true"))) {
    c->dtype = TRITONSERVER_TYPE_FP32;
  } else if (nonempty_array(after_key(obj, obj_end, "bool_false_true"))) {
    c->dtype = TRITONSERVER_TYPE_BOOL;
  } else {
    return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                  "seqacc: control %s has no false/true values", kind);
  }
  return NULL;
}

static TRITONSERVER_Error *parse_config(const char *json, model_state_t *st) {
  char buf[64];
  TRITONSERVER_Error *err;
  const char *p = after_key(json, NULL, "max_batch_size");
  st->max_batch_size = p != NULL ? atoi(p) : 0;
  st->mode = MODE_SLOT;
  if (param_string(json, "mode", buf, sizeof(buf))) {
    if (strcmp(buf, "corrid") == 0)
      st->mode = MODE_CORRID;
    else if (strcmp(buf, "slot") != 0)
      return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                    "seqacc: unknown mode '%s' (slot or corrid)", buf);
  }
  if (param_string(json, "execute_delay_ms", buf, sizeof(buf)))
    st->execute_delay_ms = atol(buf);
  if ((err = find_control(json, "CONTROL_SEQUENCE_START", &st->start)) ||
      (err = find_control(json, "CONTROL_SEQUENCE_END", &st->end)) ||
      (err = find_control(json, "CONTROL_SEQUENCE_READY", &st->ready)) ||
      (err = find_control(json, "CONTROL_SEQUENCE_CORRID", &st->corrid)))
    return err;
  if (st->mode == MODE_CORRID && st->corrid.name[0] == '\0')
    return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                  "seqacc: mode corrid needs a CORRID control");
  return NULL;
}

/* ---- lifecycle ----------------------------------------------------------- */

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  return testbe_check_api();
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  TRITONSERVER_Message *config = NULL;
  const char *json = NULL;
  size_t json_len = 0;
  char *copy = NULL;
  model_state_t *st = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelConfig(model, 1, &config);
  if (err != NULL) return err;
  err = TRITONSERVER_MessageSerializeToJson(config, &json, &json_len);
  if (err != NULL) goto out_delete_config;
  copy = malloc(json_len + 1);
  st = calloc(1, sizeof(*st));
  if (copy == NULL || st == NULL) {
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    goto out_free;
  }
  memcpy(copy, json, json_len);
  copy[json_len] = '\0';
  err = parse_config(copy, st);
  if (err == NULL) err = TRITONBACKEND_ModelSetState(model, st);
  if (err == NULL) st = NULL; /* the model's now */
out_free:
  free(st);
  free(copy);
out_delete_config:
  TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(config));
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *vstate = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelState(model, &vstate);
  if (err != NULL) return err;
  free(vstate);
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance *instance) {
  TRITONBACKEND_Model *model = NULL;
  void *vstate = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceModel(instance, &model);
  if (err == NULL) err = TRITONBACKEND_ModelState(model, &vstate);
  if (err != NULL) return err;
  model_state_t *ms = vstate;
  instance_state_t *is = calloc(1, sizeof(*is));
  uint32_t n = ms->max_batch_size > 0 ? (uint32_t)ms->max_batch_size : 1;
  if (is != NULL) is->slots = calloc(n, sizeof(int32_t));
  if (is == NULL || is->slots == NULL) {
    free(is);
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  }
  is->model = ms;
  is->n_slots = n;
  is->id = atomic_fetch_add(&ms->next_instance, 1);
  err = TRITONBACKEND_ModelInstanceSetState(instance, is);
  if (err != NULL) {
    free(is->slots);
    free(is);
  }
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(
    TRITONBACKEND_ModelInstance *instance) {
  void *vstate = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceState(instance, &vstate);
  if (err != NULL) return err;
  instance_state_t *is = vstate;
  if (is == NULL) return NULL;
  for (size_t i = 0; i < is->n_entries; i++) free(is->entries[i].key);
  free(is->entries);
  free(is->slots);
  free(is);
  return NULL;
}

/* ---- requests --------------------------------------------------------------
 */

/*
 * Gathers input `name` into buf (at most cap bytes). *present is false (and
 * no error) when the request has no such input.
 */
static TRITONSERVER_Error *read_input(TRITONBACKEND_Request *request,
                                      const char *name, bool *present,
                                      TRITONSERVER_DataType *dtype,
                                      int64_t *shape, uint32_t *dims, void *buf,
                                      uint64_t cap, uint64_t *size) {
  TRITONBACKEND_Input *input = NULL;
  const int64_t *shp = NULL;
  uint32_t nbuf = 0;
  uint64_t off = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestInput(request, name, &input);
  *present = false;
  if (err != NULL) {
    TRITONSERVER_ErrorDelete(err);
    return NULL;
  }
  *present = true;
  err = TRITONBACKEND_InputProperties(input, NULL, dtype, &shp, dims, size,
                                      &nbuf);
  if (err != NULL) return err;
  if (*dims > 8)
    return errorf(TRITONSERVER_ERROR_INVALID_ARG, "%s has %u dims", name,
                  *dims);
  memcpy(shape, shp, *dims * sizeof(int64_t));
  if (*size > cap)
    return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                  "%s holds %" PRIu64 " bytes, more than the %" PRIu64
                  " expected",
                  name, *size, cap);
  for (uint32_t b = 0; b < nbuf; b++) {
    const void *src = NULL;
    uint64_t n = 0;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    err = TRITONBACKEND_InputBuffer(input, b, &src, &n, &mt, &mt_id);
    if (err != NULL) return err;
    if (n > *size - off || (mt == TRITONSERVER_MEMORY_GPU && n > 0))
      return errorf(TRITONSERVER_ERROR_INVALID_ARG, "bad %s buffer", name);
    if (n > 0) memcpy((char *)buf + off, src, n);
    off += n;
  }
  if (off != *size)
    return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                  "%s buffers are shorter than %s", name, name);
  return NULL;
}

/* The one shape a control input may have. */
static TRITONSERVER_Error *check_control_shape(const model_state_t *ms,
                                               const char *name,
                                               const int64_t *shape,
                                               uint32_t dims) {
  bool ok = ms->max_batch_size > 0
                ? (dims == 2 && shape[0] == 1 && shape[1] == 1)
                : (dims == 1 && shape[0] == 1);
  if (ok) return NULL;
  char s[96];
  int n = snprintf(s, sizeof(s), "[");
  for (uint32_t i = 0; i < dims && n < (int)sizeof(s) - 24; i++)
    n += snprintf(s + n, sizeof(s) - n, "%s%" PRId64, i ? ", " : "", shape[i]);
  snprintf(s + n, sizeof(s) - n, "]");
  return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                "control input %s has shape %s, expected %s", name, s,
                ms->max_batch_size > 0 ? "[1, 1]" : "[1]");
}

/* Reads one START/END/READY control: *out 0/1, or -1 when not configured. */
static TRITONSERVER_Error *read_flag(TRITONBACKEND_Request *request,
                                     const model_state_t *ms,
                                     const control_t *c, int32_t *out) {
  unsigned char buf[8];
  TRITONSERVER_DataType dtype = TRITONSERVER_TYPE_INVALID;
  int64_t shape[8];
  uint32_t dims = 0;
  uint64_t size = 0;
  bool present = false;
  *out = -1;
  if (c->name[0] == '\0') return NULL;
  TRITONSERVER_Error *err = read_input(request, c->name, &present, &dtype,
                                       shape, &dims, buf, sizeof(buf), &size);
  if (err != NULL) return err;
  if (!present)
    return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                  "request has no control input %s although the model's "
                  "config declares it",
                  c->name);
  if (dtype != c->dtype)
    return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                  "control input %s has data type %s, the config says %s",
                  c->name, TRITONSERVER_DataTypeString(dtype),
                  TRITONSERVER_DataTypeString(c->dtype));
  if ((err = check_control_shape(ms, c->name, shape, dims)) != NULL) return err;
  if (size != TRITONSERVER_DataTypeByteSize(dtype))
    return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                  "control input %s holds %" PRIu64 " bytes", c->name, size);
  switch (dtype) {
    case TRITONSERVER_TYPE_INT32: {
      int32_t v;
      memcpy(&v, buf, sizeof(v));
      *out = v != 0;
      break;
    }
    case TRITONSERVER_TYPE_FP32: {
      float v;
      memcpy(&v, buf, sizeof(v));
      *out = v != 0.0f;
      break;
    }
    default:
      *out = buf[0] != 0;
      break;
  }
  return NULL;
}

/* Reads the CORRID control into s (rendered as text) and checks it against
 * the request's own correlation ID. */
static TRITONSERVER_Error *read_corrid(TRITONBACKEND_Request *request,
                                       const model_state_t *ms, seen_t *s,
                                       bool real) {
  const control_t *c = &ms->corrid;
  unsigned char buf[4 + CORRID_MAX_LEN];
  TRITONSERVER_DataType dtype = TRITONSERVER_TYPE_INVALID;
  int64_t shape[8];
  uint32_t dims = 0;
  uint64_t size = 0;
  bool present = false;
  TRITONSERVER_Error *err = read_input(request, c->name, &present, &dtype,
                                       shape, &dims, buf, sizeof(buf), &size);
  if (err != NULL) return err;
  if (!present)
    return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                  "request has no control input %s although the model's "
                  "config declares it",
                  c->name);
  if (dtype != c->dtype)
    return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                  "CORRID input %s has data type %s, the config says %s",
                  c->name, TRITONSERVER_DataTypeString(dtype),
                  TRITONSERVER_DataTypeString(c->dtype));
  if ((err = check_control_shape(ms, c->name, shape, dims)) != NULL) return err;
  s->has_corrid = true;
  if (dtype == TRITONSERVER_TYPE_BYTES) {
    uint32_t n = 0;
    if (size < 4) goto out_bad_size;
    memcpy(&n, buf, 4);
    if (n > CORRID_MAX_LEN || 4 + (uint64_t)n != size) goto out_bad_size;
    memcpy(s->corrid, buf + 4, n);
    s->corrid[n] = '\0';
  } else {
    if (size != TRITONSERVER_DataTypeByteSize(dtype)) goto out_bad_size;
    s->corrid_is_int = true;
    switch (dtype) {
      case TRITONSERVER_TYPE_UINT64:
        memcpy(&s->corrid_u64, buf, 8);
        snprintf(s->corrid, sizeof(s->corrid), "%" PRIu64, s->corrid_u64);
        break;
      case TRITONSERVER_TYPE_INT64: {
        int64_t v;
        memcpy(&v, buf, 8);
        s->corrid_u64 = (uint64_t)v;
        snprintf(s->corrid, sizeof(s->corrid), "%" PRId64, v);
        break;
      }
      case TRITONSERVER_TYPE_UINT32: {
        uint32_t v;
        memcpy(&v, buf, 4);
        s->corrid_u64 = v;
        snprintf(s->corrid, sizeof(s->corrid), "%" PRIu32, v);
        break;
      }
      default: {
        int32_t v;
        memcpy(&v, buf, 4);
        s->corrid_u64 = (uint64_t)(int64_t)v;
        snprintf(s->corrid, sizeof(s->corrid), "%" PRId32, v);
        break;
      }
    }
  }
  if (!real) return NULL;
  /* The control must carry the request's own correlation ID. */
  if (dtype == TRITONSERVER_TYPE_BYTES) {
    const char *id = NULL;
    err = TRITONBACKEND_RequestCorrelationIdString(request, &id);
    if (err != NULL) return err;
    if (strcmp(id, s->corrid) != 0)
      return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                    "CORRID input '%s' differs from the request's "
                    "correlation ID '%s'",
                    s->corrid, id);
  } else {
    uint64_t id = 0;
    err = TRITONBACKEND_RequestCorrelationId(request, &id);
    if (err != NULL) return err;
    if (dtype == TRITONSERVER_TYPE_UINT32 || dtype == TRITONSERVER_TYPE_INT32)
      id &= 0xffffffffu;
    uint64_t got = s->corrid_u64;
    if (dtype == TRITONSERVER_TYPE_UINT32 || dtype == TRITONSERVER_TYPE_INT32)
      got &= 0xffffffffu;
    if (got != id)
      return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                    "CORRID input %s differs from the request's "
                    "correlation ID %" PRIu64,
                    s->corrid, id);
  }
  return NULL;
out_bad_size:
  return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                "CORRID input %s holds %" PRIu64 " bytes", c->name, size);
}

/* A null request (one the batcher made to fill a slot) is the only kind
 * without a correlation ID: the batcher refuses real ones without. */
static bool is_null_request(TRITONBACKEND_Request *request) {
  const char *str = NULL;
  uint64_t id = 0;
  TRITONSERVER_Error *err =
      TRITONBACKEND_RequestCorrelationIdString(request, &str);
  if (err == NULL) return str == NULL || str[0] == '\0';
  TRITONSERVER_ErrorDelete(err);
  err = TRITONBACKEND_RequestCorrelationId(request, &id);
  if (err != NULL) {
    TRITONSERVER_ErrorDelete(err);
    return false;
  }
  return id == 0;
}

/* Reads every input of one request. */
static TRITONSERVER_Error *read_request(TRITONBACKEND_Request *request,
                                        const model_state_t *ms, seen_t *s) {
  TRITONSERVER_DataType dtype = TRITONSERVER_TYPE_INVALID;
  uint64_t size = 0;
  bool present = false;
  TRITONSERVER_Error *err;
  memset(s, 0, sizeof(*s));
  s->null = is_null_request(request);
  if ((err = read_flag(request, ms, &ms->start, &s->start)) ||
      (err = read_flag(request, ms, &ms->end, &s->end)) ||
      (err = read_flag(request, ms, &ms->ready, &s->ready)))
    return err;
  if (s->null && (s->ready == 1 || s->start == 1 || s->end == 1))
    return errorf(TRITONSERVER_ERROR_INTERNAL,
                  "a null request (no correlation ID) came with READY %d, "
                  "START %d, END %d",
                  s->ready, s->start, s->end);
  if (!s->null && s->ready == 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "a request with a correlation ID came with "
                                 "READY 0");
  bool real = !s->null;
  /* Triton's sequence test backends read the integer correlation ID of
   * every request: a string one fails here ("... is not an unsigned int"). */
  if (real && ms->corrid.dtype != TRITONSERVER_TYPE_BYTES) {
    uint64_t id = 0;
    if ((err = TRITONBACKEND_RequestCorrelationId(request, &id)) != NULL)
      return err;
  }
  if (ms->corrid.name[0] != '\0' &&
      (err = read_corrid(request, ms, s, real)) != NULL)
    return err;
  err = read_input(request, "INPUT", &present, &dtype, s->shape, &s->dims,
                   &s->value, sizeof(s->value), &size);
  if (err != NULL) return err;
  if (!present)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "request has no INPUT");
  if (dtype != TRITONSERVER_TYPE_INT32 || size != sizeof(int32_t))
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "INPUT must be one INT32 element");
  return NULL;
}

static entry_t *find_entry(instance_state_t *is, const char *key) {
  for (size_t i = 0; i < is->n_entries; i++)
    if (strcmp(is->entries[i].key, key) == 0) return &is->entries[i];
  return NULL;
}

static entry_t *add_entry(instance_state_t *is, const char *key) {
  if (is->n_entries == is->cap_entries) {
    size_t ncap = is->cap_entries ? is->cap_entries * 2 : 16;
    entry_t *n = realloc(is->entries, ncap * sizeof(*n));
    if (n == NULL) return NULL;
    is->entries = n;
    is->cap_entries = ncap;
  }
  entry_t *e = &is->entries[is->n_entries];
  e->key = strdup(key);
  if (e->key == NULL) return NULL;
  e->acc = 0;
  is->n_entries++;
  return e;
}

static void drop_entry(instance_state_t *is, entry_t *e) {
  free(e->key);
  *e = is->entries[--is->n_entries];
}

/* Updates the accumulator of one request; *out is the value to answer. */
static TRITONSERVER_Error *accumulate(instance_state_t *is, uint32_t pos,
                                      const seen_t *s, int32_t *out) {
  const model_state_t *ms = is->model;
  bool real = !s->null;
  if (ms->mode == MODE_SLOT) {
    if (pos >= is->n_slots)
      return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                    "batch position %u is beyond the %u slots", pos,
                    is->n_slots);
    if (real) {
      if (s->start == 1) is->slots[pos] = 0;
      is->slots[pos] += s->value;
    }
    *out = is->slots[pos];
    return NULL;
  }
  *out = 0;
  if (!real) return NULL;
  entry_t *e = find_entry(is, s->corrid);
  if (s->start == 1) {
    if (e == NULL && (e = add_entry(is, s->corrid)) == NULL)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                   "out of memory");
    e->acc = 0;
  } else if (e == NULL) {
    return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                  "no accumulator for CORRID '%s' on instance %d: the "
                  "sequence's START went elsewhere or never came",
                  s->corrid, is->id);
  }
  e->acc += s->value;
  *out = e->acc;
  if (s->end == 1) {
    if (s->corrid_is_int) *out += (int32_t)s->corrid_u64;
    drop_entry(is, e);
  }
  return NULL;
}

static bool output_requested(TRITONBACKEND_Request *request, const char *name) {
  uint32_t count = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestOutputCount(request, &count);
  if (err != NULL) {
    TRITONSERVER_ErrorDelete(err);
    return false;
  }
  for (uint32_t i = 0; i < count; i++) {
    const char *n = NULL;
    err = TRITONBACKEND_RequestOutputName(request, i, &n);
    if (err != NULL) {
      TRITONSERVER_ErrorDelete(err);
      continue;
    }
    if (n != NULL && strcmp(n, name) == 0) return true;
  }
  return false;
}

static TRITONSERVER_Error *put_output(TRITONBACKEND_Request *request,
                                      TRITONBACKEND_Response *response,
                                      const char *name,
                                      TRITONSERVER_DataType dtype,
                                      const int64_t *shape, uint32_t dims,
                                      const void *data, uint64_t size) {
  TRITONBACKEND_Output *output = NULL;
  void *dst = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  if (!output_requested(request, name)) return NULL;
  TRITONSERVER_Error *err =
      TRITONBACKEND_ResponseOutput(response, &output, name, dtype, shape, dims);
  if (err == NULL)
    err = TRITONBACKEND_OutputBuffer(output, &dst, size, &mt, &mt_id);
  if (err == NULL && mt == TRITONSERVER_MEMORY_GPU && size > 0)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                "seqacc needs CPU output buffers");
  if (err == NULL && size > 0) memcpy(dst, data, size);
  return err;
}

/* Answers one request; *null tells whether it was a null request. */
static TRITONSERVER_Error *process(instance_state_t *is,
                                   TRITONBACKEND_Request *request, uint32_t pos,
                                   uint32_t batch,
                                   TRITONBACKEND_Response *response,
                                   bool *null) {
  seen_t s;
  int32_t out = 0;
  TRITONSERVER_Error *err = read_request(request, is->model, &s);
  *null = s.null;
  if (err == NULL) err = accumulate(is, pos, &s, &out);
  if (err != NULL) return err;
  struct {
    const char *name;
    int32_t v;
  } ints[] = {{"OUTPUT", out},        {"SLOT", (int32_t)pos},
              {"INSTANCE", is->id},   {"BATCH", (int32_t)batch},
              {"OUT_START", s.start}, {"OUT_END", s.end},
              {"OUT_READY", s.ready}};
  for (size_t i = 0; err == NULL && i < sizeof(ints) / sizeof(ints[0]); i++)
    err = put_output(request, response, ints[i].name, TRITONSERVER_TYPE_INT32,
                     s.shape, s.dims, &ints[i].v, sizeof(int32_t));
  if (err == NULL) {
    unsigned char buf[4 + CORRID_MAX_LEN];
    uint32_t n = (uint32_t)strlen(s.corrid);
    int64_t shape[2] = {1, 1};
    memcpy(buf, &n, 4);
    memcpy(buf + 4, s.corrid, n);
    err = put_output(request, response, "OUT_CORRID", TRITONSERVER_TYPE_BYTES,
                     shape, is->model->max_batch_size > 0 ? 2 : 1, buf,
                     4 + (uint64_t)n);
  }
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  void *vstate = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceState(instance, &vstate);
  if (err != NULL) return err;
  instance_state_t *is = vstate;
  if (request_count == 0) return NULL;

  TRITONBACKEND_Response **responses =
      calloc(request_count, sizeof(*responses));
  TRITONSERVER_Error **errors = calloc(request_count, sizeof(*errors));
  bool *null = calloc(request_count, sizeof(*null));
  if (responses == NULL || errors == NULL || null == NULL) {
    free(responses);
    free(errors);
    free(null);
    /* Nothing taken over yet: the server answers every request. */
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  }

  /* From here on every request is ours: each gets a response and a release. */
  uint64_t exec_start = now_ns();
  sleep_ms(is->model->execute_delay_ms);
  uint64_t compute_start = now_ns();
  int bad_null = -1;
  for (uint32_t r = 0; r < request_count; r++) {
    err = TRITONBACKEND_ResponseNew(&responses[r], requests[r]);
    if (err != NULL) {
      log_if_error(err, "cannot create response");
      responses[r] = NULL;
      continue;
    }
    errors[r] =
        process(is, requests[r], r, request_count, responses[r], &null[r]);
    if (null[r] && errors[r] != NULL && bad_null < 0) bad_null = (int)r;
  }
  /* A null request's response is dropped: its mistake would go unseen, so
   * it becomes the error of the batch's real requests. */
  for (uint32_t r = 0; bad_null >= 0 && r < request_count; r++)
    if (!null[r] && errors[r] == NULL)
      errors[r] = errorf(TRITONSERVER_ERROR_INTERNAL,
                         "the null request at batch position %d was "
                         "malformed: %s",
                         bad_null, TRITONSERVER_ErrorMessage(errors[bad_null]));
  uint64_t compute_end = now_ns();
  uint64_t exec_end = now_ns();

  /* Statistics first, so that a client that got its response finds it
   * counted. Null requests are reported too: not counting them is the
   * server's business. */
  for (uint32_t r = 0; r < request_count; r++)
    log_if_error(
        TRITONBACKEND_ModelInstanceReportStatistics(
            instance, requests[r], responses[r] != NULL && errors[r] == NULL,
            exec_start, compute_start, compute_end, exec_end),
        "cannot report statistics");
  log_if_error(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                   instance, request_count, exec_start, compute_start,
                   compute_end, exec_end),
               "cannot report batch statistics");
  for (uint32_t r = 0; r < request_count; r++) {
    if (responses[r] != NULL)
      log_if_error(
          TRITONBACKEND_ResponseSend(
              responses[r], TRITONSERVER_RESPONSE_COMPLETE_FINAL, errors[r]),
          "cannot send response");
    TRITONSERVER_ErrorDelete(errors[r]);
    log_if_error(TRITONBACKEND_RequestRelease(requests[r],
                                              TRITONSERVER_REQUEST_RELEASE_ALL),
                 "cannot release request");
  }
  free(responses);
  free(errors);
  free(null);
  return NULL;
}
