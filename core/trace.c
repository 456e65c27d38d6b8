/*
 * core/trace.c - the trace extension: settings, sampling, records, and the
 * writer thread that puts them in files (see core/trace.h).
 *
 * Objects, all loop-thread only but the writer's queue:
 *  - tfile: a trace file path, shared by the settings that name it; counts
 *    the indexed files it made and whether its main file was begun. When
 *    its last setting goes, a begun main file gets its closing "]".
 *  - tset: one setting (Triton's TraceSetting): values, the sampling
 *    counters, and the traces collected but not written yet. A change makes
 *    new tsets, as Triton does; an old one lives while traces it sampled
 *    are in flight, then writes what it collected.
 *  - group: the record of a root trace and its children (an ensemble's
 *    steps): their JSON objects, written as one trace when the last of
 *    them finishes.
 *  - job: bytes for the writer thread: a whole indexed file, or a piece of
 *    a main file (its "[" and first trace, a "," and a trace, the "]").
 */
#include "core/trace.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "core/dtype.h"
#include "core/infer.h"
#include "base/log.h"
#include "core/model.h"
#include "core/runtime.h"
#include "core/trace_internal.h"
#include "core/shm.h"

/* ---- the writer thread -------------------------------------------------- */

typedef struct job {
  struct job *next;       /* owned: the rest of the queue */
  char *path;             /* owned */
  int truncate;           /* create or empty the file first; else append */
  ifd_trace_text_t bytes; /* owned */
} job_t;

typedef struct tfile {
  int refs;           /* loop thread: settings naming it */
  char *path;         /* owned */
  int begun;          /* the main file has its "[" */
  uint32_t idx;       /* next indexed file */
  struct tfile *next; /* borrowed: the manager's list */
} tfile_t;

typedef struct tset {
  int refs; /* loop thread: the manager's (while current) + traces' */
  struct ifd_trace_mgr *mgr; /* counted */
  int level;
  uint32_t rate;
  int32_t count;
  uint32_t log_frequency;
  tfile_t *file; /* counted */
  /* Which fields a model setting gives itself (the rest follow the
   * global setting): bits of FIELD_*. */
  unsigned given;
  uint64_t sample, collected;
  uint32_t in_stream;      /* traces in `stream` */
  ifd_trace_text_t stream; /* owned: traces collected, comma separated */
} tset_t;

#define FIELD_LEVEL 1u
#define FIELD_RATE 2u
#define FIELD_COUNT 4u
#define FIELD_LOGFREQ 8u
#define FIELD_ALL 15u

typedef struct mset {
  char *model;       /* owned */
  tset_t *set;       /* counted */
  struct mset *next; /* owned */
} mset_t;

struct ifd_trace_mgr {
  int refs;        /* the server's + one per live tset */
  tset_t *initial; /* counted: the start-up values (global fallback) */
  tset_t *global;  /* counted */
  mset_t *models;  /* owned list */
  tfile_t *files;  /* list of live tfiles */
  int *on; /* borrowed: the server's hooks.sample_on flag (core/runtime.h);
              NULL after fini */
  /* The writer thread: jobs in FIFO order under mu. */
  uv_mutex_t mu;
  uv_cond_t cv;
  uv_thread_t thread;
  int started, stop;  /* stop: guarded by mu */
  job_t *head, *tail; /* guarded by mu */
};

typedef struct ifd_trace_group {
  int pending;             /* traces of the group not finished */
  tset_t *set;             /* counted: where the record goes */
  ifd_trace_text_t record; /* owned: JSON objects so far */
} group_t;

static void write_all(const job_t *j) {
  int fd =
      open(j->path,
           O_WRONLY | O_CREAT | O_CLOEXEC | (j->truncate ? O_TRUNC : O_APPEND),
           0644);
  size_t off = 0;
  if (fd < 0) {
    IFD_ERROR("failed creating trace file: %s: %s", j->path, strerror(errno));
    return;
  }
  while (off < j->bytes.len) {
    ssize_t n = write(fd, j->bytes.p + off, j->bytes.len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      IFD_ERROR("failed writing trace file %s: %s", j->path, strerror(errno));
      break;
    }
    off += (size_t)n;
  }
  close(fd);
}

static void job_free(job_t *j) {
  free(j->path);
  free(j->bytes.p);
  free(j);
}

static void writer_main(void *arg) {
  ifd_trace_mgr_t *m = arg;
  job_t *j;
  uv_mutex_lock(&m->mu);
  for (;;) {
    while (m->head == NULL && !m->stop) uv_cond_wait(&m->cv, &m->mu);
    if (m->head == NULL) break;
    j = m->head;
    m->head = j->next;
    if (m->head == NULL) m->tail = NULL;
    uv_mutex_unlock(&m->mu);
    write_all(j);
    job_free(j);
    uv_mutex_lock(&m->mu);
  }
  uv_mutex_unlock(&m->mu);
}

/* Queues bytes for `path` (takes `bytes`); the thread starts with the
 * first job. */
static void push_job(ifd_trace_mgr_t *m, const char *path, int truncate,
                     ifd_trace_text_t *bytes) {
  job_t *j = calloc(1, sizeof(*j));
  if (j == NULL || (j->path = strdup(path)) == NULL || bytes->oom) {
    IFD_ERROR("trace file %s: out of memory, traces dropped", path);
    free(j);
    free(bytes->p);
    memset(bytes, 0, sizeof(*bytes));
    return;
  }
  j->truncate = truncate;
  j->bytes = *bytes;
  memset(bytes, 0, sizeof(*bytes));
  if (!m->started) {
    if (uv_thread_create(&m->thread, writer_main, m) != 0) {
      IFD_ERROR("cannot start the trace writer thread: traces dropped");
      job_free(j);
      return;
    }
    m->started = 1;
  }
  uv_mutex_lock(&m->mu);
  if (m->tail != NULL)
    m->tail->next = j;
  else
    m->head = j;
  m->tail = j;
  uv_cond_signal(&m->cv);
  uv_mutex_unlock(&m->mu);
}

static void mgr_unref(ifd_trace_mgr_t *m) {
  job_t *j;
  if (--m->refs > 0) return;
  if (m->started) {
    uv_mutex_lock(&m->mu);
    m->stop = 1;
    uv_cond_signal(&m->cv);
    uv_mutex_unlock(&m->mu);
    uv_thread_join(&m->thread);
  }
  while ((j = m->head) != NULL) {
    m->head = j->next;
    job_free(j);
  }
  uv_cond_destroy(&m->cv);
  uv_mutex_destroy(&m->mu);
  free(m);
}

/* ---- files and settings ------------------------------------------------- */

static tfile_t *file_get(ifd_trace_mgr_t *m, const char *path) {
  tfile_t *f;
  for (f = m->files; f != NULL; f = f->next)
    if (strcmp(f->path, path) == 0) {
      f->refs++;
      return f;
    }
  f = calloc(1, sizeof(*f));
  if (f == NULL || (f->path = strdup(path)) == NULL) {
    free(f);
    return NULL;
  }
  f->refs = 1;
  f->next = m->files;
  m->files = f;
  return f;
}

static void file_unref(ifd_trace_mgr_t *m, tfile_t *f) {
  tfile_t **pp;
  if (--f->refs > 0) return;
  if (f->begun) {
    ifd_trace_text_t t = {0};
    ifd__trace_text_puts(&t, "]");
    push_job(m, f->path, 0, &t);
  }
  for (pp = &m->files; *pp != NULL; pp = &(*pp)->next)
    if (*pp == f) {
      *pp = f->next;
      break;
    }
  free(f->path);
  free(f);
}

/* Writes what `s` collected: to the next indexed file, or on to the main
 * file. */
static void set_save(ifd_trace_mgr_t *m, tset_t *s, int indexed) {
  tfile_t *f = s->file;
  ifd_trace_text_t t = {0};
  if (s->in_stream == 0 || f->path[0] == '\0') return;
  if (indexed) {
    char *path;
    size_t n = strlen(f->path) + 16;
    path = malloc(n);
    if (path == NULL) return;
    snprintf(path, n, "%s.%" PRIu32, f->path, f->idx++);
    ifd__trace_text_puts(&t, "[");
    ifd__trace_text_add(&t, s->stream.p, s->stream.len);
    ifd__trace_text_puts(&t, "]");
    push_job(m, path, 1, &t);
    free(path);
  } else {
    ifd__trace_text_puts(&t, f->begun ? "," : "[");
    ifd__trace_text_add(&t, s->stream.p, s->stream.len);
    push_job(m, f->path, !f->begun, &t);
    f->begun = 1;
  }
  s->in_stream = 0;
  s->stream.len = 0;
}

static ifd_trace_mgr_t *mgr_of(const ifd_server_t *s) {
  return ifd_runtime_c(s)->trace;
}

static tset_t *set_new(ifd_trace_mgr_t *m, int level, uint32_t rate,
                       int32_t count, uint32_t log_frequency, const char *path,
                       unsigned given) {
  tset_t *s = calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
  s->file = file_get(m, path != NULL ? path : "");
  if (s->file == NULL) {
    free(s);
    return NULL;
  }
  s->refs = 1;
  s->level = level;
  s->rate = rate;
  s->count = count;
  s->log_frequency = log_frequency;
  s->given = given;
  s->mgr = m;
  m->refs++;
  return s;
}

static void set_unref(ifd_trace_mgr_t *m, tset_t *s) {
  if (s == NULL || --s->refs > 0) return;
  set_save(m, s, s->log_frequency != 0);
  file_unref(m, s->file);
  free(s->stream.p);
  free(s);
  mgr_unref(m);
}

/* Triton's TraceSetting::Valid: can this setting sample? */
static int set_valid(const tset_t *s) {
  return s->level != 0 && s->rate != 0 && s->file->path[0] != '\0' &&
         s->count != 0;
}

/* Why a setting that traces is refused (Triton's reasons), or NULL. */
static const char *set_reason(const tset_t *s) {
  if (s->level == 0) return "tracing is disabled";
  if (s->rate == 0) return "sample rate must be non-zero";
  if (s->file->path[0] == '\0') return "trace file name is not given";
  return NULL;
}

static void recompute_on(ifd_trace_mgr_t *m) {
  int on;
  mset_t *e;
  if (m->on == NULL) return;
  on = set_valid(m->global);
  for (e = m->models; !on && e != NULL; e = e->next) on = set_valid(e->set);
  *m->on = on;
}

void ifd_trace_config_default(ifd_trace_config_t *c) {
  c->level = 0;
  c->rate = 1000;
  c->count = -1;
  c->log_frequency = 0;
  c->file = NULL;
}

static void stamp_end(ifd_request_t *req) {
  ifd_trace_stamp(req->trace, IFD_TP_REQUEST_END);
}

/* Attaches tracing to the request path (core/runtime.h). The stages of a
 * traced request need no manager (a trace keeps its setting's), so they
 * stay set after ifd__trace_fini; sampling stops with sample_on. */
static void register_hooks(ifd_req_hooks_t *h) {
  h->sample = ifd__trace_sample;
  h->traced_response = ifd__trace_response;
  h->traced_end = stamp_end;
  h->traced_free = ifd__trace_finish;
}

int ifd__trace_init(ifd_server_t *srv, const ifd_trace_config_t *cfg) {
  ifd_trace_mgr_t *m = calloc(1, sizeof(*m));
  if (m == NULL) return IFD_ENOMEM;
  m->refs = 1;
  uv_mutex_init(&m->mu);
  uv_cond_init(&m->cv);
  m->initial = set_new(m, cfg->level, cfg->rate, cfg->count, cfg->log_frequency,
                       cfg->file, 0);
  m->global = set_new(m, cfg->level, cfg->rate, cfg->count, cfg->log_frequency,
                      cfg->file, 0);
  ifd_runtime(srv)->trace = m;
  if (m->initial == NULL || m->global == NULL) {
    ifd__trace_fini(srv);
    return IFD_ENOMEM;
  }
  register_hooks(&ifd_runtime(srv)->hooks);
  m->on = &ifd_runtime(srv)->hooks.sample_on;
  recompute_on(m);
  return 0;
}

void ifd__trace_fini(ifd_server_t *srv) {
  ifd_trace_mgr_t *m = mgr_of(srv);
  mset_t *e, *next;
  if (m == NULL) return;
  ifd_runtime(srv)->trace = NULL;
  ifd_runtime(srv)->hooks.sample_on = 0;
  m->on = NULL;
  for (e = m->models; e != NULL; e = next) {
    next = e->next;
    set_unref(m, e->set);
    free(e->model);
    free(e);
  }
  m->models = NULL;
  set_unref(m, m->global);
  set_unref(m, m->initial);
  mgr_unref(m);
}

static mset_t **find_model(ifd_trace_mgr_t *m, const char *model) {
  mset_t **pp;
  for (pp = &m->models; *pp != NULL; pp = &(*pp)->next)
    if (strcmp((*pp)->model, model) == 0) return pp;
  return pp;
}

static const tset_t *setting_for(ifd_trace_mgr_t *m, const char *model) {
  mset_t **pp;
  if (model == NULL || model[0] == '\0') return m->global;
  pp = find_model(m, model);
  return *pp != NULL ? (*pp)->set : m->global;
}

void ifd_trace_get(ifd_server_t *srv, const char *model,
                   ifd_trace_view_t *out) {
  const tset_t *s = setting_for(mgr_of(srv), model);
  out->level = s->level;
  out->rate = s->rate;
  out->count = s->count;
  out->log_frequency = s->log_frequency;
  out->file = s->file->path;
}

/* The setting `cur` (NULL: none yet) becomes after `u`, fields not given
 * taken from `fb`. Returns a new tset (the caller checks it), or NULL on
 * ENOMEM. For a model, *none says every field follows the global. */
static tset_t *derive(ifd_trace_mgr_t *m, const tset_t *cur, const tset_t *fb,
                      const ifd_trace_update_t *u, int is_model, int *none) {
  unsigned given = cur != NULL ? cur->given : 0;
  int level = fb->level;
  uint32_t rate = fb->rate, lf = fb->log_frequency;
  int32_t count = fb->count;

  if (u != NULL) {
    if (u->clear_level) given &= ~FIELD_LEVEL;
    if (u->has_level) given |= FIELD_LEVEL;
    if (u->clear_rate) given &= ~FIELD_RATE;
    if (u->has_rate) given |= FIELD_RATE;
    if (u->clear_count) given &= ~FIELD_COUNT;
    if (u->has_count) given |= FIELD_COUNT;
    if (u->clear_log_frequency) given &= ~FIELD_LOGFREQ;
    if (u->has_log_frequency) given |= FIELD_LOGFREQ;
  }
  if (given & FIELD_LEVEL)
    level = u != NULL && u->has_level ? u->level : cur->level;
  if (given & FIELD_RATE) rate = u != NULL && u->has_rate ? u->rate : cur->rate;
  if (given & FIELD_COUNT)
    count = u != NULL && u->has_count ? u->count : cur->count;
  if (given & FIELD_LOGFREQ)
    lf = u != NULL && u->has_log_frequency ? u->log_frequency
                                           : cur->log_frequency;
  *none = is_model && given == 0;
  return set_new(m, level, rate, count, lf, fb->file->path, given);
}

int ifd_trace_update(ifd_server_t *srv, const char *model,
                     const ifd_trace_update_t *u, ifd_errmsg_t *err) {
  ifd_trace_mgr_t *m = mgr_of(srv);
  int is_model = model != NULL && model[0] != '\0';
  mset_t **pp = is_model ? find_model(m, model) : NULL, *e;
  const tset_t *cur = is_model ? (*pp != NULL ? (*pp)->set : NULL) : m->global;
  const tset_t *fb = is_model ? m->global : m->initial;
  const char *why;
  tset_t *ns;
  int none;

  ns = derive(m, cur, fb, u, is_model, &none);
  if (ns == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  why = set_reason(ns);
  if (why != NULL && ns->level != 0) {
    set_unref(m, ns);
    return ifd_errf(err, IFD_EINVAL,
                    "Attempting to set invalid trace setting :%s", why);
  }
  if (is_model) {
    if (none) {
      set_unref(m, ns);
      if (*pp != NULL) {
        e = *pp;
        *pp = e->next;
        set_unref(m, e->set);
        free(e->model);
        free(e);
      }
    } else if (*pp != NULL) {
      set_unref(m, (*pp)->set);
      (*pp)->set = ns;
    } else {
      e = calloc(1, sizeof(*e));
      if (e == NULL || (e->model = strdup(model)) == NULL) {
        free(e);
        set_unref(m, ns);
        return ifd_errf(err, IFD_ENOMEM, "out of memory");
      }
      e->set = ns;
      *pp = e;
    }
  } else {
    set_unref(m, m->global);
    m->global = ns;
    /* Model settings that follow the global one in some field follow the
     * change (Triton: its fallback_used_models_). */
    for (e = m->models; e != NULL; e = e->next) {
      tset_t *old = e->set;
      if (old->given == FIELD_ALL) continue;
      ns = derive(m, old, m->global, NULL, 1, &none);
      if (ns == NULL) continue; /* keeps the old one */
      set_unref(m, old);
      e->set = ns;
    }
  }
  recompute_on(m);
  return 0;
}

/* ---- traces ------------------------------------------------------------- */

/* Trace ids: one sequence for the server's traces and the in-process
 * API's, as Triton's. */
static _Atomic uint64_t next_trace_id = 1;

uint64_t ifd_trace_new_id(void) {
  return atomic_fetch_add(&next_trace_id, 1);
}

static ifd_trace_t *trace_new(ifd_trace_mgr_t *m, group_t *g, int level,
                              uint64_t parent) {
  ifd_trace_t *t = calloc(1, sizeof(*t));
  (void)m;
  if (t == NULL) return NULL;
  t->id = ifd_trace_new_id();
  t->parent_id = parent;
  t->level = level;
  t->group = g;
  if (g != NULL) g->pending++;
  return t;
}

int ifd_trace_attach(ifd_request_t *req, ifd_trace_sink_t *sink, int level,
                     uint64_t parent_id) {
  ifd_trace_t *t = calloc(1, sizeof(*t));
  if (t == NULL) return IFD_ENOMEM;
  t->id = sink->ops->id(sink);
  t->parent_id = parent_id;
  t->level = level;
  t->sink = sink;
  t->ts[IFD_TP_REQUEST_START] = uv_hrtime();
  req->trace = t;
  return 0;
}

void ifd__trace_sample(ifd_request_t *req) {
  ifd_trace_mgr_t *m = mgr_of(req->server);
  tset_t *s;
  group_t *g;
  if (m == NULL || req->trace != NULL || req->model == NULL) return;
  s = (tset_t *)setting_for(m, req->model->name);
  if (!set_valid(s)) return;
  if (++s->sample % s->rate != 0) return;
  if (s->count > 0 && --s->count == 0) recompute_on(m);
  g = calloc(1, sizeof(*g));
  if (g == NULL) return;
  g->set = s;
  s->refs++;
  req->trace = trace_new(m, g, s->level, 0);
  if (req->trace == NULL) {
    set_unref(m, s);
    free(g);
    return;
  }
  req->trace->ts[IFD_TP_REQUEST_START] = uv_hrtime();
  req->trace->proto = (ifd_trace_proto_t)req->trace_proto;
  if (req->trace_proto != IFD_TRACE_PROTO_NONE && req->t_received != 0) {
    /* The front end's receive: from the request's first byte to the
     * submit, which comes right after decoding. */
    req->trace->ts[IFD_TP_RECV_START] = req->t_received;
    req->trace->ts[IFD_TP_RECV_END] = req->trace->ts[IFD_TP_REQUEST_START];
  }
}

void ifd_trace_child(ifd_request_t *child, const ifd_request_t *parent) {
  ifd_trace_mgr_t *m = mgr_of(parent->server);
  const ifd_trace_t *p = parent->trace;
  if (p == NULL || child->trace != NULL) return;
  if (p->sink != NULL) {
    /* An application's trace: the child reports to a child of its own. */
    ifd_trace_sink_t *cs = p->sink->ops->spawn(p->sink);
    if (cs != NULL && ifd_trace_attach(child, cs, p->level, p->id) != 0)
      cs->ops->done(cs, child, NULL);
  } else if (m != NULL) {
    child->trace = trace_new(m, p->group, p->level, p->id);
  }
  if (child->trace != NULL)
    child->trace->request_id = strdup(child->id != NULL ? child->id : "");
  if (child->trace != NULL)
    child->trace->ts[IFD_TP_REQUEST_START] = uv_hrtime();
}

const char *ifd_trace_request_id(const ifd_request_t *req,
                                 const ifd_trace_t *t) {
  if (t != NULL && t->request_id != NULL) return t->request_id;
  return req->id != NULL ? req->id : "";
}

void ifd_trace_stamp(ifd_trace_t *t, ifd_trace_point_t point) {
  if (t != NULL && t->ts[point] == 0) t->ts[point] = uv_hrtime();
}

const char *ifd_trace_point_name(ifd_trace_point_t point,
                                 ifd_trace_proto_t proto) {
  static const char *const core_names[IFD_TP_COUNT] = {
      [IFD_TP_REQUEST_START] = "REQUEST_START",
      [IFD_TP_QUEUE_START] = "QUEUE_START",
      [IFD_TP_COMPUTE_START] = "COMPUTE_START",
      [IFD_TP_COMPUTE_INPUT_END] = "COMPUTE_INPUT_END",
      [IFD_TP_COMPUTE_OUTPUT_START] = "COMPUTE_OUTPUT_START",
      [IFD_TP_COMPUTE_END] = "COMPUTE_END",
      [IFD_TP_RESPONSE_COMPLETE] = "INFER_RESPONSE_COMPLETE",
      [IFD_TP_REQUEST_END] = "REQUEST_END",
  };
  int grpc = proto == IFD_TRACE_PROTO_GRPC;
  switch (point) {
    case IFD_TP_RECV_START:
      return grpc ? "GRPC_WAITREAD_START" : "HTTP_RECV_START";
    case IFD_TP_RECV_END:
      return grpc ? "GRPC_WAITREAD_END" : "HTTP_RECV_END";
    case IFD_TP_SEND_START:
      return grpc ? "GRPC_SEND_START" : "HTTP_SEND_START";
    case IFD_TP_SEND_END:
      return grpc ? "GRPC_SEND_END" : "HTTP_SEND_END";
    default:
      break;
  }
  return (unsigned)point < IFD_TP_COUNT && core_names[point] != NULL
             ? core_names[point]
             : "UNKNOWN";
}

void ifd__trace_response(ifd_request_t *req, const ifd_response_t *resp) {
  ifd_trace_t *t = req->trace;
  uint32_t i;
  if (resp->flags & IFD_RESPONSE_FINAL)
    ifd_trace_stamp(t, IFD_TP_RESPONSE_COMPLETE);
  if (!(t->level & IFD_TRACE_TENSORS) || resp->error != 0) return;
  if (t->sink != NULL) {
    for (i = 0; i < resp->n_outputs; i++)
      t->sink->ops->output(t->sink, &resp->outputs[i]);
    return;
  }
  if (t->outputs == NULL &&
      (t->outputs = calloc(1, sizeof(ifd_trace_text_t))) == NULL)
    return;
  for (i = 0; i < resp->n_outputs; i++) {
    const ifd_output_t *o = &resp->outputs[i];
    ifd__trace_tensor_record(t->outputs, t->id, "TENSOR_BACKEND_OUTPUT",
                             o->name, o->dtype, o->shape, o->ndims, o->buffer,
                             o->byte_size, o->mem_type);
  }
}

/* The times core keeps for statistics, as Triton reports them. */
static void fill_times(const ifd_request_t *req, ifd_trace_t *t) {
  uint64_t *ts = t->ts;
  if (ts[IFD_TP_QUEUE_START] == 0) ts[IFD_TP_QUEUE_START] = req->t_queued;
  if (ts[IFD_TP_COMPUTE_START] == 0)
    ts[IFD_TP_COMPUTE_START] = req->t_exec_start;
  if (ts[IFD_TP_COMPUTE_INPUT_END] == 0)
    ts[IFD_TP_COMPUTE_INPUT_END] = req->t_compute_start;
  if (ts[IFD_TP_COMPUTE_OUTPUT_START] == 0)
    ts[IFD_TP_COMPUTE_OUTPUT_START] = req->t_compute_end;
  if (ts[IFD_TP_COMPUTE_END] == 0) ts[IFD_TP_COMPUTE_END] = req->t_exec_end;
  if (t->proto != IFD_TRACE_PROTO_NONE && ts[IFD_TP_SEND_START] != 0)
    ifd_trace_stamp(t, IFD_TP_SEND_END);
  if (t->proto == IFD_TRACE_PROTO_NONE)
    ts[IFD_TP_RECV_START] = ts[IFD_TP_RECV_END] = 0;
}

/* Renders `req`'s trace into its group's record. */
static void render(ifd_request_t *req, ifd_trace_t *t) {
  ifd_trace_text_t *r = &t->group->record;
  const ifd_model_t *m = req->model;
  uint64_t *ts = t->ts;
  int order[IFD_TP_COUNT], n = 0, i, k;

  if (r->len != 0) ifd__trace_text_puts(r, ",");
  ifd__trace_text_printf(r, "{\"id\":%" PRIu64 ",\"model_name\":\"", t->id);
  if (m != NULL)
    ifd__trace_text_escaped(r, m->name, strlen(m->name));
  else if (req->model_name != NULL)
    ifd__trace_text_escaped(r, req->model_name, strlen(req->model_name));
  ifd__trace_text_printf(r, "\",\"model_version\":%" PRId64,
                         m != NULL ? m->version : req->model_version);
  {
    const char *rid = ifd_trace_request_id(req, t);
    if (rid[0] != '\0') {
      ifd__trace_text_puts(r, ",\"request_id\":\"");
      ifd__trace_text_escaped(r, rid, strlen(rid));
      ifd__trace_text_puts(r, "\"");
    }
  }
  if (t->parent_id != 0)
    ifd__trace_text_printf(r, ",\"parent_id\":%" PRIu64, t->parent_id);
  ifd__trace_text_puts(r, "}");

  if (t->level & IFD_TRACE_TIMESTAMPS) {
    /* In the order they happened (insertion sort of a dozen). */
    for (i = 0; i < IFD_TP_COUNT; i++) {
      if (ts[i] == 0) continue;
      for (k = n; k > 0 && ts[order[k - 1]] > ts[i]; k--)
        order[k] = order[k - 1];
      order[k] = i;
      n++;
    }
    for (i = 0; i < n; i++)
      ifd__trace_text_printf(
          r,
          ",{\"id\":%" PRIu64
          ",\"timestamps\":[{\"name\":\"%s\",\"ns\":%" PRIu64 "}]}",
          t->id, ifd_trace_point_name((ifd_trace_point_t)order[i], t->proto),
          ts[order[i]]);
  }
  if (t->level & IFD_TRACE_TENSORS) {
    uint32_t j;
    for (j = 0; j < req->n_inputs; j++) {
      const ifd_input_t *in = &req->inputs[j];
      ifd__trace_tensor_record(r, t->id, "TENSOR_QUEUE_INPUT", in->name,
                               in->dtype, in->shape, in->ndims, in->data,
                               in->byte_size, in->mem_type);
    }
    for (j = 0; j < req->n_inputs; j++) {
      const ifd_input_t *in = &req->inputs[j];
      ifd__trace_tensor_record(r, t->id, "TENSOR_BACKEND_INPUT", in->name,
                               in->dtype, in->shape, in->ndims, in->data,
                               in->byte_size, in->mem_type);
    }
    if (t->outputs != NULL && !t->outputs->oom && t->outputs->len != 0) {
      ifd__trace_text_puts(r, ",");
      ifd__trace_text_add(r, t->outputs->p, t->outputs->len);
    }
  }
}

/* The group's last trace finished: the record joins its setting's
 * collected traces, written as log_frequency and count say. */
static void group_done(ifd_trace_mgr_t *m, group_t *g) {
  tset_t *s = g->set;
  if (!g->record.oom && g->record.len != 0) {
    if (s->in_stream != 0) ifd__trace_text_puts(&s->stream, ",");
    ifd__trace_text_add(&s->stream, g->record.p, g->record.len);
    s->in_stream++;
    s->collected++;
    if ((s->count == 0 && s->collected == s->sample) ||
        (s->log_frequency != 0 && s->in_stream >= s->log_frequency))
      set_save(m, s, 1);
  }
  free(g->record.p);
  free(g);
  set_unref(m, s);
}

void ifd__trace_finish(ifd_request_t *req) {
  ifd_trace_t *t = req->trace;
  group_t *g = t->group;
  ifd_trace_mgr_t *m;
  req->trace = NULL;
  fill_times(req, t);
  if (t->sink != NULL) {
    t->sink->ops->done(t->sink, req, t);
  } else {
    render(req, t);
  }
  if (t->outputs != NULL) free(t->outputs->p);
  free(t->outputs);
  free(t->request_id);
  free(t);
  if (g == NULL) return;
  if (--g->pending > 0) return;
  /* The setting's manager: the server's, or after ifd__trace_fini the one
   * its settings keep alive. */
  m = g->set->mgr;
  group_done(m, g);
}
