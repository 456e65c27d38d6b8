/*
 * test/models/backends/attrs/attrs.c - the "attrs" test backend: backend
 * attributes and instance initialization.
 *
 * README: built as libtriton_attrs.so; uses the public Triton ABI only.
 * TRITONBACKEND_GetBackendAttribute prefers KIND_CPU instance groups of 3
 * instances, and allows parallel instance loading unless the backend config
 * says parallel-loading=false (--backend-config=attrs,parallel-loading=
 * false). Each TRITONBACKEND_ModelInstanceInitialize sleeps 300 ms and
 * records when it began and ended; with the model parameter
 * FAIL_INSTANCE_INIT (string_value "1") it fails instead with
 * "attrs: instance initialization refused" (INVALID_ARG).
 *
 * The model: input IN (INT32 [1], ignored), output WINDOWS (INT64 [n, 2]):
 * the initialization windows of its n instances (CLOCK_MONOTONIC ns, start
 * and end), in the order the instances began.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#define TESTBE_NAME "attrs"
#include "../common/testbe.h"

#define MAX_WINDOWS 64
#define INIT_SLEEP_MS 300
#define REFUSED "attrs: instance initialization refused"

typedef struct model_state {
  pthread_mutex_t mu;
  int fail_init;
  uint32_t n; /* guarded by mu */
  int64_t windows[MAX_WINDOWS][2];
} model_state_t;

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  return testbe_check_api();
}

TRITONSERVER_Error *TRITONBACKEND_GetBackendAttribute(
    TRITONBACKEND_Backend *backend, TRITONBACKEND_BackendAttribute *attr) {
  TRITONSERVER_Message *msg = NULL;
  const char *json = NULL;
  size_t len = 0;
  int parallel = 1;
  TRITONSERVER_Error *err = TRITONBACKEND_BackendConfig(backend, &msg);
  if (err == NULL) err = TRITONSERVER_MessageSerializeToJson(msg, &json, &len);
  if (err != NULL) return err;
  if (strstr(json, "\"parallel-loading\":\"false\"") != NULL) parallel = 0;
  err = TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(
      attr, parallel != 0);
  if (err == NULL)
    err = TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup(
        attr, TRITONSERVER_INSTANCEGROUPKIND_CPU, 3, NULL, 0);
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  TRITONSERVER_Message *msg = NULL;
  const char *json = NULL;
  size_t len = 0;
  model_state_t *s = calloc(1, sizeof(*s));
  TRITONSERVER_Error *err =
      s == NULL ? TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                        "attrs: out of memory")
                : TRITONBACKEND_ModelConfig(model, 1, &msg);
  if (err == NULL) err = TRITONSERVER_MessageSerializeToJson(msg, &json, &len);
  if (err == NULL) {
    pthread_mutex_init(&s->mu, NULL);
    s->fail_init = strstr(json, "\"FAIL_INSTANCE_INIT\"") != NULL;
    err = TRITONBACKEND_ModelSetState(model, s);
  }
  if (msg != NULL) TRITONSERVER_MessageDelete(msg);
  if (err != NULL) free(s);
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *s = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelState(model, &s);
  if (s != NULL) pthread_mutex_destroy(&((model_state_t *)s)->mu);
  free(s);
  return err;
}

static model_state_t *state_of(TRITONBACKEND_ModelInstance *instance) {
  TRITONBACKEND_Model *model = NULL;
  void *s = NULL;
  if (TRITONBACKEND_ModelInstanceModel(instance, &model) != NULL ||
      TRITONBACKEND_ModelState(model, &s) != NULL)
    return NULL;
  return s;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance *instance) {
  model_state_t *s = state_of(instance);
  struct timespec ts = {0, INIT_SLEEP_MS * 1000000L};
  uint64_t start = now_ns();
  if (s == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "attrs: no model state");
  if (s->fail_init)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, REFUSED);
  nanosleep(&ts, NULL);
  pthread_mutex_lock(&s->mu);
  if (s->n < MAX_WINDOWS) {
    s->windows[s->n][0] = (int64_t)start;
    s->windows[s->n][1] = (int64_t)now_ns();
    s->n++;
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* WINDOWS: every instance's initialization window, by start. */
static TRITONSERVER_Error *process(TRITONBACKEND_Request *request,
                                   TRITONBACKEND_Response *response,
                                   void *arg) {
  model_state_t *s = arg;
  TRITONBACKEND_Output *out = NULL;
  int64_t w[MAX_WINDOWS][2], shape[2] = {0, 2};
  void *dst = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  uint32_t n, i, j;
  TRITONSERVER_Error *err;
  (void)request;
  pthread_mutex_lock(&s->mu);
  n = s->n;
  memcpy(w, s->windows, sizeof(w));
  pthread_mutex_unlock(&s->mu);
  for (i = 1; i < n; i++) /* insertion sort by start */
    for (j = i; j > 0 && w[j][0] < w[j - 1][0]; j--) {
      int64_t t0 = w[j][0], t1 = w[j][1];
      w[j][0] = w[j - 1][0];
      w[j][1] = w[j - 1][1];
      w[j - 1][0] = t0;
      w[j - 1][1] = t1;
    }
  shape[0] = n;
  err = TRITONBACKEND_ResponseOutput(response, &out, "WINDOWS",
                                     TRITONSERVER_TYPE_INT64, shape, 2);
  if (err == NULL)
    err = TRITONBACKEND_OutputBuffer(out, &dst, n * 2 * sizeof(int64_t), &mt,
                                     &mt_id);
  if (err == NULL && n > 0) memcpy(dst, w, n * 2 * sizeof(int64_t));
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  model_state_t *s = state_of(instance);
  if (s == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "attrs: no model state");
  testbe_execute_each(instance, requests, request_count, process, s);
  return NULL;
}
