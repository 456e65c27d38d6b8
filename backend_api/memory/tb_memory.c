/*
 * backend_api/memory/tb_memory.c - memory and buffer attributes:
 * TRITONSERVER_BufferAttributes (records a backend makes, and read-only
 * views of an input's, an output's or a state's buffer), and the memory
 * manager a backend allocates its own buffers from
 * (TRITONBACKEND_MemoryManagerAllocate/Free on the server's CPU, pinned
 * and GPU memory).
 *
 * A backend built for Triton is opened with RTLD_NOW, so it loads only if
 * every symbol it references exists, even the ones it calls on paths inferd
 * rarely takes: these are done for real. Where a feature is missing (GPU
 * memory without a GPU) the function answers TRITONSERVER_ERROR_UNSUPPORTED
 * naming itself, never a silent success.
 *
 * Errors returned here are new objects the caller owns, as everywhere in the
 * API.
 */
#include "backend_api/internal.h"

#include <stdlib.h>

#include "core/infer.h"
#include "cuda/cuda_mem.h"
#include "cuda/gpu.h"

/* ---- buffer attributes --------------------------------------------------- */

/* A plain record a backend may create, fill and read, as in Triton. */
struct TRITONSERVER_BufferAttributes {
  size_t byte_size;
  TRITONSERVER_MemoryType memory_type;
  int64_t memory_type_id;
  void *cuda_ipc_handle; /* borrowed: the caller's, see SetCudaIpcHandle */
};

/*
 * The attributes of an input's, an output's or a sequence state's buffer must
 * live as long as the input, output or state, but ifd_input_t, ifd_output_t
 * and TRITONBACKEND_State have no room for them and there is nothing to free
 * them with. Every such buffer is CPU memory of id 0 and only its size
 * varies, so the attributes handed out are views instead: a pointer to the
 * object itself with a tag in its low bits (all three types are at least
 * 4-aligned; malloc'd records never carry a tag). Views read through to the
 * live object and are read-only; deleting one is refused, as Triton's
 * contract says the input, output or state owns it.
 */
#define VIEW_INPUT ((uintptr_t)1)
#define VIEW_OUTPUT ((uintptr_t)2)
#define VIEW_STATE ((uintptr_t)3)
#define VIEW_MASK ((uintptr_t)3)

_Static_assert(_Alignof(ifd_input_t) >= 4 && _Alignof(ifd_output_t) >= 4,
               "buffer attribute views need two free low bits");

static TRITONSERVER_BufferAttributes *view_of(const void *obj, uintptr_t tag) {
  return (TRITONSERVER_BufferAttributes *)((uintptr_t)obj | tag);
}

static uintptr_t view_tag(const TRITONSERVER_BufferAttributes *ba) {
  return (uintptr_t)ba & VIEW_MASK;
}

/* Copies the attributes behind `ba`, a record or a view, into *out. */
static void attrs_read(const TRITONSERVER_BufferAttributes *ba,
                       struct TRITONSERVER_BufferAttributes *out /* OUT */) {
  const void *obj = (const void *)((uintptr_t)ba & ~VIEW_MASK);
  out->memory_type = TRITONSERVER_MEMORY_CPU;
  out->memory_type_id = 0;
  out->cuda_ipc_handle = NULL;
  switch (view_tag(ba)) {
    case VIEW_INPUT: {
      /* Where the data is: CPU, or a CUDA shared-memory region. */
      const ifd_input_t *in = obj;
      out->byte_size = (size_t)in->byte_size;
      out->memory_type = (TRITONSERVER_MemoryType)in->mem_type;
      out->memory_type_id = in->mem_id;
      break;
    }
    case VIEW_OUTPUT: {
      /* Where the buffer is: CPU, a GPU (until the response is sent), or a
       * CUDA shared-memory region. */
      const ifd_output_t *o = obj;
      out->byte_size = (size_t)o->byte_size;
      out->memory_type = (TRITONSERVER_MemoryType)o->mem_type;
      out->memory_type_id = o->mem_id;
      break;
    }
    case VIEW_STATE:
      out->byte_size =
          (size_t)ifd__state_buffer_size((const TRITONBACKEND_State *)obj);
      break;
    default:
      *out = *ba;
      return;
  }
}

TRITONSERVER_BufferAttributes *ifd__state_buffer_attributes(
    const TRITONBACKEND_State *state) {
  return view_of(state, VIEW_STATE);
}

#define WRITABLE_CHECK(ba)                                               \
  do {                                                                   \
    if (view_tag(ba) != 0)                                               \
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,       \
                                   "the buffer attributes of an input, " \
                                   "output or state are read-only");     \
  } while (0)

/* Defaults as Triton's: zero bytes of CPU memory 0, no IPC handle. */
TRITONSERVER_Error *TRITONSERVER_BufferAttributesNew(
    TRITONSERVER_BufferAttributes **buffer_attributes) {
  TRITONSERVER_BufferAttributes *ba;
  ARG_CHECK(buffer_attributes != NULL);
  ba = calloc(1, sizeof(*ba));
  if (ba == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  ba->memory_type = TRITONSERVER_MEMORY_CPU;
  *buffer_attributes = ba;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesDelete(
    TRITONSERVER_BufferAttributes *buffer_attributes) {
  ARG_CHECK(buffer_attributes != NULL);
  if (view_tag(buffer_attributes) != 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "the buffer attributes of an input, output "
                                 "or state are owned by it and cannot be "
                                 "deleted");
  free(buffer_attributes);
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesSetMemoryTypeId(
    TRITONSERVER_BufferAttributes *buffer_attributes, int64_t memory_type_id) {
  ARG_CHECK(buffer_attributes != NULL);
  WRITABLE_CHECK(buffer_attributes);
  buffer_attributes->memory_type_id = memory_type_id;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesSetMemoryType(
    TRITONSERVER_BufferAttributes *buffer_attributes,
    TRITONSERVER_MemoryType memory_type) {
  ARG_CHECK(buffer_attributes != NULL);
  WRITABLE_CHECK(buffer_attributes);
  buffer_attributes->memory_type = memory_type;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesSetCudaIpcHandle(
    TRITONSERVER_BufferAttributes *buffer_attributes, void *cuda_ipc_handle) {
  ARG_CHECK(buffer_attributes != NULL);
  WRITABLE_CHECK(buffer_attributes);
  buffer_attributes->cuda_ipc_handle = cuda_ipc_handle;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesSetByteSize(
    TRITONSERVER_BufferAttributes *buffer_attributes, size_t byte_size) {
  ARG_CHECK(buffer_attributes != NULL);
  WRITABLE_CHECK(buffer_attributes);
  buffer_attributes->byte_size = byte_size;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesMemoryTypeId(
    TRITONSERVER_BufferAttributes *buffer_attributes, int64_t *memory_type_id) {
  struct TRITONSERVER_BufferAttributes a;
  ARG_CHECK(buffer_attributes != NULL && memory_type_id != NULL);
  attrs_read(buffer_attributes, &a);
  *memory_type_id = a.memory_type_id;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesMemoryType(
    TRITONSERVER_BufferAttributes *buffer_attributes,
    TRITONSERVER_MemoryType *memory_type) {
  struct TRITONSERVER_BufferAttributes a;
  ARG_CHECK(buffer_attributes != NULL && memory_type != NULL);
  attrs_read(buffer_attributes, &a);
  *memory_type = a.memory_type;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesCudaIpcHandle(
    TRITONSERVER_BufferAttributes *buffer_attributes, void **cuda_ipc_handle) {
  struct TRITONSERVER_BufferAttributes a;
  ARG_CHECK(buffer_attributes != NULL && cuda_ipc_handle != NULL);
  attrs_read(buffer_attributes, &a);
  *cuda_ipc_handle = a.cuda_ipc_handle;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesByteSize(
    TRITONSERVER_BufferAttributes *buffer_attributes, size_t *byte_size) {
  struct TRITONSERVER_BufferAttributes a;
  ARG_CHECK(buffer_attributes != NULL && byte_size != NULL);
  attrs_read(buffer_attributes, &a);
  *byte_size = a.byte_size;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_InputBufferAttributes(
    TRITONBACKEND_Input *input, const uint32_t index, const void **buffer,
    TRITONSERVER_BufferAttributes **buffer_attributes) {
  const ifd_input_t *in = (const ifd_input_t *)input;
  ARG_CHECK(input != NULL && buffer != NULL && buffer_attributes != NULL);
  /* One buffer per input, as TRITONBACKEND_InputProperties reports. */
  if (index != 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "input buffer index out of range");
  *buffer = in->data;
  *buffer_attributes = view_of(in, VIEW_INPUT);
  return NULL;
}

/* Before TRITONBACKEND_OutputBuffer the view reads zero bytes, as Triton's
 * default attributes do. */
TRITONSERVER_Error *TRITONBACKEND_OutputBufferAttributes(
    TRITONBACKEND_Output *output,
    TRITONSERVER_BufferAttributes **buffer_attributes) {
  ARG_CHECK(output != NULL && buffer_attributes != NULL);
  *buffer_attributes = view_of(output, VIEW_OUTPUT);
  return NULL;
}

/* ---- memory manager ------------------------------------------------------ */

/* Only the address matters: it is the one manager every backend gets. */
struct TRITONBACKEND_MemoryManager {
  int unused;
};

static TRITONBACKEND_MemoryManager memory_manager;

TRITONSERVER_Error *TRITONBACKEND_BackendMemoryManager(
    TRITONBACKEND_Backend *backend, TRITONBACKEND_MemoryManager **manager) {
  ARG_CHECK(backend != NULL && manager != NULL);
  *manager = &memory_manager;
  return NULL;
}

/*
 * The server's memory (cuda/cuda_mem.h): CPU memory from malloc; pinned
 * memory from the pinned pool, else malloc (pageable memory is a correct,
 * if slower to copy, stand-in); GPU memory from the device's pool, else
 * cudaMalloc. Without a GPU, GPU memory is unsupported, which Triton's
 * backend utilities treat as "try another memory type".
 */
TRITONSERVER_Error *TRITONBACKEND_MemoryManagerAllocate(
    TRITONBACKEND_MemoryManager *manager, void **buffer,
    const TRITONSERVER_MemoryType memory_type, const int64_t memory_type_id,
    const uint64_t byte_size) {
  int32_t type = (int32_t)memory_type;
  int64_t id = memory_type_id;
  ifd_errmsg_t err;
  int rc;
  ARG_CHECK(manager != NULL && buffer != NULL);
  switch (memory_type) {
    case TRITONSERVER_MEMORY_CPU:
    case TRITONSERVER_MEMORY_CPU_PINNED:
      id = 0; /* CPU memory has one id */
      break;
    case TRITONSERVER_MEMORY_GPU:
      break;
    default:
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                   "unknown memory type");
  }
  if (byte_size > SIZE_MAX)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "allocation larger than the address space");
  ifd_errclear(&err);
  /* A zero-byte request still gets a freeable buffer. */
  rc = ifd_cuda_alloc(&type, &id, byte_size > 0 ? byte_size : 1, buffer, &err);
  if (rc == IFD_EUNSUPPORTED)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                 "TRITONBACKEND_MemoryManagerAllocate of GPU "
                                 "memory: GPUs not supported");
  if (rc < 0)
    return TRITONSERVER_ErrorNew(rc == IFD_EINVAL
                                     ? TRITONSERVER_ERROR_INVALID_ARG
                                     : TRITONSERVER_ERROR_UNAVAILABLE,
                                 err.text);
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_MemoryManagerFree(
    TRITONBACKEND_MemoryManager *manager, void *buffer,
    const TRITONSERVER_MemoryType memory_type, const int64_t memory_type_id) {
  ARG_CHECK(manager != NULL);
  switch (memory_type) {
    case TRITONSERVER_MEMORY_CPU:
    case TRITONSERVER_MEMORY_CPU_PINNED:
      /* A pinned buffer from the pool goes back to it; one that fell back
       * to malloc is freed. */
      ifd_cuda_free(buffer, (int32_t)memory_type, 0);
      return NULL;
    case TRITONSERVER_MEMORY_GPU:
      if (ifd_gpu_count() == 0)
        return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                     "TRITONBACKEND_MemoryManagerFree of GPU "
                                     "memory: GPUs not supported");
      ifd_cuda_free(buffer, IFD_CUDA_MEM_GPU, memory_type_id);
      return NULL;
    default:
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                   "unknown memory type");
  }
}
