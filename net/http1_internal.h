/*
 * net/http1_internal.h - what the two halves of the HTTP/1.1 transport
 * share: net/http1.c (connections, reading, llhttp's callbacks, start and
 * stop) and net/http1_write.c (response slots, streamed answers, the
 * FIFO's writes). Nothing outside the transport includes it.
 */
#ifndef IFD_NET_HTTP1_INTERNAL_H
#define IFD_NET_HTTP1_INTERNAL_H

#include <llhttp.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "net/conn.h"
#include "net/forward.h"
#include "net/http1.h"
#include "net/restrict.h"

#define READ_BUF_SIZE 65536

/* The set's timeout queues (net/conn.h). */
enum { TQ_HEADER = 0, TQ_BODY = 1, TQ_IDLE = 2, TQ_LINGER = 3 };
/* How long a connection answered with an error mid-request reads on (and
 * discards) after its FIN, so that a client still sending reads the answer
 * rather than a reset. */
#define LINGER_MS 2000
/* The most iovecs one write takes. */
#define MAX_WRITE_IOV 1024

struct ifd_http1 {
  ifd_conn_set_t set; /* embedded, first: listener and connections */
  uv_loop_t *loop;    /* borrowed */
  const ifd_http1_handlers_t *handlers; /* borrowed: the application's */
  void *app;                            /* borrowed: the application's */
  llhttp_settings_t settings;
  uint64_t max_input_size;
  uint64_t body_prealloc_max; /* bodies up to this are allocated whole */
  uint32_t max_header_bytes;  /* request line and headers */
  uint32_t max_headers;       /* header fields per request */
  unsigned max_pipeline;      /* requests queued before reading stops */
  const ifd_restrict_t *restrict_api; /* borrowed: outlives the transport;
                                         NULL when nothing is restricted */
  const ifd_fwd_re_t *fwd_re; /* borrowed: --http-header-forward-pattern, or
                            NULL */
  int cloud_headers;          /* fill msg->cloud */
  unsigned retry_after_secs;  /* a 429's Retry-After; 0: none */
  void (*done)(void *arg);
  void *done_arg;           /* borrowed: the caller's */
  char rbuf[READ_BUF_SIZE]; /* shared read buffer (see net/http1.c) */
};

struct ifd_http1_conn {
  ifd_conn_t base; /* embedded, first: socket, timer, lists, closing */
  uv_write_t wreq; /* embedded: the one write in flight */
  ifd_http1_t *h;  /* borrowed: outlives the connection */
  llhttp_t parser;
  ifd_http1_slot_t *head; /* owned: response FIFO, oldest first */
  ifd_http1_slot_t *tail; /* borrowed: last of the FIFO */
  unsigned n_slots;
  unsigned n_writing; /* slots at the head inside the write in flight */

  /* The message being parsed. */
  char *url; /* owned when != url_inline */
  size_t url_len, url_cap;
  char hname[40]; /* header name, lower-cased; hname_len > size: ignored */
  size_t hname_len;
  char hval[24]; /* value of a header we want; hval_len > size: too long */
  size_t hval_len;
  uint64_t header_len; /* Inference-Header-Content-Length */
  char *pending;       /* owned: bytes read but not parsed (pipeline pause) */
  size_t pending_len;
  size_t body_mark;   /* body_len when the body clock last restarted */
  uint32_t hdr_bytes; /* request line and header bytes so far */
  uint32_t n_headers; /* header fields so far */
  uint32_t msg_seq;   /* messages begun (see feed) */
  char *body;         /* owned (shared bufpool); NULL until needed */
  size_t body_len, body_cap;
  size_t body_need; /* Content-Length; 0 for none or chunked */
  uint64_t t_begin;
  unsigned has_header_len : 1, expect_continue : 1, chunked : 1;
  ifd_restrict_scan_t rscan;    /* --http-restricted-api headers seen */
  ifd_fwd_buf_t fwd;            /* headers to forward (h->fwd_re); owned */
  ifd_http_cloud_hdrs_t *cloud; /* owned: headers a cloud endpoint reads
                                   (h->cloud_headers); NULL until the first
                                   one */

  unsigned no_more : 1;     /* parse no further requests */
  unsigned stopping : 1;    /* ifd_http1_stop: close once the FIFO drains */
  unsigned read_paused : 1; /* stopped reading for backpressure */
  unsigned error_sent : 1;  /* an error slot ends the FIFO */
  unsigned in_headers : 1;  /* a message began; its headers are not done */
  unsigned in_body : 1;     /* its headers are done; its body is not */
  char url_inline[256];
};

/* A static answer for a slot whose own could not be allocated. */
extern const char ifd__http1_oom_response[];
extern const size_t ifd__http1_oom_response_len;

/* ---- net/http1_write.c --------------------------------------------------- */

/** Appends a new zeroed slot (the application's size) to c's FIFO; NULL
 *  when out of memory. */
ifd_http1_slot_t *ifd__http1_slot_push(ifd_http1_conn_t *c);
/** Completes `s` with the `n` bytes of static `text` (not copied). */
void ifd__http1_slot_static(ifd_http1_slot_t *s, const char *text, size_t n);
/** Completes `s` with {"error": msg} and `status` (application/json). */
void ifd__http1_slot_error(ifd_http1_slot_t *s, int status, const char *msg);
/** The connection layer's flusher: writes c's ready slots (net/conn.h). */
void ifd__http1_on_flush(ifd_conn_t *base);

/* ---- net/http1.c --------------------------------------------------------- */

/** Closes now, or after a FIN (graceful: the last response is out). */
void ifd__http1_close(ifd_http1_conn_t *c, int graceful);
/** Starts reading again (net/http1.c's alloc and read callbacks). */
void ifd__http1_read_start(ifd_http1_conn_t *c);

#endif
