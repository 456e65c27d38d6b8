/*
 * test/fuzz/fuzz_grpc.c - libFuzzer target: the gRPC path. The input is
 * what a client sends after the HTTP/2 connection preface (which the target
 * adds): frames through nghttp2's server session, the stream layer and
 * message framing of net/grpc_stream.c and every method of
 * net/grpc_service.c (ModelInfer's ModelInferRequest scanner included) on a
 * real server whose models run on fake identity operations
 * (test/fuzz/fuzz_server.h).
 */
#include <stdint.h>

#include "net/grpc.h"
#include "test/fuzz/fuzz_server.h"

static ifd_grpc_t *grpc;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (grpc == NULL) {
    ifd_grpc_opts_t o;
    ifd_errmsg_t err;

    fz_server_init();
    memset(&o, 0, sizeof(o));
    o.host = "127.0.0.1";
    if (ifd_grpc_start(&fz_loop, fz_server, &o, &grpc, &err) != 0) abort();
  }
  /* ifd_grpc_t embeds its connection set as its first member. */
  fz_serve((ifd_conn_set_t *)(void *)grpc, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
           data, size);
  return 0;
}
