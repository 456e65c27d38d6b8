/*
 * backend_api/backends/python/python.c - the Python backend's entry points.
 *
 * README: built as libtriton_python.so; runs a model's model.py (Triton's
 * TritonPythonModel contract) in one triton_python_backend_stub process per
 * model instance, started at instance initialize with posix_spawn from the
 * folder of this library. The protocol (version 3): ipc.h. What each file
 * does: internal.h. Here: backend initialize (the BLS response allocator,
 * inferd's readiness extension), model initialize (auto_complete_config:
 * when the server allows it, a short-lived stub runs the model's
 * auto_complete_config and the result becomes the model's configuration
 * through TRITONBACKEND_ModelSetConfig), instance initialize and finalize,
 * and execute.
 *
 * Data: inputs are copied once into the instance's DOWN segment and read in
 * place by the stub; execute outputs are written once by the stub into UP
 * and copied once into the output buffers. RESPONSE (decoupled models, the
 * response sender) and BLS tensors travel inline in the message.
 * EXECUTION_ENV_PATH: env.c. Not supported: GPU tensors (DLPack is CPU
 * only).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "inferd/inferd_backend.h"
#include "internal.h"

/* inferd's extension: looked up at run time, so the backend also loads
 * where it is absent (Triton). */
static INFERD_ModelInstanceSetReadyFn_t set_ready_fn;
static pthread_once_t set_ready_once = PTHREAD_ONCE_INIT;

static void set_ready_lookup(void) {
  void *f = dlsym(RTLD_DEFAULT, "INFERD_ModelInstanceSetReady");
  memcpy(&set_ready_fn, &f, sizeof(f));
}

void ifd__py_set_ready(ifd__py_instance_t *in, bool ready) {
  pthread_once(&set_ready_once, set_ready_lookup);
  if (set_ready_fn != NULL)
    ifd__py_log_error(set_ready_fn(in->instance, ready),
                      "cannot set the instance's readiness");
}

/* The folder of this library and the stub's path in it. */
static TRITONSERVER_Error *stub_paths(char *dir, char *stub) {
  Dl_info dli;
  if (dladdr((void *)stub_paths, &dli) == 0 || dli.dli_fname == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "cannot find the backend path");
  snprintf(dir, PATH_MAX, "%s", dli.dli_fname);
  char *slash = strrchr(dir, '/');
  if (slash != NULL)
    *slash = '\0';
  else
    snprintf(dir, PATH_MAX, ".");
  if (strlen(dir) + 32 > PATH_MAX)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "backend path too long");
  snprintf(stub, PATH_MAX, "%s/triton_python_backend_stub", dir);
  return NULL;
}

/* ---- the backend ------------------------------------------------------------
 */

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  pthread_once(&set_ready_once, set_ready_lookup);
  return ifd__py_bls_init();
}

TRITONSERVER_Error *TRITONBACKEND_Finalize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  ifd__py_env_cleanup();
  ifd__py_bls_fini();
  return NULL;
}

/* ---- auto_complete_config ---------------------------------------------------
 */

/* Serves a short-lived stub until the answer to call `id`: LOG lines are
 * logged, other requests refused. 0 with *h, *payload; -EPIPE at EOF. */
static int ac_wait(ifd__py_instance_t *fake, int sock, uint32_t id,
                   ifd_py_hdr_t *h, char **payload) {
  static const char no_metric[] =
      "{\"error\":\"metrics are not available in auto_complete_config\","
      "\"code\":5}";
  for (;;) {
    int rc = ifd__py_recv(sock, h, payload);
    if (rc != 0) return rc;
    if (h->id == id &&
        (h->type == IFD_PY_MSG_AUTO_COMPLETE_OK ||
         h->type == IFD_PY_MSG_ERROR || h->type == IFD_PY_MSG_FINALIZE_OK))
      return 0;
    if (h->type == IFD_PY_MSG_LOG) {
      ifd__py_on_log(fake, *payload, h->length);
    } else if (h->type == IFD_PY_MSG_CANCEL_QUERY) {
      uint32_t zero = 0;
      ifd__py_send(sock, IFD_PY_MSG_CANCEL_ANSWER, h->id, &zero, 4);
    } else if (h->type == IFD_PY_MSG_METRIC) {
      ifd__py_send(sock, IFD_PY_MSG_METRIC_ANSWER, h->id, no_metric,
                   sizeof(no_metric) - 1);
    } else if (h->type == IFD_PY_MSG_MODEL_CONTROL) {
      static const char no_control[] =
          "{\"error\":\"model control is not available in "
          "auto_complete_config\",\"code\":5}";
      ifd__py_send(sock, IFD_PY_MSG_MODEL_CONTROL_ANSWER, h->id, no_control,
                   sizeof(no_control) - 1);
    } else if (h->type == IFD_PY_MSG_BLS_INFER) {
      static const char m[] = "BLS is not available in auto_complete_config";
      ifd__py_buf_t b = {0};
      ifd__py_buf_u32(&b, IFD_PY_FLAG_FINAL);
      ifd__py_buf_u32(&b, 1);
      ifd__py_buf_u32(&b, 1);
      ifd__py_buf_u32(&b, TRITONSERVER_ERROR_UNAVAILABLE);
      ifd__py_buf_str(&b, m, sizeof(m) - 1);
      if (!b.oom)
        ifd__py_send(sock, IFD_PY_MSG_BLS_RESPONSE, h->id, b.p, b.len);
      free(b.p);
    }
    free(*payload);
    *payload = NULL;
  }
}

/* Runs the model's auto_complete_config in a short-lived stub and sets the
 * model's configuration to what it returns. */
static TRITONSERVER_Error *auto_complete(TRITONBACKEND_Model *model,
                                         const char *env_dir) {
  const char *name = NULL, *repo = NULL, *json = NULL;
  TRITONBACKEND_ArtifactType at;
  uint64_t version = 0;
  size_t json_len = 0;
  TRITONSERVER_Message *config = NULL, *updated = NULL;
  ifd__py_instance_t fake;
  ifd__py_buf_t b = {0};
  char dir[PATH_MAX], stub[PATH_MAX], msg[256], how[64];
  int down = -1, up = -1, sock = -1;
  pid_t pid = 0;
  char *payload = NULL;
  ifd_py_hdr_t h;

  memset(&fake, 0, sizeof(fake));
  TRITONSERVER_Error *err = TRITONBACKEND_ModelName(model, &name);
  if (err == NULL) err = TRITONBACKEND_ModelVersion(model, &version);
  if (err == NULL) err = TRITONBACKEND_ModelRepository(model, &at, &repo);
  if (err == NULL) err = TRITONBACKEND_ModelConfig(model, 1, &config);
  if (err == NULL)
    err = TRITONSERVER_MessageSerializeToJson(config, &json, &json_len);
  if (err == NULL) err = stub_paths(dir, stub);
  if (err != NULL) goto out;
  fake.model_name = (char *)name;
  ifd__py_buf_add(&b, "{\"model_config\":", 16);
  ifd__py_buf_jstr(&b, json, json_len);
  ifd__py_buf_add(&b, ",\"model_repository\":", 20);
  ifd__py_buf_jcstr(&b, repo);
  ifd__py_buf_fmt(&b, ",\"model_version\":\"%llu\"",
                  (unsigned long long)version);
  ifd__py_buf_add(&b, ",\"model_name\":", 14);
  ifd__py_buf_jcstr(&b, name);
  ifd__py_buf_add(&b, "}", 1);
  if (b.oom) {
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    goto out;
  }
  down = memfd_create("inferd-python-down", MFD_CLOEXEC);
  up = memfd_create("inferd-python-up", MFD_CLOEXEC);
  if (down < 0 || up < 0) {
    err = ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL, "memfd_create: %s",
                         strerror(errno));
    goto out;
  }
  if (ifd__py_spawn(stub, dir, name, "auto_complete_config", env_dir, down, up,
                    &pid, &sock, msg, sizeof(msg)) != 0) {
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, msg);
    goto out;
  }
  if (ifd__py_send(sock, IFD_PY_MSG_AUTO_COMPLETE, 1, b.p, b.len) != 0 ||
      ac_wait(&fake, sock, 1, &h, &payload) != 0) {
    ifd__py_reap(pid, 1000, how, sizeof(how));
    pid = 0;
    err = ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL,
                         "stub process for model '%s' exited unexpectedly "
                         "during auto_complete_config (%s)",
                         name, how);
    goto out;
  }
  if (h.type == IFD_PY_MSG_ERROR) {
    fake.inst_name = "auto_complete_config";
    err = ifd__py_error_payload(&fake, payload, h.length);
  } else if (h.type != IFD_PY_MSG_AUTO_COMPLETE_OK) {
    err = ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL,
                         "unexpected stub message %u answering "
                         "AUTO_COMPLETE",
                         (unsigned)h.type);
  } else if (h.length != json_len || memcmp(payload, json, json_len) != 0) {
    err =
        TRITONSERVER_MessageNewFromSerializedJson(&updated, payload, h.length);
    if (err == NULL) err = TRITONBACKEND_ModelSetConfig(model, 1, updated);
  }
  free(payload);
  payload = NULL;
  /* The stub ends (the model's finalize is not called: no instance). */
  struct timeval tv = {30, 0};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  bool clean = ifd__py_send(sock, IFD_PY_MSG_FINALIZE, 2, NULL, 0) == 0 &&
               ac_wait(&fake, sock, 2, &h, &payload) == 0;
  free(payload);
  ifd__py_reap(pid, clean ? 30000 : 0, how, sizeof(how));
  pid = 0;
out:
  if (pid > 0) ifd__py_reap(pid, 0, how, sizeof(how));
  if (sock >= 0) close(sock);
  if (down >= 0) close(down);
  if (up >= 0) close(up);
  free(b.p);
  if (updated != NULL)
    TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(updated));
  if (config != NULL)
    TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(config));
  return err;
}

/* ---- the model --------------------------------------------------------------
 */

/* The model's execution environment (EXECUTION_ENV_PATH), from the
 * configuration as the repository gives it (before auto-completion, which
 * runs in that environment too). */
static TRITONSERVER_Error *model_env(TRITONBACKEND_Model *model,
                                     char **env_dir) {
  TRITONSERVER_Message *config = NULL;
  const char *json = NULL, *repo = NULL;
  size_t len = 0;
  TRITONBACKEND_ArtifactType at;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelConfig(model, 1, &config);
  if (err == NULL)
    err = TRITONSERVER_MessageSerializeToJson(config, &json, &len);
  if (err == NULL) err = TRITONBACKEND_ModelRepository(model, &at, &repo);
  if (err == NULL) err = ifd__py_env_prepare(json, len, repo, env_dir);
  if (config != NULL)
    TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(config));
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  bool ac = false;
  ifd__py_model_t *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  TRITONSERVER_Error *err = TRITONBACKEND_ModelServer(model, &st->server);
  if (err == NULL) err = model_env(model, &st->env_dir);
  if (err == NULL) err = TRITONBACKEND_ModelAutoCompleteConfig(model, &ac);
  if (err == NULL && ac) err = auto_complete(model, st->env_dir);
  if (err == NULL) err = TRITONBACKEND_ModelSetState(model, st);
  if (err != NULL) {
    free(st->env_dir);
    free(st);
  }
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *v = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelState(model, &v);
  if (err != NULL) return err;
  ifd__py_model_t *st = v;
  if (st != NULL) free(st->env_dir);
  free(st);
  return NULL;
}

/* ---- the instance -----------------------------------------------------------
 */

static bool config_decoupled(const char *json, size_t len) {
  json_t *j = json_loadb(json, len, 0, NULL);
  json_t *p = json_object_get(j, "model_transaction_policy");
  bool d = json_is_true(json_object_get(p, "decoupled"));
  json_decref(j);
  return d;
}

static bool config_batching(const char *json, size_t len) {
  json_t *j = json_loadb(json, len, 0, NULL);
  bool b = json_integer_value(json_object_get(j, "max_batch_size")) > 0;
  json_decref(j);
  return b;
}

static void instance_free(ifd__py_instance_t *in) {
  free(in->model_name);
  free(in->inst_name);
  free(in->args_json);
  free(in);
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance *instance) {
  TRITONBACKEND_Model *model = NULL;
  const char *model_name = NULL, *inst_name = NULL, *repo = NULL;
  TRITONBACKEND_ArtifactType at;
  uint64_t version = 0;
  int32_t device_id = 0;
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  TRITONSERVER_Message *config = NULL;
  const char *json = NULL;
  size_t json_len = 0;
  void *mst = NULL;
  ifd__py_instance_t *in = NULL;
  ifd__py_buf_t b = {0};
  bool started = false;

  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceModel(instance, &model);
  if (err == NULL) err = TRITONBACKEND_ModelState(model, &mst);
  if (err == NULL) err = TRITONBACKEND_ModelName(model, &model_name);
  if (err == NULL) err = TRITONBACKEND_ModelVersion(model, &version);
  if (err == NULL) err = TRITONBACKEND_ModelRepository(model, &at, &repo);
  if (err == NULL) err = TRITONBACKEND_ModelInstanceName(instance, &inst_name);
  if (err == NULL) err = TRITONBACKEND_ModelInstanceKind(instance, &kind);
  if (err == NULL)
    err = TRITONBACKEND_ModelInstanceDeviceId(instance, &device_id);
  if (err == NULL) err = TRITONBACKEND_ModelConfig(model, 1, &config);
  if (err == NULL)
    err = TRITONSERVER_MessageSerializeToJson(config, &json, &json_len);
  if (err != NULL) goto out;

  in = calloc(1, sizeof(*in));
  if (in == NULL) goto out_nomem;
  in->instance = instance;
  in->model = mst;
  in->sock = in->down_fd = in->up_fd = -1;
  in->model_name = strdup(model_name);
  in->inst_name = strdup(inst_name);
  if (in->model_name == NULL || in->inst_name == NULL) goto out_nomem;
  err = stub_paths(in->backend_dir, in->stub_path);
  if (err != NULL) goto out;
  in->decoupled = config_decoupled(json, json_len);
  in->batching = config_batching(json, json_len);

  ifd__py_buf_add(&b, "{\"model_config\":", 16);
  ifd__py_buf_jstr(&b, json, json_len);
  ifd__py_buf_add(&b, ",\"model_instance_kind\":", 23);
  ifd__py_buf_jcstr(&b, TRITONSERVER_InstanceGroupKindString(kind));
  ifd__py_buf_add(&b, ",\"model_instance_name\":", 23);
  ifd__py_buf_jcstr(&b, inst_name);
  ifd__py_buf_fmt(&b, ",\"model_instance_device_id\":\"%d\"", (int)device_id);
  ifd__py_buf_add(&b, ",\"model_repository\":", 20);
  ifd__py_buf_jcstr(&b, repo);
  ifd__py_buf_fmt(&b, ",\"model_version\":\"%llu\"",
                  (unsigned long long)version);
  ifd__py_buf_add(&b, ",\"model_name\":", 14);
  ifd__py_buf_jcstr(&b, model_name);
  ifd__py_buf_add(&b, "}", 1);
  if (b.oom) goto out_nomem;
  in->args_json = b.p;
  b.p = NULL;

  started = true;
  err = ifd__py_instance_start(in);
  if (err == NULL) err = TRITONBACKEND_ModelInstanceSetState(instance, in);
  if (err == NULL) in = NULL;
  goto out;
out_nomem:
  err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
out:
  if (in != NULL) {
    if (started) ifd__py_instance_stop(in);
    instance_free(in);
  }
  free(b.p);
  if (config != NULL)
    TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(config));
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(
    TRITONBACKEND_ModelInstance *instance) {
  void *v = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceState(instance, &v);
  if (err != NULL) return err;
  ifd__py_instance_t *in = v;
  if (in == NULL) return NULL;
  ifd__py_instance_stop(in);
  instance_free(in);
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  void *v = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceState(instance, &v);
  if (err != NULL) return err;
  ifd__py_execute(v, requests, request_count);
  return NULL;
}
