/*
 * test/models/backends/repeat/repeat.c - the "repeat" test backend, a
 * decoupled model after Triton's repeat example.
 *
 * README: built as libtriton_repeat.so; uses the public Triton ABI only. The
 * model must be decoupled (model_transaction_policy { decoupled: true }).
 * Inputs: IN (INT32 [-1]), DELAY (UINT32 [-1]: milliseconds slept before
 * each response; element i for response i, 0 past its end) and WAIT (UINT32
 * [1]: milliseconds slept before the request is released). Execute copies
 * the inputs, creates a response factory, reports the request's statistics
 * and hands the request to a thread of its own, then returns: every
 * response is sent after execute has returned. The thread sends one
 * response per IN element, outputs OUT (INT32 [1], the value) and IDX
 * (UINT32 [1], its index), then waits WAIT ms and releases the request, then
 * sends a flags-only FINAL (TRITONBACKEND_ResponseFactorySendFlags).
 *
 * Cancellation: before each response the thread asks
 * TRITONBACKEND_ResponseFactoryIsCancelled; once true it stops and sends a
 * CANCELLED error response with the FINAL flag instead.
 *
 * Threads: each request in flight has a thread of its own (requests with
 * delays run side by side), and a thread that has finished its request
 * waits, parked, for the instance's next one instead of exiting, so a
 * request starts on a warm thread unless every thread is busy (then a new
 * one is started). Starting a thread per request costs tens of
 * microseconds before the first response (bench/RESULTS.md, issue 11).
 *
 * Bad inputs (missing, wrong type) become one error response with the FINAL
 * flag, sent from execute. TRITONBACKEND_ModelInstanceFinalize stops and
 * joins the instance's threads, so an unload never unmaps code a thread
 * still runs.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#define TESTBE_NAME "repeat"
#include "../common/testbe.h"

typedef struct job job_t;

typedef struct instance {
  pthread_mutex_t mu;
  pthread_cond_t work; /* signalled when a job is queued or stopping set */
  job_t *head, *tail;  /* owned: jobs no thread has taken yet */
  unsigned queued;     /* jobs in head..tail */
  unsigned parked;     /* threads waiting on work */
  pthread_t *tids;     /* owned: every thread started, joined at finalize
                          (a thread still returning must not outlive the
                          library's code) */
  unsigned threads, cap_threads;
  int stopping; /* finalize: threads exit once the queue is empty */
} instance_t;

struct job {
  job_t *next;                            /* instance queue link */
  instance_t *inst;                       /* borrowed: outlives its threads */
  TRITONBACKEND_Request *request;         /* owned: released by the thread */
  TRITONBACKEND_ResponseFactory *factory; /* owned: deleted by the thread */
  int32_t *in;                            /* owned */
  uint32_t *delay;                        /* owned */
  size_t n_in, n_delay;
  uint32_t wait_ms;
};

static void sleep_ms(uint32_t ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (ms > 0 && nanosleep(&ts, &ts) != 0) {
  }
}

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  return testbe_check_api();
}

/* Copies input `name` (of type `want`, 4-byte elements) into a malloc'd
 * array: *out (owned by the caller), *count elements. */
static TRITONSERVER_Error *read_input(TRITONBACKEND_Request *request,
                                      const char *name,
                                      TRITONSERVER_DataType want, void **out,
                                      size_t *count) {
  TRITONBACKEND_Input *input = NULL;
  TRITONSERVER_DataType dtype;
  uint32_t nbuf = 0;
  uint64_t size = 0, off = 0;
  char msg[128];
  TRITONSERVER_Error *err = TRITONBACKEND_RequestInput(request, name, &input);
  if (err == NULL)
    err = TRITONBACKEND_InputProperties(input, NULL, &dtype, NULL, NULL, &size,
                                        &nbuf);
  if (err != NULL) return err;
  if (dtype != want || size % 4 != 0) {
    snprintf(msg, sizeof(msg), "repeat: input %s must be %s", name,
             TRITONSERVER_DataTypeString(want));
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, msg);
  }
  char *vals = malloc(size > 0 ? size : 1);
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
                                  "repeat: bad input buffer");
    if (err == NULL && n > 0) memcpy(vals + off, src, n);
    off += n;
  }
  if (err == NULL && off != size)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                "repeat: input buffers are short");
  if (err != NULL) {
    free(vals);
    return err;
  }
  *out = vals;
  *count = size / 4;
  return NULL;
}

/* Adds a 4-byte output of shape [1] holding *value. */
static TRITONSERVER_Error *add_output(TRITONBACKEND_Response *response,
                                      const char *name,
                                      TRITONSERVER_DataType dtype,
                                      const void *value) {
  static const int64_t shape[1] = {1};
  TRITONBACKEND_Output *output = NULL;
  void *dst = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  TRITONSERVER_Error *err =
      TRITONBACKEND_ResponseOutput(response, &output, name, dtype, shape, 1);
  if (err == NULL)
    err = TRITONBACKEND_OutputBuffer(output, &dst, 4, &mt, &mt_id);
  if (err == NULL && mt == TRITONSERVER_MEMORY_GPU)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                "repeat needs a CPU output buffer");
  if (err == NULL) memcpy(dst, value, 4);
  return err;
}

/* Sends response i of the job (not FINAL). */
static TRITONSERVER_Error *send_one(job_t *j, size_t i) {
  TRITONBACKEND_Response *response = NULL;
  uint32_t idx = (uint32_t)i;
  TRITONSERVER_Error *err =
      TRITONBACKEND_ResponseNewFromFactory(&response, j->factory);
  if (err != NULL) return err;
  err = add_output(response, "OUT", TRITONSERVER_TYPE_INT32, &j->in[i]);
  if (err == NULL)
    err = add_output(response, "IDX", TRITONSERVER_TYPE_UINT32, &idx);
  if (err != NULL) {
    /* Send the error itself: the client learns why the stream stopped. */
    TRITONSERVER_Error *e2 = TRITONBACKEND_ResponseSend(response, 0, err);
    TRITONSERVER_ErrorDelete(e2);
    return err;
  }
  return TRITONBACKEND_ResponseSend(response, 0, NULL);
}

static void job_free(job_t *j) {
  free(j->in);
  free(j->delay);
  free(j);
}

static void run_job(job_t *j) {
  int cancelled = 0, failed = 0;

  for (size_t i = 0; i < j->n_in; i++) {
    bool c = false;
    sleep_ms(i < j->n_delay ? j->delay[i] : 0);
    log_if_error(TRITONBACKEND_ResponseFactoryIsCancelled(j->factory, &c),
                 "cannot ask for cancellation");
    if (c) {
      cancelled = 1;
      break;
    }
    TRITONSERVER_Error *err = send_one(j, i);
    if (err != NULL) {
      log_if_error(err, "cannot send a response");
      failed = 1;
      break;
    }
  }
  sleep_ms(j->wait_ms);
  log_if_error(TRITONBACKEND_RequestRelease(j->request,
                                            TRITONSERVER_REQUEST_RELEASE_ALL),
               "cannot release request");
  if (cancelled) {
    TRITONBACKEND_Response *response = NULL;
    TRITONSERVER_Error *err =
        TRITONBACKEND_ResponseNewFromFactory(&response, j->factory);
    if (err == NULL) {
      TRITONSERVER_Error *why = TRITONSERVER_ErrorNew(
          TRITONSERVER_ERROR_CANCELLED, "request cancelled");
      err = TRITONBACKEND_ResponseSend(
          response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, why);
      TRITONSERVER_ErrorDelete(why);
    }
    log_if_error(err, "cannot send the cancelled response");
  } else {
    (void)failed;
    log_if_error(TRITONBACKEND_ResponseFactorySendFlags(
                     j->factory, TRITONSERVER_RESPONSE_COMPLETE_FINAL),
                 "cannot send the final flag");
  }
  log_if_error(TRITONBACKEND_ResponseFactoryDelete(j->factory),
               "cannot delete the response factory");
  job_free(j);
}

/* An instance thread: runs queued jobs, parks while there are none, exits
 * when the instance stops. */
static void *thread_main(void *arg) {
  instance_t *inst = arg;
  pthread_mutex_lock(&inst->mu);
  for (;;) {
    job_t *j = inst->head;
    if (j == NULL) {
      if (inst->stopping) break;
      inst->parked++;
      pthread_cond_wait(&inst->work, &inst->mu);
      inst->parked--;
      continue;
    }
    inst->head = j->next;
    if (inst->head == NULL) inst->tail = NULL;
    inst->queued--;
    pthread_mutex_unlock(&inst->mu);
    run_job(j);
    pthread_mutex_lock(&inst->mu);
  }
  pthread_mutex_unlock(&inst->mu);
  return NULL;
}

/* Queues `j` for the instance's threads, starting one unless enough are
 * parked to take every queued job. 0, or -1 when no thread can take it
 * (then `j` is not queued). */
static int submit(instance_t *inst, job_t *j) {
  int rc = 0;
  pthread_mutex_lock(&inst->mu);
  if (inst->queued + 1 > inst->parked) {
    pthread_t tid;
    if (inst->threads == inst->cap_threads) {
      unsigned cap = inst->cap_threads ? 2 * inst->cap_threads : 4;
      pthread_t *t = realloc(inst->tids, cap * sizeof(*t));
      if (t != NULL) {
        inst->tids = t;
        inst->cap_threads = cap;
      }
    }
    if (inst->threads < inst->cap_threads &&
        pthread_create(&tid, NULL, thread_main, inst) == 0) {
      inst->tids[inst->threads++] = tid;
    } else if (inst->threads == 0) {
      rc = -1;
    }
    /* Else a busy thread takes it when its job ends. */
  }
  if (rc == 0) {
    j->next = NULL;
    if (inst->tail != NULL)
      inst->tail->next = j;
    else
      inst->head = j;
    inst->tail = j;
    inst->queued++;
    if (inst->parked > 0) pthread_cond_signal(&inst->work);
  }
  pthread_mutex_unlock(&inst->mu);
  return rc;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance *instance) {
  instance_t *inst = calloc(1, sizeof(*inst));
  if (inst == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  pthread_mutex_init(&inst->mu, NULL);
  pthread_cond_init(&inst->work, NULL);
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceSetState(instance, inst);
  if (err != NULL) {
    pthread_cond_destroy(&inst->work);
    pthread_mutex_destroy(&inst->mu);
    free(inst);
  }
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(
    TRITONBACKEND_ModelInstance *instance) {
  void *state = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceState(instance, &state);
  instance_t *inst = state;
  if (err != NULL || inst == NULL) return err;
  pthread_mutex_lock(&inst->mu);
  inst->stopping = 1;
  pthread_cond_broadcast(&inst->work);
  pthread_mutex_unlock(&inst->mu);
  /* No thread starts any more (execute is over for this instance). */
  for (unsigned i = 0; i < inst->threads; i++)
    pthread_join(inst->tids[i], NULL);
  free(inst->tids);
  pthread_cond_destroy(&inst->work);
  pthread_mutex_destroy(&inst->mu);
  free(inst);
  return NULL;
}

/* Reads the inputs of `request` into a new job. */
static TRITONSERVER_Error *job_new(instance_t *inst,
                                   TRITONBACKEND_Request *request,
                                   job_t **out) {
  void *wait = NULL;
  size_t n_wait = 0;
  job_t *j = calloc(1, sizeof(*j));
  if (j == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  j->inst = inst;
  j->request = request;
  TRITONSERVER_Error *err = read_input(request, "IN", TRITONSERVER_TYPE_INT32,
                                       (void **)&j->in, &j->n_in);
  if (err == NULL)
    err = read_input(request, "DELAY", TRITONSERVER_TYPE_UINT32,
                     (void **)&j->delay, &j->n_delay);
  if (err == NULL)
    err = read_input(request, "WAIT", TRITONSERVER_TYPE_UINT32, &wait, &n_wait);
  if (err == NULL && n_wait != 1)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                "repeat: WAIT must hold one value");
  if (err == NULL) j->wait_ms = *(uint32_t *)wait;
  free(wait);
  if (err == NULL) err = TRITONBACKEND_ResponseFactoryNew(&j->factory, request);
  if (err != NULL) {
    job_free(j);
    return err;
  }
  *out = j;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  void *state = NULL;
  uint64_t exec_start = now_ns();
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceState(instance, &state);
  instance_t *inst = state;
  if (err != NULL) return err; /* the server fails every request */

  for (uint32_t r = 0; r < request_count; r++) {
    job_t *j = NULL;
    uint64_t start = now_ns();
    err = job_new(inst, requests[r], &j);
    uint64_t end = now_ns();
    /* Statistics first: once a thread runs it, the request is its own. */
    log_if_error(
        TRITONBACKEND_ModelInstanceReportStatistics(
            instance, requests[r], err == NULL, exec_start, start, end, end),
        "cannot report statistics");
    if (err == NULL && submit(inst, j) == 0) continue;
    if (err == NULL) {
      /* No thread: answer from here, as the thread would have failed. */
      TRITONBACKEND_ResponseFactoryDelete(j->factory);
      job_free(j);
      err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                  "repeat: cannot start a thread");
    }
    TRITONBACKEND_Response *response = NULL;
    TRITONSERVER_Error *e2 = TRITONBACKEND_ResponseNew(&response, requests[r]);
    if (e2 == NULL)
      e2 = TRITONBACKEND_ResponseSend(
          response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err);
    log_if_error(e2, "cannot send the error response");
    TRITONSERVER_ErrorDelete(err);
    log_if_error(TRITONBACKEND_RequestRelease(requests[r],
                                              TRITONSERVER_REQUEST_RELEASE_ALL),
                 "cannot release request");
  }
  uint64_t end = now_ns();
  if (request_count > 0)
    log_if_error(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                     instance, request_count, exec_start, exec_start, end, end),
                 "cannot report batch statistics");
  return NULL;
}
