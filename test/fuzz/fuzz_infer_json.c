/*
 * test/fuzz/fuzz_infer_json.c - libFuzzer target: the JSON infer decoder
 * (frontend/http_infer_decode.c with frontend/json_scan.c). The input is a
 * whole request body with no binary part; the decoder must accept it or refuse
 * it with a message, and never read outside it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"
#include "frontend/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ifd_request_t *req = ifd_request_new(NULL);
  ifd_http_infer_info_t info;
  ifd_errmsg_t err;
  char *body;

  if (req == NULL) return 0;
  /* Exactly `size` bytes, so that ASan sees any read past the end. */
  body = malloc(size != 0 ? size : 1);
  if (body == NULL) {
    ifd_request_unref(req);
    return 0;
  }
  if (size != 0) memcpy(body, data, size);
  req->body = body; /* the request owns the body, as after a route */
  ifd_errclear(&err);
  if (ifd__http_infer_decode(req, body, size, size, &info, &err) != 0 &&
      err.text[0] == '\0')
    abort(); /* a refusal always says why */
  ifd_request_unref(req);
  return 0;
}
