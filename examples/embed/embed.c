/*
 * examples/embed/embed.c - an application that embeds inferd: it starts the
 * server in its own process with TRITONSERVER_ServerNew (no HTTP, no gRPC),
 * runs one inference on examples/model_repository's identity_fp32 and
 * prints the result.
 *
 *   make example            (or make all) builds build/examples/embed
 *   build/examples/embed [MODEL_REPOSITORY [BACKEND_DIRECTORY]]
 *
 * The backend directory defaults to the backends folder beside the
 * library's lib folder: build/backends for build/lib/libtritonserver.so.
 *
 * It uses Triton's public header only and links libtritonserver.so, so the
 * same source builds against Triton's library. README.md beside it tells the
 * steps; docs/c_api.md is the API's page.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "triton/core/tritonserver.h"

/* Prints the error and leaves: enough for an example. */
static void check(TRITONSERVER_Error *err, const char *what) {
  if (err == NULL) return;
  fprintf(stderr, "embed: %s: %s (%s)\n", what, TRITONSERVER_ErrorMessage(err),
          TRITONSERVER_ErrorCodeString(err));
  TRITONSERVER_ErrorDelete(err);
  exit(1);
}

/* ---- the response allocator: output tensors go into malloc'd memory ---- */

static TRITONSERVER_Error *alloc_fn(TRITONSERVER_ResponseAllocator *allocator,
                                    const char *tensor_name, size_t byte_size,
                                    TRITONSERVER_MemoryType memory_type,
                                    int64_t memory_type_id, void *userp,
                                    void **buffer, void **buffer_userp,
                                    TRITONSERVER_MemoryType *actual_type,
                                    int64_t *actual_type_id) {
  (void)allocator;
  (void)tensor_name;
  (void)memory_type;
  (void)memory_type_id;
  (void)userp;
  /* Called on the backend's thread; the backend writes the output here. */
  *buffer = malloc(byte_size > 0 ? byte_size : 1);
  if (*buffer == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  *buffer_userp = NULL;
  *actual_type = TRITONSERVER_MEMORY_CPU;
  *actual_type_id = 0;
  return NULL;
}

static TRITONSERVER_Error *release_fn(TRITONSERVER_ResponseAllocator *allocator,
                                      void *buffer, void *buffer_userp,
                                      size_t byte_size,
                                      TRITONSERVER_MemoryType memory_type,
                                      int64_t memory_type_id) {
  (void)allocator;
  (void)buffer_userp;
  (void)byte_size;
  (void)memory_type;
  (void)memory_type_id;
  /* Called when the application deletes the response. */
  free(buffer);
  return NULL;
}

/* ---- waiting for the answer ---- */

/* The callbacks run on the server's thread; main waits for both. */
typedef struct result {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  TRITONSERVER_InferenceResponse *response; /* owned once delivered */
  int released;
} result_t;

static void on_response(TRITONSERVER_InferenceResponse *response,
                        const uint32_t flags, void *userp) {
  result_t *r = userp;
  (void)flags; /* identity_fp32 answers once, with the FINAL flag */
  pthread_mutex_lock(&r->mu);
  r->response = response;
  pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

static void on_release(TRITONSERVER_InferenceRequest *request,
                       const uint32_t flags, void *userp) {
  result_t *r = userp;
  (void)request; /* the application's again: reuse or delete it */
  (void)flags;
  pthread_mutex_lock(&r->mu);
  r->released = 1;
  pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

int main(int argc, char **argv) {
  const char *repo = argc > 1 ? argv[1] : "examples/model_repository";
  const char *backends = argc > 2 ? argv[2] : NULL;
  TRITONSERVER_ServerOptions *options;
  TRITONSERVER_Server *server;
  TRITONSERVER_ResponseAllocator *allocator;
  TRITONSERVER_InferenceRequest *request;
  static const int64_t shape[2] = {1, 16};
  float input[16];
  bool ready = false;
  result_t result;
  const float *out;
  const char *name;
  TRITONSERVER_DataType datatype;
  const int64_t *out_shape;
  uint64_t dims;
  const void *base;
  size_t size;
  TRITONSERVER_MemoryType mem_type;
  int64_t mem_id;
  void *buffer_userp;
  int i;

  /* 1. Start the server: it loads the repository's models before
   *    TRITONSERVER_ServerNew returns, on a thread of its own. */
  check(TRITONSERVER_ServerOptionsNew(&options), "options");
  check(TRITONSERVER_ServerOptionsSetModelRepositoryPath(options, repo),
        "repository");
  if (backends != NULL)
    check(TRITONSERVER_ServerOptionsSetBackendDirectory(options, backends),
          "backend directory");
  check(TRITONSERVER_ServerOptionsSetLogInfo(options, false), "log");
  check(TRITONSERVER_ServerNew(&server, options), "server");
  check(TRITONSERVER_ServerOptionsDelete(options), "options");
  check(TRITONSERVER_ServerModelIsReady(server, "identity_fp32", -1, &ready),
        "readiness");
  if (!ready) {
    fprintf(stderr, "embed: identity_fp32 is not ready\n");
    return 1;
  }

  /* 2. A request: one input, one requested output, two callbacks. */
  for (i = 0; i < 16; i++) input[i] = (float)i * 1.5f;
  memset(&result, 0, sizeof(result));
  pthread_mutex_init(&result.mu, NULL);
  pthread_cond_init(&result.cv, NULL);
  check(
      TRITONSERVER_ResponseAllocatorNew(&allocator, alloc_fn, release_fn, NULL),
      "allocator");
  check(TRITONSERVER_InferenceRequestNew(&request, server, "identity_fp32", -1),
        "request");
  check(TRITONSERVER_InferenceRequestSetId(request, "embed-1"), "id");
  check(TRITONSERVER_InferenceRequestAddInput(request, "INPUT0",
                                              TRITONSERVER_TYPE_FP32, shape, 2),
        "input");
  /* The server reads the input where it is (no copy) until the release. */
  check(
      TRITONSERVER_InferenceRequestAppendInputData(
          request, "INPUT0", input, sizeof(input), TRITONSERVER_MEMORY_CPU, 0),
      "input data");
  check(TRITONSERVER_InferenceRequestAddRequestedOutput(request, "OUTPUT0"),
        "output");
  check(TRITONSERVER_InferenceRequestSetReleaseCallback(request, on_release,
                                                        &result),
        "release callback");
  check(TRITONSERVER_InferenceRequestSetResponseCallback(
            request, allocator, NULL, on_response, &result),
        "response callback");

  /* 3. Send it and wait for the response and the release. */
  check(TRITONSERVER_ServerInferAsync(server, request, NULL), "infer");
  pthread_mutex_lock(&result.mu);
  while (result.response == NULL || !result.released)
    pthread_cond_wait(&result.cv, &result.mu);
  pthread_mutex_unlock(&result.mu);

  /* 4. Read it: an error the server found comes in the response. */
  check(TRITONSERVER_InferenceResponseError(result.response), "inference");
  check(TRITONSERVER_InferenceResponseOutput(
            result.response, 0, &name, &datatype, &out_shape, &dims, &base,
            &size, &mem_type, &mem_id, &buffer_userp),
        "output");
  out = base;
  printf("%s %s [%lld,%lld]:", name, TRITONSERVER_DataTypeString(datatype),
         (long long)out_shape[0], (long long)out_shape[1]);
  for (i = 0; i < (int)(size / sizeof(float)); i++) printf(" %g", out[i]);
  printf("\n");

  /* 5. Clean up: the response gives its buffer back to release_fn. */
  check(TRITONSERVER_InferenceResponseDelete(result.response), "response");
  check(TRITONSERVER_InferenceRequestDelete(request), "request");
  check(TRITONSERVER_ResponseAllocatorDelete(allocator), "allocator");
  check(TRITONSERVER_ServerDelete(server), "server"); /* stops it first */
  pthread_cond_destroy(&result.cv);
  pthread_mutex_destroy(&result.mu);
  return 0;
}
