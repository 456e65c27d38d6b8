/*
 * backend_api/backends/python/proc.c - a stub's life: spawn (the process
 * itself: spawn.c), the reader thread, restart, and the calls of the
 * instance thread.
 *
 * The instance thread sends INIT (through launch()), EXECUTE and FINALIZE.
 * One thread at a time reads the socket: the holder of rmu, which
 * dispatches every message (answers to the waiting call; RESPONSE,
 * BLS_INFER, LOG, CANCEL_QUERY, METRIC, FREE served at once). Mostly that
 * is the reader thread, through its epoll set. During an EXECUTE the
 * instance thread takes the socket out of that set (epoll_ctl: no wake-up)
 * and reads it itself until the answer, so a result costs no hop between
 * threads, and BLS calls made by the execute go out on the instance thread
 * with its call chain (the server's BLS deadlock rule). The reader thread
 * also writes the BLS answers the server's loop queued on the channel (the
 * loop never blocks on a stub); it never waits for rmu, so those flow
 * while an execute reads. Writes go under wmu. Neither reader waits on a
 * write of the stub's side, as ipc.h requires.
 *
 * A stub that dies (EOF): every open request fails with "stub process for
 * model 'm' instance 'i' exited unexpectedly (...); it is restarted", the
 * instance is marked not ready, its DOWN blocks and metrics go, and the
 * thread that read the EOF starts a new stub at once (INIT again, whose
 * answer the reader thread reads); the instance is ready
 * again on INIT_OK. Execute waits for the restart meanwhile. A stub that
 * dies during INIT, or whose INIT fails, is not restarted in a loop: the
 * instance is FAILED and the next execute tries once more, failing its
 * requests with the reason when that fails too.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* How long finalize waits for the model's finalize, and a restart for the
 * reap of a stub that closed its socket. */
#define FINALIZE_WAIT_MS 30000
#define EXIT_WAIT_MS 1000
/* The read buffer: small messages come in one recv each. */
#define RBUF_SIZE (64 * 1024)
/* Longest payload accepted from a stub (BLS inputs and RESPONSE data
 * travel inline, so this is the largest such message). */
#define MAX_PAYLOAD ((uint64_t)4 << 30)

/* ---- the channel ------------------------------------------------------------
 */

static ifd__py_chan_t *chan_new(void) {
  ifd__py_chan_t *c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  c->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (c->evfd < 0) {
    free(c);
    return NULL;
  }
  pthread_mutex_init(&c->mu, NULL);
  c->refs = 1;
  c->alive = true;
  return c;
}

void ifd__py_chan_wake(ifd__py_chan_t *c) {
  uint64_t one = 1;
  ssize_t w;
  do w = write(c->evfd, &one, sizeof(one));
  while (w < 0 && errno == EINTR);
}

void ifd__py_item_free(ifd__py_item_t *it) {
  if (it == NULL) return;
  if (it->resp != NULL)
    ifd__py_log_error(TRITONSERVER_InferenceResponseDelete(it->resp),
                      "cannot delete a BLS response");
  free(it->msg);
  free(it);
}

int ifd__py_chan_push(ifd__py_chan_t *c, ifd__py_item_t *it) {
  bool wake = false, ok = false;
  it->next = NULL;
  pthread_mutex_lock(&c->mu);
  if (c->alive) {
    wake = c->head == NULL;
    if (c->tail != NULL)
      c->tail->next = it;
    else
      c->head = it;
    c->tail = it;
    ok = true;
  }
  pthread_mutex_unlock(&c->mu);
  if (wake) ifd__py_chan_wake(c);
  return ok ? 0 : -1;
}

/* Deletes queued answers (nobody will write them). */
static void chan_drop_queue(ifd__py_chan_t *c) {
  ifd__py_item_t *it = c->head;
  c->head = c->tail = NULL;
  while (it != NULL) {
    ifd__py_item_t *next = it->next;
    ifd__py_item_free(it);
    it = next;
  }
}

void ifd__py_chan_put(ifd__py_chan_t *c) {
  pthread_mutex_lock(&c->mu);
  int refs = --c->refs;
  pthread_mutex_unlock(&c->mu);
  if (refs > 0) return;
  chan_drop_queue(c);
  close(c->evfd);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

/* ---- spawn and reap ---------------------------------------------------------
 */

/* Starts the instance's stub; sets pid and sock (under mu and wmu). 0, or
 * -1 with the reason in in->fail_msg. */
static int spawn(ifd__py_instance_t *in) {
  char msg[256];
  pid_t pid = 0;
  int sock = -1;
  if (ifd__py_spawn(in->stub_path, in->backend_dir, in->model_name,
                    in->inst_name, in->model->env_dir, in->down_fd, in->up_fd,
                    &pid, &sock, msg, sizeof(msg)) != 0) {
    pthread_mutex_lock(&in->mu);
    snprintf(in->fail_msg, sizeof(in->fail_msg), "%s", msg);
    pthread_mutex_unlock(&in->mu);
    return -1;
  }
  pthread_mutex_lock(&in->mu);
  pthread_mutex_lock(&in->wmu);
  in->pid = pid;
  in->sock = sock;
  pthread_mutex_unlock(&in->wmu);
  pthread_mutex_unlock(&in->mu);
  return 0;
}

/* Spawns a stub and sends INIT; the answer reaches answer(). On a spawn
 * failure the instance is FAILED. */
static void launch(ifd__py_instance_t *in) {
  if (spawn(in) != 0) {
    pthread_mutex_lock(&in->mu);
    in->state = IFD_PY_FAILED;
    pthread_cond_broadcast(&in->cv);
    pthread_mutex_unlock(&in->mu);
    return;
  }
  pthread_mutex_lock(&in->mu);
  in->state = IFD_PY_STARTING;
  in->init_id = ++in->next_id;
  uint32_t id = in->init_id;
  pthread_mutex_unlock(&in->mu);
  /* A failed write means the stub died: its EOF reaches the reader. */
  ifd__py_send_now(in, IFD_PY_MSG_INIT, id, in->args_json,
                   strlen(in->args_json));
}

/* The stub is gone or must go. `reason`: why (INIT failed; in->fail_msg
 * already says so), NULL for EOF. Runs on whichever thread reads (rmu
 * held). */
static void stub_down(ifd__py_instance_t *in, const char *reason) {
  char how[64], msg[512];
  pthread_mutex_lock(&in->mu);
  ifd__py_state_t was = in->state;
  uint32_t old_gen = in->gen;
  pthread_mutex_lock(&in->wmu);
  int old_sock = in->sock;
  in->sock = -1;
  in->gen++;
  pthread_mutex_unlock(&in->wmu);
  /* (rmu held:) the old stub's bytes and registration go with it; the fd
   * number may come back for the next stub's socket. */
  if (in->reg_fd >= 0) epoll_ctl(in->epfd, EPOLL_CTL_DEL, in->reg_fd, NULL);
  in->reg_fd = -1;
  in->rpos = in->rlen = 0;
  if (in->wait_id != 0 && !in->wait_done) in->wait_died = true;
  pthread_cond_broadcast(&in->cv);
  if (was == IFD_PY_STOPPING) {
    /* Finalize reaps it. */
    pthread_mutex_unlock(&in->mu);
    if (old_sock >= 0) close(old_sock);
    return;
  }
  pid_t pid = in->pid;
  in->pid = 0;
  size_t n = 0;
  ifd__py_open_t *o = ifd__py_claim(in, 0, &n);
  bool restart = was == IFD_PY_READY && in->ever_ready && reason == NULL;
  in->state = restart ? IFD_PY_STARTING : IFD_PY_FAILED;
  pthread_mutex_unlock(&in->mu);

  if (old_sock >= 0) close(old_sock);
  if (was == IFD_PY_READY) ifd__py_set_ready(in, false);
  ifd__py_reap(pid, reason != NULL ? 0 : EXIT_WAIT_MS, how, sizeof(how));
  if (reason == NULL && was == IFD_PY_STARTING)
    snprintf(msg, sizeof(msg),
             "stub process for model '%s' instance '%s' exited unexpectedly "
             "during initialize (%s)",
             in->model_name, in->inst_name, how);
  else
    snprintf(msg, sizeof(msg),
             "stub process for model '%s' instance '%s' exited unexpectedly "
             "(%s); it is restarted",
             in->model_name, in->inst_name, how);
  if (reason == NULL) {
    IFD_PY_LOG(TRITONSERVER_LOG_ERROR, "%s", msg);
    if (!restart) {
      pthread_mutex_lock(&in->mu);
      snprintf(in->fail_msg, sizeof(in->fail_msg), "%s", msg);
      pthread_cond_broadcast(&in->cv);
      pthread_mutex_unlock(&in->mu);
    }
  }
  ifd__py_fail_claimed(in, o, n, TRITONSERVER_ERROR_INTERNAL, msg);
  free(o);
  ifd__py_down_free_gen(&in->down, old_gen);
  ifd__py_metrics_clear(in);
  if (restart) launch(in);
}

/* ---- the reader -------------------------------------------------------------
 */

TRITONSERVER_Error *ifd__py_error_payload(ifd__py_instance_t *in, const char *p,
                                          size_t len) {
  ifd__py_rd_t r = {p, p, p + len};
  const char *msg = "";
  uint32_t mlen = 0;
  if (ifd__py_rd_str(&r, &msg, &mlen) != 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "malformed error from the stub");
  IFD_PY_LOG(TRITONSERVER_LOG_ERROR,
             "python model '%s' instance '%s': %.*s%s%.*s", in->model_name,
             in->inst_name, (int)mlen, msg, r.end > r.p ? "\n" : "",
             (int)(r.end - r.p), r.p);
  char *m = strndup(msg, mlen);
  TRITONSERVER_Error *err = TRITONSERVER_ErrorNew(
      TRITONSERVER_ERROR_INTERNAL, m != NULL ? m : "out of memory");
  free(m);
  return err;
}

/* An answer to INIT (STARTING) or to the waiter's call. Takes payload. */
static void answer(ifd__py_instance_t *in, ifd_py_hdr_t *h, char *payload) {
  pthread_mutex_lock(&in->mu);
  if (in->state == IFD_PY_STARTING && h->id == in->init_id) {
    if (h->type == IFD_PY_MSG_INIT_OK) {
      in->state = IFD_PY_READY;
      in->ever_ready = true;
      pthread_cond_broadcast(&in->cv);
      pthread_mutex_unlock(&in->mu);
      free(payload);
      ifd__py_set_ready(in, true);
      return;
    }
    pthread_mutex_unlock(&in->mu);
    TRITONSERVER_Error *err =
        h->type == IFD_PY_MSG_ERROR
            ? ifd__py_error_payload(in, payload, h->length)
            : ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL,
                             "unexpected stub message %u answering INIT",
                             (unsigned)h->type);
    free(payload);
    pthread_mutex_lock(&in->mu);
    snprintf(in->fail_msg, sizeof(in->fail_msg), "%s",
             TRITONSERVER_ErrorMessage(err));
    pthread_mutex_unlock(&in->mu);
    TRITONSERVER_ErrorDelete(err);
    stub_down(in, "initialize failed");
    return;
  }
  if (in->wait_id != 0 && h->id == in->wait_id && !in->wait_done &&
      !in->wait_died) {
    in->wait_hdr = *h;
    in->wait_payload = payload;
    in->wait_done = true;
    pthread_cond_broadcast(&in->cv);
    pthread_mutex_unlock(&in->mu);
    return;
  }
  pthread_mutex_unlock(&in->mu);
  IFD_PY_LOG(TRITONSERVER_LOG_WARN,
             "python model '%s': unexpected stub message %u (id %u) dropped",
             in->model_name, (unsigned)h->type, (unsigned)h->id);
  free(payload);
}

static void on_free(ifd__py_instance_t *in, const char *p, size_t len) {
  for (size_t i = 0; i + 8 <= len; i += 8) {
    uint64_t off;
    memcpy(&off, p + i, 8);
    if (ifd__py_down_free(&in->down, off) != 0)
      IFD_PY_LOG(TRITONSERVER_LOG_WARN,
                 "python model '%s': FREE of unknown block %llu",
                 in->model_name, (unsigned long long)off);
  }
}

/* A BLS_INFER: for the instance thread while it waits in an execute, else
 * sent from here. Takes payload. */
static void bls_dispatch(ifd__py_instance_t *in, uint32_t id, char *payload,
                         size_t len) {
  ifd__py_bls_req_t *q = calloc(1, sizeof(*q));
  pthread_mutex_lock(&in->mu);
  if (in->exec_wait && q != NULL) {
    q->id = id;
    q->gen = in->gen;
    q->payload = payload;
    q->len = len;
    if (in->bls_tail != NULL)
      in->bls_tail->next = q;
    else
      in->bls_head = q;
    in->bls_tail = q;
    pthread_cond_broadcast(&in->cv);
    pthread_mutex_unlock(&in->mu);
    return;
  }
  pthread_mutex_unlock(&in->mu);
  free(q);
  ifd__py_bls_infer(in, id, payload, len);
}

static void dispatch(ifd__py_instance_t *in, ifd_py_hdr_t *h, char *payload) {
  size_t len = (size_t)h->length;
  switch (h->type) {
    case IFD_PY_MSG_INIT_OK:
    case IFD_PY_MSG_ERROR:
    case IFD_PY_MSG_RESULT:
    case IFD_PY_MSG_EXECUTE_DONE:
    case IFD_PY_MSG_FINALIZE_OK:
    case IFD_PY_MSG_AUTO_COMPLETE_OK:
      answer(in, h, payload);
      return;
    case IFD_PY_MSG_RESPONSE:
      ifd__py_on_response(in, payload, len);
      break;
    case IFD_PY_MSG_BLS_INFER:
      bls_dispatch(in, h->id, payload, len);
      return;
    case IFD_PY_MSG_LOG:
      ifd__py_on_log(in, payload, len);
      break;
    case IFD_PY_MSG_CANCEL_QUERY:
      ifd__py_on_cancel_query(in, h->id, payload, len);
      break;
    case IFD_PY_MSG_METRIC:
      ifd__py_on_metric(in, h->id, payload, len);
      break;
    case IFD_PY_MSG_RELEASE:
      ifd__py_on_release(in, payload, len);
      break;
    case IFD_PY_MSG_MODEL_CONTROL:
      ifd__py_on_model_control(in, h->id, payload, len);
      return;
    case IFD_PY_MSG_FREE:
      on_free(in, payload, len);
      break;
    default:
      IFD_PY_LOG(TRITONSERVER_LOG_WARN,
                 "python model '%s': unknown stub message %u dropped",
                 in->model_name, (unsigned)h->type);
  }
  free(payload);
}

/* Reads what the socket has into rbuf without blocking. 1: bytes came, 0:
 * none yet, -EPIPE: EOF or error. */
static int fill(ifd__py_instance_t *in) {
  if (in->rpos > 0) {
    memmove(in->rbuf, in->rbuf + in->rpos, in->rlen - in->rpos);
    in->rlen -= in->rpos;
    in->rpos = 0;
  }
  if (in->rlen == in->rcap) return 1; /* full: take() reads the rest */
  for (;;) {
    ssize_t r =
        recv(in->sock, in->rbuf + in->rlen, in->rcap - in->rlen, MSG_DONTWAIT);
    if (r > 0) {
      in->rlen += (size_t)r;
      return 1;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return -EPIPE;
  }
}

/* Takes the next whole message out of rbuf (a payload larger than the
 * buffer is read to its end from the socket). 1 with *h and *payload
 * (malloc'ed, NUL-terminated), 0: not all there yet, or a negative code. */
static int take(ifd__py_instance_t *in, ifd_py_hdr_t *h, char **payload) {
  size_t have = in->rlen - in->rpos;
  if (have < sizeof(*h)) return 0;
  memcpy(h, in->rbuf + in->rpos, sizeof(*h));
  if (h->length > MAX_PAYLOAD) return -EPROTO;
  size_t body = have - sizeof(*h);
  if (body < h->length && sizeof(*h) + h->length <= in->rcap) return 0;
  char *p = malloc(h->length + 1);
  if (p == NULL) return -ENOMEM;
  size_t n = body < h->length ? body : (size_t)h->length;
  memcpy(p, in->rbuf + in->rpos + sizeof(*h), n);
  in->rpos += sizeof(*h) + n;
  if (n < h->length &&
      ifd__py_read_all(in->sock, p + n, (size_t)h->length - n) != 0) {
    free(p);
    return -EPIPE;
  }
  p[h->length] = '\0';
  *payload = p;
  return 1;
}

/* Dispatches every whole message in rbuf, reading more while the socket
 * has some; `until`: stop once the waited-for call is answered (the
 * instance thread), NULL: drain (the reader). rmu held. */
static void pump(ifd__py_instance_t *in, const uint32_t *until) {
  for (;;) {
    if (until != NULL) {
      pthread_mutex_lock(&in->mu);
      bool over = in->wait_id != *until || in->wait_done || in->wait_died;
      pthread_mutex_unlock(&in->mu);
      if (over) return;
    }
    if (in->sock < 0) return;
    ifd_py_hdr_t h;
    char *payload = NULL;
    int rc = take(in, &h, &payload);
    if (rc == 1) {
      dispatch(in, &h, payload);
      continue;
    }
    if (rc == 0) rc = fill(in);
    if (rc == 1) continue;
    if (rc == 0) return; /* nothing more for now */
    if (rc == -ENOMEM)
      IFD_PY_LOG(TRITONSERVER_LOG_ERROR,
                 "python model '%s': out of memory reading a stub message",
                 in->model_name);
    else if (rc == -EPROTO)
      IFD_PY_LOG(TRITONSERVER_LOG_ERROR,
                 "python model '%s': malformed message from the stub",
                 in->model_name);
    stub_down(in, NULL);
  }
}

/* The reader's turn: registers the current socket in epfd and drains what
 * is there. Never waits for rmu: the instance thread may hold it for a
 * whole execute, during which the reader must still write BLS answers; it
 * registers the socket again when it is done (data then pending wakes the
 * reader, level-triggered), and wakes the reader for bytes left in rbuf. */
static void reader_turn(ifd__py_instance_t *in) {
  if (pthread_mutex_trylock(&in->rmu) != 0) return;
  if (!in->inst_reads) {
    pump(in, NULL);
    /* After the pump: a death there brings a new socket (level-triggered,
     * so bytes that came meanwhile wake epoll_wait at once). */
    if (in->reg_fd != in->sock) {
      if (in->reg_fd >= 0) epoll_ctl(in->epfd, EPOLL_CTL_DEL, in->reg_fd, NULL);
      in->reg_fd = -1;
      struct epoll_event ev = {.events = EPOLLIN, .data = {.u32 = 1}};
      if (in->sock >= 0 &&
          epoll_ctl(in->epfd, EPOLL_CTL_ADD, in->sock, &ev) == 0)
        in->reg_fd = in->sock;
    }
  }
  pthread_mutex_unlock(&in->rmu);
}

static void *reader_main(void *arg) {
  ifd__py_instance_t *in = arg;
  for (;;) {
    pthread_mutex_lock(&in->mu);
    bool stop = in->state == IFD_PY_STOPPING && in->wait_id == 0;
    pthread_mutex_unlock(&in->mu);
    if (stop) break;
    reader_turn(in);
    struct epoll_event evs[4];
    int n = epoll_wait(in->epfd, evs, 4, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      IFD_PY_LOG(TRITONSERVER_LOG_ERROR, "python backend: epoll_wait: %s",
                 strerror(errno));
      break;
    }
    bool woken = false;
    for (int i = 0; i < n; i++)
      if (evs[i].data.u32 == 0) woken = true;
    if (!woken) continue; /* the socket: reader_turn reads it */
    uint64_t v;
    while (read(in->chan->evfd, &v, sizeof(v)) > 0)
      ;
    bool relaunch = false;
    pthread_mutex_lock(&in->mu);
    if (in->restart_req) {
      in->restart_req = false;
      relaunch = in->state == IFD_PY_FAILED;
      pthread_cond_broadcast(&in->cv);
    }
    pthread_mutex_unlock(&in->mu);
    if (relaunch) {
      pthread_mutex_lock(&in->rmu); /* the socket changes under rmu */
      launch(in);
      pthread_mutex_unlock(&in->rmu);
    }
    ifd__py_bls_drain(in);
  }
  return NULL;
}

/* ---- calls of the instance thread -------------------------------------------
 */

int ifd__py_send_gen(ifd__py_instance_t *in, uint32_t gen, uint32_t type,
                     uint32_t id, const void *payload, size_t len) {
  int rc = -EPIPE;
  pthread_mutex_lock(&in->wmu);
  if (in->gen == gen) rc = ifd__py_send(in->sock, type, id, payload, len);
  pthread_mutex_unlock(&in->wmu);
  return rc;
}

int ifd__py_send_now(ifd__py_instance_t *in, uint32_t type, uint32_t id,
                     const void *payload, size_t len) {
  pthread_mutex_lock(&in->wmu);
  int rc = ifd__py_send(in->sock, type, id, payload, len);
  pthread_mutex_unlock(&in->wmu);
  return rc;
}

TRITONSERVER_Error *ifd__py_call_begin(ifd__py_instance_t *in, uint32_t *gen,
                                       uint32_t *id) {
  TRITONSERVER_Error *err = NULL;
  bool asked = false;
  pthread_mutex_lock(&in->mu);
  for (;;) {
    if (in->state == IFD_PY_READY) break;
    if (in->state == IFD_PY_STOPPING) {
      err = ifd__py_errorf(TRITONSERVER_ERROR_UNAVAILABLE,
                           "python model '%s' instance '%s' is being unloaded",
                           in->model_name, in->inst_name);
      break;
    }
    if (in->state == IFD_PY_FAILED) {
      if (!asked) {
        asked = true;
        in->restart_req = true;
        ifd__py_chan_wake(in->chan);
      } else if (!in->restart_req) {
        err = ifd__py_errorf(TRITONSERVER_ERROR_UNAVAILABLE,
                             "python model '%s' instance '%s' has no stub "
                             "process: %s",
                             in->model_name, in->inst_name, in->fail_msg);
        break;
      }
    }
    pthread_cond_wait(&in->cv, &in->mu);
  }
  if (err == NULL) {
    *gen = in->gen;
    *id = ++in->next_id;
    in->wait_id = *id;
    in->wait_done = in->wait_died = false;
  }
  pthread_mutex_unlock(&in->mu);
  return err;
}

/* As ifd__py_call_wait, giving up after timeout_ms (0: never); -ETIMEDOUT. */
static int call_wait_ms(ifd__py_instance_t *in, uint32_t id, ifd_py_hdr_t *h,
                        char **payload, int timeout_ms) {
  struct timespec until;
  int rc = 0;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += timeout_ms / 1000;
  until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  *payload = NULL;
  pthread_mutex_lock(&in->mu);
  while (in->wait_id == id && !in->wait_done && !in->wait_died) {
    if (timeout_ms == 0) {
      pthread_cond_wait(&in->cv, &in->mu);
    } else if (pthread_cond_timedwait(&in->cv, &in->mu, &until) == ETIMEDOUT) {
      rc = -ETIMEDOUT;
      break;
    }
  }
  if (rc == 0 && in->wait_done) {
    *h = in->wait_hdr;
    *payload = in->wait_payload;
  } else if (rc == 0) {
    rc = -EPIPE;
  }
  in->wait_payload = NULL;
  in->wait_id = 0;
  in->wait_done = in->wait_died = false;
  pthread_cond_broadcast(&in->cv);
  pthread_mutex_unlock(&in->mu);
  return rc;
}

/* Sends the BLS calls the reader queued (mu held; released around each). */
static void bls_send_queued(ifd__py_instance_t *in) {
  while (in->bls_head != NULL) {
    ifd__py_bls_req_t *q = in->bls_head;
    in->bls_head = q->next;
    if (in->bls_head == NULL) in->bls_tail = NULL;
    bool stale = q->gen != in->gen;
    pthread_mutex_unlock(&in->mu);
    if (stale)
      free(q->payload); /* its stub died: nobody waits for the answer */
    else
      ifd__py_bls_infer(in, q->id, q->payload, q->len);
    free(q);
    pthread_mutex_lock(&in->mu);
  }
}

int ifd__py_call_exec(ifd__py_instance_t *in, uint32_t gen, uint32_t id,
                      const char *msg, size_t msg_len, ifd_py_hdr_t *h,
                      char **payload) {
  int rc = -EPIPE;
  *payload = NULL;
  /* Take the socket from the reader (epoll_ctl does not wake it; a reader
   * woken just before finds inst_reads set and reads nothing). */
  pthread_mutex_lock(&in->rmu);
  in->inst_reads = true;
  if (in->reg_fd >= 0) epoll_ctl(in->epfd, EPOLL_CTL_DEL, in->reg_fd, NULL);
  in->reg_fd = -1;
  pthread_mutex_lock(&in->mu);
  in->exec_wait = true;
  pthread_mutex_unlock(&in->mu);
  /* A failed send means the stub died: its EOF comes next. */
  ifd__py_send_gen(in, gen, IFD_PY_MSG_EXECUTE, id, msg, msg_len);
  for (;;) {
    pump(in, &id);
    pthread_mutex_lock(&in->mu);
    bls_send_queued(in);
    bool over = in->wait_id != id || in->wait_done || in->wait_died;
    pthread_mutex_unlock(&in->mu);
    if (over) break;
    if (in->sock < 0) break; /* not reached: the death set wait_died */
    struct pollfd pf = {in->sock, POLLIN, 0};
    if (poll(&pf, 1, -1) < 0 && errno != EINTR) {
      IFD_PY_LOG(TRITONSERVER_LOG_ERROR, "python backend: poll: %s",
                 strerror(errno));
      stub_down(in, NULL);
    }
  }
  /* Hand the socket back; bytes already read wait in rbuf for the reader,
   * which is woken only then. */
  pthread_mutex_lock(&in->mu);
  bls_send_queued(in);
  in->exec_wait = false;
  if (in->wait_id == id && in->wait_done) {
    *h = in->wait_hdr;
    *payload = in->wait_payload;
    rc = 0;
  }
  in->wait_payload = NULL;
  in->wait_id = 0;
  in->wait_done = in->wait_died = false;
  pthread_cond_broadcast(&in->cv);
  pthread_mutex_unlock(&in->mu);
  in->inst_reads = false;
  struct epoll_event ev = {.events = EPOLLIN, .data = {.u32 = 1}};
  if (in->sock >= 0 && epoll_ctl(in->epfd, EPOLL_CTL_ADD, in->sock, &ev) == 0)
    in->reg_fd = in->sock;
  bool leftover = in->rlen > in->rpos;
  pthread_mutex_unlock(&in->rmu);
  if (leftover) ifd__py_chan_wake(in->chan);
  return rc;
}

int ifd__py_up_check(ifd__py_instance_t *in, uint64_t end) {
  struct stat sb;
  /* No lock: a non-FINAL RESPONSE is read under mu. UP only grows. */
  if (end > IFD_PY_SEG_MAX) return -1;
  if (end <= atomic_load(&in->up_known)) return 0;
  if (fstat(in->up_fd, &sb) != 0) return -1;
  atomic_store(&in->up_known, (uint64_t)sb.st_size);
  return end <= (uint64_t)sb.st_size ? 0 : -1;
}

/* ---- start and stop ---------------------------------------------------------
 */

TRITONSERVER_Error *ifd__py_instance_start(ifd__py_instance_t *in) {
  pthread_condattr_t ca;
  in->sock = in->down_fd = in->up_fd = in->epfd = in->reg_fd = -1;
  pthread_mutex_init(&in->rmu, NULL);
  pthread_mutex_init(&in->mu, NULL);
  pthread_mutex_init(&in->wmu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&in->cv, &ca);
  pthread_condattr_destroy(&ca);
  ifd__py_down_init(&in->down, -1, IFD_PY_SEG_MAX);
  in->state = IFD_PY_FAILED;

  in->down_fd = memfd_create("inferd-python-down", MFD_CLOEXEC);
  in->up_fd = memfd_create("inferd-python-up", MFD_CLOEXEC);
  if (in->down_fd < 0 || in->up_fd < 0)
    return ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL, "memfd_create: %s",
                          strerror(errno));
  in->down.fd = in->down_fd;
  void *m = mmap(NULL, IFD_PY_SEG_MAX, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_NORESERVE, in->down_fd, 0);
  if (m == MAP_FAILED)
    return ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL, "mmap: %s",
                          strerror(errno));
  in->down_base = m;
  m = mmap(NULL, IFD_PY_SEG_MAX, PROT_READ, MAP_SHARED | MAP_NORESERVE,
           in->up_fd, 0);
  if (m == MAP_FAILED)
    return ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL, "mmap: %s",
                          strerror(errno));
  in->up_base = m;
  in->chan = chan_new();
  if (in->chan == NULL)
    return ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL, "eventfd: %s",
                          strerror(errno));
  in->rcap = RBUF_SIZE;
  in->rbuf = malloc(in->rcap);
  if (in->rbuf == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  in->epfd = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data = {.u32 = 0}};
  if (in->epfd < 0 ||
      epoll_ctl(in->epfd, EPOLL_CTL_ADD, in->chan->evfd, &ev) != 0)
    return ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL, "epoll: %s",
                          strerror(errno));

  if (spawn(in) != 0)
    return ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL, "%s", in->fail_msg);
  in->state = IFD_PY_STARTING;
  int rc = pthread_create(&in->reader, NULL, reader_main, in);
  if (rc != 0)
    return ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL, "pthread_create: %s",
                          strerror(rc));
  in->reader_started = true;
  pthread_setname_np(in->reader, "py-reader"); /* for ps and perf */
  pthread_mutex_lock(&in->mu);
  in->init_id = ++in->next_id;
  uint32_t id = in->init_id;
  pthread_mutex_unlock(&in->mu);
  ifd__py_send_now(in, IFD_PY_MSG_INIT, id, in->args_json,
                   strlen(in->args_json));
  pthread_mutex_lock(&in->mu);
  while (in->state == IFD_PY_STARTING) pthread_cond_wait(&in->cv, &in->mu);
  TRITONSERVER_Error *err =
      in->state == IFD_PY_READY
          ? NULL
          : TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, in->fail_msg);
  pthread_mutex_unlock(&in->mu);
  return err;
}

void ifd__py_instance_stop(ifd__py_instance_t *in) {
  char how[64];
  bool clean = false;
  if (in->reader_started) {
    pthread_mutex_lock(&in->mu);
    /* An INIT in flight ends first (a hung one is killed below). */
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += FINALIZE_WAIT_MS / 1000;
    while (in->state == IFD_PY_STARTING &&
           pthread_cond_timedwait(&in->cv, &in->mu, &until) != ETIMEDOUT)
      ;
    while (in->wait_id != 0) pthread_cond_wait(&in->cv, &in->mu);
    bool fin = in->state == IFD_PY_READY;
    in->state = IFD_PY_STOPPING;
    uint32_t gen = in->gen, id = ++in->next_id;
    if (fin) {
      in->wait_id = id;
      in->wait_done = in->wait_died = false;
    }
    pthread_mutex_unlock(&in->mu);
    if (fin) {
      ifd_py_hdr_t h;
      char *payload = NULL;
      /* The model's finalize runs; the stub then exits on its own. One that
       * does not answer in time is killed: unload never hangs on it. */
      if (ifd__py_send_gen(in, gen, IFD_PY_MSG_FINALIZE, id, NULL, 0) == 0 &&
          call_wait_ms(in, id, &h, &payload, FINALIZE_WAIT_MS) == 0)
        clean = h.type == IFD_PY_MSG_FINALIZE_OK;
      else
        call_wait_ms(in, id, &h, &payload, 1); /* clears wait_id */
      free(payload);
    }
    ifd__py_chan_wake(in->chan);
    pthread_join(in->reader, NULL);
    in->reader_started = false;
  }
  if (in->sock >= 0) close(in->sock);
  in->sock = -1;
  ifd__py_reap(in->pid, clean ? FINALIZE_WAIT_MS : 0, how, sizeof(how));
  in->pid = 0;
  size_t n = 0;
  pthread_mutex_lock(&in->mu);
  ifd__py_open_t *o = ifd__py_claim(in, 0, &n);
  pthread_mutex_unlock(&in->mu);
  char msg[256];
  snprintf(msg, sizeof(msg), "python model '%s' instance '%s' was unloaded",
           in->model_name, in->inst_name);
  ifd__py_fail_claimed(in, o, n, TRITONSERVER_ERROR_UNAVAILABLE, msg);
  free(o);
  ifd__py_metrics_clear(in);
  while (in->bls_head != NULL) { /* none: execute drains them */
    ifd__py_bls_req_t *q = in->bls_head;
    in->bls_head = q->next;
    free(q->payload);
    free(q);
  }
  free(in->handles);
  in->handles = NULL;
  free(in->open);
  in->open = NULL;
  if (in->chan != NULL) {
    pthread_mutex_lock(&in->chan->mu);
    in->chan->alive = false;
    chan_drop_queue(in->chan);
    pthread_mutex_unlock(&in->chan->mu);
    ifd__py_chan_put(in->chan);
    in->chan = NULL;
  }
  if (in->down_base != NULL) munmap(in->down_base, IFD_PY_SEG_MAX);
  if (in->up_base != NULL) munmap(in->up_base, IFD_PY_SEG_MAX);
  in->down_base = in->up_base = NULL;
  if (in->down_fd >= 0) close(in->down_fd);
  if (in->up_fd >= 0) close(in->up_fd);
  in->down_fd = in->up_fd = -1;
  ifd__py_down_destroy(&in->down);
  if (in->epfd >= 0) close(in->epfd);
  in->epfd = -1;
  free(in->rbuf);
  in->rbuf = NULL;
  pthread_mutex_destroy(&in->rmu);
  pthread_cond_destroy(&in->cv);
  pthread_mutex_destroy(&in->wmu);
  pthread_mutex_destroy(&in->mu);
}
