/*
 * backend_api/memory/tb_gpu.c - the GPU side of the backend ABI's buffers:
 * output buffers in GPU memory when a backend asks for them, their copy to host
 * memory before the response leaves the backend's thread, and device copies
 * of host inputs for a backend that asks for its input on a GPU.
 *
 * Every CUDA call here runs on the thread of the backend that called the ABI
 * function (an instance thread, bound to its device and stream for a GPU
 * instance: cuda/gpu.h), never on the loop: the loop only ever sees host
 * memory, or the client's CUDA shared-memory region, which it never reads.
 *
 * Without a GPU (a CPU-only build or machine) none of this engages: a
 * backend that prefers GPU memory gets CPU memory, which Triton's contract
 * allows (the allocator chooses and reports its choice), and its inputs
 * where they are.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_api/internal.h"
#include "core/infer.h"
#include "cuda/cuda_mem.h"
#include "cuda/gpu.h"

int ifd__gpu_output_buffer(ifd_output_t *o, uint64_t n, int64_t device) {
  int32_t type = IFD_MEM_GPU;
  int64_t id = device;
  void *ptr = NULL;
  ifd_errmsg_t err;
  if (ifd_gpu_count() == 0 || device < 0 || device >= ifd_gpu_count()) return 0;
  ifd_errclear(&err);
  if (ifd_cuda_alloc(&type, &id, n > 0 ? n : 1, &ptr, &err) < 0) return 0;
  o->buffer = ptr;
  o->byte_size = n;
  o->mem_type = IFD_MEM_GPU;
  o->mem_id = id;
  return 1;
}

void ifd__gpu_outputs_free(ifd_response_t *resp) {
  uint32_t i;
  for (i = 0; i < resp->n_outputs; i++) {
    ifd_output_t *o = &resp->outputs[i];
    if (o->mem_type != IFD_MEM_GPU || o->buffer_external || o->alloc != NULL ||
        o->buffer == NULL)
      continue;
    ifd_cuda_free(o->buffer, IFD_MEM_GPU, o->mem_id);
    o->buffer = NULL;
    o->byte_size = 0;
    o->mem_type = IFD_MEM_CPU;
    o->mem_id = 0;
  }
}

int ifd__gpu_outputs_to_host(ifd_response_t *resp, char *msg, size_t msg_len) {
  uint32_t i;
  for (i = 0; i < resp->n_outputs; i++) {
    ifd_output_t *o = &resp->outputs[i];
    void *host = NULL;
    int32_t htype = IFD_MEM_CPU_PINNED;
    int64_t hid = 0;
    ifd_errmsg_t err;
    int rc;
    if (o->mem_type != IFD_MEM_GPU || o->buffer_external || o->alloc != NULL ||
        o->buffer == NULL)
      continue;
    /* Staged in pinned memory when the pool has room (the device copies
     * into it directly), else in plain memory. Either is host memory the
     * protocols read as CPU memory, and ifd_response_free gives it back
     * through ifd_cuda_host_free. */
    ifd_errclear(&err);
    if (ifd_cuda_alloc(&htype, &hid, o->byte_size > 0 ? o->byte_size : 1, &host,
                       &err) < 0) {
      snprintf(msg, msg_len,
               "out of memory copying output '%s' from GPU %" PRId64, o->name,
               o->mem_id);
      goto out_fail;
    }
    /* On the instance's own stream when this is its thread; the backend
     * has finished writing the buffer before it sends the response. */
    rc = ifd_cuda_copy(host, IFD_MEM_CPU, 0, o->buffer, IFD_MEM_GPU, o->mem_id,
                       o->byte_size, &err);
    if (rc < 0) {
      ifd_cuda_host_free(host);
      snprintf(msg, msg_len,
               "failed to copy output '%s' from GPU %" PRId64 ": %s", o->name,
               o->mem_id, err.text);
      goto out_fail;
    }
    ifd_cuda_free(o->buffer, IFD_MEM_GPU, o->mem_id);
    o->buffer = host;
    o->buffer_in_pool = 0;
    o->buffer_in_bufpool = 0;
    o->mem_type = IFD_MEM_CPU;
    o->mem_id = 0;
  }
  return 0;
out_fail:
  ifd__gpu_outputs_free(resp);
  return IFD_EINTERNAL;
}

/* A device copy of a host input, attached to its request. */
typedef struct gpu_copy {
  ifd_req_attach_t link; /* first: the request's list */
  const ifd_input_t *in; /* borrowed: the request's input */
  int64_t device;
  void *ptr; /* owned: device memory; NULL once released */
} gpu_copy_t;

static void gpu_copy_drop(ifd_req_attach_t *a) {
  gpu_copy_t *c = (gpu_copy_t *)a;
  /* Released by ifd__gpu_inputs_release on the backend's thread; a copy
   * still held here is from the pool (freed by any thread) or leaks no
   * worse than a backend that never released its request. */
  if (c->ptr != NULL && ifd_cuda_free_is_cheap(c->ptr, IFD_MEM_GPU, c->device))
    ifd_cuda_free(c->ptr, IFD_MEM_GPU, c->device);
  free(c);
}

static gpu_copy_t *find_copy(ifd_request_t *req, const ifd_input_t *in,
                             int64_t device) {
  ifd_req_attach_t *a;
  for (a = atomic_load_explicit(&req->attached, memory_order_acquire);
       a != NULL; a = a->next) {
    gpu_copy_t *c = (gpu_copy_t *)a;
    if (a->drop == gpu_copy_drop && c->in == in && c->device == device &&
        c->ptr != NULL)
      return c;
  }
  return NULL;
}

int ifd__gpu_input_copy(ifd_request_t *req, const ifd_input_t *in,
                        int64_t device, const void **out, ifd_errmsg_t *err) {
  gpu_copy_t *c;
  ifd_req_attach_t *head;
  int32_t type = IFD_MEM_GPU;
  int64_t id = device;
  int rc;

  *out = NULL;
  if (ifd_gpu_count() == 0 || device < 0 || device >= ifd_gpu_count() ||
      in->mem_type == IFD_MEM_GPU || in->data == NULL)
    return 0;
  if ((c = find_copy(req, in, device)) != NULL) {
    *out = c->ptr;
    return 1;
  }
  c = calloc(1, sizeof(*c));
  if (c == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  c->in = in;
  c->device = device;
  c->link.drop = gpu_copy_drop;
  rc = ifd_cuda_alloc(&type, &id, in->byte_size > 0 ? in->byte_size : 1,
                      &c->ptr, err);
  if (rc == 0)
    rc = ifd_cuda_copy(c->ptr, IFD_MEM_GPU, device, in->data, in->mem_type,
                       in->mem_id, in->byte_size, err);
  if (rc < 0) {
    if (c->ptr != NULL) ifd_cuda_free(c->ptr, IFD_MEM_GPU, device);
    free(c);
    return rc;
  }
  head = atomic_load_explicit(&req->attached, memory_order_relaxed);
  do {
    c->link.next = head;
  } while (!atomic_compare_exchange_weak_explicit(
      &req->attached, &head, &c->link, memory_order_release,
      memory_order_relaxed));
  *out = c->ptr;
  return 1;
}

void ifd__gpu_inputs_release(ifd_request_t *req) {
  ifd_req_attach_t *a;
  for (a = atomic_load_explicit(&req->attached, memory_order_acquire);
       a != NULL; a = a->next) {
    gpu_copy_t *c = (gpu_copy_t *)a;
    if (a->drop != gpu_copy_drop || c->ptr == NULL) continue;
    ifd_cuda_free(c->ptr, IFD_MEM_GPU, c->device);
    c->ptr = NULL;
  }
}
