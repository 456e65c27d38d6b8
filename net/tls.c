/*
 * net/tls.c - TLS on the loop: OpenSSL with a BIO of our own instead of a
 * socket (see net/tls.h), so nothing blocks and nothing needs a thread.
 *
 * The BIO. Reads take ciphertext from `in`: during a socket read callback
 * that is the listener's shared read buffer itself (no copy), and only the
 * bytes left unread when the protocol stops reading are kept, in `saved`.
 * Writes append ciphertext to `out`, which send_out() hands to the socket:
 * first uv_try_write, then the rest through the connection's one TLS write
 * request. Both buffers are freed when empty, so an idle TLS connection
 * holds its SSL object (with SSL_MODE_RELEASE_BUFFERS: no record buffers)
 * and this small struct only.
 *
 * Reading (pump). The socket's bytes go in; the handshake runs until done;
 * then records are decrypted straight into the buffers the protocol's alloc
 * callback gives, and its read callback gets them, exactly as libuv would
 * call it. When the protocol stops reading, the socket stops too (no
 * ciphertext piles up); when it starts again, what was already read is
 * delivered from the connection set's flusher, on the same loop iteration,
 * never from inside the protocol's call.
 *
 * Writing. ifd__tls_try_write encrypts up to ENCRYPT_CHUNK bytes at once
 * when nothing else is going out; ifd__tls_write holds the protocol's
 * buffers and encrypts the next chunk each time the previous ciphertext is
 * written, so a large response never doubles in memory, and calls the
 * protocol's callback once all of it is out. Small buffers (frame headers)
 * are gathered into one record.
 *
 * Errors. A failed handshake or a bad record is logged (info) with
 * OpenSSL's reason; the alert goes out and the connection closes after it.
 * OpenSSL's error queue is per thread: it is emptied after every failure so
 * that one connection's error is never read as another's.
 */
#include "net/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "net/conn.h"

#define CIPHER_READ_SIZE 65536
/* The size suggested to the protocol's alloc callback for plaintext. */
#define PLAIN_READ_SIZE 65536
/* Plaintext encrypted per step of a write: bounds the ciphertext buffer. */
#define ENCRYPT_CHUNK ((size_t)256 << 10)
/* Small buffers are gathered into records of up to this many bytes. */
#define GATHER_SIZE 16384
#define OUT_FIRST_CAP 16384

struct ifd_tls_ctx {
  SSL_CTX *ssl_ctx; /* owned */
  ifd_tls_alpn_t alpn;
  char rbuf[CIPHER_READ_SIZE]; /* shared ciphertext read buffer: loop only */
};

struct ifd_tls_conn {
  SSL *ssl;           /* owned: with its BIO (bio_method) */
  ifd_tls_ctx_t *ctx; /* borrowed: outlives the connection */
  ifd_conn_t *conn;   /* borrowed: the owner */
  uv_alloc_cb alloc;  /* the protocol's, while it reads */
  uv_read_cb read_cb;
  const char *in; /* borrowed: ctx->rbuf during a read, or into `saved` */
  size_t in_len;
  char *saved; /* owned: unread ciphertext kept while the protocol paused */
  char *out;   /* owned: ciphertext not yet handed to the socket */
  size_t out_len, out_cap;
  char *wbuf;       /* owned: the ciphertext of the write in flight */
  uv_write_t wreq;  /* embedded: the one TLS write in flight */
  uv_write_t *preq; /* borrowed: the protocol's write, NULL when none */
  uv_write_cb pcb;
  uv_buf_t *pbufs; /* owned: copy of the protocol's array */
  unsigned pn, pi;
  size_t poff;
  int eof; /* the socket's end (a negative libuv code), 0 until then */
  unsigned reading : 1;     /* the protocol reads */
  unsigned tcp_reading : 1; /* the socket is read */
  unsigned hs_done : 1;     /* the handshake finished */
  unsigned writing : 1;     /* wreq is in flight */
  unsigned failed : 1;      /* a TLS error closed the connection */
  unsigned closed : 1;      /* nothing more may be written */
  unsigned deliver : 1;     /* input waits for the flusher */
  unsigned complete : 1;    /* preq is done: its callback waits */
};

static BIO_METHOD *bio_method; /* created once, lives as long as the process */

/* ---- the BIO --------------------------------------------------------------
 */

static int bio_write(BIO *b, const char *data, size_t len, size_t *written) {
  ifd_tls_conn_t *t = BIO_get_data(b);

  BIO_clear_retry_flags(b);
  if (t->out_cap - t->out_len < len) {
    size_t cap = t->out_cap != 0 ? t->out_cap * 2 : OUT_FIRST_CAP;
    char *p;
    while (cap - t->out_len < len) cap *= 2;
    p = realloc(t->out, cap);
    if (p == NULL) return 0;
    t->out = p;
    t->out_cap = cap;
  }
  memcpy(t->out + t->out_len, data, len);
  t->out_len += len;
  *written = len;
  return 1;
}

static int bio_read(BIO *b, char *data, size_t len, size_t *readbytes) {
  ifd_tls_conn_t *t = BIO_get_data(b);
  size_t n = len < t->in_len ? len : t->in_len;

  BIO_clear_retry_flags(b);
  if (n == 0) {
    BIO_set_retry_read(b);
    return 0;
  }
  memcpy(data, t->in, n);
  t->in += n;
  t->in_len -= n;
  *readbytes = n;
  return 1;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
  ifd_tls_conn_t *t = BIO_get_data(b);

  (void)num;
  (void)ptr;
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_PENDING:
      return t != NULL ? (long)t->in_len : 0;
    default:
      return 0;
  }
}

static int bio_create(BIO *b) {
  BIO_set_init(b, 1);
  return 1;
}

static int bio_destroy(BIO *b) {
  BIO_set_data(b, NULL);
  return 1;
}

static int bio_method_init(void) {
  BIO_METHOD *m;

  if (bio_method != NULL) return 0;
  m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "inferd");
  if (m == NULL || BIO_meth_set_write_ex(m, bio_write) != 1 ||
      BIO_meth_set_read_ex(m, bio_read) != 1 ||
      BIO_meth_set_ctrl(m, bio_ctrl) != 1 ||
      BIO_meth_set_create(m, bio_create) != 1 ||
      BIO_meth_set_destroy(m, bio_destroy) != 1) {
    BIO_meth_free(m);
    return IFD_ENOMEM;
  }
  bio_method = m;
  return 0;
}

/* ---- output -------------------------------------------------------------- */

static void on_cipher_write(uv_write_t *w, int status);
static int write_more(ifd_tls_conn_t *t, int from_callback);

static uv_stream_t *stream_of(ifd_tls_conn_t *t) {
  return (uv_stream_t *)&t->conn->tcp;
}

/* Hands `out` to the socket: what uv_try_write takes (when `may_try`), the
 * rest through wreq. Returns 0, or a libuv code (the output is dropped). */
static int send_out(ifd_tls_conn_t *t, int may_try) {
  uv_buf_t b;
  size_t done = 0;
  int w;

  if (t->writing || t->out_len == 0 || t->closed) return 0;
  b = uv_buf_init(t->out, (unsigned)t->out_len);
  if (may_try) {
    w = uv_try_write(stream_of(t), &b, 1);
    if (w < 0 && w != UV_EAGAIN) {
      t->out_len = 0;
      return w;
    }
    done = w > 0 ? (size_t)w : 0;
  }
  if (done == t->out_len) { /* all of it went: idle buffers are freed */
    free(t->out);
    t->out = NULL;
    t->out_len = t->out_cap = 0;
    return 0;
  }
  t->wbuf = t->out;
  b = uv_buf_init(t->out + done, (unsigned)(t->out_len - done));
  t->out = NULL;
  t->out_len = t->out_cap = 0;
  w = uv_write(&t->wreq, stream_of(t), &b, 1, on_cipher_write);
  if (w != 0) {
    free(t->wbuf);
    t->wbuf = NULL;
    return w;
  }
  t->writing = 1;
  return 0;
}

/* Logs what went wrong (with OpenSSL's reason, when it gave one), sends
 * what OpenSSL queued (the alert) and closes the connection after it. */
static void fail(ifd_tls_conn_t *t, const char *what) {
  unsigned long e = ERR_peek_last_error();
  char reason[256] = "";
  char peer[INET6_ADDRSTRLEN + 8] = "?";
  struct sockaddr_storage ss;
  int len = sizeof(ss);

  if (e != 0) ERR_error_string_n(e, reason, sizeof(reason));
  ERR_clear_error();
  if (uv_tcp_getpeername(&t->conn->tcp, (struct sockaddr *)&ss, &len) == 0) {
    if (ss.ss_family == AF_INET6) {
      uv_ip6_name((struct sockaddr_in6 *)&ss, peer, sizeof(peer));
    } else if (ss.ss_family == AF_INET) {
      uv_ip4_name((struct sockaddr_in *)&ss, peer, sizeof(peer));
    } else {
      snprintf(peer, sizeof(peer), "on a unix socket");
    }
  }
  IFD_INFO("%s: %s (client %s): %s", t->conn->set->proto->name, what, peer,
           reason[0] != '\0' ? reason : "connection error");
  t->failed = 1;
  (void)send_out(t, 0);
  t->closed = 1;
  ifd__conn_close(t->conn, 1);
}

/* Encrypts up to `limit` bytes of bufs[*pi] + *poff onward, gathering small
 * buffers into one record; advances (*pi, *poff). Returns the bytes taken,
 * or -1 (OpenSSL failed: its error queue says why). */
static ssize_t encrypt(ifd_tls_conn_t *t, const uv_buf_t *bufs, unsigned n,
                       unsigned *pi, size_t *poff, size_t limit) {
  char gather[GATHER_SIZE];
  size_t total = 0, g = 0, w;

  while (*pi < n && total + g < limit) {
    const uv_buf_t *b = &bufs[*pi];
    size_t left = b->len - *poff, room = limit - total - g, k;
    if (left > room) left = room;
    if (g == 0 && left >= GATHER_SIZE) { /* big: straight from the caller */
      if (SSL_write_ex(t->ssl, b->base + *poff, left, &w) != 1) return -1;
      total += w;
      *poff += w;
    } else if (left > 0) {
      k = left < GATHER_SIZE - g ? left : GATHER_SIZE - g;
      memcpy(gather + g, b->base + *poff, k);
      g += k;
      *poff += k;
      if (g == GATHER_SIZE) {
        if (SSL_write_ex(t->ssl, gather, g, &w) != 1) return -1;
        total += g;
        g = 0;
      }
    }
    if (*poff == b->len) {
      (*pi)++;
      *poff = 0;
    }
  }
  if (g != 0) {
    if (SSL_write_ex(t->ssl, gather, g, &w) != 1) return -1;
    total += g;
  }
  return (ssize_t)total;
}

/* Moves the protocol's write on: encrypts its next chunk once the previous
 * ciphertext is out, and calls its callback when everything is. Outside a
 * libuv callback (`from_callback` 0) the callback is left to the flusher,
 * so the protocol is never called back from inside its own write call.
 * Returns 0 or -1 (encryption failed; the caller decides what to close). */
static int write_more(ifd_tls_conn_t *t, int from_callback) {
  while (t->preq != NULL && !t->writing && t->hs_done && !t->closed) {
    if (t->pi == t->pn) {
      uv_write_t *req = t->preq;
      uv_write_cb cb = t->pcb;
      if (!from_callback) {
        t->complete = 1;
        ifd__conn_mark_dirty(t->conn);
        return 0;
      }
      t->preq = NULL;
      free(t->pbufs);
      t->pbufs = NULL;
      cb(req, 0);
      return 0;
    }
    if (encrypt(t, t->pbufs, t->pn, &t->pi, &t->poff, ENCRYPT_CHUNK) < 0)
      return -1;
    /* The last chunk goes through wreq too: its callback completes. */
    if (send_out(t, 0) != 0) return -1;
  }
  return 0;
}

static void on_cipher_write(uv_write_t *w, int status) {
  ifd_tls_conn_t *t = ifd_container_of(w, ifd_tls_conn_t, wreq);

  t->writing = 0;
  free(t->wbuf);
  t->wbuf = NULL;
  if (t->conn->closing) return;
  if (status < 0) {
    t->closed = 1;
    ifd__conn_close(t->conn, 0);
    return;
  }
  ERR_clear_error();
  if (send_out(t, 1) != 0 || write_more(t, 1) != 0) {
    if (!t->conn->closing) fail(t, "TLS write failed");
  }
}

/* ---- input --------------------------------------------------------------- */

/* After a read: ciphertext the protocol did not take yet (it stopped
 * reading) is copied out of the shared buffer; a drained copy is freed. */
static int keep_input(ifd_tls_conn_t *t) {
  char *p;

  if (t->in_len == 0) {
    free(t->saved);
    t->saved = NULL;
    t->in = NULL;
    return 0;
  }
  if (t->saved != NULL && t->in >= t->saved) return 0; /* already kept */
  p = malloc(t->in_len);
  if (p == NULL) return IFD_ENOMEM;
  memcpy(p, t->in, t->in_len);
  free(t->saved);
  t->saved = p;
  t->in = p;
  return 0;
}

/* Drives the handshake, then decrypts into the protocol's buffers for as
 * long as it reads; sends what OpenSSL produced meanwhile. */
static void pump(ifd_tls_conn_t *t) {
  ifd_conn_t *c = t->conn;
  uv_stream_t *st = stream_of(t);
  int r;

  if (c->closing || t->closed) return;
  ERR_clear_error();
  if (!t->hs_done) {
    r = SSL_do_handshake(t->ssl);
    if (r != 1) {
      if (SSL_get_error(t->ssl, r) != SSL_ERROR_WANT_READ) {
        fail(t, "TLS handshake failed");
        return;
      }
      if (send_out(t, 1) != 0) {
        t->closed = 1;
        ifd__conn_close(c, 0);
      } else if (t->eof != 0) { /* the client left during the handshake */
        IFD_VERBOSE("%s: TLS handshake: the client closed the connection",
                    c->set->proto->name);
        ifd__conn_close(c, 0);
      }
      return;
    }
    t->hs_done = 1;
    if (write_more(t, 1) != 0) {
      fail(t, "TLS write failed");
      return;
    }
  }
  while (t->reading && !c->closing) {
    uv_buf_t b = uv_buf_init(NULL, 0);
    size_t got = 0;
    int e;

    if (t->in_len == 0 && !SSL_has_pending(t->ssl) && t->eof == 0) break;
    t->alloc((uv_handle_t *)st, PLAIN_READ_SIZE, &b);
    if (b.base == NULL || b.len == 0) {
      t->read_cb(st, UV_ENOBUFS, &b);
      break;
    }
    r = SSL_read_ex(t->ssl, b.base, b.len, &got);
    if (r == 1) {
      t->read_cb(st, (ssize_t)got, &b);
      continue;
    }
    e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ) {
      t->read_cb(st, t->eof, &b); /* 0: nothing yet (libuv does the same) */
      break;
    }
    if (e == SSL_ERROR_ZERO_RETURN) { /* close_notify */
      t->read_cb(st, UV_EOF, &b);
      break;
    }
    t->read_cb(st, 0, &b);
    if (!c->closing) fail(t, "TLS read failed");
    return;
  }
  if (!c->closing && send_out(t, 1) != 0) {
    t->closed = 1;
    ifd__conn_close(c, 0);
    return;
  }
  /* Nothing buffered: the record buffers go (SSL_MODE_RELEASE_BUFFERS
   * frees them only after a read, not after the handshake). */
  if (t->in_len == 0 && !SSL_has_pending(t->ssl))
    (void)SSL_free_buffers(t->ssl);
}

static void on_tcp_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf) {
  ifd_conn_t *c = hd->data;

  (void)suggested;
  *buf = uv_buf_init(c->tls->ctx->rbuf, CIPHER_READ_SIZE);
}

static void on_tcp_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ifd_conn_t *c = st->data;
  ifd_tls_conn_t *t = c->tls;

  if (nread == 0) return;
  if (nread < 0) {
    t->eof = (int)nread;
    uv_read_stop(st);
    t->tcp_reading = 0;
    if (!t->hs_done || t->reading) {
      pump(t);
    }
    return;
  }
  t->in = buf->base;
  t->in_len = (size_t)nread;
  pump(t);
  if (keep_input(t) != 0 && !c->closing) {
    t->closed = 1;
    ifd__conn_close(c, 0);
  }
}

/* ---- the connection layer's hooks ----------------------------------------
 */

int ifd__tls_attach(ifd_conn_t *c, ifd_tls_ctx_t *ctx) {
  ifd_tls_conn_t *t = calloc(1, sizeof(*t));
  BIO *bio;

  if (t == NULL) return IFD_ENOMEM;
  t->ctx = ctx;
  t->conn = c;
  t->ssl = SSL_new(ctx->ssl_ctx);
  if (t->ssl == NULL) goto out_free;
  bio = BIO_new(bio_method);
  if (bio == NULL) goto out_free_ssl;
  BIO_set_data(bio, t);
  SSL_set_bio(t->ssl, bio, bio); /* one reference, taken by the SSL */
  SSL_set_accept_state(t->ssl);
  c->tls = t;
  return 0;

out_free_ssl:
  SSL_free(t->ssl);
out_free:
  ERR_clear_error();
  free(t);
  return IFD_ENOMEM;
}

int ifd__tls_read_start(ifd_conn_t *c, uv_alloc_cb alloc, uv_read_cb cb) {
  ifd_tls_conn_t *t = c->tls;
  int rc;

  t->alloc = alloc;
  t->read_cb = cb;
  t->reading = 1;
  if (!t->tcp_reading && t->eof == 0) {
    rc = uv_read_start((uv_stream_t *)&c->tcp, on_tcp_alloc, on_tcp_read);
    if (rc != 0) return rc;
    t->tcp_reading = 1;
  }
  if (t->in_len != 0 || t->eof != 0 || SSL_has_pending(t->ssl)) {
    t->deliver = 1;
    ifd__conn_mark_dirty(c);
  }
  return 0;
}

void ifd__tls_read_stop(ifd_conn_t *c) {
  ifd_tls_conn_t *t = c->tls;

  t->reading = 0;
  if (t->tcp_reading) {
    uv_read_stop((uv_stream_t *)&c->tcp);
    t->tcp_reading = 0;
  }
}

int ifd__tls_try_write(ifd_conn_t *c, const uv_buf_t *bufs, unsigned n) {
  ifd_tls_conn_t *t = c->tls;
  unsigned pi = 0;
  size_t poff = 0;
  ssize_t taken;
  int rc;

  if (t->closed) return UV_EPIPE;
  if (!t->hs_done || t->writing || t->out_len != 0 || t->preq != NULL)
    return UV_EAGAIN;
  ERR_clear_error();
  taken = encrypt(t, bufs, n, &pi, &poff, ENCRYPT_CHUNK);
  if (taken < 0) {
    ERR_clear_error();
    return UV_EPROTO;
  }
  rc = send_out(t, 1);
  if (rc != 0) return rc;
  return (int)taken;
}

int ifd__tls_write(ifd_conn_t *c, uv_write_t *req, const uv_buf_t *bufs,
                   unsigned n, uv_write_cb cb) {
  ifd_tls_conn_t *t = c->tls;

  if (t->closed) return UV_EPIPE;
  if (t->preq != NULL) return UV_EBUSY;
  t->pbufs = malloc((n != 0 ? n : 1) * sizeof(uv_buf_t));
  if (t->pbufs == NULL) return UV_ENOMEM;
  memcpy(t->pbufs, bufs, n * sizeof(uv_buf_t));
  t->pn = n;
  t->pi = 0;
  t->poff = 0;
  t->preq = req;
  t->pcb = cb;
  ERR_clear_error();
  if (write_more(t, 0) != 0) {
    ERR_clear_error();
    t->preq = NULL;
    free(t->pbufs);
    t->pbufs = NULL;
    return UV_EPROTO;
  }
  return 0;
}

size_t ifd__tls_queued_bytes(const ifd_conn_t *c) {
  const ifd_tls_conn_t *t = c->tls;
  size_t n = t->out_len;
  unsigned i;

  if (t->preq != NULL) {
    for (i = t->pi; i < t->pn; i++) n += t->pbufs[i].len;
    n -= t->poff;
  }
  return n;
}

void ifd__tls_prepare(ifd_conn_t *c) {
  ifd_tls_conn_t *t = c->tls;

  /* Shutting down: a connection still in its handshake has no request to
   * finish, and what the protocol queued (gRPC's SETTINGS and GOAWAY) could
   * only go out once the client finishes it. Closed now, it does not hold
   * the shutdown until the deadline. */
  if (c->stopping && !t->hs_done) {
    t->closed = 1;
    ifd__conn_close(c, 0);
    return;
  }

  if (t->complete) {
    t->complete = 0;
    if (write_more(t, 1) != 0) {
      fail(t, "TLS write failed");
      return;
    }
  }
  if (t->deliver && !c->closing) {
    t->deliver = 0;
    if (t->eof != 0 && t->hs_done && t->in_len == 0 &&
        !SSL_has_pending(t->ssl)) {
      uv_buf_t b = uv_buf_init(NULL, 0);
      t->read_cb((uv_stream_t *)&c->tcp, t->eof, &b);
      return;
    }
    pump(t);
    if (keep_input(t) != 0 && !c->closing) {
      t->closed = 1;
      ifd__conn_close(c, 0);
    }
  }
}

void ifd__tls_close(ifd_conn_t *c, int graceful) {
  ifd_tls_conn_t *t = c->tls;

  if (graceful && t->hs_done && !t->closed && !t->writing && t->out_len == 0) {
    ERR_clear_error();
    (void)SSL_shutdown(t->ssl); /* queues close_notify */
    ERR_clear_error();
    (void)send_out(t, 1);
  }
  t->closed = 1;
}

void ifd__tls_free(ifd_conn_t *c) {
  ifd_tls_conn_t *t = c->tls;

  if (t == NULL) return;
  if (t->preq != NULL) {
    uv_write_t *req = t->preq;
    t->preq = NULL;
    t->pcb(req, UV_ECANCELED);
  }
  free(t->pbufs);
  SSL_free(t->ssl);
  free(t->out);
  free(t->wbuf);
  free(t->saved);
  free(t);
  c->tls = NULL;
}

/* ---- contexts -------------------------------------------------------------
 */

static int alpn_select(SSL *ssl, const unsigned char **out,
                       unsigned char *outlen, const unsigned char *in,
                       unsigned inlen, void *arg) {
  static const unsigned char h2[] = "\x02h2";
  static const unsigned char h1[] = "\x08http/1.1";
  const ifd_tls_ctx_t *ctx = arg;
  int want_h2 = ctx->alpn == IFD_TLS_ALPN_H2;
  unsigned char *sel = NULL;

  (void)ssl;
  if (SSL_select_next_proto(&sel, outlen, want_h2 ? h2 : h1,
                            want_h2 ? sizeof(h2) - 1 : sizeof(h1) - 1, in,
                            inlen) == OPENSSL_NPN_NEGOTIATED) {
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
  }
  /* gRPC needs HTTP/2: a client that asks for something else is refused
   * (no_application_protocol); HTTPS just goes on without ALPN. */
  return want_h2 ? SSL_TLSEXT_ERR_ALERT_FATAL : SSL_TLSEXT_ERR_NOACK;
}

/* OpenSSL's reason for the last failure, and an empty error queue. */
static const char *ssl_reason(char *buf, size_t n) {
  unsigned long e = ERR_peek_last_error();

  buf[0] = '\0';
  if (e != 0) ERR_error_string_n(e, buf, n);
  ERR_clear_error();
  return buf[0] != '\0' ? buf : "unknown error";
}

/* A clear message for a file that cannot be opened, before OpenSSL's. */
static int check_file(const char *flag, const char *path, ifd_errmsg_t *err) {
  FILE *f;

  if (path == NULL || path[0] == '\0')
    return ifd_errf(err, IFD_EINVAL, "%s is required (a PEM file)", flag);
  f = fopen(path, "r");
  if (f == NULL)
    return ifd_errf(err, IFD_EINVAL, "cannot read %s file '%s': %s", flag, path,
                    strerror(errno));
  fclose(f);
  return 0;
}

int ifd_tls_ctx_new(const ifd_tls_opts_t *o, ifd_tls_ctx_t **out,
                    ifd_errmsg_t *err) {
  static const unsigned char sid_ctx[] = "inferd";
  ifd_tls_ctx_t *ctx;
  SSL_CTX *sc;
  char why[256];
  int rc;

  if ((rc = check_file(o->cert_flag, o->cert_file, err)) != 0 ||
      (rc = check_file(o->key_flag, o->key_file, err)) != 0)
    return rc;
  if (o->verify_client && (o->ca_file == NULL || o->ca_file[0] == '\0'))
    return ifd_errf(err, IFD_EINVAL,
                    "client certificate verification needs %s (the root "
                    "certificate client certificates must chain to)",
                    o->ca_flag);
  if (o->verify_client && (rc = check_file(o->ca_flag, o->ca_file, err)) != 0)
    return rc;
  if (bio_method_init() != 0) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  ctx = calloc(1, sizeof(*ctx));
  if (ctx == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  ctx->alpn = o->alpn;
  sc = ctx->ssl_ctx = SSL_CTX_new(TLS_server_method());
  if (sc == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "cannot create a TLS context: %s",
                  ssl_reason(why, sizeof(why)));
    goto out_free;
  }
  SSL_CTX_set_min_proto_version(sc, TLS1_2_VERSION);
  SSL_CTX_set_options(sc, SSL_OP_NO_RENEGOTIATION |
                              SSL_OP_CIPHER_SERVER_PREFERENCE |
                              SSL_OP_NO_COMPRESSION);
  /* Idle connections give their record buffers back. */
  SSL_CTX_set_mode(sc, SSL_MODE_RELEASE_BUFFERS);
  /* Resumption through tickets only: no server-side session cache. */
  SSL_CTX_set_session_cache_mode(sc, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_session_id_context(sc, sid_ctx, sizeof(sid_ctx) - 1);
  if (SSL_CTX_use_certificate_chain_file(sc, o->cert_file) != 1) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "%s: cannot load a PEM certificate from '%s': %s",
                  o->cert_flag, o->cert_file, ssl_reason(why, sizeof(why)));
    goto out_free_ctx;
  }
  if (SSL_CTX_use_PrivateKey_file(sc, o->key_file, SSL_FILETYPE_PEM) != 1) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "%s: cannot load a PEM private key from '%s' (or it does "
                  "not match the certificate in '%s'): %s",
                  o->key_flag, o->key_file, o->cert_file,
                  ssl_reason(why, sizeof(why)));
    goto out_free_ctx;
  }
  if (SSL_CTX_check_private_key(sc) != 1) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "the private key in '%s' (%s) does not match the "
                  "certificate in '%s' (%s): %s",
                  o->key_file, o->key_flag, o->cert_file, o->cert_flag,
                  ssl_reason(why, sizeof(why)));
    goto out_free_ctx;
  }
  if (o->verify_client) {
    STACK_OF(X509_NAME) * names;
    if (SSL_CTX_load_verify_locations(sc, o->ca_file, NULL) != 1 ||
        (names = SSL_load_client_CA_file(o->ca_file)) == NULL) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "%s: cannot load a PEM root certificate from '%s': %s",
                    o->ca_flag, o->ca_file, ssl_reason(why, sizeof(why)));
      goto out_free_ctx;
    }
    SSL_CTX_set_client_CA_list(sc, names);
    SSL_CTX_set_verify(sc, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       NULL);
  }
  SSL_CTX_set_alpn_select_cb(sc, alpn_select, ctx);
  *out = ctx;
  return 0;

out_free_ctx:
  SSL_CTX_free(sc);
out_free:
  free(ctx);
  return rc;
}

void ifd_tls_ctx_free(ifd_tls_ctx_t *ctx) {
  if (ctx == NULL) return;
  SSL_CTX_free(ctx->ssl_ctx);
  free(ctx);
}
