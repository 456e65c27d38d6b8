/*
 * test/models/backends/sleep/sleep.c - the "sleep" test backend.
 *
 * README: built as libtriton_sleep.so; uses the public Triton ABI only.
 * Input "IN" (INT32, one value per batch item, milliseconds) and output
 * "OUT" (INT32, same shape). Each request sleeps for the largest IN value
 * (0: no sleep call at all, a cheap request), then copies IN to OUT.
 * Errors become that request's error response.
 *
 * A model parameter "load_delay_ms" (string_value, milliseconds) makes
 * TRITONBACKEND_ModelInitialize sleep that long: a slow load, to show that
 * loading a model does not stall the others.
 *
 * A model parameter "poll_cancel" (string_value "1") makes the sleep poll
 * TRITONBACKEND_RequestIsCancelled every 5 ms, after logging "sleep: request
 * '<id>' sleeping <n> ms": a cancelled request stops sleeping at once, logs
 * "sleep: request '<id>' cancelled after <n> ms" (at error level, so it is
 * always printed) and is answered with a CANCELLED error.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#define TESTBE_NAME "sleep"
#include "../common/testbe.h"

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  return testbe_check_api();
}

static void log_error_msg(const char *msg) {
  TRITONSERVER_ErrorDelete(
      TRITONSERVER_LogMessage(TRITONSERVER_LOG_ERROR, __FILE__, __LINE__, msg));
}

/* Sleeps `ms` in 5 ms steps, polling the request's cancellation flag.
 * Returns a CANCELLED error when the request was cancelled meanwhile. */
static TRITONSERVER_Error *sleep_polling(TRITONBACKEND_Request *request,
                                         int32_t ms) {
  uint64_t start = now_ns(), end = start + (uint64_t)ms * 1000000u;
  const char *rid = "";
  char buf[256];
  TRITONSERVER_ErrorDelete(TRITONBACKEND_RequestId(request, &rid));
  snprintf(buf, sizeof(buf), "sleep: request '%s' sleeping %d ms",
           rid != NULL ? rid : "", (int)ms);
  log_error_msg(buf);
  for (;;) {
    bool cancelled = false;
    const char *id = "";
    TRITONSERVER_Error *err =
        TRITONBACKEND_RequestIsCancelled(request, &cancelled);
    if (err != NULL) return err;
    if (cancelled) {
      TRITONSERVER_ErrorDelete(TRITONBACKEND_RequestId(request, &id));
      snprintf(buf, sizeof(buf), "sleep: request '%s' cancelled after %llu ms",
               id != NULL ? id : "",
               (unsigned long long)((now_ns() - start) / 1000000u));
      log_error_msg(buf);
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_CANCELLED, buf + 7);
    }
    if (now_ns() >= end) return NULL;
    struct timespec d = {0, 5000000L};
    nanosleep(&d, NULL);
  }
}

/* Gathers IN into a malloc'd buffer, sleeps max(IN) ms, writes OUT. */
static TRITONSERVER_Error *process(TRITONBACKEND_Request *request,
                                   TRITONBACKEND_Response *response,
                                   int poll_cancel) {
  TRITONBACKEND_Input *input = NULL;
  TRITONBACKEND_Output *output = NULL;
  TRITONSERVER_DataType dtype;
  const int64_t *shape = NULL;
  uint32_t dims = 0, nbuf = 0;
  uint64_t size = 0, off = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestInput(request, "IN", &input);
  if (err == NULL)
    err = TRITONBACKEND_InputProperties(input, NULL, &dtype, &shape, &dims,
                                        &size, &nbuf);
  if (err != NULL) return err;
  if (dtype != TRITONSERVER_TYPE_INT32 || size % sizeof(int32_t) != 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "IN must be INT32");
  int32_t *vals = malloc(size > 0 ? size : 1);
  if (vals == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  for (uint32_t b = 0; err == NULL && b < nbuf; b++) {
    const void *src = NULL;
    uint64_t n = 0;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    err = TRITONBACKEND_InputBuffer(input, b, &src, &n, &mt, &mt_id);
    if (err == NULL && (n > size - off || (mt == TRITONSERVER_MEMORY_GPU && n)))
      err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                  "bad IN buffer");
    if (err == NULL && n > 0) memcpy((char *)vals + off, src, n);
    off += n;
  }
  if (err == NULL && off != size)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                "IN buffers are shorter than IN");
  if (err != NULL) goto out_free_vals;

  int32_t ms = 0;
  for (uint64_t i = 0; i < size / sizeof(int32_t); i++)
    if (vals[i] > ms) ms = vals[i];
  /* 0 ms is no sleep at all: even a zero nanosleep costs the timer slack
   * (50 us or more), and tests use 0 for cheap requests. */
  struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000L};
  if (poll_cancel) {
    err = sleep_polling(request, ms);
    if (err != NULL) goto out_free_vals;
  } else {
    while (ms > 0 && nanosleep(&d, &d) != 0)
      ;
  }

  void *dst = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  err = TRITONBACKEND_ResponseOutput(response, &output, "OUT", dtype, shape,
                                     dims);
  if (err == NULL)
    err = TRITONBACKEND_OutputBuffer(output, &dst, size, &mt, &mt_id);
  if (err == NULL && mt == TRITONSERVER_MEMORY_GPU && size > 0)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                "sleep needs a CPU output buffer");
  if (err == NULL && size > 0) memcpy(dst, vals, size);
out_free_vals:
  free(vals);
  return err;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  TRITONSERVER_Message *msg = NULL;
  const char *json = NULL, *p;
  size_t len = 0;
  long ms = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelConfig(model, 1, &msg);
  if (err != NULL) return err;
  err = TRITONSERVER_MessageSerializeToJson(msg, &json, &len);
  /* A test backend: a plain search is enough to find the one parameter. */
  if (err == NULL && (p = strstr(json, "\"load_delay_ms\"")) != NULL &&
      (p = strstr(p, "\"string_value\"")) != NULL &&
      (p = strchr(p + 14, '"')) != NULL)
    ms = strtol(p + 1, NULL, 10);
  if (err == NULL && (p = strstr(json, "\"poll_cancel\"")) != NULL &&
      (p = strstr(p, "\"string_value\"")) != NULL &&
      (p = strchr(p + 14, '"')) != NULL && p[1] == '1')
    err = TRITONBACKEND_ModelSetState(model, (void *)1);
  TRITONSERVER_MessageDelete(msg);
  if (err != NULL) return err;
  if (ms > 0 && ms < 60000) sleep_ms(ms);
  return NULL;
}

/* `arg`: the model's state, set when the model polls for cancellation. */
static TRITONSERVER_Error *process_one(TRITONBACKEND_Request *request,
                                       TRITONBACKEND_Response *response,
                                       void *arg) {
  return process(request, response, arg != NULL);
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  TRITONBACKEND_Model *model = NULL;
  void *state = NULL;
  if (TRITONBACKEND_ModelInstanceModel(instance, &model) == NULL)
    TRITONSERVER_ErrorDelete(TRITONBACKEND_ModelState(model, &state));
  testbe_execute_each(instance, requests, request_count, process_one, state);
  return NULL;
}
