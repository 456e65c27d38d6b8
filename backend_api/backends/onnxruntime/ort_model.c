/*
 * backend_api/backends/onnxruntime/ort_model.c - a model and its instances
 * for the ONNX Runtime backend.
 *
 * Per model (TRITONBACKEND_ModelInitialize, on a pool thread): the
 * configuration is read as JSON (jansson), auto-completed from the model
 * when the server allows it (Triton's rules: inputs and outputs from the
 * model when the configuration has none, max_batch_size from
 * default-max-batch-size when every input and output has a dynamic first
 * dimension, and then a dynamic batcher), and turned into session settings.
 *
 * Per instance (TRITONBACKEND_ModelInstanceInitialize, on the instance's
 * thread): a session is created from the model file (or the instance
 * group's shared one is taken, with share_session_between_instances) and
 * the configuration is checked against what the session declares
 * (ort_check.c); the session's settings come from ort_settings.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define ERR_ARG TRITONSERVER_ERROR_INVALID_ARG
#define ERR_INTERNAL TRITONSERVER_ERROR_INTERNAL

/* ---- the model file --------------------------------------------------------
 */

/* <repository>/<version>/<default_model_filename or model.onnx>, and
 * <that>/model.onnx when it is a folder (a model with external weights). */
static TRITONSERVER_Error *model_path(ort_model_t *m) {
  TRITONBACKEND_ArtifactType type;
  const char *repo = NULL;
  const char *file = ifd_ort_member_str(m->config, "default_model_filename");
  uint64_t version = 0;
  struct stat st;
  char *p = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelRepository(m->tm, &type, &repo);
  if (e == NULL) e = TRITONBACKEND_ModelVersion(m->tm, &version);
  if (e != NULL) return e;
  if (type != TRITONBACKEND_ARTIFACT_FILESYSTEM)
    return ifd_be_errf(TRITONSERVER_ERROR_UNSUPPORTED,
                       "unsupported artifact type for model '%s'", m->name);
  if (file == NULL || file[0] == '\0') file = "model.onnx";
  if (asprintf(&p, "%s/%llu/%s", repo, (unsigned long long)version, file) < 0)
    return ifd_be_errf(ERR_INTERNAL, "out of memory");
  if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
    char *q = NULL;
    if (asprintf(&q, "%s/model.onnx", p) < 0) q = NULL;
    free(p);
    if (q == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
    p = q;
  }
  free(m->path);
  m->path = p;
  if (access(p, F_OK) != 0)
    return ifd_be_errf(TRITONSERVER_ERROR_UNAVAILABLE,
                       "unable to find '%s' for model instance '%s'", p,
                       m->name);
  return NULL;
}

/* ---- auto-complete
 * ----------------------------------------------------------- */

static json_t *dims_json(const int64_t *d, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a != NULL && i < n; i++)
    json_array_append_new(a, json_integer(d[i]));
  return a;
}

/* Triton's AutoCompleteIO: the model's tensors in the model's order; the
 * batch dimension left out when batching; a tensor with no dimension left
 * gets dims [1] (and an empty reshape when batching). */
static TRITONSERVER_Error *complete_io(ort_model_t *m, const char *key,
                                       const ort_io_list_t *ios) {
  json_t *arr = json_array();
  if (arr == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
  for (size_t i = 0; i < ios->n_graph; i++) {
    const ort_io_t *io = &ios->v[i];
    size_t skip = m->max_batch_size > 0 ? 1 : 0;
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(io->name));
    json_object_set_new(o, "data_type",
                        json_string(ifd_ort_config_name(io->otype)));
    if (io->n_dims > skip) {
      json_object_set_new(o, "dims",
                          dims_json(io->dims + skip, io->n_dims - skip));
    } else {
      int64_t one = 1;
      json_object_set_new(o, "dims", dims_json(&one, 1));
      if (m->max_batch_size > 0) {
        json_t *r = json_object();
        json_object_set_new(r, "shape", json_array());
        json_object_set_new(o, "reshape", r);
      }
    }
    json_array_append_new(arr, o);
  }
  json_object_set_new(m->config, key, arr);
  return NULL;
}

static int all_batchable(const ort_io_list_t *l) {
  for (size_t i = 0; i < l->n_graph; i++)
    if (l->v[i].n_dims == 0 || l->v[i].dims[0] != -1) return 0;
  return 1;
}

/* Triton's AutoCompleteMaxBatch. */
static TRITONSERVER_Error *complete_max_batch(ort_model_t *m,
                                              const ort_io_list_t *in,
                                              const ort_io_list_t *out) {
  if (all_batchable(in) && all_batchable(out)) {
    if (m->max_batch_size == 0) {
      int mbs = m->backend->default_max_batch_size;
      m->max_batch_size = mbs > 0 ? mbs : 0;
      json_object_set_new(m->config, "max_batch_size",
                          json_integer(m->max_batch_size));
      ifd_ort_log(TRITONSERVER_LOG_WARN,
                  "autofilled max_batch_size to %d for model '%s' since "
                  "batching is supporrted but no max_batch_size is specified "
                  "in model configuration. Must specify max_batch_size to "
                  "utilize autofill with a larger max batch size",
                  m->max_batch_size, m->name);
    }
    if (m->max_batch_size > 1 &&
        json_object_get(m->config, "sequence_batching") == NULL &&
        json_object_get(m->config, "dynamic_batching") == NULL)
      json_object_set_new(m->config, "dynamic_batching", json_object());
  } else if (m->max_batch_size != 0) {
    return ifd_be_errf(ERR_ARG,
                       "autofill failed for model '%s': model does not "
                       "support batching while non-zero max_batch_size is "
                       "specified",
                       m->name);
  }
  return NULL;
}

static TRITONSERVER_Error *auto_complete(ort_model_t *m) {
  size_t n_in = ifd_ort_array_size(m->config, "input") +
                ifd_ort_array_size(m->config, "batch_input");
  size_t n_out = ifd_ort_array_size(m->config, "output");
  ort_io_list_t in = {0}, out = {0};
  OrtSession *s = NULL;
  OrtAllocator *alloc = NULL;
  TRITONSERVER_Error *e;

  if (n_in > 0 && n_out > 0) {
    ifd_ort_log(TRITONSERVER_LOG_INFO,
                "skipping model configuration auto-complete for '%s': inputs "
                "and outputs already specified",
                m->name);
    return NULL;
  }
  e = ifd_ort_session_create(m, TRITONSERVER_INSTANCEGROUPKIND_CPU, 0, &s,
                             NULL);
  if (e == NULL)
    e = ifd_ort_err(ifd_ort->GetAllocatorWithDefaultOptions(&alloc));
  if (e == NULL) e = ifd_ort_read_ios(s, alloc, 0, &in);
  if (e == NULL) e = ifd_ort_read_ios(s, alloc, 1, &out);
  if (e == NULL) e = complete_max_batch(m, &in, &out);
  if (e == NULL && n_in == 0) e = complete_io(m, "input", &in);
  if (e == NULL && n_out == 0) e = complete_io(m, "output", &out);
  if (e == NULL) {
    char *text = json_dumps(m->config, JSON_COMPACT);
    TRITONSERVER_Message *msg = NULL;
    if (text == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
    e = TRITONSERVER_MessageNewFromSerializedJson(&msg, text, strlen(text));
    if (e == NULL) e = TRITONBACKEND_ModelSetConfig(m->tm, 1, msg);
    if (msg != NULL) TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(msg));
    if (e == NULL)
      ifd_ort_log(TRITONSERVER_LOG_VERBOSE, "post auto-complete:\n%s", text);
    free(text);
  }
  ifd_ort_io_free(&in);
  ifd_ort_io_free(&out);
  if (s != NULL) ifd_ort->ReleaseSession(s);
  return e;
}

/* ---- the model
 * ----------------------------------------------------------------- */

static TRITONSERVER_Error *read_config(ort_model_t *m) {
  TRITONSERVER_Message *msg = NULL;
  const char *buf = NULL;
  size_t len = 0;
  json_error_t jerr;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelConfig(m->tm, 1, &msg);
  if (e == NULL) e = TRITONSERVER_MessageSerializeToJson(msg, &buf, &len);
  if (e == NULL) {
    json_decref(m->config);
    m->config = json_loadb(buf, len, 0, &jerr);
    if (m->config == NULL)
      e = ifd_be_errf(ERR_INTERNAL, "model configuration of '%s': %s", m->name,
                      jerr.text);
  }
  if (msg != NULL) TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(msg));
  if (e == NULL)
    m->max_batch_size = (int)ifd_ort_member_int(m->config, "max_batch_size", 0);
  return e;
}

ort_out_t *ifd_ort_out_find(ort_model_t *m, const char *name) {
  for (size_t i = 0; i < m->n_outs; i++)
    if (strcmp(m->outs[i].name, name) == 0) return &m->outs[i];
  return NULL;
}

/* Adds (or marks) the output `name`. */
static TRITONSERVER_Error *out_add(ort_model_t *m, const json_t *io,
                                   int state) {
  const char *name = ifd_ort_member_str(io, state ? "output_name" : "name");
  ort_out_t *o, *grown;
  TRITONSERVER_Error *e;
  if (name == NULL)
    return ifd_be_errf(ERR_ARG, "an output of model '%s' has no name", m->name);
  o = ifd_ort_out_find(m, name);
  if (o == NULL) {
    grown = realloc(m->outs, (m->n_outs + 1) * sizeof(*grown));
    if (grown == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
    m->outs = grown;
    o = &m->outs[m->n_outs];
    memset(o, 0, sizeof(*o));
    o->name = strdup(name);
    if (o->name == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
    m->n_outs++;
    o->dtype = ifd_ort_to_triton(
        ifd_ort_from_config(ifd_ort_member_str(io, "data_type")));
    e = ifd_ort_config_shape(io, &o->shape, &o->n_shape);
    if (e != NULL) return e;
    if (!state && json_is_object(json_object_get(io, "reshape"))) {
      /* The model makes `shape`; the client is answered in `dims`. */
      json_t *plain = json_object();
      json_object_set(plain, "name", json_object_get(io, "name"));
      json_object_set(plain, "dims", json_object_get(io, "dims"));
      e = ifd_ort_config_shape(plain, &o->dims, &o->n_dims);
      json_decref(plain);
      if (e != NULL) return e;
      o->reshaped = 1;
    }
    o->fixed_shape = 1;
    for (size_t i = 0; i < o->n_shape; i++)
      if (o->shape[i] < 0) o->fixed_shape = 0;
  }
  if (state)
    o->is_state = 1;
  else
    o->is_output = 1;
  return NULL;
}

static TRITONSERVER_Error *outs_read(ort_model_t *m) {
  const json_t *outs = json_object_get(m->config, "output");
  const json_t *states =
      json_object_get(json_object_get(m->config, "sequence_batching"), "state");
  TRITONSERVER_Error *e = NULL;
  size_t i;
  for (i = 0; e == NULL && i < ifd_ort_array_size(m->config, "output"); i++)
    e = out_add(m, json_array_get(outs, i), 0);
  for (i = 0; e == NULL && json_is_array(states) && i < json_array_size(states);
       i++)
    e = out_add(m, json_array_get(states, i), 1);
  return e;
}

/* batch_input and batch_output (Triton's ragged batching). */
static TRITONSERVER_Error *batch_io_read(ort_model_t *m) {
  const json_t *bos = json_object_get(m->config, "batch_output");
  TRITONSERVER_Error *e = ifd_batch_inputs_read(
      m->config, m->name, &m->batch_inputs, &m->n_batch_inputs);
  if (e != NULL) return e;
  for (size_t i = 0; i < ifd_ort_array_size(m->config, "batch_output"); i++) {
    const json_t *bo = json_array_get(bos, i);
    const char *kind = ifd_ort_member_str(bo, "kind");
    const char *target = ifd_ort_first_str(bo, "target_name");
    const char *source = ifd_ort_first_str(bo, "source_input");
    ort_out_t *o;
    if (kind == NULL || strcmp(kind, "BATCH_SCATTER_WITH_INPUT_SHAPE") != 0)
      return ifd_be_errf(ERR_ARG, "unexpected batch output kind '%s'",
                         kind != NULL ? kind : "");
    o = target != NULL ? ifd_ort_out_find(m, target) : NULL;
    if (o == NULL || source == NULL)
      return ifd_be_errf(ERR_ARG,
                         "batch output %zu of model '%s' must name one of "
                         "its outputs and a source_input",
                         i, m->name);
    free(o->scatter_source);
    o->scatter_source = strdup(source);
    if (o->scatter_source == NULL)
      return ifd_be_errf(ERR_INTERNAL, "out of memory");
  }
  return NULL;
}

/* The names of the inputs with allow_ragged_batch, and the inputs with a
 * reshape (read per execute). Triton's core hands a backend the reshaped
 * shape of an input; inferd's hands it the request's, so the backend
 * reshapes. */
static TRITONSERVER_Error *ragged_read(ort_model_t *m) {
  const json_t *ios = json_object_get(m->config, "input");
  size_t n = ifd_ort_array_size(m->config, "input");
  for (size_t i = 0; i < n; i++) {
    const json_t *io = json_array_get(ios, i);
    const char *name = ifd_ort_member_str(io, "name");
    char **grown;
    if (name != NULL && json_is_object(json_object_get(io, "reshape")) &&
        !ifd_ort_member_bool(io, "allow_ragged_batch")) {
      ort_io_t *r = realloc(m->reshape, (m->n_reshape + 1) * sizeof(*r));
      TRITONSERVER_Error *e;
      if (r == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
      m->reshape = r;
      r = &m->reshape[m->n_reshape];
      memset(r, 0, sizeof(*r));
      if ((r->name = strdup(name)) == NULL)
        return ifd_be_errf(ERR_INTERNAL, "out of memory");
      m->n_reshape++;
      e = ifd_ort_config_shape(io, &r->dims, &r->n_dims);
      if (e != NULL) return e;
    }
    if (name == NULL || !ifd_ort_member_bool(io, "allow_ragged_batch"))
      continue;
    grown = realloc(m->ragged, (m->n_ragged + 1) * sizeof(char *));
    if (grown == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
    m->ragged = grown;
    if ((m->ragged[m->n_ragged] = strdup(name)) == NULL)
      return ifd_be_errf(ERR_INTERNAL, "out of memory");
    m->n_ragged++;
  }
  return NULL;
}

TRITONSERVER_Error *ifd_ort_model_new(ort_backend_t *b, TRITONBACKEND_Model *tm,
                                      ort_model_t **out) {
  ort_model_t *m = calloc(1, sizeof(*m));
  const char *name = NULL;
  bool ac = false;
  TRITONSERVER_Error *e;
  if (m == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
  m->backend = b;
  m->tm = tm;
  pthread_mutex_init(&m->mu, NULL);
  e = TRITONBACKEND_ModelName(tm, &name);
  if (e == NULL && (m->name = strdup(name)) == NULL)
    e = ifd_be_errf(ERR_INTERNAL, "out of memory");
  if (e == NULL) e = read_config(m);
  if (e == NULL) e = ifd_ort_settings_read(m->config, &m->settings);
  if (e == NULL) e = model_path(m);
  if (e == NULL) e = TRITONBACKEND_ModelAutoCompleteConfig(tm, &ac);
  if (e == NULL && ac) {
    e = auto_complete(m);
    if (e == NULL) e = read_config(m);
  }
  if (e == NULL) e = outs_read(m);
  if (e == NULL) e = batch_io_read(m);
  if (e == NULL) e = ragged_read(m);
  if (e != NULL) {
    ifd_ort_model_free(m);
    return e;
  }
  *out = m;
  return NULL;
}

void ifd_ort_model_free(ort_model_t *m) {
  if (m == NULL) return;
  for (size_t i = 0; i < m->n_outs; i++) {
    free(m->outs[i].name);
    free(m->outs[i].shape);
    free(m->outs[i].scatter_source);
    free(m->outs[i].dims);
  }
  ifd_batch_inputs_free(m->batch_inputs, m->n_batch_inputs);
  for (size_t i = 0; i < m->n_ragged; i++) free(m->ragged[i]);
  for (size_t i = 0; i < m->n_reshape; i++) {
    free(m->reshape[i].name);
    free(m->reshape[i].dims);
  }
  free(m->reshape);
  free(m->ragged);
  for (size_t i = 0; i < m->n_shared; i++) {
    free(m->shared[i].group);
    if (m->shared[i].session != NULL)
      ifd_ort->ReleaseSession(m->shared[i].session);
  }
  free(m->shared);
  free(m->outs);
  ifd_ort_settings_free(&m->settings);
  json_decref(m->config);
  pthread_mutex_destroy(&m->mu);
  free(m->path);
  free(m->name);
  free(m);
}

/* ---- instances
 * ------------------------------------------------------------------- */

/* "m_0_1" -> "m_0": Triton names instance k of group g "<g>_<k>". */
static char *group_of(const char *instance) {
  char *g = strdup(instance);
  char *us = g != NULL ? strrchr(g, '_') : NULL;
  if (us != NULL && us != g && us[1] != '\0' &&
      strspn(us + 1, "0123456789") == strlen(us + 1))
    *us = '\0';
  return g;
}

/* The group's shared session, created by the first of its instances. */
static TRITONSERVER_Error *shared_session(ort_model_t *m, ort_instance_t *in,
                                          TRITONSERVER_InstanceGroupKind kind,
                                          int32_t device, uint64_t *added) {
  TRITONSERVER_Error *e = NULL;
  size_t i;
  in->group = group_of(in->name);
  if (in->group == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
  pthread_mutex_lock(&m->mu);
  for (i = 0; i < m->n_shared; i++)
    if (strcmp(m->shared[i].group, in->group) == 0) break;
  if (i == m->n_shared) {
    ort_shared_t *grown =
        realloc(m->shared, (m->n_shared + 1) * sizeof(*grown));
    OrtSession *s = NULL;
    if (grown == NULL) {
      e = ifd_be_errf(ERR_INTERNAL, "out of memory");
      goto out_unlock;
    }
    m->shared = grown;
    e = ifd_ort_session_create(m, kind, device, &s, added);
    if (e != NULL) goto out_unlock;
    grown[i].group = strdup(in->group);
    grown[i].session = s;
    grown[i].refs = 0;
    m->n_shared++;
    ifd_ort_log(TRITONSERVER_LOG_INFO, "Mapped session for instance group: %s",
                in->group);
  } else {
    ifd_ort_log(TRITONSERVER_LOG_INFO, "Reusing session for instance: %s",
                in->name);
  }
  m->shared[i].refs++;
  in->session = m->shared[i].session;
out_unlock:
  pthread_mutex_unlock(&m->mu);
  return e;
}

static void shared_release(ort_model_t *m, ort_instance_t *in) {
  pthread_mutex_lock(&m->mu);
  for (size_t i = 0; i < m->n_shared; i++)
    if (strcmp(m->shared[i].group, in->group) == 0 &&
        --m->shared[i].refs == 0) {
      ifd_ort->ReleaseSession(m->shared[i].session);
      free(m->shared[i].group);
      m->shared[i] = m->shared[--m->n_shared];
      break;
    }
  pthread_mutex_unlock(&m->mu);
}

TRITONSERVER_Error *ifd_ort_instance_new(ort_model_t *m,
                                         TRITONBACKEND_ModelInstance *ti,
                                         ort_instance_t **out) {
  ort_instance_t *in = calloc(1, sizeof(*in));
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  int32_t device = 0;
  const char *name = NULL;
  uint64_t added = 0;
  TRITONSERVER_Error *e;
  if (in == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
  in->model = m;
  e = TRITONBACKEND_ModelInstanceName(ti, &name);
  if (e == NULL) e = TRITONBACKEND_ModelInstanceKind(ti, &kind);
  if (e == NULL) e = TRITONBACKEND_ModelInstanceDeviceId(ti, &device);
  if (e == NULL && (in->name = strdup(name)) == NULL)
    e = ifd_be_errf(ERR_INTERNAL, "out of memory");
  if (e == NULL) {
    if (m->settings.share_session)
      e = shared_session(m, in, kind, device, &added);
    else
      e = ifd_ort_session_create(m, kind, device, &in->session, &added);
  }
  if (e == NULL)
    e = ifd_ort_err(ifd_ort->GetAllocatorWithDefaultOptions(&in->alloc));
  if (e == NULL)
    e = ifd_ort_err(ifd_ort->CreateCpuMemoryInfo(
        OrtArenaAllocator, OrtMemTypeDefault, &in->cpu_info));
  if (e == NULL)
    e = ifd_ort_err(ifd_ort->CreateIoBinding(in->session, &in->binding));
  if (e == NULL) e = ifd_ort_err(ifd_ort->CreateRunOptions(&in->run_opts));
  if (e == NULL && m->settings.arena_shrinkage != NULL)
    e = ifd_ort_err(ifd_ort->AddRunConfigEntry(
        in->run_opts, "memory.enable_memory_arena_shrinkage",
        m->settings.arena_shrinkage));
  if (e == NULL) e = ifd_ort_read_ios(in->session, in->alloc, 0, &in->inputs);
  if (e == NULL) e = ifd_ort_read_ios(in->session, in->alloc, 1, &in->outputs);
  if (e == NULL) e = ifd_ort_check_config(in);
  if (e == NULL && added > 0) {
    /* What creating the session added to the server's resident memory. */
    TRITONSERVER_BufferAttributes *ba = NULL;
    e = TRITONSERVER_BufferAttributesNew(&ba);
    if (e == NULL)
      e = TRITONSERVER_BufferAttributesSetMemoryType(ba,
                                                     TRITONSERVER_MEMORY_CPU);
    if (e == NULL) e = TRITONSERVER_BufferAttributesSetMemoryTypeId(ba, 0);
    if (e == NULL) e = TRITONSERVER_BufferAttributesSetByteSize(ba, added);
    if (e == NULL) e = TRITONBACKEND_ModelInstanceReportMemoryUsage(ti, &ba, 1);
    if (ba != NULL)
      TRITONSERVER_ErrorDelete(TRITONSERVER_BufferAttributesDelete(ba));
    /* A statistic, not a reason to refuse the model. */
    if (e != NULL) {
      ifd_ort_log(TRITONSERVER_LOG_WARN,
                  "memory usage of '%s' not reported: %s", in->name,
                  TRITONSERVER_ErrorMessage(e));
      TRITONSERVER_ErrorDelete(e);
      e = NULL;
    }
  }
  if (e != NULL) {
    ifd_ort_instance_free(in);
    return e;
  }
  *out = in;
  return NULL;
}

void ifd_ort_instance_free(ort_instance_t *in) {
  if (in == NULL) return;
  if (in->binding != NULL) ifd_ort->ReleaseIoBinding(in->binding);
  if (in->run_opts != NULL) ifd_ort->ReleaseRunOptions(in->run_opts);
  if (in->cpu_info != NULL) ifd_ort->ReleaseMemoryInfo(in->cpu_info);
  if (in->session != NULL) {
    if (in->group != NULL)
      shared_release(in->model, in);
    else
      ifd_ort->ReleaseSession(in->session);
  }
  ifd_ort_io_free(&in->inputs);
  ifd_ort_io_free(&in->outputs);
  free(in->out_index);
  free(in->group);
  free(in->name);
  free(in);
}
