/*
 * test/fuzz/fuzz_http1.c - libFuzzer target: the HTTP/1.1 request path.
 * The input is the byte stream a client sends on one connection: llhttp,
 * the header and body handling of net/http1.c, the router and every route
 * (health, metadata, config, repository, infer with the JSON decoder and
 * the binary-tensor split, generate) of a real server whose models run on
 * fake identity operations (test/fuzz/fuzz_server.h).
 *
 * Beyond the sanitizers, the answer is checked: what the server sent must
 * parse as HTTP/1.1 responses (llhttp in response mode), and it must not
 * hold more final responses than the input held complete requests, plus
 * one for an error that ends the connection (no request answered twice).
 * Inputs with a HEAD request skip the check (the response parser cannot
 * know that those responses have no body).
 *
 * Inputs of odd size go to a second front end with small limits (a 2 KiB
 * --http-max-input-size, JSON offloaded to the thread pool from 256
 * bytes), so the refusals and the offload run too.
 */
#include <llhttp.h>
#include <stdint.h>

#include "frontend/frontend.h"
#include "frontend/internal.h"
#include "test/fuzz/fuzz_server.h"

static ifd_http_t *http, *http_small;
static unsigned n_requests, n_final;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_request(llhttp_t *p) {
  (void)p;
  n_requests++;
  return 0;
}

static int on_response_headers(llhttp_t *p) {
  if (p->status_code >= 200) n_final++;
  return 0;
}

/* Counts the complete requests in the input, as far as it parses. */
static unsigned count_requests(const uint8_t *data, size_t size) {
  llhttp_settings_t st;
  llhttp_t p;

  llhttp_settings_init(&st);
  st.on_message_complete = on_request;
  llhttp_init(&p, HTTP_REQUEST, &st);
  n_requests = 0;
  (void)llhttp_execute(&p, (const char *)data, size);
  return n_requests;
}

static void check_answer(const uint8_t *data, size_t size) {
  llhttp_settings_t st;
  llhttp_t p;
  llhttp_errno_t rc;
  unsigned n_req;

  if (memmem(data, size, "HEAD", 4) != NULL || fz_last.n_read == 0) return;
  if (fz_last.n_read > ((size_t)16 << 20)) return; /* not all kept */
  n_req = count_requests(data, size);
  llhttp_settings_init(&st);
  st.on_headers_complete = on_response_headers;
  llhttp_init(&p, HTTP_RESPONSE, &st);
  n_final = 0;
  rc = llhttp_execute(&p, fz_last.all, fz_last.n_read);
  if (rc == HPE_OK) rc = llhttp_finish(&p);
  if (rc != HPE_OK) {
    fprintf(stderr, "fuzz_http1: the answer is not HTTP/1.1: %s (%s)\n",
            llhttp_errno_name(rc), llhttp_get_error_reason(&p));
    fwrite(fz_last.all, 1, fz_last.n_read, stderr);
    abort();
  }
  if (fz_echo)
    fprintf(stderr, "\nfuzz_http1: %u final responses to %u requests\n",
            n_final, n_req);
  if (n_final > n_req + 1) {
    fprintf(stderr, "fuzz_http1: %u final responses to %u requests\n", n_final,
            n_req);
    fwrite(fz_last.all, 1, fz_last.n_read, stderr);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (http == NULL) {
    ifd_http_opts_t o;
    ifd_errmsg_t err;

    fz_server_init();
    fz_capture = 1;
    memset(&o, 0, sizeof(o));
    o.host = "127.0.0.1";
    if (ifd_http_start(&fz_loop, fz_server, &o, &http, &err) != 0) abort();
    o.max_input_size = 2048;
    o.json_offload_bytes = 256;
    if (ifd_http_start(&fz_loop, fz_server, &o, &http_small, &err) != 0)
      abort();
  }
  /* The transport (net/http1.c) embeds its connection set first. */
  fz_serve((ifd_conn_set_t *)(void *)ifd__http_transport(size & 1 ? http_small
                                                                  : http),
           NULL, data, size);
  check_answer(data, size);
  free(fz_last.all);
  fz_last.all = NULL;
  fz_last.all_cap = 0;
  return 0;
}
