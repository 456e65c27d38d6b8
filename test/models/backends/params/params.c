/*
 * test/models/backends/params/params.c - the "params" test backend: echoes
 * a request's string parameters as parameters of its response.
 *
 * README: built as libtriton_params.so; uses the public Triton ABI only.
 * Each request gets one FINAL response without outputs, carrying every
 * STRING parameter of the request (same key, same value) and "n_params"
 * (INT: how many parameters the request had, of any type). The forwarded
 * headers of --http-header-forward-pattern / --grpc-header-forward-pattern
 * are seen through it (test/e2e/test_flags.py).
 *
 * Load failures on purpose (--model-load-retry-count): while the model's
 * folder holds a file `fail_loads` with a number N > 0, ModelInitialize
 * writes N - 1 into it and fails.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#define TESTBE_NAME "params"
#include "../common/testbe.h"

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  return testbe_check_api();
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  TRITONBACKEND_ArtifactType type;
  const char *dir = NULL;
  char path[4096];
  FILE *f;
  int n = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelRepository(model, &type, &dir);
  if (err != NULL) return err;
  if ((size_t)snprintf(path, sizeof(path), "%s/fail_loads", dir) >=
      sizeof(path))
    return NULL;
  f = fopen(path, "r");
  if (f == NULL) return NULL;
  if (fscanf(f, "%d", &n) != 1) n = 0;
  fclose(f);
  if (n <= 0) return NULL;
  f = fopen(path, "w");
  if (f != NULL) {
    fprintf(f, "%d\n", n - 1);
    fclose(f);
  }
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE,
                               "params: failing this load on purpose");
}

static TRITONSERVER_Error *echo(TRITONBACKEND_Request *request,
                                TRITONBACKEND_Response *response, void *arg) {
  uint32_t n = 0, i;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestParameterCount(request, &n);
  (void)arg;
  for (i = 0; err == NULL && i < n; i++) {
    const char *key = NULL;
    TRITONSERVER_ParameterType type;
    const void *v = NULL;
    err = TRITONBACKEND_RequestParameter(request, i, &key, &type, &v);
    if (err == NULL && type == TRITONSERVER_PARAMETER_STRING)
      err = TRITONBACKEND_ResponseSetStringParameter(response, key,
                                                     (const char *)v);
  }
  if (err == NULL)
    err = TRITONBACKEND_ResponseSetIntParameter(response, "n_params", n);
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  testbe_execute_each(instance, requests, request_count, echo, NULL);
  return NULL;
}
