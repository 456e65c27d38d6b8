/*
 * test/unit/test_tls.c - net/tls.c: contexts built from certificate files,
 * and TLS connections of the connection layer (net/conn.c) on a private
 * loop, talking to a blocking OpenSSL client on a thread of its own.
 *
 * A key and a self-signed certificate are made at start with OpenSSL's API
 * in a temporary folder. Cases:
 *  - a context is refused, with a message naming the flag and the file, for
 *    a missing file, a file that is not PEM, a key that does not match the
 *    certificate, and client verification without a root certificate;
 *  - an echo protocol over TLS: 1 MiB sent in pieces of every size comes
 *    back whole (big writes go out in chunks as the client reads, small ones
 *    are gathered), ALPN selects h2, close_notify ends the connection;
 *  - a plaintext client on the TLS listener is closed, and a TLS client
 *    after it is served;
 *  - a client that leaves while its echo is still being written: the write
 *    in progress is cancelled (its callback runs with UV_ECANCELED before
 *    on_free).
 * Every case ends with uv_loop_close() == 0 (ASan builds check leaks).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "base/util.h"
#include "net/conn.h"
#include "net/tls.h"

#define ECHO_BYTES (1 << 20)

static char dir[64];
static char cert_path[128], key_path[128], key2_path[128], junk_path[128];

/* ---- certificates ----------------------------------------------------- */

static void write_key(EVP_PKEY *pk, const char *path) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL), 1);
  fclose(f);
}

static int make_certs(void **state) {
  EVP_PKEY *pk = EVP_EC_gen("P-256"), *pk2 = EVP_EC_gen("P-256");
  X509 *x = X509_new();
  X509_NAME *name;
  FILE *f;

  (void)state;
  snprintf(dir, sizeof(dir), "/tmp/ifd-test-tls-XXXXXX");
  assert_non_null(mkdtemp(dir));
  snprintf(cert_path, sizeof(cert_path), "%s/cert.pem", dir);
  snprintf(key_path, sizeof(key_path), "%s/key.pem", dir);
  snprintf(key2_path, sizeof(key2_path), "%s/key2.pem", dir);
  snprintf(junk_path, sizeof(junk_path), "%s/junk.pem", dir);
  assert_non_null(pk);
  assert_non_null(pk2);
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), 0);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_set_pubkey(x, pk);
  name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             (const unsigned char *)"localhost", -1, -1, 0);
  X509_set_issuer_name(x, name);
  assert_true(X509_sign(x, pk, EVP_sha256()) > 0);
  f = fopen(cert_path, "w");
  assert_non_null(f);
  PEM_write_X509(f, x);
  fclose(f);
  write_key(pk, key_path);
  write_key(pk2, key2_path);
  f = fopen(junk_path, "w");
  assert_non_null(f);
  fputs("not a certificate\n", f);
  fclose(f);
  X509_free(x);
  EVP_PKEY_free(pk);
  EVP_PKEY_free(pk2);
  return 0;
}

static int remove_certs(void **state) {
  (void)state;
  unlink(cert_path);
  unlink(key_path);
  unlink(key2_path);
  unlink(junk_path);
  rmdir(dir);
  return 0;
}

static ifd_tls_opts_t opts(const char *cert, const char *key) {
  ifd_tls_opts_t o;
  memset(&o, 0, sizeof(o));
  o.cert_file = cert;
  o.key_file = key;
  o.alpn = IFD_TLS_ALPN_H2;
  o.cert_flag = "--cert";
  o.key_flag = "--key";
  o.ca_flag = "--root";
  return o;
}

static void test_ctx_errors(void **state) {
  ifd_tls_ctx_t *ctx = NULL;
  ifd_errmsg_t err;
  ifd_tls_opts_t o;
  char missing[160];

  (void)state;
  snprintf(missing, sizeof(missing), "%s/missing.pem", dir);
  o = opts(missing, key_path);
  assert_int_equal(ifd_tls_ctx_new(&o, &ctx, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "--cert"));
  assert_non_null(strstr(err.text, missing));
  o = opts(junk_path, key_path);
  assert_int_equal(ifd_tls_ctx_new(&o, &ctx, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "--cert"));
  o = opts(cert_path, junk_path);
  assert_int_equal(ifd_tls_ctx_new(&o, &ctx, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "--key"));
  o = opts(cert_path, key2_path);
  assert_int_equal(ifd_tls_ctx_new(&o, &ctx, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "match"));
  o = opts(cert_path, key_path);
  o.verify_client = 1;
  assert_int_equal(ifd_tls_ctx_new(&o, &ctx, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "--root"));
  o.ca_file = cert_path;
  assert_int_equal(ifd_tls_ctx_new(&o, &ctx, &err), 0);
  ifd_tls_ctx_free(ctx);
  o = opts(cert_path, key_path);
  assert_int_equal(ifd_tls_ctx_new(&o, &ctx, &err), 0);
  ifd_tls_ctx_free(ctx);
  assert_int_equal(ERR_peek_error(), 0); /* the error queue is left empty */
}

/* ---- an echo protocol over the connection layer ------------------------ */

typedef struct echo {
  ifd_conn_t base;
  uv_write_t wreq;
  char *pend; /* owned: received, not yet written */
  size_t pend_len;
  char *inflight; /* owned: being written */
  int writing;
} echo_t;

static uv_loop_t loop;
static ifd_conn_set_t set;
static int set_closed, n_free, n_cancelled;
static char rbuf[65536];

static void e_flush(ifd_conn_t *base);

static void e_alloc(uv_handle_t *h, size_t n, uv_buf_t *buf) {
  (void)h;
  (void)n;
  *buf = uv_buf_init(rbuf, sizeof(rbuf));
}

static void e_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  echo_t *e = s->data;

  if (n < 0) {
    ifd__conn_close(&e->base, 0);
    return;
  }
  if (n == 0) return;
  e->pend = realloc(e->pend, e->pend_len + (size_t)n);
  assert_non_null(e->pend);
  memcpy(e->pend + e->pend_len, buf->base, (size_t)n);
  e->pend_len += (size_t)n;
  ifd__conn_mark_dirty(&e->base);
}

static void e_written(uv_write_t *w, int status) {
  echo_t *e = ifd_container_of(w, echo_t, wreq);

  e->writing = 0;
  free(e->inflight);
  e->inflight = NULL;
  if (status == UV_ECANCELED) n_cancelled++;
  if (e->base.closing) return;
  assert_int_equal(status, 0);
  e_flush(&e->base);
}

static void e_flush(ifd_conn_t *base) {
  echo_t *e = (echo_t *)base;
  uv_buf_t b;
  int w;

  if (e->writing || e->pend_len == 0 || base->closing) return;
  e->inflight = e->pend;
  b = uv_buf_init(e->pend, (unsigned)e->pend_len);
  e->pend = NULL;
  e->pend_len = 0;
  e->writing = 1;
  w = ifd__conn_try_write(base, &b, 1);
  if (w == (int)b.len) {
    e_written(&e->wreq, 0);
    return;
  }
  if (w > 0) {
    b.base += w;
    b.len -= (unsigned)w;
  } else if (w != UV_EAGAIN) { /* the client left (ECONNRESET, EPIPE) */
    e->writing = 0;
    free(e->inflight);
    e->inflight = NULL;
    ifd__conn_close(base, 0);
    return;
  }
  assert_int_equal(ifd__conn_write(base, &e->wreq, &b, 1, e_written), 0);
}

static int e_open(ifd_conn_t *c) {
  return ifd__conn_read_start(c, e_alloc, e_read);
}

static void e_stop(ifd_conn_t *c, ifd_conn_phase_t phase) {
  (void)phase;
  ifd__conn_close(c, 0);
}

static void e_closing(ifd_conn_t *c) {
  (void)c;
}

static void e_free(ifd_conn_t *c) {
  echo_t *e = (echo_t *)c;
  assert_int_equal(e->writing, 0); /* the write was cancelled before */
  free(e->pend);
  n_free++;
}

static const ifd_conn_proto_t eproto = {
    .name = "echo",
    .size = sizeof(echo_t),
    .on_open = e_open,
    .on_flush = e_flush,
    .on_timer = NULL,
    .on_stop = e_stop,
    .on_closing = e_closing,
    .on_free = e_free,
};

static void on_set_closed(ifd_conn_set_t *s) {
  (void)s;
  set_closed = 1;
}

/* ---- blocking clients on a thread ------------------------------------- */

typedef struct job {
  int port;
  int kind; /* 0: echo 1 MiB; 1: plaintext; 2: send 1 MiB and leave */
  int ok;
  char alpn[16];
  uv_async_t done; /* wakes the loop */
} job_t;

static int connect_to(int port) {
  struct sockaddr_in a;
  int fd = socket(AF_INET, SOCK_STREAM, 0);

  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) return -1;
  return fd;
}

static void client_echo(job_t *j, int leave_early) {
  static const unsigned char protos[] = "\x08http/1.1\x02h2";
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  SSL *ssl = NULL;
  unsigned char *out = malloc(ECHO_BYTES), *in = malloc(ECHO_BYTES);
  const unsigned char *sel;
  unsigned sel_len;
  size_t sent = 0, got = 0, piece = 1, i;
  int fd = connect_to(j->port);

  if (ctx == NULL || out == NULL || in == NULL || fd < 0) goto out;
  SSL_CTX_set_alpn_protos(ctx, protos, sizeof(protos) - 1);
  ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  if (SSL_connect(ssl) != 1) goto out;
  SSL_get0_alpn_selected(ssl, &sel, &sel_len);
  snprintf(j->alpn, sizeof(j->alpn), "%.*s", (int)sel_len, sel);
  for (i = 0; i < ECHO_BYTES; i++) out[i] = (unsigned char)(i * 7 + i / 251);
  /* Pieces of 1, 2, 4 ... 64 KiB bytes, then again: small and big writes. */
  while (sent < ECHO_BYTES) {
    size_t n = piece < ECHO_BYTES - sent ? piece : ECHO_BYTES - sent;
    if (SSL_write(ssl, out + sent, (int)n) != (int)n) goto out;
    sent += n;
    piece = piece >= 65536 ? 1 : piece * 2;
  }
  if (leave_early) {
    j->ok = 1;
    goto out; /* no close_notify, no reading: a client that left */
  }
  while (got < ECHO_BYTES) {
    int n = SSL_read(ssl, in + got, (int)(ECHO_BYTES - got));
    if (n <= 0) goto out;
    got += (size_t)n;
  }
  j->ok = memcmp(in, out, ECHO_BYTES) == 0;
  SSL_shutdown(ssl); /* close_notify: the server's read sees the end */
out:
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  if (fd >= 0) close(fd);
  free(out);
  free(in);
  ERR_clear_error();
}

static void client_plain(job_t *j) {
  static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  char buf[256];
  int fd = connect_to(j->port), n;

  if (fd < 0) return;
  if (write(fd, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1) {
    /* Whatever comes (an alert or nothing), then the end. */
    while ((n = (int)read(fd, buf, sizeof(buf))) > 0) {
    }
    j->ok = n == 0 || n < 0;
  }
  close(fd);
}

static void *client_main(void *arg) {
  job_t *j = arg;

  if (j->kind == 1)
    client_plain(j);
  else
    client_echo(j, j->kind == 2);
  uv_async_send(&j->done);
  return NULL;
}

static int job_done;

static void on_job_done(uv_async_t *a) {
  (void)a;
  job_done = 1;
}

static void on_async_closed(uv_handle_t *h) {
  (void)h;
  job_done = 1;
}

/* Runs one client to its end on a thread while the loop serves it. */
static void run_client(job_t *j) {
  pthread_t th;

  job_done = 0;
  uv_async_init(&loop, &j->done, on_job_done);
  assert_int_equal(pthread_create(&th, NULL, client_main, j), 0);
  while (!job_done) uv_run(&loop, UV_RUN_ONCE);
  pthread_join(th, NULL);
  job_done = 0;
  uv_close((uv_handle_t *)&j->done, on_async_closed);
  while (!job_done) uv_run(&loop, UV_RUN_ONCE); /* `j` may go after this */
}

static ifd_tls_ctx_t *start_set(void) {
  ifd_tls_opts_t o = opts(cert_path, key_path);
  ifd_tls_ctx_t *ctx = NULL;
  ifd_errmsg_t err;

  assert_int_equal(uv_loop_init(&loop), 0);
  memset(&set, 0, sizeof(set));
  set_closed = n_free = n_cancelled = 0;
  assert_int_equal(ifd_tls_ctx_new(&o, &ctx, &err), 0);
  set.tls = ctx;
  assert_int_equal(
      ifd__conn_set_start(&set, &loop, &eproto, "127.0.0.1", 0, 0, 0, &err), 0);
  return ctx;
}

/* Closes the set once its connections are gone, and the loop. */
static void stop_set(ifd_tls_ctx_t *ctx, int conns) {
  uint64_t end = uv_hrtime() + 10 * (uint64_t)1000000000;

  while (n_free < conns && uv_hrtime() < end) uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(n_free, conns);
  ifd__conn_set_stop(&set, 0, on_set_closed);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_true(set_closed);
  assert_int_equal(uv_loop_close(&loop), 0);
  ifd_tls_ctx_free(ctx);
}

static void test_echo(void **state) {
  ifd_tls_ctx_t *ctx = start_set();
  job_t j;

  (void)state;
  memset(&j, 0, sizeof(j));
  j.port = set.port;
  run_client(&j);
  assert_true(j.ok);
  assert_string_equal(j.alpn, "h2");
  stop_set(ctx, 1);
}

static void test_plaintext_then_tls(void **state) {
  ifd_tls_ctx_t *ctx = start_set();
  job_t j;

  (void)state;
  memset(&j, 0, sizeof(j));
  j.port = set.port;
  j.kind = 1;
  run_client(&j);
  assert_true(j.ok);
  memset(&j, 0, sizeof(j));
  j.port = set.port;
  run_client(&j);
  assert_true(j.ok);
  stop_set(ctx, 2);
}

static void test_client_leaves_mid_write(void **state) {
  ifd_tls_ctx_t *ctx = start_set();
  job_t j;

  (void)state;
  memset(&j, 0, sizeof(j));
  j.port = set.port;
  j.kind = 2;
  run_client(&j);
  assert_true(j.ok);
  stop_set(ctx, 1);
  /* 1 MiB echoed to a client that never reads: part of it was still
   * waiting (or being written) when the connection went. */
  assert_true(n_cancelled <= 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ctx_errors),
      cmocka_unit_test(test_echo),
      cmocka_unit_test(test_plaintext_then_tls),
      cmocka_unit_test(test_client_leaves_mid_write),
  };
  return cmocka_run_group_tests(tests, make_certs, remove_certs);
}
