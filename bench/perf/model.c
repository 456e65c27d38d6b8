/*
 * bench/perf/model.c - what inferd-perf sends: the model's inputs, generated
 * once, and the load request serialized once.
 *
 * Metadata (names, datatypes, shapes) and config (max_batch_size) come over
 * the protocol under test: GET /v2/models/m[/versions/x] and .../config, or
 * the ModelMetadata and ModelConfig RPCs, or in C API mode the same JSON
 * from the embedded server (capi.c). Each input gets the metadata
 * shape, with the batch dimension set to -b when the model batches and every
 * other -1 taken from --shape; the data is random (or zero) of the right
 * datatype, BYTES being short random strings. The request built from them is
 * the exact byte string every slot sends: an HTTP/1.1 request (binary tensor
 * extension or JSON data arrays) or a 5-byte-prefixed ModelInferRequest.
 * For a sequence model (config with sequence_batching) the HTTP header
 * starts with fixed-width sequence parameters that seq.c rewrites per
 * request; over gRPC seq.c appends them. With --shared-memory every input
 * and requested output names its region (shm.c) in its parameters
 * (shared_memory_region, shared_memory_byte_size) and carries no data: the
 * HTTP body is the JSON header alone, the gRPC request has no raw contents.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench/perf/perf.h"
#include "proto/grpc_service.pb-c.h"

/* Bytes per element; 0 for BYTES, -1 for a datatype we do not know. */
static int dtype_size(const char *dt) {
  static const struct {
    const char *name;
    int size;
  } t[] = {{"BOOL", 1},  {"UINT8", 1}, {"INT8", 1},   {"UINT16", 2},
           {"INT16", 2}, {"FP16", 2},  {"BF16", 2},   {"UINT32", 4},
           {"INT32", 4}, {"FP32", 4},  {"UINT64", 8}, {"INT64", 8},
           {"FP64", 8},  {"BYTES", 0}};
  size_t i;
  for (i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(dt, t[i].name)) return t[i].size;
  return -1;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void) {
  uint64_t x = rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return rng_state = x;
}

static void model_path(const ifd_perf_model_t *m, char *out, size_t n,
                       const char *suffix) {
  if (m->version[0])
    snprintf(out, n, "/v2/models/%s/versions/%s%s", m->name, m->version,
             suffix);
  else
    snprintf(out, n, "/v2/models/%s%s", m->name, suffix);
}

static int add_input(ifd_perf_model_t *m, const char *name, const char *dt,
                     const int64_t *shape, int rank, char *err, size_t errlen) {
  ifd_perf_tensor_t *t;
  void *p = realloc(m->inputs, (size_t)(m->ninputs + 1) * sizeof *m->inputs);
  if (!p) return UV_ENOMEM;
  m->inputs = p;
  t = &m->inputs[m->ninputs];
  memset(t, 0, sizeof *t);
  if (rank > IFD_PERF_MAX_RANK || strlen(dt) >= sizeof t->datatype) {
    snprintf(err, errlen, "input '%s': rank or datatype not supported", name);
    return UV_EINVAL;
  }
  t->name = strdup(name);
  if (!t->name) return UV_ENOMEM;
  snprintf(t->datatype, sizeof t->datatype, "%s", dt);
  memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
  t->rank = rank;
  m->ninputs++;
  return 0;
}

static int add_output(ifd_perf_model_t *m, const char *name, const char *dt,
                      const int64_t *shape, int rank) {
  ifd_perf_output_t *t;
  void *p = realloc(m->outputs, (size_t)(m->noutputs + 1) * sizeof *m->outputs);
  if (!p) return UV_ENOMEM;
  m->outputs = p;
  t = &m->outputs[m->noutputs];
  memset(t, 0, sizeof *t);
  t->name = strdup(name);
  if (!t->name) return UV_ENOMEM;
  snprintf(t->datatype, sizeof t->datatype, "%s", dt ? dt : "");
  /* A rank we cannot hold reads as a variable shape (-1): shm.c then
   * sizes the output's region with --output-shared-memory-size. */
  t->rank = rank > IFD_PERF_MAX_RANK ? 1 : rank;
  if (rank > IFD_PERF_MAX_RANK)
    t->shape[0] = -1;
  else
    memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
  m->noutputs++;
  return 0;
}

/* ---- metadata and config over HTTP ---- */

static int http_json(ifd_perf_run_t *run, const char *path, const char *what,
                     json_t **out, char *err, size_t errlen) {
  ifd_perf_buf_t body = {0};
  int status = 0, rc;
  json_error_t je;

  rc = ifd__perf_http_get(run, path, &status, &body, err, errlen);
  if (rc < 0) return rc;
  if (status != 200) {
    snprintf(err, errlen, "failed to get %s: HTTP %d: %.*s", what, status,
             (int)(body.len > 300 ? 300 : body.len),
             body.data ? body.data : "");
    rc = UV_ENOENT;
    goto out_free;
  }
  *out = json_loadb(body.data, body.len, 0, &je);
  if (!*out) {
    snprintf(err, errlen, "failed to parse %s: %s", what, je.text);
    rc = UV_EINVAL;
  }

out_free:
  ifd__perf_buf_free(&body);
  return rc;
}

int ifd__perf_model_json(ifd_perf_model_t *m, const void *meta_,
                         const void *cfg_, char *err, size_t errlen) {
  json_t *meta = (json_t *)meta_, *cfg = (json_t *)cfg_, *arr, *t;
  size_t i, j;
  int rc = 0;

  m->max_batch =
      (int)json_integer_value(json_object_get(cfg, "max_batch_size"));
  m->sequence = json_is_object(json_object_get(cfg, "sequence_batching"));
  m->decoupled = json_is_true(json_object_get(
      json_object_get(cfg, "model_transaction_policy"), "decoupled"));
  arr = json_object_get(meta, "inputs");
  json_array_foreach(arr, i, t) {
    const char *name = json_string_value(json_object_get(t, "name"));
    const char *dt = json_string_value(json_object_get(t, "datatype"));
    json_t *shape = json_object_get(t, "shape"), *d;
    int64_t dims[IFD_PERF_MAX_RANK];
    int rank = 0;
    if (!name || !dt) {
      snprintf(err, errlen, "model metadata: an input without name/datatype");
      return UV_EINVAL;
    }
    json_array_foreach(shape, j, d) {
      if (rank < IFD_PERF_MAX_RANK) dims[rank] = json_integer_value(d);
      rank++;
    }
    rc = add_input(m, name, dt, dims, rank, err, errlen);
    if (rc < 0) return rc;
  }
  arr = json_object_get(meta, "outputs");
  json_array_foreach(arr, i, t) {
    const char *name = json_string_value(json_object_get(t, "name"));
    const char *dt = json_string_value(json_object_get(t, "datatype"));
    json_t *shape = json_object_get(t, "shape"), *d;
    int64_t dims[IFD_PERF_MAX_RANK];
    int rank = 0;
    json_array_foreach(shape, j, d) {
      if (rank < IFD_PERF_MAX_RANK) dims[rank] = json_integer_value(d);
      rank++;
    }
    if (name && (rc = add_output(m, name, dt, dims, rank)) < 0) return rc;
  }
  return 0;
}

static int http_load(ifd_perf_run_t *run, ifd_perf_model_t *m, char *err,
                     size_t errlen) {
  char path[512];
  json_t *meta = NULL, *cfg = NULL;
  int rc;

  model_path(m, path, sizeof path, "");
  rc = http_json(run, path, "model metadata", &meta, err, errlen);
  if (rc < 0) return rc;
  model_path(m, path, sizeof path, "/config");
  rc = http_json(run, path, "model config", &cfg, err, errlen);
  if (rc == 0) rc = ifd__perf_model_json(m, meta, cfg, err, errlen);
  json_decref(cfg);
  json_decref(meta);
  return rc;
}

/* ---- metadata and config over gRPC ---- */

static int grpc_call(ifd_perf_run_t *run, const char *method,
                     const ProtobufCMessage *req, ifd_perf_buf_t *body,
                     char *err, size_t errlen) {
  size_t n = protobuf_c_message_get_packed_size(req);
  uint8_t *msg = malloc(n ? n : 1);
  char gerr[IFD_PERF_ERR_MAX];
  int status = 0, rc;

  if (!msg) return UV_ENOMEM;
  protobuf_c_message_pack(req, msg);
  rc = ifd__perf_grpc_unary(run, method, msg, n, &status, body, gerr,
                            sizeof gerr);
  free(msg);
  if (rc < 0) {
    snprintf(err, errlen, "%s", gerr);
    return rc;
  }
  if (status != 0) {
    snprintf(err, errlen, "%s failed: gRPC status %d: %s", method, status,
             gerr);
    return UV_ENOENT;
  }
  return 0;
}

static int grpc_load(ifd_perf_run_t *run, ifd_perf_model_t *m, char *err,
                     size_t errlen) {
  Inference__ModelMetadataRequest mreq =
      INFERENCE__MODEL_METADATA_REQUEST__INIT;
  Inference__ModelConfigRequest creq = INFERENCE__MODEL_CONFIG_REQUEST__INIT;
  Inference__ModelMetadataResponse *meta = NULL;
  Inference__ModelConfigResponse *cfg = NULL;
  ifd_perf_buf_t body = {0};
  size_t i;
  int rc;

  mreq.name = m->name;
  mreq.version = m->version;
  rc = grpc_call(run, "ModelMetadata", &mreq.base, &body, err, errlen);
  if (rc < 0) goto out_free;
  meta = inference__model_metadata_response__unpack(NULL, body.len,
                                                    (const uint8_t *)body.data);
  body.len = 0;
  creq.name = m->name;
  creq.version = m->version;
  rc = grpc_call(run, "ModelConfig", &creq.base, &body, err, errlen);
  if (rc < 0) goto out_free;
  cfg = inference__model_config_response__unpack(NULL, body.len,
                                                 (const uint8_t *)body.data);
  if (!meta || !cfg) {
    snprintf(err, errlen, "cannot decode ModelMetadata/ModelConfig responses");
    rc = UV_EINVAL;
    goto out_free;
  }
  m->max_batch = cfg->config ? cfg->config->max_batch_size : 0;
  m->sequence =
      cfg->config &&
      cfg->config->scheduling_choice_case ==
          INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_SEQUENCE_BATCHING;
  m->decoupled = cfg->config && cfg->config->model_transaction_policy &&
                 cfg->config->model_transaction_policy->decoupled;
  for (i = 0; i < meta->n_inputs; i++) {
    Inference__ModelMetadataResponse__TensorMetadata *t = meta->inputs[i];
    rc = add_input(m, t->name, t->datatype, t->shape, (int)t->n_shape, err,
                   errlen);
    if (rc < 0) goto out_free;
  }
  for (i = 0; i < meta->n_outputs; i++) {
    Inference__ModelMetadataResponse__TensorMetadata *t = meta->outputs[i];
    rc = add_output(m, t->name, t->datatype, t->shape, (int)t->n_shape);
    if (rc < 0) goto out_free;
  }

out_free:
  if (cfg) inference__model_config_response__free_unpacked(cfg, NULL);
  if (meta) inference__model_metadata_response__free_unpacked(meta, NULL);
  ifd__perf_buf_free(&body);
  return rc;
}

/* ---- shapes and data ---- */

static int resolve_shape(const ifd_perf_opts_t *o, ifd_perf_model_t *m,
                         ifd_perf_tensor_t *t, char *err, size_t errlen) {
  int batched = m->max_batch > 0, i, k;
  const ifd_perf_shape_t *user = NULL;

  for (i = 0; i < o->nshapes; i++)
    if (!strcmp(o->shapes[i].name, t->name)) user = &o->shapes[i];
  if (batched && t->rank < 1) {
    snprintf(err, errlen,
             "input '%s': a batching model's input has no batch "
             "dimension",
             t->name);
    return UV_EINVAL;
  }
  if (user) {
    /* --shape gives the dimensions without the batch one, as in
     * perf_analyzer. */
    int want = t->rank - batched;
    if (user->rank != want) {
      snprintf(err, errlen, "--shape %s: %d dimensions given, the model has %d",
               t->name, user->rank, want);
      return UV_EINVAL;
    }
    for (k = 0; k < want; k++) {
      int64_t md = t->shape[k + batched];
      if (md != -1 && md != user->dims[k]) {
        snprintf(err, errlen, "--shape %s: dimension %d is %lld in the model",
                 t->name, k, (long long)md);
        return UV_EINVAL;
      }
      t->shape[k + batched] = user->dims[k];
    }
  }
  if (batched) t->shape[0] = o->batch;
  t->nelems = 1;
  for (k = 0; k < t->rank; k++) {
    if (t->shape[k] < 0) {
      snprintf(err, errlen,
               "input '%s' has a variable dimension: give it "
               "with --shape %s:D1,D2,...",
               t->name, t->name);
      return UV_EINVAL;
    }
    t->nelems *= (size_t)t->shape[k];
  }
  return 0;
}

static int fill_data(const ifd_perf_opts_t *o, ifd_perf_tensor_t *t, char *err,
                     size_t errlen) {
  int es = dtype_size(t->datatype);
  size_t i;

  if (es < 0) {
    snprintf(err, errlen, "input '%s': unknown datatype %s", t->name,
             t->datatype);
    return UV_EINVAL;
  }
  if (es == 0) {
    /* BYTES: 4-byte little-endian length, then 1..16 characters. */
    static const char al[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    t->data = malloc(t->nelems * 20 + 1);
    if (!t->data) return UV_ENOMEM;
    for (i = 0; i < t->nelems; i++) {
      uint32_t n = o->zero_data ? 1 : 1 + (uint32_t)(rng() % 16), k;
      uint8_t *p = t->data + t->nbytes;
      p[0] = (uint8_t)n;
      p[1] = p[2] = p[3] = 0;
      for (k = 0; k < n; k++)
        p[4 + k] = o->zero_data ? '0' : (uint8_t)al[rng() % (sizeof al - 1)];
      t->nbytes += 4 + n;
    }
    return 0;
  }
  t->nbytes = t->nelems * (size_t)es;
  t->data = calloc(t->nbytes ? t->nbytes : 1, 1);
  if (!t->data) return UV_ENOMEM;
  if (o->zero_data) return 0;
  for (i = 0; i < t->nelems; i++) {
    uint8_t *p = t->data + i * (size_t)es;
    const char *dt = t->datatype;
    if (!strcmp(dt, "FP32")) {
      float f = (float)(rng() % 1000000) / 1000000.0f;
      memcpy(p, &f, 4);
    } else if (!strcmp(dt, "FP64")) {
      double d = (double)(rng() % 1000000) / 1000000.0;
      memcpy(p, &d, 8);
    } else if (!strcmp(dt, "FP16") || !strcmp(dt, "BF16")) {
      /* 1.0 .. 1.99 in both encodings' high bits: always finite. */
      uint16_t h = !strcmp(dt, "FP16") ? (uint16_t)(0x3c00 | (rng() & 0x3ff))
                                       : (uint16_t)(0x3f80 | (rng() & 0x7f));
      memcpy(p, &h, 2);
    } else if (!strcmp(dt, "BOOL")) {
      p[0] = (uint8_t)(rng() & 1);
    } else {
      /* Integers: small non-negative values, valid for every width. */
      uint64_t v = rng() % 100;
      memcpy(p, &v, (size_t)es); /* little-endian host */
    }
  }
  return 0;
}

int ifd__perf_model_load(ifd_perf_run_t *run, ifd_perf_model_t *m, char *err,
                         size_t errlen) {
  const ifd_perf_opts_t *o = run->opts;
  int rc, i;

  err[0] = 0;
  m->name = strdup(o->model);
  m->version = strdup(o->version ? o->version : "");
  if (!m->name || !m->version) return UV_ENOMEM;
  rc = run->capi ? ifd__perf_capi_model_load(run, m, err, errlen)
       : o->grpc ? grpc_load(run, m, err, errlen)
                 : http_load(run, m, err, errlen);
  if (rc < 0) return rc;
  if (m->ninputs == 0) {
    snprintf(err, errlen, "model '%s' has no inputs", m->name);
    return UV_EINVAL;
  }
  if (m->max_batch == 0 && o->batch > 1) {
    snprintf(err, errlen,
             "model '%s' does not support batching (max_batch_size"
             " 0): -b %d is not possible",
             m->name, o->batch);
    return UV_EINVAL;
  }
  if (m->max_batch > 0 && o->batch > m->max_batch) {
    snprintf(err, errlen, "-b %d exceeds the max_batch_size %d of model '%s'",
             o->batch, m->max_batch, m->name);
    return UV_EINVAL;
  }
  for (i = 0; i < m->ninputs; i++) {
    rc = resolve_shape(o, m, &m->inputs[i], err, errlen);
    if (rc == 0) rc = fill_data(o, &m->inputs[i], err, errlen);
    if (rc < 0) return rc;
  }
  return 0;
}

/* ---- the request ---- */

static json_t *json_data(const ifd_perf_tensor_t *t) {
  json_t *a = json_array();
  const uint8_t *p = t->data;
  size_t i;
  int es = dtype_size(t->datatype);

  if (!a) return NULL;
  for (i = 0; i < t->nelems; i++) {
    const char *dt = t->datatype;
    json_t *v;
    if (es == 0) {
      uint32_t n = p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
      v = json_stringn((const char *)p + 4, n);
      p += 4 + n;
    } else {
      const uint8_t *e = t->data + i * (size_t)es;
      if (!strcmp(dt, "FP32")) {
        float f;
        memcpy(&f, e, 4);
        v = json_real(f);
      } else if (!strcmp(dt, "FP64")) {
        double d;
        memcpy(&d, e, 8);
        v = json_real(d);
      } else if (!strcmp(dt, "BOOL")) {
        v = json_boolean(e[0]);
      } else {
        uint64_t x = 0;
        memcpy(&x, e, (size_t)es);
        v = json_integer((json_int_t)x);
      }
    }
    if (!v || json_array_append_new(a, v)) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

static int http_payload(ifd_perf_run_t *run, const ifd_perf_model_t *m,
                        char *err, size_t errlen) {
  const ifd_perf_opts_t *o = run->opts;
  json_t *root = json_object(), *ins = json_array(), *outs = json_array();
  char *hdr = NULL, path[512];
  size_t hlen, data_len = 0;
  /* Shared memory: every tensor is in a region, the body is JSON only. */
  int json_only = o->http_json || m->regions != NULL;
  int i, k, rc = UV_ENOMEM;

  if (!root || !ins || !outs) goto out_free;
  for (i = 0; i < m->ninputs; i++) {
    const ifd_perf_tensor_t *t = &m->inputs[i];
    json_t *in = json_object(), *shape = json_array();
    if (!in || !shape) {
      json_decref(in);
      json_decref(shape);
      goto out_free;
    }
    for (k = 0; k < t->rank; k++)
      json_array_append_new(shape, json_integer(t->shape[k]));
    json_object_set_new(in, "name", json_string(t->name));
    json_object_set_new(in, "shape", shape);
    json_object_set_new(in, "datatype", json_string(t->datatype));
    if (m->regions) {
      const ifd_perf_region_t *r = &m->regions[i];
      json_object_set_new(
          in, "parameters",
          json_pack("{sssI}", "shared_memory_region", r->name,
                    "shared_memory_byte_size", (json_int_t)r->size));
    } else if (o->http_json) {
      json_t *d;
      if (!strcmp(t->datatype, "FP16") || !strcmp(t->datatype, "BF16")) {
        snprintf(err, errlen,
                 "input '%s': %s has no JSON form; use "
                 "--http-format binary",
                 t->name, t->datatype);
        json_decref(in);
        rc = UV_EINVAL;
        goto out_free;
      }
      d = json_data(t);
      if (!d) {
        json_decref(in);
        goto out_free;
      }
      json_object_set_new(in, "data", d);
    } else {
      json_object_set_new(
          in, "parameters",
          json_pack("{sI}", "binary_data_size", (json_int_t)t->nbytes));
      data_len += t->nbytes;
    }
    json_array_append_new(ins, in);
  }
  json_object_set_new(root, "inputs", ins);
  ins = NULL;
  if (m->regions) {
    for (i = 0; i < m->noutputs; i++) {
      const ifd_perf_region_t *r = &m->regions[m->ninputs + i];
      json_array_append_new(
          outs, json_pack("{sss{sssI}}", "name", m->outputs[i].name,
                          "parameters", "shared_memory_region", r->name,
                          "shared_memory_byte_size", (json_int_t)r->size));
    }
    json_object_set_new(root, "outputs", outs);
    outs = NULL;
  } else if (!o->http_json) {
    for (i = 0; i < m->noutputs; i++)
      json_array_append_new(
          outs, json_pack("{sss{sb}}", "name", m->outputs[i].name, "parameters",
                          "binary_data", 1));
    json_object_set_new(root, "outputs", outs);
    outs = NULL;
  }
  hdr = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(7));
  if (!hdr) goto out_free;
  if (m->sequence) {
    /* Fixed-width sequence parameters first, rewritten per request by
     * seq.c: the id padded to 20 characters, the flags to 5. */
    static const char seq[] =
        "{\"parameters\":{\"sequence_id\":0                   ,"
        "\"sequence_start\":false,\"sequence_end\":false},";
    size_t n = strlen(hdr);
    char *h = malloc(sizeof seq + n);
    if (!h) goto out_free;
    memcpy(h, seq, sizeof seq - 1);
    memcpy(h + sizeof seq - 1, hdr + 1, n); /* hdr without its '{' */
    free(hdr);
    hdr = h;
  }
  hlen = strlen(hdr);
  model_path(m, path, sizeof path, "/infer");
  run->payload.len = 0;
  if (json_only) {
    rc = ifd__perf_buf_printf(&run->payload,
                              "POST %s HTTP/1.1\r\nHost: %s\r\n"
                              "Content-Type: application/json\r\n"
                              "Content-Length: %zu\r\n\r\n",
                              path, run->authority, hlen);
  } else {
    rc = ifd__perf_buf_printf(&run->payload,
                              "POST %s HTTP/1.1\r\nHost: %s\r\n"
                              "Content-Type: application/octet-stream\r\n"
                              "Inference-Header-Content-Length: %zu\r\n"
                              "Content-Length: %zu\r\n\r\n",
                              path, run->authority, hlen, hlen + data_len);
  }
  if (!rc) rc = ifd__perf_buf_append(&run->payload, hdr, hlen);
  for (i = 0; !rc && !json_only && i < m->ninputs; i++)
    rc = ifd__perf_buf_append(&run->payload, m->inputs[i].data,
                              m->inputs[i].nbytes);

out_free:
  if (rc == UV_ENOMEM) snprintf(err, errlen, "out of memory");
  free(hdr);
  json_decref(outs);
  json_decref(ins);
  json_decref(root);
  return rc;
}

/* The two parameters that place one tensor in its region. */
typedef struct shm_params {
  Inference__InferParameter v[2];
  Inference__ModelInferRequest__InferInputTensor__ParametersEntry in[2];
  Inference__ModelInferRequest__InferRequestedOutputTensor__ParametersEntry
      out[2];
  void *p[2]; /* borrowed: in[] or out[] */
} shm_params_t;

static void shm_params_init(shm_params_t *sp, const ifd_perf_region_t *r,
                            int output) {
  int k;
  for (k = 0; k < 2; k++) {
    inference__infer_parameter__init(&sp->v[k]);
    if (output) {
      inference__model_infer_request__infer_requested_output_tensor__parameters_entry__init(
          &sp->out[k]);
      sp->out[k].value = &sp->v[k];
      sp->p[k] = &sp->out[k];
    } else {
      inference__model_infer_request__infer_input_tensor__parameters_entry__init(
          &sp->in[k]);
      sp->in[k].value = &sp->v[k];
      sp->p[k] = &sp->in[k];
    }
  }
  sp->v[0].parameter_choice_case =
      INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM;
  sp->v[0].string_param = (char *)r->name;
  sp->v[1].parameter_choice_case =
      INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM;
  sp->v[1].int64_param = (int64_t)r->size;
  if (output) {
    sp->out[0].key = "shared_memory_region";
    sp->out[1].key = "shared_memory_byte_size";
  } else {
    sp->in[0].key = "shared_memory_region";
    sp->in[1].key = "shared_memory_byte_size";
  }
}

static int grpc_payload(ifd_perf_run_t *run, const ifd_perf_model_t *m,
                        char *err, size_t errlen) {
  Inference__ModelInferRequest req = INFERENCE__MODEL_INFER_REQUEST__INIT;
  Inference__ModelInferRequest__InferInputTensor *ts = NULL, **tp = NULL;
  Inference__ModelInferRequest__InferRequestedOutputTensor *os = NULL,
                                                           **op = NULL;
  shm_params_t *sp = NULL;
  ProtobufCBinaryData *raw = NULL;
  size_t n;
  uint8_t prefix[5];
  int i, nt = m->ninputs + m->noutputs, rc = UV_ENOMEM;

  ts = calloc((size_t)m->ninputs, sizeof *ts);
  tp = calloc((size_t)m->ninputs, sizeof *tp);
  raw = calloc((size_t)m->ninputs, sizeof *raw);
  if (!ts || !tp || !raw) goto out_free;
  if (m->regions) {
    /* Shared memory: every input and output names its region; no raw
     * contents. */
    os = calloc((size_t)m->noutputs + 1, sizeof *os);
    op = calloc((size_t)m->noutputs + 1, sizeof *op);
    sp = calloc((size_t)nt, sizeof *sp);
    if (!os || !op || !sp) goto out_free;
  }
  req.model_name = m->name;
  req.model_version = m->version;
  for (i = 0; i < m->ninputs; i++) {
    const ifd_perf_tensor_t *t = &m->inputs[i];
    inference__model_infer_request__infer_input_tensor__init(&ts[i]);
    ts[i].name = t->name;
    ts[i].datatype = (char *)t->datatype;
    ts[i].shape = (int64_t *)t->shape;
    ts[i].n_shape = (size_t)t->rank;
    if (sp) {
      shm_params_init(&sp[i], &m->regions[i], 0);
      ts[i].parameters = (void *)sp[i].p;
      ts[i].n_parameters = 2;
    }
    tp[i] = &ts[i];
    raw[i].data = t->data;
    raw[i].len = t->nbytes;
  }
  req.inputs = tp;
  req.n_inputs = (size_t)m->ninputs;
  if (sp) {
    for (i = 0; i < m->noutputs; i++) {
      inference__model_infer_request__infer_requested_output_tensor__init(
          &os[i]);
      os[i].name = m->outputs[i].name;
      shm_params_init(&sp[m->ninputs + i], &m->regions[m->ninputs + i], 1);
      os[i].parameters = (void *)sp[m->ninputs + i].p;
      os[i].n_parameters = 2;
      op[i] = &os[i];
    }
    req.outputs = op;
    req.n_outputs = (size_t)m->noutputs;
  } else {
    req.raw_input_contents = raw;
    req.n_raw_input_contents = (size_t)m->ninputs;
  }
  n = inference__model_infer_request__get_packed_size(&req);
  prefix[0] = 0;
  prefix[1] = (uint8_t)(n >> 24);
  prefix[2] = (uint8_t)(n >> 16);
  prefix[3] = (uint8_t)(n >> 8);
  prefix[4] = (uint8_t)n;
  run->payload.len = 0;
  rc = ifd__perf_buf_append(&run->payload, prefix, 5);
  if (!rc && run->payload.cap < 5 + n) {
    void *p = realloc(run->payload.data, 5 + n);
    if (!p)
      rc = UV_ENOMEM;
    else {
      run->payload.data = p;
      run->payload.cap = 5 + n;
    }
  }
  if (!rc) {
    inference__model_infer_request__pack(&req,
                                         (uint8_t *)run->payload.data + 5);
    run->payload.len = 5 + n;
  }

out_free:
  if (rc < 0) snprintf(err, errlen, "out of memory");
  free(sp);
  free(op);
  free(os);
  free(raw);
  free(tp);
  free(ts);
  return rc;
}

int ifd__perf_model_payload(ifd_perf_run_t *run, const ifd_perf_model_t *m,
                            char *err, size_t errlen) {
  if (run->capi) return ifd__perf_capi_payload(run, m);
  return run->opts->grpc ? grpc_payload(run, m, err, errlen)
                         : http_payload(run, m, err, errlen);
}

void ifd__perf_model_free(ifd_perf_model_t *m) {
  int i;
  for (i = 0; i < m->ninputs; i++) {
    free(m->inputs[i].name);
    free(m->inputs[i].data);
  }
  for (i = 0; i < m->noutputs; i++) free(m->outputs[i].name);
  free(m->inputs);
  free(m->outputs);
  free(m->name);
  free(m->version);
  memset(m, 0, sizeof *m);
}
