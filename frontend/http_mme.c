/*
 * frontend/http_mme.c - SageMaker's multi-model endpoint (MME) on the SageMaker
 * listener, as tritonserver 2.47 serves it (--model-control-mode=explicit,
 * as Triton's SageMaker serve script sets it for MME):
 *
 *   POST   /models[/<x>]   {"model_name": n, "url": u}: loads the model
 *                          folder found in u under the name n (or the
 *                          X-Amzn-SageMaker-Target-Model header): u is
 *                          registered as a repository with the name
 *                          mapping <folder> -> n, then n is loaded. 200
 *                          empty; 409 when n is mapped already (loaded, or
 *                          loading); 507 when the load failed for lack of
 *                          memory; 400 otherwise, with {"error": ...}
 *   GET    /models         {"models": [{"modelName", "modelUrl"}...]}
 *   GET    /models/<n>     {"modelName", "modelUrl"}, or 404
 *   POST   /models/<n>/invoke  infer (http_cloud.c), 404 unless loaded here
 *   DELETE /models/<n>     unloads n and the models its ensemble loaded,
 *                          waits until it is unloaded, unregisters its
 *                          repository: 200, or 404 unless loaded here
 *
 * The folder of u (Triton's choice): u itself when it holds config.pbtxt
 * and reads /opt/ml/models/<hash>/model[/...] (the repository is then
 * /opt/ml/models/<hash>, the folder "model"); else u is the repository and
 * the folder is its ensemble's (a subfolder whose config.pbtxt says
 * platform: "ensemble"), or else its last subfolder (name order here;
 * readdir order in Triton), the others being what an ensemble composes.
 *
 * File-system inspection runs on the thread pool (ifd_server_offload);
 * registration, load and the list on the loop. A request waits through its
 * steps with an ifd_load_call_t the connection may forget when it closes;
 * the steps go on, as Triton's do. The list is the front end's; steps in
 * flight hold a reference to it, so it outlives a front end that stops.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "frontend/internal.h"

/* Triton waits this long for an unload before it unregisters anyway. */
#define MME_UNLOAD_TIMEOUT_MS (350u * 1000u)
#define MME_UNLOAD_POLL_MS 100u
/* The most subfolders of a url inspected. */
#define MME_MAX_SUBDIRS 4096

typedef struct mme_model {
  char *name; /* owned: model_name, the list's key */
  char *repo; /* owned: the registered repository ("modelUrl") */
} mme_model_t;

typedef struct mme_step mme_step_t;

struct ifd_mme {
  unsigned refs;        /* the front end's (until closed), one per step */
  int closed;           /* the front end is gone */
  uv_loop_t *loop;      /* borrowed */
  ifd_server_t *server; /* borrowed: outlives every step */
  mme_model_t *models;  /* owned array */
  size_t n_models;
  mme_step_t *waiting; /* borrowed list: unloads polling for their end */
};

/* One load or unload in flight. */
struct mme_step {
  struct ifd_mme *mme;   /* counted reference */
  ifd_load_call_t *call; /* owned until ended: the client's wait */
  char *name;            /* owned: model_name */
  char *target;          /* owned: the model served (header, else name) */
  char *url;             /* owned: the url as given (load) */
  /* What the inspection found (load). */
  char *abs;     /* owned: url made absolute and normal */
  char *repo;    /* owned: the repository to register; "" when none */
  char *subdir;  /* owned: the folder mapped to `target`; "" when none */
  int repo_dir;  /* repo is a directory */
  int forbidden; /* url under /dev/, /proc/ or /sys/ */
  int oom;       /* the inspection ran out of memory */
  /* Unload. */
  uv_timer_t timer; /* embedded: polls for the unload's end */
  int timer_on;
  uint64_t waited_ms;
  mme_step_t *next; /* borrowed: mme->waiting */
};

static void mme_unref(struct ifd_mme *m) {
  if (m == NULL || --m->refs > 0) return;
  for (size_t i = 0; i < m->n_models; i++) {
    free(m->models[i].name);
    free(m->models[i].repo);
  }
  free(m->models);
  free(m);
}

/* The front end's list; NULL when out of memory, or without a front end
 * (a router tested alone: nothing is loaded then). */
static struct ifd_mme *mme_peek(ifd_http_t *h) {
  return h != NULL ? *ifd__http_mme_ref(h) : NULL;
}

static struct ifd_mme *mme_of(ifd_http_t *h) {
  struct ifd_mme **ref = h != NULL ? ifd__http_mme_ref(h) : NULL;
  if (ref == NULL) return NULL;
  if (*ref == NULL) {
    *ref = calloc(1, sizeof(**ref));
    if (*ref == NULL) return NULL;
    (*ref)->refs = 1;
    (*ref)->loop = ifd__http_loop(h);
    (*ref)->server = ifd__http_server(h);
  }
  return *ref;
}

static mme_model_t *mme_find(struct ifd_mme *m, const char *name, size_t n) {
  for (size_t i = 0; m != NULL && i < m->n_models; i++)
    if (strlen(m->models[i].name) == n &&
        memcmp(m->models[i].name, name, n) == 0)
      return &m->models[i];
  return NULL;
}

static void mme_drop(struct ifd_mme *m, const char *name) {
  mme_model_t *e = mme_find(m, name, strlen(name));
  if (e == NULL) return;
  free(e->name);
  free(e->repo);
  *e = m->models[--m->n_models];
}

static void reply_empty(ifd_http_slot_t *s, int status) {
  ifd_hbuf_t b;

  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd__http_slot_finish(s, status, NULL, &b, NULL, 0, -1);
}

static void step_free(mme_step_t *st) {
  free(st->name);
  free(st->target);
  free(st->url);
  free(st->abs);
  free(st->repo);
  free(st->subdir);
  mme_unref(st->mme);
  free(st);
}

/* Ends the client's wait: `status` (an HTTP status, through the call's rc)
 * with `msg` as {"error": msg}, or an empty body when msg is NULL. */
static void step_answer(mme_step_t *st, int status, const char *msg) {
  ifd_load_call_end(st->call, status, msg);
  st->call = NULL;
}

/* The client's side: answers the slot (unless its connection closed). */
static void on_answer(int status, const char *msg, void *arg) {
  ifd_http_slot_t *s = arg; /* still in its connection's FIFO */

  s->load = NULL;
  if (msg != NULL && msg[0] != '\0')
    ifd__http_slot_error(s, status, msg);
  else
    reply_empty(s, status);
}

/* Frees a step whose client is answered otherwise (no call to end). */
static void step_abort(mme_step_t *st) {
  ifd_load_call_forget(st->call);
  ifd_load_call_end(st->call, 0, NULL);
  st->call = NULL;
  step_free(st);
}

static mme_step_t *step_new(struct ifd_mme *m, ifd_http_slot_t *s,
                            const char *name, size_t name_len,
                            const ifd_http_msg_t *msg) {
  mme_step_t *st = calloc(1, sizeof(*st));
  const ifd_http_cloud_hdrs_t *ch = msg->cloud;

  if (st == NULL) return NULL;
  st->mme = m;
  m->refs++;
  st->name = strndup(name, name_len);
  st->target = ch != NULL && ch->has_target
                   ? strndup(ch->target, ch->target_len)
                   : strndup(name, name_len);
  st->call = ifd_load_call_new(on_answer, s);
  if (st->name == NULL || st->target == NULL || st->call == NULL) {
    step_abort(st);
    return NULL;
  }
  s->load = st->call;
  return st;
}

/* Does Triton's SageMaker OOM check find a lack of memory in `msg`? */
static int is_oom(const char *msg) {
  static const char *const marks[] = {"CUDA out of memory",
                                      "CUDA_OUT_OF_MEMORY",
                                      "Out of memory",
                                      "Out Of Memory",
                                      "out of memory",
                                      "MemoryError",
                                      "OutOfMemory",
                                      "OOM",
                                      "Dst tensor is not initialized",
                                      "Src tensor is not initialized",
                                      "CNMEM_STATUS_OUT_OF_MEMORY",
                                      "CUDNN_STATUS_NOT_INITIALIZED",
                                      "CUBLAS_STATUS_ALLOC_FAILED",
                                      "CUBLAS_STATUS_NOT_INITIALIZED",
                                      "Failed to allocate memory",
                                      "failed to allocate memory",
                                      "No space left on device"};
  for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
    if (strstr(msg, marks[i]) != NULL) return 1;
  return 0;
}

/* ---- load: the inspection (thread pool) ------------------------------------
 */

/* `path` made absolute (against the working folder) and normal: no ".",
 * "..", or repeated '/'. NULL when out of memory. */
static char *normal_path(const char *path) {
  char cwd[4096], *buf, *out, *seg, *save = NULL;
  size_t n;

  if (path[0] == '/') {
    buf = strdup(path);
  } else {
    if (getcwd(cwd, sizeof(cwd)) == NULL) strcpy(cwd, "/");
    buf = malloc(strlen(cwd) + strlen(path) + 2);
    if (buf != NULL) sprintf(buf, "%s/%s", cwd, path);
  }
  if (buf == NULL) return NULL;
  out = malloc(strlen(buf) + 2);
  if (out == NULL) {
    free(buf);
    return NULL;
  }
  out[0] = '\0';
  n = 0;
  for (seg = strtok_r(buf, "/", &save); seg != NULL;
       seg = strtok_r(NULL, "/", &save)) {
    if (strcmp(seg, ".") == 0) continue;
    if (strcmp(seg, "..") == 0) {
      while (n > 0 && out[n - 1] != '/') n--;
      if (n > 0) n--;
      out[n] = '\0';
      continue;
    }
    n += (size_t)sprintf(out + n, "/%s", seg);
  }
  if (n == 0) strcpy(out, "/");
  free(buf);
  return out;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Is `dir`/config.pbtxt an ensemble's (platform: "ensemble")? */
static int is_ensemble(const char *dir) {
  static const char pat[] = "platform:[[:space:]]*\"ensemble\"";
  char path[4600], *text;
  regex_t re;
  FILE *f;
  long len;
  int hit = 0;

  if ((size_t)snprintf(path, sizeof(path), "%s/config.pbtxt", dir) >=
          sizeof(path) ||
      (f = fopen(path, "rb")) == NULL)
    return 0;
  if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || len > (16L << 20) ||
      fseek(f, 0, SEEK_SET) != 0 || (text = malloc((size_t)len + 1)) == NULL) {
    fclose(f);
    return 0;
  }
  if (fread(text, 1, (size_t)len, f) == (size_t)len) {
    text[len] = '\0';
    if (regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) == 0) {
      hit = regexec(&re, text, 0, NULL, 0) == 0;
      regfree(&re);
    }
  }
  free(text);
  fclose(f);
  return hit;
}

/* "/opt/ml/models/<hash>/model[/<sub>]": sets *parent_len to the length
 * of "/opt/ml/models/<hash>" and returns 1; 0 when `p` is not that. */
static int sagemaker_model_path(const char *p, size_t *parent_len) {
  static const char pre[] = "/opt/ml/models/";
  const char *h = p + sizeof(pre) - 1, *q;

  if (strncmp(p, pre, sizeof(pre) - 1) != 0) return 0;
  for (q = h; *q != '\0' && *q != '/'; q++)
    if (!(isalnum((unsigned char)*q) || *q == '.' || *q == '_')) return 0;
  if (q == h || strncmp(q, "/model", 6) != 0) return 0;
  *parent_len = (size_t)(q - p);
  q += 6;
  if (*q == '\0') return 1;
  if (*q++ != '/') return 0;
  for (; *q != '\0'; q++)
    if (!(isalnum((unsigned char)*q) || *q == '.' || *q == '_')) return 0;
  return 1;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

static void inspect_work(void *arg) {
  mme_step_t *st = arg;
  struct dirent **list = NULL;
  char sub[4600], cfg[4600];
  const char *chosen = NULL, *ensemble = NULL;
  size_t parent_len;
  int n, i;

  st->abs = normal_path(st->url);
  if (st->abs == NULL) goto out_oom;
  if (strncmp(st->abs, "/dev/", 5) == 0 || strncmp(st->abs, "/proc/", 6) == 0 ||
      strncmp(st->abs, "/sys/", 5) == 0) {
    st->forbidden = 1;
    return;
  }
  n = scandir(st->abs, &list, NULL, by_name);
  for (i = 0; i < n && i < MME_MAX_SUBDIRS; i++) {
    const char *d = list[i]->d_name;
    if (strcmp(d, ".") == 0 || strcmp(d, "..") == 0) continue;
    if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", st->abs, d) >=
            sizeof(sub) ||
        !is_dir(sub))
      continue;
    chosen = d;
    if (is_ensemble(sub)) ensemble = d;
  }
  if (ensemble != NULL) chosen = ensemble;
  snprintf(cfg, sizeof(cfg), "%s/config.pbtxt", st->abs);
  if (access(cfg, F_OK) == 0) {
    /* The url is the model folder itself. */
    if (sagemaker_model_path(st->abs, &parent_len)) {
      st->repo = strndup(st->abs, parent_len);
      st->subdir = strdup("model");
    } else {
      st->repo = strdup("");
      st->subdir = strdup(chosen != NULL ? chosen : "");
    }
  } else {
    st->repo = strdup(st->abs);
    st->subdir = strdup(chosen != NULL ? chosen : "");
  }
  for (i = 0; i < n; i++) free(list[i]);
  free(list);
  if (st->repo == NULL || st->subdir == NULL) goto out_oom;
  st->repo_dir = st->repo[0] != '\0' && is_dir(st->repo);
  return;

out_oom:
  st->oom = 1;
}

/* ---- load: registration and load (loop) ------------------------------------
 */

static void on_loaded(int rc, const char *msg, void *arg) {
  mme_step_t *st = arg;
  struct ifd_mme *m = st->mme;
  mme_model_t *grown;
  ifd_errmsg_t err;

  if (rc == 0) {
    grown = realloc(m->models, (m->n_models + 1) * sizeof(*m->models));
    if (grown != NULL) {
      m->models = grown;
      grown[m->n_models].name = strdup(st->name);
      grown[m->n_models].repo = strdup(st->repo);
      if (grown[m->n_models].name != NULL && grown[m->n_models].repo != NULL) {
        m->n_models++;
        IFD_INFO("SageMaker MME: model '%s' loaded from '%s'", st->target,
                 st->repo);
        step_answer(st, 200, NULL);
        step_free(st);
        return;
      }
      free(grown[m->n_models].name);
      free(grown[m->n_models].repo);
    }
    msg = "out of memory";
  }
  step_answer(st, rc == IFD_EEXISTS ? 409 : is_oom(msg) ? 507 : 400, msg);
  /* As Triton: the repository goes with a load that failed. */
  ifd_errclear(&err);
  (void)ifd_server_unregister_repository(m->server, st->repo, &err);
  step_free(st);
}

static void on_inspected(int rc, const char *msg, void *arg) {
  mme_step_t *st = arg;
  struct ifd_mme *m = st->mme;
  ifd_repo_mapping_t map;
  ifd_errmsg_t err;
  char text[4096 + 128];

  (void)rc;
  (void)msg;
  if (st->oom) {
    step_answer(st, 500, "out of memory");
    goto out_free;
  }
  if (st->forbidden) {
    IFD_ERROR(
        "SageMaker MME: invalid url '%s': it cannot start with /dev/, "
        "/proc/ or /sys/",
        st->url);
    step_answer(st, 400, NULL);
    goto out_free;
  }
  if (!st->repo_dir) {
    snprintf(text, sizeof(text),
             "failed to register '%s', repository not found", st->repo);
    step_answer(st, 400, text);
    goto out_free;
  }
  map.subdir = st->subdir;
  map.name = st->target;
  ifd_errclear(&err);
  rc =
      ifd_server_register_repository_mapped(m->server, st->repo, &map, 1, &err);
  if (rc < 0) {
    step_answer(st, rc == IFD_EEXISTS ? 409 : 400, err.text);
    goto out_free;
  }
  ifd_errclear(&err);
  rc = ifd_server_load_model(m->server, st->target, strlen(st->target), NULL,
                             on_loaded, st, NULL, &err);
  if (rc < 0) on_loaded(rc, err.text, st);
  return;

out_free:
  step_free(st);
}

/* Reads {"model_name": ..., "url": ...}. Returns 0, or answers 400. */
static int parse_load(ifd_http_slot_t *s, const ifd_http_msg_t *msg,
                      const char **name, const char **url, json_t **doc) {
  json_error_t jerr;
  json_t *n, *u;
  char text[300];

  *doc =
      json_loadb(msg->body != NULL ? msg->body : "", msg->body_len, 0, &jerr);
  if (*doc == NULL || !json_is_object(*doc)) {
    snprintf(text, sizeof(text),
             "failed to parse the request JSON buffer: %s at %d",
             *doc == NULL ? jerr.text : "not an object",
             *doc == NULL ? jerr.position : 0);
    ifd__http_slot_error(s, 400, text);
    return -1;
  }
  n = json_object_get(*doc, "model_name");
  u = json_object_get(*doc, "url");
  if ((n != NULL && !json_is_string(n)) || (u != NULL && !json_is_string(u))) {
    ifd__http_slot_error(s, 400, "attempt to access JSON non-string as string");
    return -1;
  }
  *name = n != NULL ? json_string_value(n) : "";
  *url = u != NULL ? json_string_value(u) : "";
  if ((*name)[0] == '\0' || (*url)[0] == '\0') {
    ifd__http_slot_error(s, 400,
                         "a multi-model load needs a 'model_name' and a 'url'");
    return -1;
  }
  return 0;
}

static void mme_load(ifd_http_t *h, ifd_http_slot_t *s, ifd_http_msg_t *msg) {
  struct ifd_mme *m = mme_of(h);
  const char *name, *url;
  json_t *doc = NULL;
  mme_step_t *st;
  ifd_errmsg_t err;
  int rc;

  if (parse_load(s, msg, &name, &url, &doc) != 0) goto out;
  st = m != NULL ? step_new(m, s, name, strlen(name), msg) : NULL;
  if (st == NULL || (st->url = strdup(url)) == NULL) {
    if (st != NULL) {
      s->load = NULL;
      step_abort(st);
    }
    ifd__http_slot_error(s, 500, "out of memory");
    goto out;
  }
  IFD_INFO("Loading SageMaker TargetModel: %s", st->target);
  ifd_errclear(&err);
  rc = ifd_server_offload(m->server, inspect_work, on_inspected, NULL, st, NULL,
                          &err);
  if (rc < 0) {
    step_answer(st, 400, err.text);
    step_free(st);
  }
out:
  json_decref(doc);
}

/* ---- unload -----------------------------------------------------------------
 */

/* Is any version of `name` still loading, ready or unloading? */
static int still_loaded(ifd_server_t *srv, const char *name) {
  ifd_index_entry_t *rows;
  size_t n, i;
  int busy = 0;

  if (ifd_server_repository_index(srv, 0, &rows, &n) != 0) return 0;
  for (i = 0; i < n; i++)
    if (strcmp(rows[i].name, name) == 0 && rows[i].state != NULL &&
        strcmp(rows[i].state, "UNAVAILABLE") != 0)
      busy = 1;
  free(rows);
  return busy;
}

static void unload_end(mme_step_t *st) {
  struct ifd_mme *m = st->mme;
  mme_model_t *e = mme_find(m, st->name, strlen(st->name));
  ifd_errmsg_t err;
  int rc = 0;

  ifd_errclear(&err);
  if (e != NULL) {
    rc = ifd_server_unregister_repository(m->server, e->repo, &err);
    mme_drop(m, st->name);
  }
  if (rc < 0)
    step_answer(st, 400, err.text);
  else
    step_answer(st, 200, NULL);
}

static void on_timer_closed(uv_handle_t *t) {
  step_free(t->data);
}

static void step_unwait(mme_step_t *st) {
  mme_step_t **p;
  for (p = &st->mme->waiting; *p != NULL; p = &(*p)->next)
    if (*p == st) {
      *p = st->next;
      break;
    }
}

static void on_unload_poll(uv_timer_t *t) {
  mme_step_t *st = t->data;

  st->waited_ms += MME_UNLOAD_POLL_MS;
  if (still_loaded(st->mme->server, st->target)) {
    if (st->waited_ms < MME_UNLOAD_TIMEOUT_MS) return;
    IFD_ERROR(
        "SageMaker MME: the unload of '%s' did not end within %u "
        "seconds",
        st->target, MME_UNLOAD_TIMEOUT_MS / 1000);
  }
  uv_timer_stop(t);
  step_unwait(st);
  unload_end(st);
  uv_close((uv_handle_t *)t, on_timer_closed);
}

static void mme_unload(ifd_http_t *h, ifd_http_slot_t *s, ifd_http_msg_t *msg,
                       const char *name, size_t n) {
  struct ifd_mme *m = mme_peek(h);
  mme_step_t *st;
  ifd_errmsg_t err;
  int rc;

  if (mme_find(m, name, n) == NULL) {
    reply_empty(s, 404);
    return;
  }
  st = step_new(m, s, name, n, msg);
  if (st == NULL) {
    ifd__http_slot_error(s, 500, "out of memory");
    return;
  }
  IFD_INFO("Unloading SageMaker TargetModel: %s", st->target);
  ifd_errclear(&err);
  rc = ifd_server_unload_model(m->server, st->target, strlen(st->target), 1,
                               &err);
  if (rc < 0) {
    step_answer(st, 400, err.text);
    step_free(st);
    return;
  }
  if (uv_timer_init(m->loop, &st->timer) != 0) {
    unload_end(st);
    step_free(st);
    return;
  }
  st->timer.data = st;
  st->timer_on = 1;
  st->next = m->waiting;
  m->waiting = st;
  uv_timer_start(&st->timer, on_unload_poll, MME_UNLOAD_POLL_MS,
                 MME_UNLOAD_POLL_MS);
}

void ifd__http_mme_close(struct ifd_mme *m) {
  mme_step_t *st;

  if (m == NULL) return;
  m->closed = 1;
  /* No client is left to wait for: the unloads end now (the registry goes
   * on unloading). */
  while ((st = m->waiting) != NULL) {
    m->waiting = st->next;
    uv_timer_stop(&st->timer);
    unload_end(st);
    uv_close((uv_handle_t *)&st->timer, on_timer_closed);
  }
  mme_unref(m);
}

/* ---- list and get -----------------------------------------------------------
 */

static void put_model(ifd_hbuf_t *b, const mme_model_t *e) {
  ifd_hbuf_puts(b, "{\"modelName\":");
  ifd_json_str(b, e->name, strlen(e->name));
  ifd_hbuf_puts(b, ",\"modelUrl\":");
  ifd_json_str(b, e->repo, strlen(e->repo));
  ifd_hbuf_puts(b, "}");
}

static void reply_json(ifd_http_slot_t *s, ifd_hbuf_t *b) {
  if (b->oom) {
    ifd_hbuf_free(b);
    ifd__http_slot_error(s, 500, "out of memory");
    return;
  }
  ifd__http_slot_finish(s, 200, "application/json", b, NULL, 0, -1);
}

static void mme_list(ifd_http_t *h, ifd_http_slot_t *s) {
  struct ifd_mme *m = mme_peek(h);
  ifd_hbuf_t b;
  size_t i, k = 0;

  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd_hbuf_puts(&b, "{\"models\":[");
  for (i = 0; m != NULL && i < m->n_models; i++) {
    /* As Triton: only a model ready to serve is listed. */
    if (!ifd_server_model_ready(m->server, m->models[i].name,
                                strlen(m->models[i].name), -1))
      continue;
    if (k++ > 0) ifd_hbuf_puts(&b, ",");
    put_model(&b, &m->models[i]);
  }
  ifd_hbuf_puts(&b, "]}");
  reply_json(s, &b);
}

static void mme_get(ifd_http_t *h, ifd_http_slot_t *s, const char *name,
                    size_t n) {
  mme_model_t *e = mme_find(mme_peek(h), name, n);
  ifd_hbuf_t b;

  if (e == NULL) {
    reply_empty(s, 404);
    return;
  }
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  put_model(&b, e);
  reply_json(s, &b);
}

/* ---- dispatch ---------------------------------------------------------------
 */

int ifd__http_mme_has(ifd_http_t *h, const char *name, size_t n) {
  return mme_find(mme_peek(h), name, n) != NULL;
}

void ifd__http_mme(ifd_http_t *h, const struct ifd_http_cloud *cloud,
                   ifd_http_slot_t *s, ifd_http_msg_t *msg, int named,
                   int invoke) {
  const char *name = msg->path + 7, *end = msg->path + msg->path_len;
  size_t n;

  (void)cloud;
  (void)invoke;
  if (name < end && *name == '/') name++;
  for (n = 0; name + n < end && name[n] != '/';) n++;
  if (!named) n = 0;
  if (msg->method != IFD_HTTP_GET && msg->method != IFD_HTTP_POST &&
      msg->method != IFD_HTTP_DELETE) {
    reply_empty(s, 400);
    return;
  }
  if (h != NULL && ifd__http_refuse_restricted(h, s, msg, IFD_ROUTE_REPO_INDEX))
    return;
  if (msg->method == IFD_HTTP_GET && n == 0)
    mme_list(h, s);
  else if (msg->method == IFD_HTTP_GET)
    mme_get(h, s, name, n);
  else if (msg->method == IFD_HTTP_POST)
    mme_load(h, s, msg);
  else
    mme_unload(h, s, msg, name, n);
}
