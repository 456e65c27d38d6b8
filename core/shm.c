/*
 * core/shm.c - the shared-memory region table (see core/shm.h).
 *
 * The table is an array of regions sorted by name (clients register a few;
 * status lists them in name order). A region is in the table from the
 * moment its register begins (`ready` 0: invisible to status and requests,
 * but its name is taken) until it is unregistered. Its mapping lives as long
 * as references do: the table's and one per request that uses it.
 *
 * Every system call that can block (shm_open, fstat, mmap, munmap, and the
 * CUDA IPC calls) runs in a uv_work_t on libuv's thread pool. A region
 * whose last reference goes is unmapped by a job that owns it from then on,
 * so neither the table nor the server needs to outlive it.
 */
#include "core/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/infer.h"
#include "base/log.h"
#include "core/server.h"
#include "cuda/cuda_mem.h"

struct ifd_shm_region {
  int refs;  /* loop thread: the table's (while registered) + one
                per request that uses it */
  int ready; /* mapped: visible to status and requests */
  ifd_shm_kind_t kind;
  char *name;         /* owned */
  char *key;          /* owned: system only, else NULL */
  uint64_t offset;    /* system: offset of the mapping in the object */
  uint64_t byte_size; /* bytes of the region */
  int64_t device_id;  /* CUDA */
  void *base;         /* system: what mmap returned (offset applied by
                         mmap, once); CUDA: the opened device pointer */
  uv_loop_t *loop;    /* borrowed: runs the unmap job */
};

/* A request's hold on a region: in the request's pool, dropped when the
 * request is freed. */
typedef struct shm_hold {
  ifd_req_attach_t link; /* first */
  ifd_shm_region_t *r;   /* counted reference */
} shm_hold_t;

struct ifd_shm_call {
  ifd_shm_done_cb cb; /* NULL once forgotten */
  void *arg;          /* borrowed: the caller's */
};

struct ifd_shm {
  uv_loop_t *loop;         /* borrowed */
  ifd_shm_region_t **regs; /* owned array (each a reference), by name */
  size_t n, cap;
  unsigned jobs; /* register jobs in flight (they use the table) */
  int gpus;      /* GPUs found at start */
  int freeing;   /* ifd_shm_free ran: the last job frees it */
};

/* ---- regions ------------------------------------------------------------ */

static void region_free(ifd_shm_region_t *r) {
  free(r->name);
  free(r->key);
  free(r);
}

/* Thread pool: undoes the mapping. */
static void region_unmap(ifd_shm_region_t *r) {
  if (r->base == NULL) return;
  if (r->kind == IFD_SHM_SYSTEM)
    munmap(r->base, (size_t)r->byte_size);
  else
    ifd_cuda_ipc_close(r->base, r->device_id);
  r->base = NULL;
}

/* An unmap job: owns `n` regions whose references are gone; `call` (may be
 * NULL) is answered after they are unmapped. */
typedef struct unmap_job {
  uv_work_t work;
  ifd_shm_call_t call;
  int has_call;
  size_t n;
  ifd_shm_region_t *r[]; /* owned */
} unmap_job_t;

static void unmap_work(uv_work_t *w) {
  unmap_job_t *j = (unmap_job_t *)w;
  size_t i;
  for (i = 0; i < j->n; i++) region_unmap(j->r[i]);
}

static void unmap_after(uv_work_t *w, int status) {
  unmap_job_t *j = (unmap_job_t *)w;
  size_t i;
  (void)status;
  for (i = 0; i < j->n; i++) region_free(j->r[i]);
  if (j->has_call && j->call.cb != NULL) j->call.cb(0, "", j->call.arg);
  free(j);
}

static unmap_job_t *unmap_job_new(size_t n) {
  return calloc(1, sizeof(unmap_job_t) + n * sizeof(ifd_shm_region_t *));
}

/* Starts `j` on the loop's thread pool; without one (never: uv_queue_work
 * fails only without a work callback), unmaps here. */
static void unmap_job_start(uv_loop_t *loop, unmap_job_t *j) {
  if (uv_queue_work(loop, &j->work, unmap_work, unmap_after) == 0) return;
  unmap_work(&j->work);
  unmap_after(&j->work, 0);
}

/* Drops a reference (loop thread); the last one hands the region to an
 * unmap job. */
static void region_unref(ifd_shm_region_t *r) {
  unmap_job_t *j;
  if (--r->refs > 0) return;
  if (r->base == NULL) {
    region_free(r);
    return;
  }
  j = unmap_job_new(1);
  if (j == NULL) {
    /* No memory for the job: unmap here rather than leak the mapping. */
    IFD_WARN("out of memory: unmapping shared memory region '%s' on the loop",
             r->name);
    region_unmap(r);
    region_free(r);
    return;
  }
  j->n = 1;
  j->r[0] = r;
  unmap_job_start(r->loop, j);
}

/* ---- the table ---------------------------------------------------------- */

/* Index of `name` in the table, or where it would go (*found 0). */
static size_t find(const ifd_shm_t *t, const char *name, size_t len,
                   int *found) {
  size_t lo = 0, hi = t->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const char *m = t->regs[mid]->name;
    size_t mlen = strlen(m);
    int c = memcmp(m, name, mlen < len ? mlen : len);
    if (c == 0) c = mlen < len ? -1 : mlen > len ? 1 : 0;
    if (c == 0) {
      *found = 1;
      return mid;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *found = 0;
  return lo;
}

static ifd_shm_region_t *lookup(const ifd_shm_t *t, const char *name,
                                size_t len) {
  int found;
  size_t i = find(t, name, len, &found);
  return found ? t->regs[i] : NULL;
}

static void table_remove(ifd_shm_t *t, size_t i) {
  memmove(&t->regs[i], &t->regs[i + 1], (t->n - i - 1) * sizeof(*t->regs));
  t->n--;
}

static void table_remove_region(ifd_shm_t *t, ifd_shm_region_t *r) {
  int found;
  size_t i = find(t, r->name, strlen(r->name), &found);
  if (found && t->regs[i] == r) table_remove(t, i);
}

ifd_shm_t *ifd_shm_new(uv_loop_t *loop, int gpu_count) {
  ifd_shm_t *t = calloc(1, sizeof(*t));
  if (t == NULL) return NULL;
  t->loop = loop;
  t->gpus = gpu_count;
  return t;
}

static void table_destroy(ifd_shm_t *t) {
  free(t->regs);
  free(t);
}

void ifd_shm_free(ifd_shm_t *t) {
  size_t i, n = 0;
  unmap_job_t *j;
  if (t == NULL) return;
  /* Regions held by nobody else are unmapped by one job (the loop still
   * runs: the server is freed from a loop callback); those requests still
   * hold go with their last request. */
  j = unmap_job_new(t->n);
  for (i = 0; i < t->n; i++) {
    ifd_shm_region_t *r = t->regs[i];
    if (!r->ready) continue; /* its register job still owns it */
    if (--r->refs > 0) continue;
    if (j != NULL) {
      j->r[n++] = r;
    } else {
      region_unmap(r);
      region_free(r);
    }
  }
  if (j != NULL && n > 0) {
    j->n = n;
    unmap_job_start(t->loop, j);
  } else {
    free(j);
  }
  t->n = 0;
  if (t->jobs > 0) {
    t->freeing = 1; /* the last register job frees the table */
    return;
  }
  table_destroy(t);
}

size_t ifd_shm_count(const ifd_shm_t *t) {
  size_t i, n = 0;
  for (i = 0; i < t->n; i++) n += t->regs[i]->ready;
  return n;
}

/* ---- register ----------------------------------------------------------- */

typedef struct reg_job {
  uv_work_t work;
  ifd_shm_t *t;        /* borrowed: counted in t->jobs */
  ifd_shm_region_t *r; /* the table's reference */
  ifd_shm_call_t call;
  unsigned char handle[IFD_CUDA_IPC_HANDLE_BYTES]; /* CUDA */
  ifd_errmsg_t err;
  int rc;
} reg_job_t;

/* Thread pool: maps a system region. Triton's checks and texts. */
static int map_system(ifd_shm_region_t *r, ifd_errmsg_t *err) {
  struct stat st;
  void *p;
  int e;
  int fd = shm_open(r->key, O_RDWR, S_IRUSR | S_IWUSR);
  if (fd < 0)
    return ifd_errf(err, IFD_EINTERNAL,
                    "Unable to open shared memory region: '%s'", r->key);
  if (fstat(fd, &st) != 0 || r->offset > (uint64_t)st.st_size ||
      r->byte_size > (uint64_t)st.st_size - r->offset) {
    close(fd);
    return ifd_errf(err, IFD_EINVAL,
                    "failed to register shared memory region '%s': invalid "
                    "args",
                    r->name);
  }
  p = r->byte_size == 0 || r->offset > (uint64_t)INT64_MAX
          ? MAP_FAILED
          : mmap(NULL, (size_t)r->byte_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                 fd, (off_t)r->offset);
  e = r->byte_size == 0 ? EINVAL : errno;
  close(fd);
  if (p == MAP_FAILED)
    /* Triton glues mmap's error on without a space; so do we. */
    return ifd_errf(err, IFD_EINVAL,
                    "failed to register shared memory region '%s': unable to "
                    "process address space%s",
                    r->name, strerror(e));
  r->base = p;
  return 0;
}

static void reg_work(uv_work_t *w) {
  reg_job_t *j = (reg_job_t *)w;
  ifd_shm_region_t *r = j->r;
  if (r->kind == IFD_SHM_SYSTEM) {
    j->rc = map_system(r, &j->err);
    return;
  }
  j->rc = ifd_cuda_ipc_open(j->handle, sizeof(j->handle), r->device_id,
                            &r->base, &j->err);
  if (j->rc != 0) {
    char why[sizeof(j->err.text)];
    snprintf(why, sizeof(why), "%s", j->err.text);
    ifd_errf(&j->err, j->rc,
             "failed to register CUDA shared memory region '%s': %s", r->name,
             why);
  }
}

static void reg_after(uv_work_t *w, int status) {
  reg_job_t *j = (reg_job_t *)w;
  ifd_shm_t *t = j->t;
  ifd_shm_region_t *r = j->r;
  (void)status;
  t->jobs--;
  if (t->freeing) {
    region_unmap(r);
    region_free(r);
    if (t->jobs == 0) table_destroy(t);
    if (j->call.cb != NULL)
      j->call.cb(IFD_EUNAVAIL, "the server is shutting down", j->call.arg);
    free(j);
    return;
  }
  if (j->rc != 0) {
    table_remove_region(t, r);
    region_free(r);
    if (j->call.cb != NULL) j->call.cb(j->rc, j->err.text, j->call.arg);
    free(j);
    return;
  }
  r->ready = 1;
  IFD_VERBOSE("registered %s shared memory region '%s' (%" PRIu64 " bytes)",
              r->kind == IFD_SHM_SYSTEM ? "system" : "CUDA", r->name,
              r->byte_size);
  if (j->call.cb != NULL) j->call.cb(0, "", j->call.arg);
  free(j);
}

/* Takes the name and starts the job. */
static int reg_start(ifd_shm_t *t, reg_job_t *j, ifd_shm_done_cb cb, void *arg,
                     ifd_shm_call_t **call, ifd_errmsg_t *err) {
  ifd_shm_region_t *r = j->r;
  int found;
  size_t at = find(t, r->name, strlen(r->name), &found);
  if (found) {
    ifd_errf(err, IFD_EEXISTS, "shared memory region '%s' already in manager",
             r->name);
    goto fail;
  }
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 8;
    ifd_shm_region_t **a = realloc(t->regs, cap * sizeof(*a));
    if (a == NULL) {
      ifd_errf(err, IFD_ENOMEM, "out of memory");
      goto fail;
    }
    t->regs = a;
    t->cap = cap;
  }
  memmove(&t->regs[at + 1], &t->regs[at], (t->n - at) * sizeof(*t->regs));
  t->regs[at] = r;
  t->n++;
  j->t = t;
  j->call.cb = cb;
  j->call.arg = arg;
  if (uv_queue_work(t->loop, &j->work, reg_work, reg_after) != 0) {
    table_remove(t, at);
    ifd_errf(err, IFD_EINTERNAL, "cannot queue the shared memory register");
    goto fail;
  }
  t->jobs++;
  if (call != NULL) *call = &j->call;
  return 0;
fail:
  region_free(r);
  free(j);
  return err != NULL ? err->code : IFD_EINTERNAL;
}

static reg_job_t *reg_job_new(ifd_shm_t *t, ifd_shm_kind_t kind,
                              const char *name, const char *key) {
  reg_job_t *j = calloc(1, sizeof(*j));
  ifd_shm_region_t *r = calloc(1, sizeof(*r));
  if (j == NULL || r == NULL) goto fail;
  r->refs = 1;
  r->kind = kind;
  r->loop = t->loop;
  r->name = strdup(name);
  if (r->name == NULL) goto fail;
  if (key != NULL && (r->key = strdup(key)) == NULL) goto fail;
  j->r = r;
  return j;
fail:
  if (r != NULL) region_free(r);
  free(j);
  return NULL;
}

int ifd_shm_register_system(ifd_shm_t *t, const char *name, const char *key,
                            uint64_t offset, uint64_t byte_size,
                            ifd_shm_done_cb cb, void *arg,
                            ifd_shm_call_t **call, ifd_errmsg_t *err) {
  reg_job_t *j;
  if (call != NULL) *call = NULL;
  j = reg_job_new(t, IFD_SHM_SYSTEM, name, key);
  if (j == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  j->r->offset = offset;
  j->r->byte_size = byte_size;
  return reg_start(t, j, cb, arg, call, err);
}

int ifd_shm_register_cuda(ifd_shm_t *t, const char *name, const void *handle,
                          size_t handle_len, int64_t device_id,
                          uint64_t byte_size, ifd_shm_done_cb cb, void *arg,
                          ifd_shm_call_t **call, ifd_errmsg_t *err) {
  reg_job_t *j;
  if (call != NULL) *call = NULL;
  if (t->gpus <= 0)
    return ifd_errf(err, IFD_EINVAL,
                    "failed to register CUDA shared memory region: '%s', GPUs "
                    "not supported",
                    name);
  if (handle_len != IFD_CUDA_IPC_HANDLE_BYTES)
    return ifd_errf(err, IFD_EINVAL,
                    "failed to register CUDA shared memory region '%s': the "
                    "raw handle has %zu bytes, a CUDA IPC handle %d",
                    name, handle_len, IFD_CUDA_IPC_HANDLE_BYTES);
  if (device_id < 0 || device_id >= t->gpus)
    return ifd_errf(err, IFD_EINVAL,
                    "failed to register CUDA shared memory region '%s': "
                    "invalid device id %" PRId64,
                    name, device_id);
  if (byte_size == 0)
    return ifd_errf(err, IFD_EINVAL,
                    "failed to register CUDA shared memory region '%s': "
                    "byte_size must be positive",
                    name);
  j = reg_job_new(t, IFD_SHM_CUDA, name, NULL);
  if (j == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  memcpy(j->handle, handle, IFD_CUDA_IPC_HANDLE_BYTES);
  j->r->device_id = device_id;
  j->r->byte_size = byte_size;
  return reg_start(t, j, cb, arg, call, err);
}

void ifd_shm_call_forget(ifd_shm_call_t *call) {
  if (call != NULL) call->cb = NULL;
}

/* ---- unregister --------------------------------------------------------- */

int ifd_shm_unregister(ifd_shm_t *t, ifd_shm_kind_t kind, const char *name,
                       ifd_shm_done_cb cb, void *arg, ifd_shm_call_t **call) {
  size_t i, n = 0;
  unmap_job_t *j;
  int all = name == NULL || name[0] == '\0';

  if (call != NULL) *call = NULL;
  /* Room for every region that may go (at most all of them). */
  j = unmap_job_new(t->n);
  if (j == NULL) return IFD_ENOMEM;
  for (i = 0; i < t->n;) {
    ifd_shm_region_t *r = t->regs[i];
    /* A region still registering is not registered yet: Triton's
     * unregister would not find it either. */
    if (!r->ready || r->kind != kind || (!all && strcmp(r->name, name) != 0)) {
      i++;
      continue;
    }
    table_remove(t, i);
    IFD_VERBOSE("unregistered %s shared memory region '%s'",
                kind == IFD_SHM_SYSTEM ? "system" : "CUDA", r->name);
    if (--r->refs == 0) j->r[n++] = r; /* else the last request unmaps it */
  }
  j->n = n;
  j->has_call = 1;
  j->call.cb = cb;
  j->call.arg = arg;
  if (call != NULL) *call = &j->call;
  unmap_job_start(t->loop, j);
  return 0;
}

/* ---- status ------------------------------------------------------------- */

int ifd_shm_foreach(ifd_shm_t *t, ifd_shm_kind_t kind, const char *name,
                    int (*fn)(const ifd_shm_info_t *info, void *arg), void *arg,
                    ifd_errmsg_t *err) {
  size_t i;
  int one = name != NULL && name[0] != '\0';
  for (i = 0; i < t->n; i++) {
    const ifd_shm_region_t *r = t->regs[i];
    ifd_shm_info_t info;
    int rc;
    if (!r->ready || r->kind != kind || (one && strcmp(r->name, name) != 0))
      continue;
    info.kind = r->kind;
    info.name = r->name;
    info.key = r->key;
    info.offset = r->offset;
    info.byte_size = r->byte_size;
    info.device_id = r->device_id;
    rc = fn(&info, arg);
    if (rc != 0 || one) return rc;
  }
  if (one) /* Triton says "system" for the CUDA status too. */
    return ifd_errf(err, IFD_ENOTFOUND,
                    "Unable to find system shared memory region: '%s'", name);
  return 0;
}

/* ---- requests ----------------------------------------------------------- */

static void hold_drop(ifd_req_attach_t *a) {
  region_unref(((shm_hold_t *)a)->r);
  /* The hold itself is in the request's pool. */
}

int ifd_shm_use(ifd_request_t *req, const char *name, size_t name_len,
                uint64_t offset, uint64_t byte_size, ifd_shm_ref_t *ref,
                ifd_errmsg_t *err) {
  ifd_shm_t *t = req->server != NULL ? ifd_server_shm(req->server) : NULL;
  ifd_shm_region_t *r = t != NULL ? lookup(t, name, name_len) : NULL;
  ifd_req_attach_t *head;
  shm_hold_t *h;

  if (r == NULL || !r->ready)
    return ifd_errf(err, IFD_ENOTFOUND,
                    "Unable to find shared memory region: '%.*s'",
                    (int)(name_len > 256 ? 256 : name_len), name);
  /* Triton's two checks: the offset must fall inside the region, then the
   * tensor's last byte (none when byte_size is 0) too. */
  if (offset >= r->byte_size)
    return ifd_errf(err, IFD_EINVAL,
                    "Invalid offset for shared memory region: '%s'", r->name);
  if (byte_size == 0 || byte_size > r->byte_size - offset)
    return ifd_errf(err, IFD_EINVAL,
                    "Invalid offset + byte size for shared memory region: "
                    "'%s'",
                    r->name);
  ref->ptr = (char *)r->base + offset;
  ref->byte_size = byte_size;
  ref->mem_type = r->kind == IFD_SHM_CUDA ? IFD_MEM_GPU : IFD_MEM_CPU;
  ref->mem_id = r->kind == IFD_SHM_CUDA ? r->device_id : 0;

  /* One hold per region per request is enough. */
  for (head = atomic_load_explicit(&req->attached, memory_order_relaxed);
       head != NULL; head = head->next)
    if (head->drop == hold_drop && ((shm_hold_t *)head)->r == r) return 0;
  h = ifd_pool_alloc(&req->pool, sizeof(*h));
  if (h == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  h->link.drop = hold_drop;
  h->r = r;
  r->refs++;
  /* The protocol fills the request on the loop before any backend sees
   * it, but the list is shared with backends: push as they do. */
  head = atomic_load_explicit(&req->attached, memory_order_relaxed);
  do {
    h->link.next = head;
  } while (!atomic_compare_exchange_weak_explicit(
      &req->attached, &head, &h->link, memory_order_release,
      memory_order_relaxed));
  return 0;
}

int ifd_shm_write(const ifd_shm_ref_t *dst, const void *src, uint64_t n,
                  ifd_errmsg_t *err) {
  if (n > dst->byte_size)
    return ifd_errf(err, IFD_EINTERNAL,
                    "%" PRIu64 " bytes do not fit in %" PRIu64
                    " bytes of shared memory",
                    n, dst->byte_size);
  if (dst->mem_type == IFD_MEM_GPU)
    return ifd_cuda_copy(dst->ptr, IFD_MEM_GPU, dst->mem_id, src, IFD_MEM_CPU,
                         0, (size_t)n, err);
  memcpy(dst->ptr, src, (size_t)n);
  return 0;
}
