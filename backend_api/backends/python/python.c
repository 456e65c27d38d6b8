/*
 * backend_api/backends/python/python.c - the Python backend.
 *
 * README: built as libtriton_python.so; runs a model's model.py (Triton's
 * TritonPythonModel contract) in one triton_python_backend_stub process per
 * model instance, started at instance initialize with posix_spawn from the
 * folder of this library. Protocol and shared memory: ipc.h. Execute sends
 * the whole batch in one EXECUTE message (inputs copied once into the
 * instance's memfd segment) and copies each output once from the segment
 * into TRITONBACKEND_OutputBuffer. A stub that dies fails the in-flight
 * requests ("stub process for model 'm' instance 'i' exited unexpectedly")
 * and is started again on the next execute. Errors from user code come back
 * with a traceback, which goes to the log.
 * Not in this slice: decoupled models, BLS, Logger, MetricFamily,
 * auto_complete_config, EXECUTION_ENV_PATH.
 */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc.h"
#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

extern char **environ;

/* One model instance and its stub. Used by its instance thread only. */
typedef struct py_instance {
  char *model_name; /* owned */
  char *inst_name;  /* owned */
  char *args_json;  /* owned: the INIT payload */
  char stub_path[PATH_MAX];
  char backend_dir[PATH_MAX];
  pid_t pid; /* the stub; 0: none */
  int sock;  /* our end of the socketpair; -1: none */
  int shm;   /* the memfd; -1: none */
  void *map; /* owned mapping of the segment; NULL when map_size 0 */
  size_t map_size;
  uint32_t next_id;
} py_instance_t;

/* A growable text buffer (JSON); `oom` set on any allocation failure. */
typedef struct sbuf {
  char *p; /* owned */
  size_t len, cap;
  int oom;
} sbuf_t;

static void sb_add(sbuf_t *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void sb_fmt(sbuf_t *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  if (n > 0)
    sb_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Appends s as a JSON string literal. */
static void sb_str(sbuf_t *b, const char *s, size_t n) {
  sb_add(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      sb_add(b, e, 2);
    } else if (c < 0x20) {
      sb_fmt(b, "\\u%04x", c);
    } else {
      sb_add(b, (const char *)&s[i], 1);
    }
  }
  sb_add(b, "\"", 1);
}
static void sb_cstr(sbuf_t *b, const char *s) {
  sb_str(b, s, strlen(s));
}

static void log_text(TRITONSERVER_LogLevel level, int line, const char *text) {
  if (TRITONSERVER_LogIsEnabled(level))
    TRITONSERVER_ErrorDelete(
        TRITONSERVER_LogMessage(level, __FILE__, line, text));
}

static void log_if_error(TRITONSERVER_Error *err, const char *what) {
  char buf[512];
  if (err == NULL) return;
  snprintf(buf, sizeof(buf), "python backend: %s: %s", what,
           TRITONSERVER_ErrorMessage(err));
  log_text(TRITONSERVER_LOG_ERROR, __LINE__, buf);
  TRITONSERVER_ErrorDelete(err);
}

static TRITONSERVER_Error *errorf(TRITONSERVER_Error_Code code, const char *fmt,
                                  ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return TRITONSERVER_ErrorNew(code, buf);
}

/* ---- framing ------------------------------------------------------------- */

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -EPIPE;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static int read_all(int fd, void *p, size_t n) {
  char *c = p;
  while (n > 0) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -EPIPE;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

static int send_msg(py_instance_t *in, uint32_t type, uint32_t id,
                    const void *payload, size_t len) {
  ifd_py_hdr_t h = {type, id, len};
  int rc = write_all(in->sock, &h, sizeof(h));
  if (rc == 0 && len > 0) rc = write_all(in->sock, payload, len);
  return rc;
}

/* Reads one message; *payload is malloc'ed (NUL-terminated) for the caller. */
static int recv_msg(py_instance_t *in, ifd_py_hdr_t *h, char **payload) {
  *payload = NULL;
  int rc = read_all(in->sock, h, sizeof(*h));
  if (rc != 0) return rc;
  if (h->length > (1u << 30)) return -EPROTO;
  char *p = malloc(h->length + 1);
  if (p == NULL) return -ENOMEM;
  rc = read_all(in->sock, p, h->length);
  if (rc != 0) {
    free(p);
    return rc;
  }
  p[h->length] = '\0';
  *payload = p;
  return 0;
}

/* ---- the stub's life -------------------------------------------------------
 */

/* Reaps the stub (killing it first) and closes its descriptors. Returns a
 * text for how it ended in `how`. */
static void stub_stop(py_instance_t *in, int kill_it, char *how, size_t n) {
  if (how != NULL) snprintf(how, n, "unknown status");
  if (in->sock >= 0) close(in->sock);
  in->sock = -1;
  if (in->pid > 0) {
    int st = 0;
    if (kill_it) kill(in->pid, SIGKILL);
    while (waitpid(in->pid, &st, 0) < 0 && errno == EINTR)
      ;
    if (how != NULL) {
      if (WIFSIGNALED(st))
        snprintf(how, n, "killed by signal %d", WTERMSIG(st));
      else if (WIFEXITED(st))
        snprintf(how, n, "exit status %d", WEXITSTATUS(st));
    }
  }
  in->pid = 0;
  if (in->map != NULL) munmap(in->map, in->map_size);
  in->map = NULL;
  in->map_size = 0;
  if (in->shm >= 0) close(in->shm);
  in->shm = -1;
}

/* Maps at least `size` bytes of the segment, growing it when `grow`. */
static int shm_ensure(py_instance_t *in, size_t size, int grow) {
  struct stat sb;
  if (fstat(in->shm, &sb) != 0) return -errno;
  if ((size_t)sb.st_size < size) {
    if (!grow) return -EPROTO;
    size_t n = (size + 0xFFFFF) & ~(size_t)0xFFFFF;
    if (ftruncate(in->shm, (off_t)n) != 0) return -errno;
    sb.st_size = (off_t)n;
  }
  if (in->map_size >= (size_t)sb.st_size && in->map != NULL) return 0;
  if (in->map != NULL) munmap(in->map, in->map_size);
  in->map = NULL;
  in->map_size = 0;
  if (sb.st_size == 0) return 0;
  void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                 in->shm, 0);
  if (m == MAP_FAILED) return -errno;
  in->map = m;
  in->map_size = (size_t)sb.st_size;
  return 0;
}

/* Logs an ERROR payload's traceback and returns its message as an error. */
static TRITONSERVER_Error *error_payload(py_instance_t *in, const char *p,
                                         size_t len) {
  uint32_t mlen = 0;
  if (len < 4) return errorf(TRITONSERVER_ERROR_INTERNAL, "bad stub error");
  memcpy(&mlen, p, 4);
  if (mlen > len - 4) mlen = (uint32_t)(len - 4);
  sbuf_t b = {0};
  sb_fmt(&b, "python model '%s' instance '%s': ", in->model_name,
         in->inst_name);
  sb_add(&b, p + 4, mlen);
  if (len - 4 - mlen > 0) {
    sb_add(&b, "\n", 1);
    sb_add(&b, p + 4 + mlen, len - 4 - mlen);
  }
  if (!b.oom) log_text(TRITONSERVER_LOG_ERROR, __LINE__, b.p);
  free(b.p);
  char *msg = strndup(p + 4, mlen);
  TRITONSERVER_Error *err = TRITONSERVER_ErrorNew(
      TRITONSERVER_ERROR_INTERNAL, msg != NULL ? msg : "out of memory");
  free(msg);
  return err;
}

/* Starts the stub and runs the model's initialize. */
static TRITONSERVER_Error *stub_start(py_instance_t *in) {
  int sv[2] = {-1, -1};
  TRITONSERVER_Error *err = NULL;
  posix_spawn_file_actions_t fa;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return errorf(TRITONSERVER_ERROR_INTERNAL, "socketpair: %s",
                  strerror(errno));
  in->shm = memfd_create("inferd-python", MFD_CLOEXEC);
  if (in->shm < 0) {
    err = errorf(TRITONSERVER_ERROR_INTERNAL, "memfd_create: %s",
                 strerror(errno));
    goto fail;
  }
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], IFD_PY_SOCK_FD);
  posix_spawn_file_actions_adddup2(&fa, in->shm, IFD_PY_SHM_FD);
  char *argv[] = {in->stub_path, in->backend_dir, NULL};
  int rc = posix_spawn(&in->pid, in->stub_path, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(sv[1]);
  sv[1] = -1;
  in->sock = sv[0];
  if (rc != 0) {
    in->pid = 0;
    err = errorf(TRITONSERVER_ERROR_INTERNAL, "cannot start %s: %s",
                 in->stub_path, strerror(rc));
    goto fail;
  }
  ifd_py_hdr_t h;
  char *payload = NULL;
  uint32_t id = ++in->next_id;
  if (send_msg(in, IFD_PY_MSG_INIT, id, in->args_json, strlen(in->args_json)) !=
          0 ||
      recv_msg(in, &h, &payload) != 0) {
    char how[64];
    stub_stop(in, 1, how, sizeof(how));
    return errorf(TRITONSERVER_ERROR_INTERNAL,
                  "stub process for model '%s' instance '%s' exited "
                  "unexpectedly during initialize (%s)",
                  in->model_name, in->inst_name, how);
  }
  if (h.type == IFD_PY_MSG_ERROR)
    err = error_payload(in, payload, h.length);
  else if (h.type != IFD_PY_MSG_INIT_OK)
    err = errorf(TRITONSERVER_ERROR_INTERNAL, "unexpected stub message %u",
                 (unsigned)h.type);
  free(payload);
  if (err != NULL) goto fail;
  return NULL;
fail:
  if (sv[1] >= 0) close(sv[1]);
  if (in->sock < 0 && sv[0] >= 0) close(sv[0]);
  stub_stop(in, 1, NULL, 0);
  return err;
}

/* ---- model and instance ---------------------------------------------------
 */

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance *instance) {
  TRITONBACKEND_Model *model = NULL;
  const char *model_name = NULL, *inst_name = NULL, *repo = NULL;
  TRITONBACKEND_ArtifactType at;
  uint64_t version = 0;
  int32_t device_id = 0;
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  TRITONSERVER_Message *config = NULL;
  const char *json = NULL;
  size_t json_len = 0;
  py_instance_t *in = NULL;
  sbuf_t b = {0};
  Dl_info dli;

  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceModel(instance, &model);
  if (err == NULL) err = TRITONBACKEND_ModelName(model, &model_name);
  if (err == NULL) err = TRITONBACKEND_ModelVersion(model, &version);
  if (err == NULL) err = TRITONBACKEND_ModelRepository(model, &at, &repo);
  if (err == NULL) err = TRITONBACKEND_ModelInstanceName(instance, &inst_name);
  if (err == NULL) err = TRITONBACKEND_ModelInstanceKind(instance, &kind);
  if (err == NULL)
    err = TRITONBACKEND_ModelInstanceDeviceId(instance, &device_id);
  if (err == NULL) err = TRITONBACKEND_ModelConfig(model, 1, &config);
  if (err == NULL)
    err = TRITONSERVER_MessageSerializeToJson(config, &json, &json_len);
  if (err != NULL) goto out;

  in = calloc(1, sizeof(*in));
  if (in == NULL) goto oom;
  in->sock = in->shm = -1;
  in->model_name = strdup(model_name);
  in->inst_name = strdup(inst_name);
  if (in->model_name == NULL || in->inst_name == NULL) goto oom;
  if (dladdr((void *)TRITONBACKEND_ModelInstanceInitialize, &dli) == 0 ||
      dli.dli_fname == NULL) {
    err = errorf(TRITONSERVER_ERROR_INTERNAL, "cannot find the backend path");
    goto out;
  }
  snprintf(in->backend_dir, sizeof(in->backend_dir), "%s", dli.dli_fname);
  char *slash = strrchr(in->backend_dir, '/');
  if (slash != NULL)
    *slash = '\0';
  else
    snprintf(in->backend_dir, sizeof(in->backend_dir), ".");
  if (strlen(in->backend_dir) + 32 > sizeof(in->stub_path)) {
    err = errorf(TRITONSERVER_ERROR_INTERNAL, "backend path too long");
    goto out;
  }
  strcpy(in->stub_path, in->backend_dir);
  strcat(in->stub_path, "/triton_python_backend_stub");

  sb_add(&b, "{\"model_config\":", 16);
  sb_str(&b, json, json_len);
  sb_add(&b, ",\"model_instance_kind\":", 23);
  sb_cstr(&b, TRITONSERVER_InstanceGroupKindString(kind));
  sb_add(&b, ",\"model_instance_name\":", 23);
  sb_cstr(&b, inst_name);
  sb_fmt(&b, ",\"model_instance_device_id\":\"%d\"", (int)device_id);
  sb_add(&b, ",\"model_repository\":", 20);
  sb_cstr(&b, repo);
  sb_fmt(&b, ",\"model_version\":\"%llu\"", (unsigned long long)version);
  sb_add(&b, ",\"model_name\":", 14);
  sb_cstr(&b, model_name);
  sb_add(&b, "}", 1);
  if (b.oom) goto oom;
  in->args_json = b.p;
  b.p = NULL;

  err = stub_start(in);
  if (err == NULL) err = TRITONBACKEND_ModelInstanceSetState(instance, in);
  if (err == NULL) in = NULL;
  goto out;
oom:
  err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
out:
  if (in != NULL) {
    stub_stop(in, 1, NULL, 0);
    free(in->model_name);
    free(in->inst_name);
    free(in->args_json);
    free(in);
  }
  free(b.p);
  if (config != NULL)
    TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(config));
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(
    TRITONBACKEND_ModelInstance *instance) {
  void *v = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceState(instance, &v);
  if (err != NULL) return err;
  py_instance_t *in = v;
  if (in == NULL) return NULL;
  if (in->pid > 0) {
    ifd_py_hdr_t h;
    char *payload = NULL;
    /* The model's finalize runs; the stub then exits on its own. */
    if (send_msg(in, IFD_PY_MSG_FINALIZE, ++in->next_id, NULL, 0) == 0 &&
        recv_msg(in, &h, &payload) == 0)
      free(payload);
    stub_stop(in, 0, NULL, 0);
  }
  free(in->model_name);
  free(in->inst_name);
  free(in->args_json);
  free(in);
  return NULL;
}

/* ---- execute ---------------------------------------------------------------
 */

/* Where one request's inputs go in the segment; filled by layout(). */
static TRITONSERVER_Error *add_request(py_instance_t *in, sbuf_t *b,
                                       TRITONBACKEND_Request *req, size_t *pos,
                                       int copy) {
  const char *id = NULL;
  uint64_t corr = 0;
  uint32_t nin = 0, nout = 0, npar = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestId(req, &id);
  if (err == NULL) err = TRITONBACKEND_RequestInputCount(req, &nin);
  if (err == NULL) err = TRITONBACKEND_RequestOutputCount(req, &nout);
  if (err == NULL) err = TRITONBACKEND_RequestParameterCount(req, &npar);
  if (err != NULL) return err;
  err = TRITONBACKEND_RequestCorrelationId(req, &corr);
  if (err != NULL) {
    const char *cs = NULL;
    TRITONSERVER_ErrorDelete(err);
    err = TRITONBACKEND_RequestCorrelationIdString(req, &cs);
    if (err != NULL) return err;
    sb_add(b, "{\"correlation_id\":", 18);
    sb_cstr(b, cs != NULL ? cs : "");
  } else {
    sb_fmt(b, "{\"correlation_id\":%llu", (unsigned long long)corr);
  }
  sb_add(b, ",\"id\":", 6);
  sb_cstr(b, id != NULL ? id : "");
  sb_add(b, ",\"outputs\":[", 12);
  for (uint32_t i = 0; i < nout; i++) {
    const char *name = NULL;
    err = TRITONBACKEND_RequestOutputName(req, i, &name);
    if (err != NULL) return err;
    if (i > 0) sb_add(b, ",", 1);
    sb_cstr(b, name);
  }
  sb_add(b, "],\"parameters\":{", 16);
  for (uint32_t i = 0; i < npar; i++) {
    const char *key = NULL;
    TRITONSERVER_ParameterType t;
    const void *v = NULL;
    err = TRITONBACKEND_RequestParameter(req, i, &key, &t, &v);
    if (err != NULL) return err;
    if (i > 0) sb_add(b, ",", 1);
    sb_cstr(b, key);
    sb_add(b, ":", 1);
    if (t == TRITONSERVER_PARAMETER_STRING)
      sb_cstr(b, (const char *)v);
    else if (t == TRITONSERVER_PARAMETER_INT)
      sb_fmt(b, "%lld", (long long)*(const int64_t *)v);
    else if (t == TRITONSERVER_PARAMETER_BOOL)
      sb_fmt(b, "%s", *(const bool *)v ? "true" : "false");
    else if (t == TRITONSERVER_PARAMETER_DOUBLE)
      sb_fmt(b, "%.17g", *(const double *)v);
    else
      sb_add(b, "null", 4);
  }
  sb_add(b, "},\"inputs\":[", 12);
  for (uint32_t i = 0; i < nin; i++) {
    TRITONBACKEND_Input *input = NULL;
    const char *name = NULL;
    TRITONSERVER_DataType dt;
    const int64_t *shape = NULL;
    uint32_t dims = 0, nbuf = 0;
    uint64_t size = 0;
    err = TRITONBACKEND_RequestInputByIndex(req, i, &input);
    if (err == NULL)
      err = TRITONBACKEND_InputProperties(input, &name, &dt, &shape, &dims,
                                          &size, &nbuf);
    if (err != NULL) return err;
    *pos = (*pos + 63) & ~(size_t)63;
    if (i > 0) sb_add(b, ",", 1);
    sb_add(b, "{\"name\":", 8);
    sb_cstr(b, name);
    sb_fmt(b, ",\"dtype\":\"%s\",\"shape\":[", TRITONSERVER_DataTypeString(dt));
    for (uint32_t d = 0; d < dims; d++)
      sb_fmt(b, d ? ",%lld" : "%lld", (long long)shape[d]);
    sb_fmt(b, "],\"offset\":%zu,\"size\":%llu}", *pos,
           (unsigned long long)size);
    if (copy) {
      uint64_t off = 0;
      for (uint32_t k = 0; k < nbuf; k++) {
        const void *src = NULL;
        uint64_t n = 0;
        TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
        int64_t mt_id = 0;
        err = TRITONBACKEND_InputBuffer(input, k, &src, &n, &mt, &mt_id);
        if (err != NULL) return err;
        if (mt == TRITONSERVER_MEMORY_GPU && n > 0)
          return errorf(TRITONSERVER_ERROR_UNSUPPORTED,
                        "the python backend needs CPU input buffers");
        if (n > size - off)
          return errorf(TRITONSERVER_ERROR_INTERNAL,
                        "input buffers exceed the input byte size");
        if (n > 0) memcpy((char *)in->map + *pos + off, src, n);
        off += n;
      }
    }
    *pos += size;
  }
  sb_add(b, "]}", 2);
  return NULL;
}

static int rd(const char **p, const char *end, void *dst, size_t n) {
  if ((size_t)(end - *p) < n) return -1;
  memcpy(dst, *p, n);
  *p += n;
  return 0;
}

/* Builds one response's outputs from a RESULT entry; advances *p. */
static TRITONSERVER_Error *fill_response(py_instance_t *in,
                                         TRITONBACKEND_Response *resp,
                                         const char **p, const char *end,
                                         int *user_error) {
  uint32_t is_err = 0, n = 0;
  *user_error = 0;
  if (rd(p, end, &is_err, 4) || rd(p, end, &n, 4)) goto bad;
  if (is_err) {
    uint32_t len = 0;
    if (rd(p, end, &len, 4) || (size_t)(end - *p) < len) goto bad;
    char *msg = strndup(*p, len);
    *p += len;
    *user_error = 1;
    TRITONSERVER_Error *e = TRITONSERVER_ErrorNew(
        (TRITONSERVER_Error_Code)n, msg != NULL ? msg : "out of memory");
    free(msg);
    return e;
  }
  for (uint32_t i = 0; i < n; i++) {
    char name[256], dtype[32];
    uint32_t len = 0, dims = 0;
    int64_t shape[64];
    uint64_t off = 0, size = 0;
    if (rd(p, end, &len, 4) || len >= sizeof(name) || rd(p, end, name, len))
      goto bad;
    name[len] = '\0';
    if (rd(p, end, &len, 4) || len >= sizeof(dtype) || rd(p, end, dtype, len))
      goto bad;
    dtype[len] = '\0';
    if (rd(p, end, &dims, 4) || dims > 64 ||
        rd(p, end, shape, sizeof(int64_t) * dims) || rd(p, end, &off, 8) ||
        rd(p, end, &size, 8))
      goto bad;
    if (size > 0 &&
        (shm_ensure(in, off + size, 0) != 0 || off + size > in->map_size))
      goto bad;
    TRITONBACKEND_Output *out = NULL;
    void *dst = NULL;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    TRITONSERVER_Error *err = TRITONBACKEND_ResponseOutput(
        resp, &out, name, TRITONSERVER_StringToDataType(dtype), shape, dims);
    if (err == NULL)
      err = TRITONBACKEND_OutputBuffer(out, &dst, size, &mt, &mt_id);
    if (err != NULL) return err;
    if (mt == TRITONSERVER_MEMORY_GPU && size > 0)
      return errorf(TRITONSERVER_ERROR_UNSUPPORTED,
                    "the python backend needs CPU output buffers");
    if (size > 0) memcpy(dst, (char *)in->map + off, size);
  }
  return NULL;
bad:
  return errorf(TRITONSERVER_ERROR_INTERNAL,
                "malformed answer from the stub of model '%s'", in->model_name);
}

/* Sends every request an error response and releases it. */
static void fail_all(TRITONBACKEND_Request **requests, uint32_t count,
                     TRITONSERVER_Error *err) {
  for (uint32_t r = 0; r < count; r++) {
    TRITONBACKEND_Response *resp = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ResponseNew(&resp, requests[r]);
    if (e == NULL)
      log_if_error(TRITONBACKEND_ResponseSend(
                       resp, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err),
                   "cannot send response");
    else
      log_if_error(e, "cannot create response");
    log_if_error(TRITONBACKEND_RequestRelease(requests[r],
                                              TRITONSERVER_REQUEST_RELEASE_ALL),
                 "cannot release request");
  }
  TRITONSERVER_ErrorDelete(err);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  void *v = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceState(instance, &v);
  if (err != NULL) return err;
  py_instance_t *in = v;
  sbuf_t b = {0};
  char *payload = NULL;
  ifd_py_hdr_t h;
  uint64_t start = now_ns();

  if (in->pid <= 0) {
    /* The stub died earlier: start it again (initialize runs again). */
    err = stub_start(in);
    if (err != NULL) {
      fail_all(requests, request_count, err);
      return NULL;
    }
  }
  /* Pass 1 sizes the inputs, pass 2 copies them and writes the message. */
  size_t pos = 0;
  for (uint32_t r = 0; r < request_count && err == NULL; r++)
    err = add_request(in, &b, requests[r], &pos, 0);
  if (err == NULL) {
    int rc = shm_ensure(in, pos, 1);
    if (rc != 0)
      err = errorf(TRITONSERVER_ERROR_INTERNAL, "shared memory: %s",
                   strerror(-rc));
  }
  size_t in_size = pos;
  b.len = 0;
  size_t out_offset = (in_size + 4095) & ~(size_t)4095;
  sb_fmt(&b, "{\"in_size\":%zu,\"out_offset\":%zu,\"requests\":[", in_size,
         out_offset);
  pos = 0;
  for (uint32_t r = 0; r < request_count && err == NULL; r++) {
    if (r > 0) sb_add(&b, ",", 1);
    err = add_request(in, &b, requests[r], &pos, 1);
  }
  sb_add(&b, "]}", 2);
  if (err == NULL && b.oom)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  if (err != NULL) {
    free(b.p);
    fail_all(requests, request_count, err);
    return NULL;
  }
  uint32_t id = ++in->next_id;
  int rc = send_msg(in, IFD_PY_MSG_EXECUTE, id, b.p, b.len);
  free(b.p);
  if (rc == 0) rc = recv_msg(in, &h, &payload);
  if (rc != 0 || h.id != id) {
    char how[64];
    stub_stop(in, 1, how, sizeof(how));
    err = errorf(TRITONSERVER_ERROR_INTERNAL,
                 "stub process for model '%s' instance '%s' exited "
                 "unexpectedly (%s); it is restarted for the next request",
                 in->model_name, in->inst_name, how);
    log_text(TRITONSERVER_LOG_ERROR, __LINE__, TRITONSERVER_ErrorMessage(err));
    free(payload);
    fail_all(requests, request_count, err);
    return NULL;
  }
  if (h.type == IFD_PY_MSG_ERROR) {
    err = error_payload(in, payload, h.length);
    free(payload);
    fail_all(requests, request_count, err);
    return NULL;
  }
  const char *p = payload, *end = payload + h.length;
  uint32_t n = 0;
  if (h.type != IFD_PY_MSG_RESULT || rd(&p, end, &n, 4) || n != request_count) {
    free(payload);
    fail_all(
        requests, request_count,
        errorf(TRITONSERVER_ERROR_INTERNAL,
               "malformed answer from the stub of model '%s'", in->model_name));
    return NULL;
  }
  uint64_t compute_end = now_ns();
  for (uint32_t r = 0; r < request_count; r++) {
    TRITONBACKEND_Response *resp = NULL;
    int user_error = 0;
    err = TRITONBACKEND_ResponseNew(&resp, requests[r]);
    if (err != NULL) {
      log_if_error(err, "cannot create response");
    } else {
      err = fill_response(in, resp, &p, end, &user_error);
      bool ok = (err == NULL);
      log_if_error(TRITONBACKEND_ResponseSend(
                       resp, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err),
                   "cannot send response");
      TRITONSERVER_ErrorDelete(err);
      uint64_t t = now_ns();
      log_if_error(TRITONBACKEND_ModelInstanceReportStatistics(
                       instance, requests[r], ok, start, start, compute_end, t),
                   "cannot report statistics");
    }
    log_if_error(TRITONBACKEND_RequestRelease(requests[r],
                                              TRITONSERVER_REQUEST_RELEASE_ALL),
                 "cannot release request");
  }
  free(payload);
  return NULL;
}
