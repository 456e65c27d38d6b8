/*
 * net/tls.h - TLS for the connection layer: OpenSSL driven on the loop
 * through a memory BIO, with no blocking call and no thread.
 *
 * A front end that serves TLS gets an ifd_tls_ctx_t, built at start-up
 * (certificate and key files are read then, before the loop runs), and puts
 * it in its ifd_conn_set_t (set->tls). Every connection accepted on that set
 * gets its own TLS state (c->tls), and net/conn.c routes the protocol's
 * reads and writes through it: ciphertext read from the socket is decrypted
 * and handed to the protocol's read callback as if it came from the socket;
 * what the protocol writes (ifd__conn_try_write / ifd__conn_write) is
 * encrypted and written. The handshake is driven by the reads. Connections
 * of plain listeners carry only a NULL pointer.
 *
 * A failed handshake or a bad record is logged (verbose) and closes that
 * connection only, after the alert is sent.
 */
#ifndef IFD_NET_TLS_H
#define IFD_NET_TLS_H

#include <uv.h>

#include "base/error.h"

typedef struct ifd_tls_ctx ifd_tls_ctx_t;
typedef struct ifd_tls_conn ifd_tls_conn_t;
struct ifd_conn;

/** The application protocol a listener offers through ALPN. */
typedef enum ifd_tls_alpn {
  /* HTTP/1.1: "http/1.1" when the client offers it, else no ALPN. */
  IFD_TLS_ALPN_HTTP1 = 1,
  /* gRPC: "h2"; a client that offers ALPN without "h2" is refused (gRPC
   * clients require it). A client that offers no ALPN is served. */
  IFD_TLS_ALPN_H2 = 2,
} ifd_tls_alpn_t;

typedef struct ifd_tls_opts {
  const char *cert_file; /* borrowed: PEM certificate (chain), required */
  const char *key_file;  /* borrowed: PEM private key, required */
  /* borrowed: PEM root certificate(s) the client's certificate must chain
   * to; required with verify_client, ignored without. */
  const char *ca_file;
  int verify_client; /* require and verify a client certificate */
  ifd_tls_alpn_t alpn;
  /* Flag names for messages ("--grpc-server-cert"); borrowed: static. */
  const char *cert_flag, *key_flag, *ca_flag;
} ifd_tls_opts_t;

/**
 * Builds a server TLS context (TLS 1.2 and 1.3): reads the certificate, the
 * key (and the root certificate with verify_client) now, with blocking file
 * I/O, so call it before the loop runs. Returns 0 and *out (owned by the
 * caller: ifd_tls_ctx_free once every front end using it has stopped), or
 * IFD_EINVAL with a message naming the flag and the file (missing,
 * unreadable, not PEM, a key that does not match the certificate), or
 * IFD_ENOMEM.
 */
int ifd_tls_ctx_new(const ifd_tls_opts_t *opts, ifd_tls_ctx_t **out,
                    ifd_errmsg_t *err);

/** Frees a context (NULL: nothing). No connection may still use it. */
void ifd_tls_ctx_free(ifd_tls_ctx_t *ctx);

/* ---- for net/conn.c only ----------------------------------------------- */

/** Gives the accepted connection `c` its TLS state (c->tls, owned by `c`).
 *  Returns 0 or IFD_ENOMEM (then c->tls stays NULL). */
int ifd__tls_attach(struct ifd_conn *c, ifd_tls_ctx_t *ctx);

/** The protocol starts reading: decrypted bytes go to `cb` through buffers
 *  from `alloc`, as libuv would hand them. Returns 0 or a libuv code. */
int ifd__tls_read_start(struct ifd_conn *c, uv_alloc_cb alloc, uv_read_cb cb);
void ifd__tls_read_stop(struct ifd_conn *c);

/** uv_try_write for a TLS connection: encrypts a prefix of `bufs` and
 *  returns how many plaintext bytes it took (the caller may reuse them at
 *  once), or UV_EAGAIN (nothing taken: the handshake is not done, or
 *  earlier output is still going out), or a negative libuv code. */
int ifd__tls_try_write(struct ifd_conn *c, const uv_buf_t *bufs, unsigned n);

/** uv_write for a TLS connection: `bufs` (the array is copied; the bytes
 *  must live until `cb`) are encrypted and written as the socket takes
 *  them; `cb(req, status)` runs once all are out, or with UV_ECANCELED when
 *  the connection closes first (before the protocol's on_free). One such
 *  write at a time. Returns 0, or a negative libuv code (cb will not run). */
int ifd__tls_write(struct ifd_conn *c, uv_write_t *req, const uv_buf_t *bufs,
                   unsigned n, uv_write_cb cb);

/** Bytes the TLS layer holds for the socket: ciphertext not yet handed to
 *  libuv and the protocol's plaintext not yet encrypted. */
size_t ifd__tls_queued_bytes(const struct ifd_conn *c);

/** From the connection set's flusher, before the protocol's on_flush:
 *  delivers decrypted input that waited while the protocol was not
 *  reading; closes a connection still in its handshake once a shutdown
 *  phase reached it (c->stopping). */
void ifd__tls_prepare(struct ifd_conn *c);

/** ifd__conn_close began: with `graceful`, queues close_notify when no
 *  ciphertext is going out. */
void ifd__tls_close(struct ifd_conn *c, int graceful);

/** Every handle of `c` is closed: cancels the protocol's pending write (its
 *  callback runs with UV_ECANCELED) and frees c->tls. */
void ifd__tls_free(struct ifd_conn *c);

#endif
