/*
 * frontend/http_shm.c - Triton's shared-memory extensions over HTTP:
 *
 *   GET  /v2/systemsharedmemory[/region/r]/status
 *   POST /v2/systemsharedmemory/region/r/register  {"key","offset","byte_size"}
 *   POST /v2/systemsharedmemory[/region/r]/unregister
 *
 * and the same under /v2/cudasharedmemory, whose register body is
 * {"raw_handle":{"b64":"<cudaIpcMemHandle_t in base64>"},"device_id",
 * "byte_size"}.
 *
 * The region table (core/shm.h) maps and unmaps on the thread pool, so
 * register and unregister answer from its completion callback: the slot
 * waits meanwhile (slot->shm), and a connection that closes first forgets
 * the call (net/http1.c) while the table finishes the work. Status answers
 * at once. Answers and messages are tritonserver 2.47's: 200 with an empty
 * JSON body on success, a status array of {name,key,offset,byte_size}
 * (system) or {name,device_id,byte_size} (CUDA), and {"error"} bodies whose
 * status follows the error's class (frontend/status.c). A body that is not JSON
 * answers 400, where Triton answers 500 (a client's mistake).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "core/server.h"
#include "core/shm.h"
#include "frontend/internal.h"
#include "frontend/repo_control.h"
#include "frontend/status.h"

static void reply_code(ifd_http_slot_t *s, int code, const char *msg) {
  ifd__http_slot_error(
      s, ifd_http_status(code),
      msg != NULL && msg[0] != '\0' ? msg : ifd_strerror(code));
}

/* Success of register and unregister: 200, an empty JSON body. */
static void reply_ok(ifd_http_slot_t *s) {
  ifd_hbuf_t b;

  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd__http_slot_finish(s, 200, "application/json", &b, NULL, 0, -1);
}

/* The table finished a register or unregister this slot waits for. */
static void on_shm_done(int rc, const char *msg, void *arg) {
  ifd_http_slot_t *s = arg; /* still in its connection's FIFO */

  s->shm = NULL;
  if (rc == 0)
    reply_ok(s);
  else
    reply_code(s, rc, msg);
}

/* ---- status ---------------------------------------------------------------
 */

typedef struct status_walk {
  ifd_hbuf_t *b; /* borrowed */
  int first;
} status_walk_t;

static int put_region(const ifd_shm_info_t *info, void *arg) {
  status_walk_t *w = arg;
  ifd_hbuf_t *b = w->b;

  if (!w->first) ifd_hbuf_put(b, ",", 1);
  w->first = 0;
  ifd_hbuf_puts(b, "{\"name\":");
  ifd_json_text(b, info->name, strlen(info->name));
  if (info->kind == IFD_SHM_SYSTEM) {
    const char *key = info->key != NULL ? info->key : "";
    ifd_hbuf_puts(b, ",\"key\":");
    ifd_json_text(b, key, strlen(key));
    ifd_hbuf_printf(b, ",\"offset\":%" PRIu64, info->offset);
  } else {
    ifd_hbuf_printf(b, ",\"device_id\":%" PRId64, info->device_id);
  }
  ifd_hbuf_printf(b, ",\"byte_size\":%" PRIu64 "}", info->byte_size);
  return 0;
}

static void route_status(ifd_server_t *srv, ifd_http_slot_t *s,
                         ifd_shm_kind_t kind, const char *name) {
  status_walk_t w;
  ifd_errmsg_t err;
  ifd_hbuf_t b;
  int rc;

  ifd_errclear(&err);
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd_hbuf_put(&b, "[", 1);
  w.b = &b;
  w.first = 1;
  rc = ifd_shm_foreach(ifd_server_shm(srv), kind, name, put_region, &w, &err);
  if (rc != 0) {
    ifd_hbuf_free(&b);
    reply_code(s, rc, err.text);
    return;
  }
  ifd_hbuf_put(&b, "]", 1);
  if (b.oom) {
    ifd_hbuf_free(&b);
    ifd__http_slot_error(s, 500, "out of memory");
    return;
  }
  ifd__http_slot_finish(s, 200, "application/json", &b, NULL, 0, -1);
}

/* ---- register -------------------------------------------------------------
 */

/* The register body, read without a tree: its integers may go up to
 * UINT64_MAX (Triton reads them as uint64), beyond jansson's int64. */
typedef struct reg_body {
  const char *p, *end; /* borrowed: the message body */
} reg_body_t;

/* Checks the body is one JSON object. Returns 0, or -1 after answering
 * 400. */
static int load_body(ifd_http_slot_t *s, const ifd_http_msg_t *msg,
                     reg_body_t *b) {
  ifd_jerr_t jerr;
  char text[300];

  b->p = msg->body != NULL ? msg->body : "";
  b->end = b->p + msg->body_len;
  if (ifd__json_validate(b->p, msg->body_len, &jerr) != 0) {
    snprintf(text, sizeof(text),
             "failed to parse the request JSON buffer: %.200s at %zu",
             jerr.text, jerr.pos);
    ifd__http_slot_error(s, 400, text);
    return -1;
  }
  b->p = ifd__json_ws(b->p, b->end);
  if (*b->p != '{') {
    ifd__http_slot_error(
        s, 400, "failed to parse the request JSON buffer: expected an object");
    return -1;
  }
  return 0;
}

/* A string member `key` of `obj` as a malloc'd NUL-terminated copy in *out
 * (its length in *len). Returns 0, 1 when absent, or -1 when it is not a
 * string or memory ran out (nothing answered). */
static int get_str(const char *obj, const char *end, const char *key,
                   char **out, size_t *len) {
  const char *v = ifd__json_find(obj, end, key);
  int esc;

  if (v == NULL) return 1;
  if (*v != '"') return -1;
  *len = ifd_json_strlen(v, end, &esc);
  *out = malloc(*len + 1);
  if (*out == NULL) return -1;
  ifd_json_strcpy(v, end, *out);
  (*out)[*len] = '\0';
  return 0;
}

/* A non-negative integer member `key` of the body into *out (left alone
 * when absent and optional). Returns 0, or -1 after answering 400. */
static int get_uint(ifd_http_slot_t *s, const reg_body_t *b, const char *key,
                    int required, uint64_t *out) {
  const char *v = ifd__json_find(b->p, b->end, key);
  ifd_jnum_t num;
  char text[128];

  if (v == NULL && !required) return 0;
  if (v == NULL) {
    snprintf(text, sizeof(text),
             "Shared memory register request has no '%s' field", key);
    ifd__http_slot_error(s, 400, text);
    return -1;
  }
  if (*v == '-' || (*v >= '0' && *v <= '9'))
    ifd__json_number(v, b->end, &num);
  else
    num.is_uint = 0;
  if (!num.is_uint) {
    snprintf(text, sizeof(text),
             "Unable to parse '%s': expected a non-negative integer", key);
    ifd__http_slot_error(s, 400, text);
    return -1;
  }
  *out = num.u;
  return 0;
}

static void register_system(ifd_server_t *srv, ifd_http_slot_t *s,
                            const char *name, const ifd_http_msg_t *msg) {
  uint64_t offset = 0, byte_size = 0;
  char *key = NULL;
  size_t key_len;
  ifd_errmsg_t err;
  reg_body_t b;
  int rc;

  if (load_body(s, msg, &b) != 0) return;
  rc = get_str(b.p, b.end, "key", &key, &key_len);
  if (rc == 1) {
    ifd__http_slot_error(s, 400,
                         "Shared memory register request has no 'key' field");
    return;
  }
  if (rc != 0) {
    ifd__http_slot_error(s, 400, "Unable to parse 'key': expected a string");
    goto out_free_key;
  }
  if (get_uint(s, &b, "offset", 0, &offset) != 0 ||
      get_uint(s, &b, "byte_size", 1, &byte_size) != 0)
    goto out_free_key;
  ifd_errclear(&err);
  /* The table copies name and key: the body may go right after. */
  rc = ifd_shm_register_system(ifd_server_shm(srv), name, key, offset,
                               byte_size, on_shm_done, s, &s->shm, &err);
  if (rc != 0) {
    s->shm = NULL;
    reply_code(s, rc, err.text);
  }

out_free_key:
  free(key);
}

static void register_cuda(ifd_server_t *srv, ifd_http_slot_t *s,
                          const char *name, const ifd_http_msg_t *msg) {
  uint64_t byte_size = 0, device_id = 0;
  const char *raw;
  char *b64 = NULL;
  size_t b64_len = 0;
  uint8_t *handle = NULL;
  ifd_errmsg_t err;
  reg_body_t b;
  long n;
  int rc;

  if (load_body(s, msg, &b) != 0) return;
  raw = ifd__json_find(b.p, b.end, "raw_handle");
  if (raw == NULL) {
    ifd__http_slot_error(
        s, 400, "Shared memory register request has no 'raw_handle' field");
    return;
  }
  if (get_str(raw, b.end, "b64", &b64, &b64_len) != 0) {
    ifd__http_slot_error(s, 400,
                         "Unable to parse 'raw_handle': expected an object "
                         "with a string 'b64'");
    goto out_free_b64;
  }
  if (get_uint(s, &b, "byte_size", 1, &byte_size) != 0 ||
      get_uint(s, &b, "device_id", 1, &device_id) != 0)
    goto out_free_b64;
  handle = malloc(b64_len / 4 * 3 + 3);
  if (handle == NULL) {
    ifd__http_slot_error(s, 500, "out of memory");
    goto out_free_b64;
  }
  n = ifd__base64_decode(b64, b64_len, handle);
  if (n != IFD_CUDA_IPC_HANDLE_BYTES || device_id > INT64_MAX) {
    ifd__http_slot_error(
        s, 400,
        "'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t");
    goto out_free_handle;
  }
  ifd_errclear(&err);
  /* Without a GPU the table refuses at once with Triton's "GPUs not
   * supported" (400). */
  rc = ifd_shm_register_cuda(ifd_server_shm(srv), name, handle, (size_t)n,
                             (int64_t)device_id, byte_size, on_shm_done, s,
                             &s->shm, &err);
  if (rc != 0) {
    s->shm = NULL;
    reply_code(s, rc, err.text);
  }

out_free_handle:
  free(handle);
out_free_b64:
  free(b64);
}

/* ---- dispatch -------------------------------------------------------------
 */

void ifd__http_shm_route(ifd_server_t *srv, ifd_http_slot_t *s,
                         const ifd_route_match_t *m,
                         const ifd_http_msg_t *msg) {
  ifd_shm_kind_t kind = m->shm_cuda ? IFD_SHM_CUDA : IFD_SHM_SYSTEM;
  char *name = NULL;
  int rc;

  if (m->region != NULL) {
    long n;
    name = malloc(m->region_len + 1);
    if (name == NULL) {
      ifd__http_slot_error(s, 500, "out of memory");
      return;
    }
    n = ifd__http_url_decode(m->region, m->region_len, name);
    if (n <= 0 || memchr(name, '\0', (size_t)n) != NULL) {
      ifd__http_slot_error(s, 400, "malformed region name in the URL");
      goto out_free_name;
    }
    name[n] = '\0';
  }
  switch (m->route) {
    case IFD_ROUTE_SHM_STATUS:
      route_status(srv, s, kind, name);
      break;
    case IFD_ROUTE_SHM_REGISTER:
      if (kind == IFD_SHM_SYSTEM)
        register_system(srv, s, name, msg);
      else
        register_cuda(srv, s, name, msg);
      break;
    case IFD_ROUTE_SHM_UNREGISTER:
      rc = ifd_shm_unregister(ifd_server_shm(srv), kind, name, on_shm_done, s,
                              &s->shm);
      if (rc != 0) {
        s->shm = NULL;
        reply_code(s, rc, "");
      }
      break;
    default: /* the dispatcher routes only the three here */
      IFD_ASSERT(0);
      ifd__http_slot_error(s, 404, "Not Found");
      break;
  }

out_free_name:
  free(name);
}
