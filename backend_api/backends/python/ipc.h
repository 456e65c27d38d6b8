/*
 * backend_api/backends/python/ipc.h - framing between libtriton_python.so and
 * its stub process.
 *
 * One stub per model instance. The backend talks to it over a stream
 * socketpair (the stub's end is fd IFD_PY_SOCK_FD) in messages of a fixed
 * header {type, id, length} and `length` payload bytes; tensor bytes travel
 * through one shared-memory segment per instance (a memfd, the stub's fd
 * IFD_PY_SHM_FD) that either side may grow with ftruncate. Payloads:
 *   INIT      JSON of Triton's initialize(args) keys  -> INIT_OK or ERROR
 *   EXECUTE   JSON {in_size, out_offset, requests:[...]} -> RESULT or ERROR
 *   RESULT    u32 n; per response: u32 is_error; error: u32 code, u32 len,
 *             text; else u32 nout; per output: u32 len name, u32 len dtype,
 *             u32 ndims, i64 dims[ndims], u64 offset, u64 size (in the segment)
 *   ERROR     u32 len, message, then the Python traceback (rest of payload)
 *   FINALIZE  empty -> FINALIZE_OK
 * Little-endian, native layout (both ends are on the same host).
 * triton_python_backend_utils.py implements the stub's side.
 */
#ifndef IFD_PY_IPC_H
#define IFD_PY_IPC_H

#include <stdint.h>

#define IFD_PY_SOCK_FD 3
#define IFD_PY_SHM_FD 4

enum {
  IFD_PY_MSG_INIT = 1,
  IFD_PY_MSG_INIT_OK = 2,
  IFD_PY_MSG_ERROR = 3,
  IFD_PY_MSG_EXECUTE = 4,
  IFD_PY_MSG_RESULT = 5,
  IFD_PY_MSG_FINALIZE = 6,
  IFD_PY_MSG_FINALIZE_OK = 7,
};

/* The header before every payload. */
typedef struct ifd_py_hdr {
  uint32_t type;   /* IFD_PY_MSG_* */
  uint32_t id;     /* the request's id, echoed in the answer */
  uint64_t length; /* payload bytes that follow */
} ifd_py_hdr_t;

#endif
