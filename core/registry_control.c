/*
 * core/registry_control.c - the model control API (explicit mode): load
 * (with a config or file overrides), unload, and forgetting a caller. Each
 * call queues an operation on the model's entry; core/registry.c runs it.
 * With --model-namespacing a name in several repositories is one operation
 * per repository's model, answered once. Loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include "core/registry_internal.h"
#include "base/util.h"

static int refuse(ifd_server_t *s, ifd_errmsg_t *err) {
  if (s->rt.opts.control_mode != IFD_CONTROL_EXPLICIT)
    return ifd_errf(err, IFD_EUNAVAIL, "%s", IFD_MODEL_CONTROL_REFUSED_TEXT);
  if (s->rt.shutting_down)
    return ifd_errf(err, IFD_EUNAVAIL, "the server is shutting down");
  return 0;
}

/* Copies the files of a load request into one block owned by `op`. */
static int copy_files(reg_op_t *op, const ifd_load_params_t *p,
                      ifd_errmsg_t *err) {
  size_t total = p->n_files * sizeof(ifd_repo_file_t), i;
  char *at;
  int rc;

  for (i = 0; i < p->n_files; i++) {
    rc = ifd_repo_check_relpath(p->files[i].path, p->files[i].path_len, err);
    if (rc < 0) return rc;
    total += p->files[i].path_len + 1 + p->files[i].len;
  }
  op->files = malloc(total ? total : 1);
  if (op->files == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  at = (char *)(op->files + p->n_files);
  for (i = 0; i < p->n_files; i++) {
    ifd_repo_file_t *f = &op->files[i];
    memcpy(at, p->files[i].path, p->files[i].path_len);
    at[p->files[i].path_len] = '\0';
    f->path = at;
    f->path_len = p->files[i].path_len;
    at += f->path_len + 1;
    if (p->files[i].len > 0) memcpy(at, p->files[i].data, p->files[i].len);
    f->data = at;
    f->len = p->files[i].len;
    at += f->len;
  }
  op->n_files = p->n_files;
  return 0;
}

/* --model-namespacing: one load call for every repository's model of a
 * name; the caller hears once, after the last, the first failure if any. */
typedef struct load_group {
  ifd_load_call_t call; /* the caller's (what ifd_load_call_forget clears) */
  unsigned pending;     /* loads not answered yet, plus one while queuing */
  int rc;
  char *msg; /* owned: the first failure's message */
} load_group_t;

static void group_done(int rc, const char *msg, void *arg) {
  load_group_t *g = arg;
  if (rc < 0 && g->rc == 0) {
    g->rc = rc;
    g->msg = ifd_strdup_null(msg);
  }
  if (--g->pending > 0) return;
  if (g->call.done != NULL)
    g->call.done(g->rc, g->rc < 0 && g->msg != NULL ? g->msg : "", g->call.arg);
  free(g->msg);
  free(g);
}

static int load_entry(ifd_server_t *s, model_entry_t *e, int created,
                      const ifd_load_params_t *params, ifd_load_cb done,
                      void *arg, ifd_load_call_t **call, ifd_errmsg_t *err);

int ifd_server_load_model(ifd_server_t *s, const char *name, size_t name_len,
                          const ifd_load_params_t *params, ifd_load_cb done,
                          void *arg, ifd_load_call_t **call,
                          ifd_errmsg_t *err) {
  model_entry_t *e, *next;
  load_group_t *g;
  int rc, created = 0;

  if (call != NULL) *call = NULL;
  if ((rc = refuse(s, err)) < 0) return rc;
  if (name_len == 0 || memchr(name, 0, name_len) != NULL)
    return ifd_errf(err, IFD_EINVAL, "invalid model name");
  e = ifd__entry_find(s, name, name_len);
  if (e != NULL && e->next_same != NULL) {
    /* The name is in several repositories (--model-namespacing): as
     * Triton, the load is every one of them's. */
    g = calloc(1, sizeof(*g));
    if (g == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    g->call.done = done;
    g->call.arg = arg;
    g->pending = 1;
    for (; e != NULL; e = next) {
      next = e->next_same;
      g->pending++;
      if ((rc = load_entry(s, e, 0, params, group_done, g, NULL, err)) < 0)
        g->pending--;
    }
    if (g->pending == 1) {
      free(g);
      return rc;
    }
    if (call != NULL) *call = &g->call;
    group_done(0, NULL, g);
    return 0;
  }
  if (e == NULL) {
    char *n = strndup(name, name_len);
    if (n == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    e = ifd__reg_entry_add(s, n, NULL, NULL);
    free(n);
    if (e == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    created = 1;
  }
  return load_entry(s, e, created, params, done, arg, call, err);
}

/* Queues a load of `e` by name (`created`: e was made for it, and goes if
 * the load cannot be queued). */
static int load_entry(ifd_server_t *s, model_entry_t *e, int created,
                      const ifd_load_params_t *params, ifd_load_cb done,
                      void *arg, ifd_load_call_t **call, ifd_errmsg_t *err) {
  reg_op_t *op;
  int rc;

  op = ifd__reg_op_new(s, e, OP_LOAD);
  if (op == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
    goto out_entry;
  }
  op->by_name = 1;
  op->call = calloc(1, sizeof(*op->call));
  if (op->call == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
    goto out_op;
  }
  op->call->done = done;
  op->call->arg = arg;
  if (params != NULL && params->config != NULL) {
    op->config = strndup(params->config, params->config_len);
    op->config_len = params->config_len;
    if (op->config == NULL) {
      rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
      goto out_op;
    }
  }
  if (params != NULL && params->n_files > 0 &&
      (rc = copy_files(op, params, err)) < 0)
    goto out_op;
  if (call != NULL) *call = op->call;
  ifd__reg_op_enqueue(op);
  return 0;

out_op:
  ifd__reg_op_free(op);
out_entry:
  if (created) ifd__reg_entry_remove(s, e);
  return rc;
}

void ifd_load_call_forget(ifd_load_call_t *call) {
  if (call != NULL) call->done = NULL;
}

ifd_load_call_t *ifd_load_call_new(ifd_load_cb done, void *arg) {
  ifd_load_call_t *c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  c->done = done;
  c->arg = arg;
  return c;
}

void ifd_load_call_end(ifd_load_call_t *call, int rc, const char *msg) {
  if (call == NULL) return;
  if (call->done != NULL) call->done(rc, msg != NULL ? msg : "", call->arg);
  free(call);
}

int ifd_server_unload_model(ifd_server_t *s, const char *name, size_t name_len,
                            int unload_dependents, ifd_errmsg_t *err) {
  model_entry_t *e, *next;
  reg_op_t *op;
  int rc;

  if ((rc = refuse(s, err)) < 0) return rc;
  /* As Triton: nothing to unload is no error; a name in several
   * repositories (--model-namespacing) unloads every one of them. */
  for (e = ifd__entry_find(s, name, name_len); e != NULL; e = next) {
    next = e->next_same;
    op = ifd__reg_op_new(s, e, OP_UNLOAD);
    if (op == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    op->by_name = 1;
    op->unload_dependents = unload_dependents;
    ifd__reg_op_enqueue(op);
  }
  return 0;
}

/* ---- file-system work for a loop-side caller ------------------------------
 */

typedef struct offload_job {
  uv_work_t work;       /* embedded */
  ifd_server_t *server; /* borrowed */
  ifd_load_call_t call; /* embedded: what the caller may forget */
  void (*fn)(void *arg);
  void (*drop)(void *arg);
} offload_job_t;

static void offload_work(uv_work_t *w) {
  offload_job_t *j = (offload_job_t *)w;
  j->fn(j->call.arg);
}

static void offload_after(uv_work_t *w, int status) {
  offload_job_t *j = (offload_job_t *)w;
  ifd_server_t *s = j->server;

  (void)status;
  if (j->call.done != NULL)
    j->call.done(0, "", j->call.arg);
  else if (j->drop != NULL)
    j->drop(j->call.arg);
  free(j);
  s->jobs--;
  if (ifd__registry_idle(s)) ifd__server_registry_idle(s);
}

int ifd_server_offload(ifd_server_t *s, void (*work)(void *arg),
                       ifd_load_cb done, void (*drop)(void *arg), void *arg,
                       ifd_load_call_t **call, ifd_errmsg_t *err) {
  offload_job_t *j;

  if (call != NULL) *call = NULL;
  if (s->rt.shutting_down || s->freeing)
    return ifd_errf(err, IFD_EUNAVAIL, "the server is shutting down");
  j = calloc(1, sizeof(*j));
  if (j == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  j->server = s;
  j->fn = work;
  j->drop = drop;
  j->call.done = done;
  j->call.arg = arg;
  s->jobs++;
  if (uv_queue_work(s->rt.loop, &j->work, offload_work, offload_after) != 0) {
    s->jobs--;
    free(j);
    return ifd_errf(err, IFD_EINTERNAL, "cannot queue work on the pool");
  }
  if (call != NULL) *call = &j->call;
  return 0;
}
