/*
 * test/fuzz/fuzz_grpc.c - libFuzzer target: the gRPC path. The input is
 * what a client sends after the HTTP/2 connection preface (which the target
 * adds): frames through nghttp2's server session, the stream layer and
 * message framing of net/grpc_stream.c and every method of
 * frontend/grpc_service.c (ModelInfer's ModelInferRequest scanner included) on
 * a real server whose models run on fake identity operations
 * (test/fuzz/fuzz_server.h).
 *
 * Beyond the sanitizers, the answer is checked frame by frame: it must be
 * whole HTTP/2 frames, connection-level frames on stream 0 and stream
 * frames off it, and no stream may get a HEADERS or DATA frame after the
 * one that ended it (no call answered twice).
 *
 * Inputs of odd size go to a second front end with small limits (4 KiB
 * messages, 1 KiB of queued response bytes per call), so the refusals run
 * too.
 */
#include <stdint.h>

#include "frontend/frontend.h"
#include "test/fuzz/fuzz_server.h"

#define MAX_ENDED 4096

static ifd_grpc_t *grpc, *grpc_small;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bad_answer(const char *why, uint32_t stream) {
  fprintf(stderr, "fuzz_grpc: %s (stream %u)\n", why, stream);
  abort();
}

static void check_answer(void) {
  static uint32_t ended[MAX_ENDED];
  const uint8_t *p = (const uint8_t *)fz_last.all;
  size_t off = 0, n = fz_last.n_read, n_ended = 0, i;

  if (n > ((size_t)16 << 20)) return; /* not all kept */
  while (off < n) {
    uint32_t len, stream;
    uint8_t type, flags;

    if (n - off < 9) bad_answer("a cut frame header", 0);
    len = (uint32_t)p[off] << 16 | (uint32_t)p[off + 1] << 8 | p[off + 2];
    type = p[off + 3];
    flags = p[off + 4];
    stream = ((uint32_t)p[off + 5] << 24 | (uint32_t)p[off + 6] << 16 |
              (uint32_t)p[off + 7] << 8 | p[off + 8]) &
             0x7fffffffu;
    if (n - off - 9 < len) bad_answer("a cut frame", stream);
    off += 9 + (size_t)len;
    switch (type) {
      case 0: /* DATA */
      case 1: /* HEADERS */
        if (stream == 0) bad_answer("DATA or HEADERS on stream 0", 0);
        for (i = 0; i < n_ended; i++)
          if (ended[i] == stream) bad_answer("a frame after the end", stream);
        if ((flags & 1) && n_ended < MAX_ENDED) ended[n_ended++] = stream;
        break;
      case 3: /* RST_STREAM */
      case 9: /* CONTINUATION */
        if (stream == 0) bad_answer("a stream frame on stream 0", 0);
        break;
      case 4: /* SETTINGS */
      case 6: /* PING */
      case 7: /* GOAWAY */
        if (stream != 0) bad_answer("a connection frame on a stream", stream);
        break;
      case 8: /* WINDOW_UPDATE: either */
        break;
      default:
        bad_answer("a frame type the server never sends", stream);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (grpc == NULL) {
    ifd_grpc_opts_t o;
    ifd_errmsg_t err;

    fz_server_init();
    fz_capture = 1;
    memset(&o, 0, sizeof(o));
    o.host = "127.0.0.1";
    if (ifd_grpc_start(&fz_loop, fz_server, &o, &grpc, &err) != 0) abort();
    o.max_message_size = 4096;
    o.stream_buffer_bytes = 1024;
    if (ifd_grpc_start(&fz_loop, fz_server, &o, &grpc_small, &err) != 0)
      abort();
  }
  /* ifd_grpc_t embeds its connection set as its first member. */
  fz_serve((ifd_conn_set_t *)(void *)(size & 1 ? grpc_small : grpc),
           "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", data, size);
  check_answer();
  free(fz_last.all);
  fz_last.all = NULL;
  fz_last.all_cap = 0;
  return 0;
}
