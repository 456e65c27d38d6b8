/*
 * frontend/grpc_shm.c - the shared-memory RPCs of
 * inference.GRPCInferenceService and the shared-memory parameters of a
 * ModelInferRequest's tensors.
 *
 * The RPCs map onto the server's region table (core/shm.h):
 *  - *Status answers at once: a map by region name, from ifd_shm_foreach
 *    (an unknown name is NOT_FOUND with Triton's text, which says "system"
 *    for CUDA regions too).
 *  - *Register and *Unregister start the table's operation, which maps or
 *    unmaps off the loop, and answer from its callback. Meanwhile the call
 *    holds a stream reference and keeps the table's call as its method data;
 *    if the call ends first, ifd__grpc_shm_cancel forgets the table's call
 *    (the operation itself goes on) and drops the reference, as model load
 *    does in frontend/grpc_service.c.
 * Errors are core's codes and texts (Triton 2.47's), mapped to gRPC status
 * through ifd_grpc_status: a name registered twice ALREADY_EXISTS, a key
 * that does not open INTERNAL, bad offsets or sizes and CUDA without a GPU
 * INVALID_ARGUMENT.
 *
 * The few lines that unpack a request and answer a unary call are repeated
 * here rather than shared with grpc_service.c, whose helpers are static.
 */
#include "frontend/grpc_shm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/server.h"
#include "core/shm.h"
#include "frontend/grpc_infer.h"
#include "frontend/status.h"
#include "base/utf8.h"

static ifd_shm_t *table(const ifd_gstream_t *st) {
  return ifd_server_shm(ifd_gstream_server(st));
}

/* ---- status -------------------------------------------------------------- */

/* The entries of a status answer: one allocation per region holding its
 * map entry, its RegionStatus and its strings. */
typedef struct entries {
  void **blocks; /* owned, each block owned */
  size_t n, cap;
} entries_t;

static void entries_free(entries_t *e) {
  while (e->n > 0) free(e->blocks[--e->n]);
  free(e->blocks);
}

/* Copies `s` into `out` as well-formed UTF-8 (proto3 strings must be; a
 * name from an HTTP path may hold any byte). Returns the end of the copy. */
static char *put_text(char *out, const char *s) {
  size_t n = strlen(s);

  if (ifd_utf8_valid(s, n)) {
    memcpy(out, s, n);
  } else {
    n = ifd_utf8_repair(s, n, out);
  }
  out[n] = '\0';
  return out + n + 1;
}

/* Room for `s` repaired, NUL included (a byte may become 3). */
static size_t text_room(const char *s) {
  return 3 * strlen(s) + 1;
}

/* Adds a block of `size` bytes to `e`; NULL on ENOMEM. */
static void *entries_add(entries_t *e, size_t size) {
  void *p;

  if (e->n == e->cap) {
    size_t cap = e->cap != 0 ? 2 * e->cap : 8;
    void **nb = realloc(e->blocks, cap * sizeof(void *));
    if (nb == NULL) return NULL;
    e->blocks = nb;
    e->cap = cap;
  }
  p = calloc(1, size);
  if (p != NULL) e->blocks[e->n++] = p;
  return p;
}

typedef Inference__SystemSharedMemoryStatusResponse__RegionsEntry sys_entry_t;
typedef Inference__SystemSharedMemoryStatusResponse__RegionStatus sys_status_t;
typedef Inference__CudaSharedMemoryStatusResponse__RegionsEntry cuda_entry_t;
typedef Inference__CudaSharedMemoryStatusResponse__RegionStatus cuda_status_t;

static int add_system(const ifd_shm_info_t *info, void *arg) {
  entries_t *e = arg;
  sys_entry_t *en;
  sys_status_t *rs;
  char *s;

  en = entries_add(e, sizeof(*en) + sizeof(*rs) + text_room(info->name) +
                          text_room(info->key != NULL ? info->key : ""));
  if (en == NULL) return IFD_ENOMEM;
  rs = (sys_status_t *)(en + 1);
  inference__system_shared_memory_status_response__regions_entry__init(en);
  inference__system_shared_memory_status_response__region_status__init(rs);
  s = (char *)(rs + 1);
  rs->name = s;
  s = put_text(s, info->name);
  rs->key = s;
  put_text(s, info->key != NULL ? info->key : "");
  rs->offset = info->offset;
  rs->byte_size = info->byte_size;
  en->key = rs->name;
  en->value = rs;
  return 0;
}

static int add_cuda(const ifd_shm_info_t *info, void *arg) {
  entries_t *e = arg;
  cuda_entry_t *en;
  cuda_status_t *rs;

  en = entries_add(e, sizeof(*en) + sizeof(*rs) + text_room(info->name));
  if (en == NULL) return IFD_ENOMEM;
  rs = (cuda_status_t *)(en + 1);
  inference__cuda_shared_memory_status_response__regions_entry__init(en);
  inference__cuda_shared_memory_status_response__region_status__init(rs);
  rs->name = (char *)(rs + 1);
  put_text(rs->name, info->name);
  rs->device_id = (uint64_t)info->device_id;
  rs->byte_size = info->byte_size;
  en->key = rs->name;
  en->value = rs;
  return 0;
}

/* Walks the regions of `kind` (all, or the one named) into `e`. Returns 0,
 * or a code with `err` filled. */
static int walk(ifd_gstream_t *st, ifd_shm_kind_t kind, const char *name,
                entries_t *e, ifd_errmsg_t *err) {
  int rc;

  ifd_errclear(err);
  rc = ifd_shm_foreach(table(st), kind, name[0] != '\0' ? name : NULL,
                       kind == IFD_SHM_SYSTEM ? add_system : add_cuda, e, err);
  if (rc == IFD_ENOMEM) ifd_errf(err, rc, "out of memory");
  return rc;
}

void ifd__grpc_shm_system_status(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  Inference__SystemSharedMemoryStatusRequest *q = ifd__grpc_unpack(
      st, &inference__system_shared_memory_status_request__descriptor, msg,
      len);
  Inference__SystemSharedMemoryStatusResponse r =
      INFERENCE__SYSTEM_SHARED_MEMORY_STATUS_RESPONSE__INIT;
  entries_t e = {NULL, 0, 0};
  ifd_errmsg_t err;
  int rc;

  if (q == NULL) return;
  rc = walk(st, IFD_SHM_SYSTEM, q->name, &e, &err);
  if (rc != 0) {
    ifd__grpc_finish_code(st, rc, err.text);
  } else {
    r.n_regions = e.n;
    r.regions = (sys_entry_t **)e.blocks;
    ifd__grpc_reply(st, &r.base);
  }
  entries_free(&e);
  protobuf_c_message_free_unpacked(&q->base, NULL);
}

void ifd__grpc_shm_cuda_status(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  Inference__CudaSharedMemoryStatusRequest *q = ifd__grpc_unpack(
      st, &inference__cuda_shared_memory_status_request__descriptor, msg, len);
  Inference__CudaSharedMemoryStatusResponse r =
      INFERENCE__CUDA_SHARED_MEMORY_STATUS_RESPONSE__INIT;
  entries_t e = {NULL, 0, 0};
  ifd_errmsg_t err;
  int rc;

  if (q == NULL) return;
  rc = walk(st, IFD_SHM_CUDA, q->name, &e, &err);
  if (rc != 0) {
    ifd__grpc_finish_code(st, rc, err.text);
  } else {
    r.n_regions = e.n;
    r.regions = (cuda_entry_t **)e.blocks;
    ifd__grpc_reply(st, &r.base);
  }
  entries_free(&e);
  protobuf_c_message_free_unpacked(&q->base, NULL);
}

/* ---- register and unregister --------------------------------------------- */

/* The table's operation completed: answer, unless the call ended first
 * (then ifd__grpc_shm_cancel forgot the operation and this does not run). */
static void on_done(int rc, const char *msg, void *arg) {
  ifd_gstream_t *st = arg; /* counted reference, the call's */
  /* Every register and unregister response is an empty message. */
  Inference__SystemSharedMemoryRegisterResponse r =
      INFERENCE__SYSTEM_SHARED_MEMORY_REGISTER_RESPONSE__INIT;

  ifd_gstream_set_data(st, NULL);
  if (!ifd_gstream_closed(st)) {
    if (rc == 0)
      ifd__grpc_reply(st, &r.base);
    else
      ifd__grpc_finish_code(st, rc, msg);
  }
  ifd_gstream_unref(st);
}

void ifd__grpc_shm_cancel(ifd_gstream_t *st) {
  ifd_shm_call_t *call = ifd_gstream_data(st);

  if (call == NULL) return; /* answered, or refused at once */
  ifd_gstream_set_data(st, NULL);
  ifd_shm_call_forget(call);
  ifd_gstream_unref(st); /* on_done will not run */
}

/* The table's operation was started (`rc` 0) with a stream reference taken
 * for on_done: the call keeps the table's call as its method data. Or it
 * was refused at once: no callback follows, so the reference is dropped and
 * the error answered. */
static void started(ifd_gstream_t *st, int rc, ifd_shm_call_t *call,
                    const ifd_errmsg_t *err) {
  if (rc == 0) {
    ifd_gstream_set_data(st, call);
    return;
  }
  ifd_gstream_unref(st);
  ifd__grpc_finish_code(st, rc, err->text);
}

void ifd__grpc_shm_system_register(ifd_gstream_t *st, uint8_t *msg,
                                   size_t len) {
  Inference__SystemSharedMemoryRegisterRequest *q = ifd__grpc_unpack(
      st, &inference__system_shared_memory_register_request__descriptor, msg,
      len);
  ifd_shm_call_t *call = NULL;
  ifd_errmsg_t err;
  int rc;

  if (q == NULL) return;
  ifd_errclear(&err);
  ifd_gstream_ref(st); /* on_done's or ifd__grpc_shm_cancel's */
  rc = ifd_shm_register_system(table(st), q->name, q->key, q->offset,
                               q->byte_size, on_done, st, &call, &err);
  started(st, rc, call, &err);
  protobuf_c_message_free_unpacked(&q->base, NULL);
}

void ifd__grpc_shm_cuda_register(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  Inference__CudaSharedMemoryRegisterRequest *q = ifd__grpc_unpack(
      st, &inference__cuda_shared_memory_register_request__descriptor, msg,
      len);
  ifd_shm_call_t *call = NULL;
  ifd_errmsg_t err;
  int rc;

  if (q == NULL) return;
  ifd_errclear(&err);
  ifd_gstream_ref(st); /* on_done's or ifd__grpc_shm_cancel's */
  rc = ifd_shm_register_cuda(table(st), q->name, q->raw_handle.data,
                             q->raw_handle.len, q->device_id, q->byte_size,
                             on_done, st, &call, &err);
  started(st, rc, call, &err);
  protobuf_c_message_free_unpacked(&q->base, NULL);
}

/* Unregister of one region, or of every region of `kind` for name "". */
static void unregister(ifd_gstream_t *st, ifd_shm_kind_t kind,
                       const char *name) {
  ifd_shm_call_t *call = NULL;
  ifd_errmsg_t err;
  int rc;

  ifd_errclear(&err);
  ifd_gstream_ref(st); /* on_done's or ifd__grpc_shm_cancel's */
  rc = ifd_shm_unregister(table(st), kind, name, on_done, st, &call);
  if (rc != 0) ifd_errf(&err, rc, "out of memory");
  started(st, rc, call, &err);
}

void ifd__grpc_shm_system_unregister(ifd_gstream_t *st, uint8_t *msg,
                                     size_t len) {
  Inference__SystemSharedMemoryUnregisterRequest *q = ifd__grpc_unpack(
      st, &inference__system_shared_memory_unregister_request__descriptor, msg,
      len);

  if (q == NULL) return;
  unregister(st, IFD_SHM_SYSTEM, q->name);
  protobuf_c_message_free_unpacked(&q->base, NULL);
}

void ifd__grpc_shm_cuda_unregister(ifd_gstream_t *st, uint8_t *msg,
                                   size_t len) {
  Inference__CudaSharedMemoryUnregisterRequest *q = ifd__grpc_unpack(
      st, &inference__cuda_shared_memory_unregister_request__descriptor, msg,
      len);

  if (q == NULL) return;
  unregister(st, IFD_SHM_CUDA, q->name);
  protobuf_c_message_free_unpacked(&q->base, NULL);
}

/* ---- tensors in shared memory -------------------------------------------- */

int ifd__grpc_shm_param(ifd_grpc_shm_params_t *p, const char *key,
                        const Inference__InferParameter *value) {
  static const Inference__InferParameter unset =
      INFERENCE__INFER_PARAMETER__INIT;

  if (value == NULL) value = &unset; /* a map entry without a value */
  if (strcmp(key, "shared_memory_region") == 0)
    p->region = value;
  else if (strcmp(key, "shared_memory_offset") == 0)
    p->offset = value;
  else if (strcmp(key, "shared_memory_byte_size") == 0)
    p->byte_size = value;
  else
    return 0;
  return 1;
}

static int is_int64(const Inference__InferParameter *v) {
  return v->parameter_choice_case ==
         INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM;
}

int ifd__grpc_shm_tensor(ifd_request_t *req, const char *tensor,
                         const ifd_grpc_shm_params_t *p, ifd_shm_ref_t *ref,
                         ifd_errmsg_t *err) {
  const char *region;

  memset(ref, 0, sizeof(*ref));
  /* Triton's checks, in its order and with its texts. */
  if (p->region != NULL &&
      p->region->parameter_choice_case !=
          INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM)
    return ifd_errf(err, IFD_EINVAL,
                    "invalid value type for 'shared_memory_region' parameter "
                    "for tensor '%s', expected string_param.",
                    tensor);
  if (p->offset != NULL) {
    if (p->region == NULL)
      return ifd_errf(err, IFD_EINVAL,
                      "'shared_memory_offset' can not be specified without "
                      "'shared_memory_region' parameter for tensor '%s'",
                      tensor);
    if (!is_int64(p->offset))
      return ifd_errf(err, IFD_EINVAL,
                      "invalid value type for 'shared_memory_offset' "
                      "parameter for tensor '%s', expected int64_param.",
                      tensor);
  }
  if (p->byte_size != NULL) {
    if (p->region == NULL)
      return ifd_errf(err, IFD_EINVAL,
                      "'shared_memory_byte_size' can not be specified "
                      "without 'shared_memory_region' parameter for tensor "
                      "'%s'",
                      tensor);
    if (!is_int64(p->byte_size))
      return ifd_errf(err, IFD_EINVAL,
                      "invalid value type for 'shared_memory_byte_size' "
                      "parameter for tensor '%s', expected int64_param.",
                      tensor);
  } else if (p->region != NULL) {
    return ifd_errf(err, IFD_EINVAL,
                    "'shared_memory_byte_size' must be specified along with "
                    "'shared_memory_region' parameter for tensor '%s'",
                    tensor);
  }
  if (p->region == NULL) return 0;
  /* Negative values become sizes past any region: the bounds check of
   * ifd_shm_use refuses them with Triton's text. */
  region = p->region->string_param;
  return ifd_shm_use(req, region, strlen(region),
                     p->offset != NULL ? (uint64_t)p->offset->int64_param : 0,
                     (uint64_t)p->byte_size->int64_param, ref, err);
}
