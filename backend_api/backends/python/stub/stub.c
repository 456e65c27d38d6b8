/*
 * backend_api/backends/python/stub/stub.c - triton_python_backend_stub.
 *
 * The process libtriton_python.so starts for each model instance (and, for
 * auto_complete_config, once per model). It embeds CPython, registers the
 * built-in module _inferd_stub and runs triton_python_backend_utils.
 * _stub_main(), found in argv[1] (the backend's folder; argv[2] and argv[3],
 * the model and instance names, only name the process), which serves the
 * socket of ipc.h until EOF or FINALIZE.
 *
 * _inferd_stub is the C half of the stub's side of ipc.h:
 *   - it maps DOWN and UP once each, IFD_PY_SEG_MAX bytes of address space
 *     (MAP_SHARED | MAP_NORESERVE), so nothing a Python object points at
 *     ever moves;
 *   - DownBlock: a buffer object over one request's DOWN block. Input
 *     arrays are np.frombuffer views of it (no copy). When it dies (every
 *     array, view and request over it gone) its offset joins the FREE queue
 *     (take_frees() empties it) and, on the queue's empty-to-non-empty
 *     transition, the Python callable set with set_free_notify() is called
 *     so the utils can send the FREE soon even when the stub is idle;
 *   - up_view(n): grows UP to at least n bytes (ftruncate; only the stub
 *     grows UP) and returns a writable memoryview of its first n bytes,
 *     where execute's outputs are written once;
 *   - parse_execute(payload): EXECUTE's binary payload as Python tuples
 *     (no JSON on the request path);
 *   - the reader: a C thread that owns the socket's reading (below), and
 *     the main thread's work queue (next_work/try_work/post).
 * The Python-facing functions run with the GIL held; the GIL guards the
 * FREE queue, wq_mu the work queue.
 * SIGINT is ignored (the server ends its stubs). Exit status 0 on a clean
 * end, 1 otherwise.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../ipc.h"

/* The two mappings (IFD_PY_SEG_MAX bytes each; never unmapped). */
static uint8_t *down_base; /* mapped by stub_map(); read by DownBlock views */
static uint8_t *up_base;   /* mapped by stub_map(); written through up_view */
static uint64_t up_size;   /* UP's file size as this process made it */

/* The FREE queue: DOWN block offsets no longer used (GIL-guarded). */
static uint64_t *free_q; /* owned; grows by doubling */
static size_t free_n, free_cap;
static PyObject *free_notify; /* owned reference or NULL */
static uint64_t down_held;    /* bytes of the live DownBlocks (GIL-guarded) */

/* ---- DownBlock ----------------------------------------------------------- */

typedef struct {
  PyObject_HEAD uint64_t offset;
  uint64_t size;
} down_block_t;

/* Queues `off` for FREE; returns 1 when the queue was empty before. A
 * failed allocation loses the offset (the server's segment keeps the
 * block); there is no caller to tell in a dealloc. */
static int free_push(uint64_t off) {
  if (free_n == free_cap) {
    size_t cap = free_cap ? free_cap * 2 : 64;
    uint64_t *q = realloc(free_q, cap * sizeof *q);
    if (q == NULL) return 0;
    free_q = q;
    free_cap = cap;
  }
  free_q[free_n++] = off;
  return free_n == 1;
}

static void down_block_dealloc(down_block_t *self) {
  down_held -= self->size;
  /* Every block is an allocation, even of size 0 (ipc.h: FREE each). */
  if (free_push(self->offset) && free_notify != NULL) {
    /* A dealloc may run while an exception is set: keep it. */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *r = PyObject_CallNoArgs(free_notify);
    if (r == NULL)
      PyErr_WriteUnraisable(free_notify);
    else
      Py_DECREF(r);
    PyErr_Restore(et, ev, tb);
  }
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int down_block_getbuffer(down_block_t *self, Py_buffer *view,
                                int flags) {
  return PyBuffer_FillInfo(view, (PyObject *)self, down_base + self->offset,
                           (Py_ssize_t)self->size, 0, flags);
}

static PyObject *down_block_repr(down_block_t *self) {
  return PyUnicode_FromFormat("<DownBlock offset=%llu size=%llu>",
                              (unsigned long long)self->offset,
                              (unsigned long long)self->size);
}

static PyBufferProcs down_block_as_buffer = {
    (getbufferproc)down_block_getbuffer, NULL};

static PyTypeObject down_block_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_inferd_stub.DownBlock",
    .tp_basicsize = sizeof(down_block_t),
    .tp_dealloc = (destructor)down_block_dealloc,
    .tp_repr = (reprfunc)down_block_repr,
    .tp_as_buffer = &down_block_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One request's block in the DOWN segment (a buffer).",
};

/* down_block(offset, size) -> DownBlock over DOWN[offset, offset+size). */
static PyObject *stub_down_block(PyObject *mod, PyObject *args) {
  (void)mod;
  unsigned long long off, size;
  if (!PyArg_ParseTuple(args, "KK", &off, &size)) return NULL;
  if (off > IFD_PY_SEG_MAX || size > IFD_PY_SEG_MAX - off) {
    PyErr_Format(PyExc_ValueError, "DOWN block [%llu, +%llu) out of range", off,
                 size);
    return NULL;
  }
  down_block_t *b = PyObject_New(down_block_t, &down_block_type);
  if (b == NULL) return NULL;
  b->offset = off;
  b->size = size;
  down_held += size;
  return (PyObject *)b;
}

/* take_frees() -> bytes: the queued offsets (u64 each); empties the queue. */
static PyObject *stub_take_frees(PyObject *mod, PyObject *unused) {
  (void)mod;
  (void)unused;
  PyObject *b =
      PyBytes_FromStringAndSize((const char *)free_q, (Py_ssize_t)(free_n * 8));
  if (b != NULL) free_n = 0;
  return b;
}

/* down_held() -> bytes of DOWN the stub's live blocks hold. */
static PyObject *stub_down_held(PyObject *mod, PyObject *unused) {
  (void)mod;
  (void)unused;
  return PyLong_FromUnsignedLongLong(down_held);
}

/* set_free_notify(callable or None): called (no arguments) when the FREE
 * queue turns non-empty. */
static PyObject *stub_set_free_notify(PyObject *mod, PyObject *fn) {
  (void)mod;
  Py_XDECREF(free_notify);
  free_notify = fn == Py_None ? NULL : Py_NewRef(fn);
  Py_RETURN_NONE;
}

/* up_view(n) -> writable memoryview of UP[0, n); grows the file first. */
static PyObject *stub_up_view(PyObject *mod, PyObject *arg) {
  (void)mod;
  unsigned long long n = PyLong_AsUnsignedLongLong(arg);
  if (n == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
  if (n > IFD_PY_SEG_MAX) {
    PyErr_Format(PyExc_MemoryError,
                 "the outputs of one execute need %llu bytes, more than the "
                 "%llu the Python backend's output segment can hold",
                 n, (unsigned long long)IFD_PY_SEG_MAX);
    return NULL;
  }
  if (n > up_size) {
    /* Grow geometrically (to at least 1 MiB) so steady traffic stops
     * calling ftruncate. */
    uint64_t want = up_size < (1u << 20) ? (1u << 20) : up_size;
    while (want < n) want *= 2;
    if (want > IFD_PY_SEG_MAX) want = IFD_PY_SEG_MAX;
    if (ftruncate(IFD_PY_UP_FD, (off_t)want) < 0)
      return PyErr_SetFromErrno(PyExc_OSError);
    up_size = want;
  }
  return PyMemoryView_FromMemory((char *)up_base, (Py_ssize_t)n, PyBUF_WRITE);
}

/* ---- the reader thread and the main thread's work queue ------------------
 *
 * The reader is a C thread: it waits in recv() without the GIL. INIT,
 * EXECUTE, FINALIZE and AUTO_COMPLETE go into the work queue as plain bytes
 * (no GIL taken: the main thread, waiting in next_work() without the GIL,
 * takes it uncontended); every other message (the answers to the stub's
 * calls) is handed, under the GIL, to the Python callable given to
 * start_reader(). Python code queues work for the main thread with post().
 * While the main thread runs the asyncio loop (set_looping(True)) each push
 * also writes wake_fd (an eventfd the loop watches). */

typedef struct work {
  struct work *next;
  uint32_t type; /* IFD_PY_MSG_*; WORK_OBJ: obj; WORK_EOF: the end */
  uint32_t id;
  PyObject *obj; /* owned (WORK_OBJ) */
  size_t len;
  char data[]; /* the payload (messages) */
} work_t;

#define WORK_OBJ 0u
#define WORK_EOF 0xFFFFFFFFu

static pthread_mutex_t wq_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wq_cv = PTHREAD_COND_INITIALIZER;
static work_t *wq_head, *wq_tail; /* guarded by wq_mu */
static int wq_looping;            /* guarded by wq_mu */
static int wake_fd = -1;          /* eventfd; created at module init */
static PyObject *answer_fn;       /* owned; called by the reader */
static pthread_t reader_tid;
static int reader_started;

/* Queues w (never blocks on the GIL: callers may or may not hold it). */
static void wq_push(work_t *w) {
  w->next = NULL;
  pthread_mutex_lock(&wq_mu);
  if (wq_tail != NULL)
    wq_tail->next = w;
  else
    wq_head = w;
  wq_tail = w;
  int looping = wq_looping;
  pthread_mutex_unlock(&wq_mu);
  /* After the unlock: the woken thread does not then block on wq_mu. */
  pthread_cond_signal(&wq_cv);
  if (looping) {
    uint64_t one = 1;
    ssize_t r = write(wake_fd, &one, sizeof(one));
    (void)r; /* EAGAIN: the counter is already non-zero */
  }
}

/* Pops the first item, or NULL. Caller holds wq_mu. */
static work_t *wq_pop_locked(void) {
  work_t *w = wq_head;
  if (w != NULL) {
    wq_head = w->next;
    if (wq_head == NULL) wq_tail = NULL;
  }
  return w;
}

/* The Python value of a work item, which it frees: the posted object, or
 * (type, id, payload bytes); (WORK_EOF, 0, b"") at the end. */
static PyObject *work_to_py(work_t *w) {
  PyObject *r;
  if (w->type == WORK_OBJ)
    r = w->obj; /* the reference moves to the caller */
  else
    r = Py_BuildValue("(IIy#)", w->type, w->id, w->data, (Py_ssize_t)w->len);
  free(w);
  return r;
}

/* next_work() -> the next item; waits without the GIL. */
static PyObject *stub_next_work(PyObject *mod, PyObject *unused) {
  (void)mod;
  (void)unused;
  work_t *w;
  Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&wq_mu);
  while ((w = wq_pop_locked()) == NULL) pthread_cond_wait(&wq_cv, &wq_mu);
  pthread_mutex_unlock(&wq_mu);
  Py_END_ALLOW_THREADS return work_to_py(w);
}

/* try_work() -> the next item or None (never waits). */
static PyObject *stub_try_work(PyObject *mod, PyObject *unused) {
  (void)mod;
  (void)unused;
  pthread_mutex_lock(&wq_mu);
  work_t *w = wq_pop_locked();
  pthread_mutex_unlock(&wq_mu);
  if (w == NULL) Py_RETURN_NONE;
  return work_to_py(w);
}

/* post(obj): queues obj for the main thread. */
static PyObject *stub_post(PyObject *mod, PyObject *obj) {
  (void)mod;
  work_t *w = malloc(sizeof(*w));
  if (w == NULL) return PyErr_NoMemory();
  w->type = WORK_OBJ;
  w->id = 0;
  w->len = 0;
  w->obj = Py_NewRef(obj);
  wq_push(w);
  Py_RETURN_NONE;
}

/* set_looping(flag): whether pushes also write wake_fd; clears wake_fd. */
static PyObject *stub_set_looping(PyObject *mod, PyObject *flag) {
  (void)mod;
  int on = PyObject_IsTrue(flag);
  if (on < 0) return NULL;
  pthread_mutex_lock(&wq_mu);
  wq_looping = on;
  pthread_mutex_unlock(&wq_mu);
  uint64_t v;
  ssize_t r = read(wake_fd, &v, sizeof(v));
  (void)r;
  Py_RETURN_NONE;
}

/* clear_wake(): empties wake_fd's counter (before draining the queue). */
static PyObject *stub_clear_wake(PyObject *mod, PyObject *unused) {
  (void)mod;
  (void)unused;
  uint64_t v;
  ssize_t r = read(wake_fd, &v, sizeof(v));
  (void)r;
  Py_RETURN_NONE;
}

/* The reader's receive buffer: small messages come in one recv. */
static uint8_t rbuf[1 << 16];
static size_t rb_start, rb_end;

/* Reads exactly n bytes into dst (from rbuf first, then the socket; a
 * large remainder goes straight into dst). Returns 0, or -1 at EOF or on
 * an error. Runs without the GIL. */
static int read_exact(uint8_t *dst, size_t n) {
  while (n > 0) {
    if (rb_start < rb_end) {
      size_t k = rb_end - rb_start < n ? rb_end - rb_start : n;
      memcpy(dst, rbuf + rb_start, k);
      rb_start += k;
      dst += k;
      n -= k;
      continue;
    }
    ssize_t k;
    if (n >= sizeof(rbuf)) {
      k = recv(IFD_PY_SOCK_FD, dst, n, 0);
      if (k > 0) {
        dst += k;
        n -= (size_t)k;
        continue;
      }
    } else {
      rb_start = rb_end = 0;
      k = recv(IFD_PY_SOCK_FD, rbuf, sizeof(rbuf), 0);
      if (k > 0) {
        rb_end = (size_t)k;
        continue;
      }
    }
    if (k < 0 && errno == EINTR) continue;
    return -1;
  }
  return 0;
}

/* Hands one answer message to answer_fn under the GIL (the payload read
 * into a fresh bytearray, without the GIL). typ 0: the end (None). */
static int reader_answer(uint32_t typ, uint32_t id, uint64_t len) {
  int rc = 0;
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *ba = NULL;
  if (typ != 0) {
    ba = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)len);
    if (ba == NULL) {
      PyErr_Print();
      rc = -1;
      goto out_gil;
    }
    /* Nobody else sees ba yet: fill it without the GIL. */
    uint8_t *dst = (uint8_t *)PyByteArray_AS_STRING(ba);
    Py_BEGIN_ALLOW_THREADS rc = read_exact(dst, len);
    Py_END_ALLOW_THREADS if (rc != 0) goto out_ba;
  }
  PyObject *r = PyObject_CallFunction(answer_fn, "IIO", typ, id,
                                      ba != NULL ? ba : Py_None);
  if (r == NULL)
    PyErr_Print();
  else
    Py_DECREF(r);
out_ba:
  Py_XDECREF(ba);
out_gil:
  PyGILState_Release(g);
  return rc;
}

static void *reader_main(void *arg) {
  (void)arg;
  for (;;) {
    ifd_py_hdr_t h;
    if (read_exact((uint8_t *)&h, sizeof(h)) != 0) break;
    if (h.type == IFD_PY_MSG_INIT || h.type == IFD_PY_MSG_EXECUTE ||
        h.type == IFD_PY_MSG_FINALIZE || h.type == IFD_PY_MSG_AUTO_COMPLETE) {
      if (h.length > SIZE_MAX - sizeof(work_t)) break;
      work_t *w = malloc(sizeof(*w) + h.length);
      if (w == NULL) break;
      w->type = h.type;
      w->id = h.id;
      w->obj = NULL;
      w->len = h.length;
      if (read_exact((uint8_t *)w->data, h.length) != 0) {
        free(w);
        break;
      }
      wq_push(w);
    } else if (reader_answer(h.type, h.id, h.length) != 0) {
      break;
    }
  }
  /* EOF (or a broken stream): the waiting calls fail, the main thread
   * ends. */
  reader_answer(0, 0, 0);
  work_t *w = calloc(1, sizeof(*w));
  if (w != NULL) {
    w->type = WORK_EOF;
    wq_push(w);
  } else {
    _exit(1);
  }
  return NULL;
}

/* start_reader(answer_fn): starts the reader thread (once). */
static PyObject *stub_start_reader(PyObject *mod, PyObject *fn) {
  (void)mod;
  if (reader_started) {
    PyErr_SetString(PyExc_RuntimeError, "the reader runs already");
    return NULL;
  }
  answer_fn = Py_NewRef(fn);
  int e = pthread_create(&reader_tid, NULL, reader_main, NULL);
  if (e != 0) {
    Py_CLEAR(answer_fn);
    errno = e;
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  reader_started = 1;
  Py_RETURN_NONE;
}

/* ---- EXECUTE's payload (ipc.h) --------------------------------------------
 */

/* A cursor over a payload; every read fails (-1) past its end. */
typedef struct {
  const uint8_t *p, *end;
} cur_t;

static int cur_take(cur_t *c, void *dst, size_t n) {
  if ((size_t)(c->end - c->p) < n) return -1;
  memcpy(dst, c->p, n);
  c->p += n;
  return 0;
}

static int cur_u32(cur_t *c, uint32_t *v) {
  return cur_take(c, v, 4);
}

static int cur_u64(cur_t *c, uint64_t *v) {
  return cur_take(c, v, 8);
}

/* A "str" as a new Python str (invalid UTF-8 replaced), or NULL. */
static PyObject *cur_str(cur_t *c) {
  uint32_t n = 0;
  if (cur_u32(c, &n) != 0 || (size_t)(c->end - c->p) < n) return NULL;
  PyObject *s = PyUnicode_DecodeUTF8((const char *)c->p, n, "replace");
  c->p += n;
  return s;
}

/* One PARAM's value as a new reference, or NULL. */
static PyObject *cur_param(cur_t *c) {
  uint32_t kind = 0, b = 0;
  uint64_t v = 0;
  double d = 0;
  if (cur_u32(c, &kind) != 0) return NULL;
  switch (kind) {
    case IFD_PY_PARAM_STR:
      return cur_str(c);
    case IFD_PY_PARAM_INT:
      if (cur_u64(c, &v) != 0) return NULL;
      return PyLong_FromLongLong((long long)(int64_t)v);
    case IFD_PY_PARAM_BOOL:
      if (cur_u32(c, &b) != 0) return NULL;
      return PyBool_FromLong(b != 0);
    case IFD_PY_PARAM_DOUBLE:
      if (cur_take(c, &d, sizeof(d)) != 0) return NULL;
      return PyFloat_FromDouble(d);
    case IFD_PY_PARAM_NULL:
      Py_RETURN_NONE;
    default:
      return NULL;
  }
}

/* One INPUT as a new (name, dtype, shape tuple, offset, size), or NULL. */
static PyObject *cur_input(cur_t *c) {
  PyObject *name = cur_str(c), *dtype = NULL, *shape = NULL, *r = NULL;
  uint32_t nd = 0;
  uint64_t off = 0, size = 0;
  if (name == NULL) return NULL;
  dtype = cur_str(c);
  if (dtype == NULL || cur_u32(c, &nd) != 0 || (size_t)(c->end - c->p) / 8 < nd)
    goto out;
  shape = PyTuple_New(nd);
  if (shape == NULL) goto out;
  for (uint32_t d = 0; d < nd; d++) {
    uint64_t v = 0;
    cur_u64(c, &v);
    PyObject *dim = PyLong_FromLongLong((long long)(int64_t)v);
    if (dim == NULL) goto out;
    PyTuple_SET_ITEM(shape, d, dim);
  }
  if (cur_u64(c, &off) != 0 || cur_u64(c, &size) != 0) goto out;
  r = Py_BuildValue("(OOOKK)", name, dtype, shape, (unsigned long long)off,
                    (unsigned long long)size);
out:
  Py_XDECREF(name);
  Py_XDECREF(dtype);
  Py_XDECREF(shape);
  return r;
}

/* One REQ as a new tuple (rid, flags, block offset, block size, id,
 * correlation id (int or str), trace context (str or None), [requested
 * output names], {parameters}, [inputs]), or NULL. */
static PyObject *cur_request(cur_t *c) {
  uint32_t rid = 0, flags = 0, kind = 0, n = 0;
  uint64_t boff = 0, bsize = 0, corr = 0;
  PyObject *id = NULL, *cid = NULL, *tctx = NULL, *outs = NULL, *params = NULL;
  PyObject *ins = NULL, *r = NULL;
  if (cur_u32(c, &rid) != 0 || cur_u32(c, &flags) != 0 ||
      cur_u64(c, &boff) != 0 || cur_u64(c, &bsize) != 0)
    return NULL;
  if ((id = cur_str(c)) == NULL || cur_u32(c, &kind) != 0) goto out;
  if (kind == 0)
    cid = cur_u64(c, &corr) == 0 ? PyLong_FromUnsignedLongLong(corr) : NULL;
  else
    cid = cur_str(c);
  if (cid == NULL || cur_u32(c, &kind) != 0) goto out;
  tctx = kind ? cur_str(c) : Py_NewRef(Py_None);
  if (tctx == NULL || cur_u32(c, &n) != 0 || (size_t)(c->end - c->p) / 4 < n ||
      (outs = PyList_New(n)) == NULL)
    goto out;
  for (uint32_t i = 0; i < n; i++) {
    PyObject *o = cur_str(c);
    if (o == NULL) goto out;
    PyList_SET_ITEM(outs, i, o);
  }
  if (cur_u32(c, &n) != 0 || (params = PyDict_New()) == NULL) goto out;
  for (uint32_t i = 0; i < n; i++) {
    PyObject *k = cur_str(c), *v = k != NULL ? cur_param(c) : NULL;
    int rc = v != NULL ? PyDict_SetItem(params, k, v) : -1;
    Py_XDECREF(k);
    Py_XDECREF(v);
    if (rc != 0) goto out;
  }
  if (cur_u32(c, &n) != 0 || (size_t)(c->end - c->p) / 4 < n ||
      (ins = PyList_New(n)) == NULL)
    goto out;
  for (uint32_t i = 0; i < n; i++) {
    PyObject *t = cur_input(c);
    if (t == NULL) goto out;
    PyList_SET_ITEM(ins, i, t);
  }
  r = Py_BuildValue("(IIKKOOOOOO)", rid, flags, (unsigned long long)boff,
                    (unsigned long long)bsize, id, cid, tctx, outs, params,
                    ins);
out:
  Py_XDECREF(id);
  Py_XDECREF(cid);
  Py_XDECREF(tctx);
  Py_XDECREF(outs);
  Py_XDECREF(params);
  Py_XDECREF(ins);
  return r;
}

/* parse_execute(payload) -> (decoupled, [REQ tuples]); ValueError when the
 * payload is malformed. */
static PyObject *stub_parse_execute(PyObject *mod, PyObject *arg) {
  (void)mod;
  Py_buffer view;
  PyObject *reqs = NULL, *r = NULL;
  uint32_t dec = 0, n = 0;
  if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) != 0) return NULL;
  cur_t c = {view.buf, (const uint8_t *)view.buf + view.len};
  if (cur_u32(&c, &dec) != 0 || cur_u32(&c, &n) != 0 ||
      (size_t)(c.end - c.p) / 4 < n || (reqs = PyList_New(n)) == NULL)
    goto out_view;
  for (uint32_t i = 0; i < n; i++) {
    PyObject *t = cur_request(&c);
    if (t == NULL) goto out_view;
    PyList_SET_ITEM(reqs, i, t);
  }
  if (c.p == c.end) r = Py_BuildValue("(OO)", dec ? Py_True : Py_False, reqs);
out_view:
  Py_XDECREF(reqs);
  PyBuffer_Release(&view);
  if (r == NULL && !PyErr_Occurred())
    PyErr_SetString(PyExc_ValueError, "malformed EXECUTE message");
  return r;
}

static PyMethodDef stub_methods[] = {
    {"start_reader", stub_start_reader, METH_O,
     "start_reader(answer_fn(type, id, payload or None))"},
    {"next_work", stub_next_work, METH_NOARGS,
     "next_work() -> object or (type, id, payload); waits"},
    {"try_work", stub_try_work, METH_NOARGS, "try_work() -> item or None"},
    {"post", stub_post, METH_O, "post(obj): queue obj for next_work"},
    {"set_looping", stub_set_looping, METH_O, "set_looping(flag)"},
    {"clear_wake", stub_clear_wake, METH_NOARGS, "clear_wake()"},
    {"down_block", stub_down_block, METH_VARARGS,
     "down_block(offset, size) -> DownBlock"},
    {"take_frees", stub_take_frees, METH_NOARGS,
     "take_frees() -> bytes of u64 offsets"},
    {"set_free_notify", stub_set_free_notify, METH_O,
     "set_free_notify(callable)"},
    {"up_view", stub_up_view, METH_O, "up_view(n) -> memoryview"},
    {"parse_execute", stub_parse_execute, METH_O,
     "parse_execute(payload) -> (decoupled, [request tuples])"},
    {"down_held", stub_down_held, METH_NOARGS,
     "down_held() -> bytes held by live DownBlocks"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef stub_module = {PyModuleDef_HEAD_INIT,
                                         "_inferd_stub",
                                         "inferd stub: descriptors, segments",
                                         -1,
                                         stub_methods,
                                         NULL,
                                         NULL,
                                         NULL,
                                         NULL};

/* Maps DOWN and UP; returns 0 or -errno. */
static int stub_map(void) {
  void *d = mmap(NULL, IFD_PY_SEG_MAX, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_NORESERVE, IFD_PY_DOWN_FD, 0);
  if (d == MAP_FAILED) return -errno;
  void *u = mmap(NULL, IFD_PY_SEG_MAX, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_NORESERVE, IFD_PY_UP_FD, 0);
  if (u == MAP_FAILED) {
    int e = -errno;
    munmap(d, IFD_PY_SEG_MAX);
    return e;
  }
  struct stat st;
  if (fstat(IFD_PY_UP_FD, &st) == 0) up_size = (uint64_t)st.st_size;
  down_base = d;
  up_base = u;
  return 0;
}

static PyObject *stub_module_init(void) {
  if (PyType_Ready(&down_block_type) < 0) return NULL;
  PyObject *m = PyModule_Create(&stub_module);
  if (m == NULL) return NULL;
  if (PyModule_AddIntConstant(m, "sock_fd", IFD_PY_SOCK_FD) < 0 ||
      PyModule_AddIntConstant(m, "down_fd", IFD_PY_DOWN_FD) < 0 ||
      PyModule_AddIntConstant(m, "up_fd", IFD_PY_UP_FD) < 0 ||
      PyModule_AddIntConstant(m, "wake_fd", wake_fd) < 0 ||
      PyModule_AddIntConstant(m, "WORK_EOF", WORK_EOF) < 0 ||
      PyModule_AddObject(m, "seg_max",
                         PyLong_FromUnsignedLongLong(IFD_PY_SEG_MAX)) < 0 ||
      PyModule_AddObjectRef(m, "DownBlock", (PyObject *)&down_block_type) < 0)
    goto out_mod;
  return m;
out_mod:
  Py_DECREF(m);
  return NULL;
}

/* ---- the execution environment (EXECUTION_ENV_PATH; env.c) -------------- */

/* Where the environment's Python would keep the stub's Python version. */
#define PY_LIBDIR \
  "lib/python" Py_STRINGIFY(PY_MAJOR_VERSION) "." Py_STRINGIFY(PY_MINOR_VERSION)

/* Takes <env>/lib, which the launch put first for the stub itself, out of
 * LD_LIBRARY_PATH again, so programs the model starts do not get it (as
 * Triton's stub does). */
static void env_fix_ld_path(const char *env) {
  const char *ld = getenv("LD_LIBRARY_PATH");
  size_t n = strlen(env);
  if (ld == NULL || strncmp(ld, env, n) != 0 || strncmp(ld + n, "/lib", 4) != 0)
    return;
  const char *rest = ld + n + 4;
  if (*rest == ':')
    rest++;
  else if (*rest != '\0')
    return;
  if (*rest == '\0')
    unsetenv("LD_LIBRARY_PATH");
  else
    setenv("LD_LIBRARY_PATH", rest, 1);
}

/* Whether `path` exists. */
static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Checks the environment's Python version: 0, 1 when it holds the stub's
 * whole standard library (the stub then runs as that environment's
 * Python), or -1 (a message went to stderr). */
static int env_check(const char *env) {
  char p[PATH_MAX];
  snprintf(p, sizeof(p), "%s/" PY_LIBDIR "/os.py", env);
  if (exists(p)) return 1;
  snprintf(p, sizeof(p), "%s/" PY_LIBDIR, env);
  if (exists(p)) return 0;
  /* Another Python version's folder only: its packages would not load. */
  char lib[PATH_MAX];
  snprintf(lib, sizeof(lib), "%s/lib", env);
  DIR *d = opendir(lib);
  struct dirent *de;
  int other = 0;
  while (d != NULL && (de = readdir(d)) != NULL)
    if (strncmp(de->d_name, "python3.", 8) == 0) {
      fprintf(stderr,
              "triton_python_backend_stub: the execution environment %s holds "
              "Python %s; this stub runs Python %d.%d\n",
              env, de->d_name + 6, PY_MAJOR_VERSION, PY_MINOR_VERSION);
      other = 1;
      break;
    }
  if (d != NULL) closedir(d);
  return other ? -1 : 0;
}

/* Puts <env>/PY_LIBDIR/site-packages (with its .pth files) ahead of the
 * system's packages. 0 or -1 (a Python error is set). */
static int env_add_site(const char *env) {
  char sp[PATH_MAX];
  snprintf(sp, sizeof(sp), "%s/" PY_LIBDIR "/site-packages", env);
  if (!exists(sp)) return 0;
  PyObject *g = PyDict_New();
  PyObject *v = PyUnicode_DecodeFSDefault(sp);
  int rc = -1;
  if (g != NULL && v != NULL && PyDict_SetItemString(g, "sp", v) == 0 &&
      PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins()) == 0) {
    PyObject *r = PyRun_String(
        "import site, sys\n"
        "n = len(sys.path)\n"
        "site.addsitedir(sp)\n"
        "added = sys.path[n:]\n"
        "del sys.path[n:]\n"
        "sys.path[0:0] = added\n",
        Py_file_input, g, g);
    if (r != NULL) rc = 0;
    Py_XDECREF(r);
  }
  Py_XDECREF(v);
  Py_XDECREF(g);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s BACKEND_DIR [MODEL INSTANCE]\n", argv[0]);
    return 2;
  }
  /* Ctrl-C in a terminal reaches the whole process group: the server
   * handles it and ends its stubs in order (FINALIZE, or EOF). */
  signal(SIGINT, SIG_IGN);
  int e = stub_map();
  if (e == 0) {
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0) e = -errno;
  }
  if (e < 0) {
    fprintf(stderr, "triton_python_backend_stub: mapping the segments: %s\n",
            strerror(-e));
    return 1;
  }
  if (PyImport_AppendInittab("_inferd_stub", stub_module_init) < 0) return 1;
  /* A custom execution environment (env.c launched us through its
   * bin/activate): its whole Python when it has the stub's version's
   * standard library, else its site-packages. */
  char *env = getenv("INFERD_PYTHON_EXECUTION_ENV");
  env = env != NULL && env[0] != '\0' ? strdup(env) : NULL;
  int env_home = 0;
  unsetenv("INFERD_PYTHON_EXECUTION_ENV");
  if (env != NULL) {
    env_fix_ld_path(env);
    env_home = env_check(env);
    if (env_home < 0) return 1;
  }
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;
  config.parse_argv = 0;
  PyStatus st = PyStatus_Ok();
  if (env_home) st = PyConfig_SetBytesString(&config, &config.home, env);
  if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(st)) {
    fprintf(stderr, "triton_python_backend_stub: cannot start Python%s%s: %s\n",
            env != NULL ? " in the execution environment " : "",
            env != NULL ? env : "", st.err_msg != NULL ? st.err_msg : "");
    return 1;
  }
  int rc = 1;
  PyObject *dir = NULL;
  if (env != NULL && !env_home && env_add_site(env) < 0) goto out;
  PyObject *sys_path = PySys_GetObject("path"); /* borrowed */
  dir = PyUnicode_DecodeFSDefault(argv[1]);
  if (sys_path == NULL || dir == NULL || PyList_Insert(sys_path, 0, dir) < 0)
    goto out;
  PyObject *mod = PyImport_ImportModule("triton_python_backend_utils");
  if (mod == NULL) goto out;
  PyObject *res = PyObject_CallMethod(mod, "_stub_main", NULL);
  Py_DECREF(mod);
  if (res == NULL) goto out;
  Py_DECREF(res);
  rc = 0;
out:
  if (PyErr_Occurred()) PyErr_Print();
  free(env);
  Py_XDECREF(dir);
  if (Py_FinalizeEx() < 0) rc = 1;
  return rc;
}
