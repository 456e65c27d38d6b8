/*
 * test/fuzz/fuzz_infer_binary.c - libFuzzer target: the binary-tensor
 * split of an infer body (Inference-Header-Content-Length). The first two
 * input bytes are the header length (little endian, possibly larger than
 * the body, which must be refused), the rest is the body: JSON header then
 * the binary tensors its inputs' binary_data_size declare.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"
#include "frontend/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ifd_request_t *req;
  ifd_http_infer_info_t info;
  ifd_errmsg_t err;
  size_t json_len, len;
  char *body;

  if (size < 2) return 0;
  json_len = (size_t)data[0] | (size_t)data[1] << 8;
  len = size - 2;
  req = ifd_request_new(NULL);
  if (req == NULL) return 0;
  body = malloc(len != 0 ? len : 1);
  if (body == NULL) {
    ifd_request_unref(req);
    return 0;
  }
  if (len != 0) memcpy(body, data + 2, len);
  req->body = body;
  ifd_errclear(&err);
  if (ifd__http_infer_decode(req, body, len, json_len, &info, &err) != 0) {
    if (err.text[0] == '\0') abort();
  } else {
    uint32_t i;
    /* Every tensor lies inside the body or the request's pool. */
    for (i = 0; i < req->n_inputs; i++) {
      const ifd_input_t *in = &req->inputs[i];
      if (in->data != NULL && in->byte_size != 0)
        (void)((const volatile char *)in->data)[in->byte_size - 1];
    }
  }
  ifd_request_unref(req);
  return 0;
}
