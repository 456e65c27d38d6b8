/*
 * test/fuzz/fuzz_http1.c - libFuzzer target: the HTTP/1.1 request path.
 * The input is the byte stream a client sends on one connection: llhttp,
 * the header and body handling of net/http1.c, the router and every route
 * (health, metadata, config, repository, infer with the JSON decoder and
 * the binary-tensor split, generate) of a real server whose models run on
 * fake identity operations (test/fuzz/fuzz_server.h).
 */
#include <stdint.h>

#include "net/http.h"
#include "test/fuzz/fuzz_server.h"

static ifd_http_t *http;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (http == NULL) {
    ifd_http_opts_t o;
    ifd_errmsg_t err;

    fz_server_init();
    memset(&o, 0, sizeof(o));
    o.host = "127.0.0.1";
    if (ifd_http_start(&fz_loop, fz_server, &o, &http, &err) != 0) abort();
  }
  /* ifd_http_t embeds its connection set as its first member. */
  fz_serve((ifd_conn_set_t *)(void *)http, NULL, data, size);
  return 0;
}
