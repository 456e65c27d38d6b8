/*
 * test/fuzz/fuzz_grpc_infer.c - libFuzzer target: the ModelInferRequest
 * scanner (frontend/grpc_infer.c). The input is one serialized message; raw
 * input contents point into it, so it is owned by the request as on the
 * transport.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"
#include "frontend/grpc_infer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ifd_request_t *req = ifd_request_new(NULL);
  ifd_errmsg_t err;
  uint8_t *msg;

  if (req == NULL) return 0;
  msg = malloc(size != 0 ? size : 1);
  if (msg == NULL) {
    ifd_request_unref(req);
    return 0;
  }
  if (size != 0) memcpy(msg, data, size);
  req->body = msg;
  ifd_errclear(&err);
  if (ifd__grpc_infer_decode(req, msg, size, &err) != 0) {
    if (err.text[0] == '\0') abort();
  } else {
    uint32_t i;
    for (i = 0; i < req->n_inputs; i++) {
      const ifd_input_t *in = &req->inputs[i];
      if (in->data != NULL && in->byte_size != 0)
        (void)((const volatile uint8_t *)in->data)[in->byte_size - 1];
    }
  }
  ifd_request_unref(req);
  return 0;
}
