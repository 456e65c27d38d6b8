/*
 * test/unit/test_shm.c - the shared-memory region table (core/shm.c):
 * register, status, unregister, the checks and texts Triton gives, requests
 * holding a region past its unregister, and no mapping left behind.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/infer.h"
#include "core/server.h"
#include "core/shm.h"

typedef struct {
  uv_loop_t loop;
  ifd_server_t *s;
  ifd_shm_t *t;
  char key[64];
  int done, rc;
  char msg[1024];
} fx_t;

static void on_done(int rc, const char *msg, void *arg) {
  fx_t *f = arg;
  f->done++;
  f->rc = rc;
  snprintf(f->msg, sizeof(f->msg), "%s", msg);
}

/* An 8192-byte POSIX object holding 0, 1, 2, ... as int32. */
static void fx_open(fx_t *f) {
  ifd_server_opts_t o;
  ifd_errmsg_t err;
  int fd, i;
  int32_t *p;
  memset(f, 0, sizeof(*f));
  memset(&o, 0, sizeof(o));
  assert_int_equal(uv_loop_init(&f->loop), 0);
  assert_int_equal(ifd_server_new(&f->loop, &o, &f->s, &err), 0);
  f->t = ifd_server_shm(f->s);
  snprintf(f->key, sizeof(f->key), "/inferd_test_shm_%d", (int)getpid());
  fd = shm_open(f->key, O_RDWR | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, 8192), 0);
  p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  assert_true(p != MAP_FAILED);
  for (i = 0; i < 2048; i++) p[i] = i;
  munmap(p, 8192);
  close(fd);
}

static void fx_close(fx_t *f) {
  ifd_server_free(f->s);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  shm_unlink(f->key);
}

/* Registers and waits; returns the completion's (or the call's) code. */
static int reg(fx_t *f, const char *name, const char *key, uint64_t off,
               uint64_t size) {
  ifd_errmsg_t err;
  int rc;
  f->done = 0;
  ifd_errclear(&err);
  rc = ifd_shm_register_system(f->t, name, key, off, size, on_done, f, NULL,
                               &err);
  if (rc != 0) {
    snprintf(f->msg, sizeof(f->msg), "%s", err.text);
    return rc;
  }
  assert_int_equal(f->done, 0); /* never before the call returns */
  while (f->done == 0) uv_run(&f->loop, UV_RUN_ONCE);
  return f->rc;
}

static void unreg(fx_t *f, const char *name) {
  f->done = 0;
  assert_int_equal(
      ifd_shm_unregister(f->t, IFD_SHM_SYSTEM, name, on_done, f, NULL), 0);
  assert_int_equal(f->done, 0);
  while (f->done == 0) uv_run(&f->loop, UV_RUN_ONCE);
  assert_int_equal(f->rc, 0);
}

static int count_cb(const ifd_shm_info_t *info, void *arg) {
  char *names = arg;
  strcat(names, info->name);
  strcat(names, ";");
  return 0;
}

static void test_register_status_unregister(void **state) {
  fx_t f;
  char names[256] = "";
  ifd_errmsg_t err;
  (void)state;
  fx_open(&f);
  assert_int_equal(reg(&f, "b", f.key, 0, 64), 0);
  assert_int_equal(reg(&f, "a", f.key, 4096, 64), 0); /* same key: fine */
  assert_int_equal(reg(&f, "c", f.key, 0, 8192), 0);
  assert_int_equal(ifd_shm_count(f.t), 3);
  assert_int_equal(
      ifd_shm_foreach(f.t, IFD_SHM_SYSTEM, NULL, count_cb, names, &err), 0);
  assert_string_equal(names, "a;b;c;");
  names[0] = '\0';
  assert_int_equal(
      ifd_shm_foreach(f.t, IFD_SHM_SYSTEM, "b", count_cb, names, &err), 0);
  assert_string_equal(names, "b;");
  assert_int_equal(
      ifd_shm_foreach(f.t, IFD_SHM_SYSTEM, "nope", count_cb, names, &err),
      IFD_ENOTFOUND);
  assert_string_equal(err.text,
                      "Unable to find system shared memory region: 'nope'");
  /* Not a CUDA region. */
  assert_int_equal(
      ifd_shm_foreach(f.t, IFD_SHM_CUDA, "b", count_cb, names, &err),
      IFD_ENOTFOUND);
  unreg(&f, "b");
  unreg(&f, "nope"); /* unknown: fine */
  assert_int_equal(ifd_shm_count(f.t), 2);
  unreg(&f, NULL);
  assert_int_equal(ifd_shm_count(f.t), 0);
  fx_close(&f);
}

static void test_register_errors(void **state) {
  fx_t f;
  ifd_errmsg_t err;
  (void)state;
  fx_open(&f);
  assert_int_equal(reg(&f, "r", f.key, 0, 64), 0);
  assert_int_equal(reg(&f, "r", f.key, 0, 64), IFD_EEXISTS);
  assert_string_equal(f.msg, "shared memory region 'r' already in manager");
  assert_int_equal(reg(&f, "x", "/inferd_test_shm_nope", 0, 64), IFD_EINTERNAL);
  assert_string_equal(f.msg,
                      "Unable to open shared memory region: "
                      "'/inferd_test_shm_nope'");
  assert_int_equal(reg(&f, "x", f.key, 8192 + 4096, 64), IFD_EINVAL);
  assert_string_equal(f.msg,
                      "failed to register shared memory region 'x': invalid "
                      "args");
  assert_int_equal(reg(&f, "x", f.key, 4096, 8192), IFD_EINVAL);
  assert_string_equal(f.msg,
                      "failed to register shared memory region 'x': invalid "
                      "args");
  assert_int_equal(reg(&f, "x", f.key, 0, 0), IFD_EINVAL);
  assert_string_equal(f.msg,
                      "failed to register shared memory region 'x': unable "
                      "to process address spaceInvalid argument");
  assert_int_equal(reg(&f, "x", f.key, 16, 64), IFD_EINVAL);
  assert_string_equal(f.msg,
                      "failed to register shared memory region 'x': unable "
                      "to process address spaceInvalid argument");
  /* A failed register leaves the name free. */
  assert_int_equal(ifd_shm_count(f.t), 1);
  assert_int_equal(reg(&f, "x", f.key, 0, 64), 0);
  if (ifd_server_opts(f.s)->gpu_count == 0) {
    unsigned char h[IFD_CUDA_IPC_HANDLE_BYTES] = {0};
    assert_int_equal(ifd_shm_register_cuda(f.t, "cuda_region", h, sizeof(h), 0,
                                           64, on_done, &f, NULL, &err),
                     IFD_EINVAL);
    assert_string_equal(err.text,
                        "failed to register CUDA shared memory region: "
                        "'cuda_region', GPUs not supported");
  }
  fx_close(&f);
}

/* The offset of a region is applied once (Triton 2.47 applies it twice). */
static void test_use_bounds_and_offset(void **state) {
  fx_t f;
  ifd_errmsg_t err;
  ifd_shm_ref_t ref;
  ifd_request_t *req;
  (void)state;
  fx_open(&f);
  assert_int_equal(reg(&f, "page", f.key, 4096, 64), 0);
  req = ifd_request_new(f.s);
  assert_non_null(req);
  assert_int_equal(ifd_shm_use(req, "page", 4, 8, 16, &ref, &err), 0);
  assert_int_equal(((int32_t *)ref.ptr)[0], 1024 + 2);
  assert_int_equal(ref.byte_size, 16);
  assert_int_equal(ref.mem_type, IFD_MEM_CPU);
  assert_int_equal(ifd_shm_use(req, "page", 4, 0, 64, &ref, &err), 0);
  assert_int_equal(ifd_shm_use(req, "page", 4, 0, 65, &ref, &err), IFD_EINVAL);
  assert_string_equal(err.text,
                      "Invalid offset + byte size for shared "
                      "memory region: 'page'");
  assert_int_equal(ifd_shm_use(req, "page", 4, 60, 8, &ref, &err), IFD_EINVAL);
  assert_string_equal(err.text,
                      "Invalid offset + byte size for shared "
                      "memory region: 'page'");
  assert_int_equal(ifd_shm_use(req, "page", 4, 0, 0, &ref, &err), IFD_EINVAL);
  /* An offset outside the region is Triton's other text, checked first. */
  assert_int_equal(ifd_shm_use(req, "page", 4, 64, 1, &ref, &err), IFD_EINVAL);
  assert_string_equal(err.text,
                      "Invalid offset for shared memory region: 'page'");
  assert_int_equal(ifd_shm_use(req, "page", 4, UINT64_MAX, 8, &ref, &err),
                   IFD_EINVAL);
  assert_string_equal(err.text,
                      "Invalid offset for shared memory region: 'page'");
  assert_int_equal(ifd_shm_use(req, "page", 4, UINT64_MAX, 8, &ref, &err),
                   IFD_EINVAL);
  assert_int_equal(ifd_shm_use(req, "pagex", 4, 0, 8, &ref, &err), 0);
  assert_int_equal(ifd_shm_use(req, "nope", 4, 0, 8, &ref, &err),
                   IFD_ENOTFOUND);
  assert_string_equal(err.text, "Unable to find shared memory region: 'nope'");
  ifd_request_unref(req);
  fx_close(&f);
}

/* A region unregistered while a request uses it stays mapped until the
 * request goes; then nothing of it is left in /proc/self/maps. */
static int maps_lines(const char *key) {
  char line[512];
  int n = 0;
  FILE *fp = fopen("/proc/self/maps", "r");
  assert_non_null(fp);
  while (fgets(line, sizeof(line), fp) != NULL)
    if (key == NULL || strstr(line, key + 1) != NULL) n++;
  fclose(fp);
  return n;
}

static void test_unregister_while_used(void **state) {
  fx_t f;
  ifd_errmsg_t err;
  ifd_shm_ref_t ref;
  ifd_request_t *req;
  (void)state;
  fx_open(&f);
  assert_int_equal(reg(&f, "r", f.key, 0, 64), 0);
  assert_int_equal(maps_lines(f.key), 1);
  req = ifd_request_new(f.s);
  assert_int_equal(ifd_shm_use(req, "r", 1, 0, 16, &ref, &err), 0);
  unreg(&f, "r");
  /* Gone from the table, not from the address space. */
  assert_int_equal(ifd_shm_count(f.t), 0);
  assert_int_equal(ifd_shm_use(req, "r", 1, 0, 16, &ref, &err), IFD_ENOTFOUND);
  assert_int_equal(maps_lines(f.key), 1);
  assert_int_equal(((int32_t *)ref.ptr)[3], 3); /* still readable */
  /* The name is free again at once. */
  assert_int_equal(reg(&f, "r", f.key, 0, 64), 0);
  assert_int_equal(maps_lines(f.key), 2);
  ifd_request_unref(req); /* the last hold: its unmap job runs */
  uv_run(&f.loop, UV_RUN_NOWAIT);
  while (maps_lines(f.key) != 1) uv_run(&f.loop, UV_RUN_ONCE);
  unreg(&f, "r");
  assert_int_equal(maps_lines(f.key), 0);
  fx_close(&f);
}

static void test_cycles_leave_no_mapping(void **state) {
  fx_t f;
  int i, before;
  (void)state;
  fx_open(&f);
  before = maps_lines(NULL);
  for (i = 0; i < 1000; i++) {
    assert_int_equal(reg(&f, "cyc", f.key, 0, 4096), 0);
    unreg(&f, "cyc");
  }
  assert_int_equal(maps_lines(f.key), 0);
  assert_int_equal(maps_lines(NULL), before);
  fx_close(&f);
}

/* A register still in flight when the server goes completes and unmaps. */
static void test_free_with_register_in_flight(void **state) {
  fx_t f;
  ifd_errmsg_t err;
  (void)state;
  fx_open(&f);
  assert_int_equal(reg(&f, "held", f.key, 0, 64), 0);
  assert_int_equal(ifd_shm_register_system(f.t, "late", f.key, 0, 64, on_done,
                                           &f, NULL, &err),
                   0);
  f.done = 0;
  fx_close(&f);
  assert_int_equal(f.done, 1);
  assert_int_equal(f.rc, IFD_EUNAVAIL);
  assert_int_equal(maps_lines(f.key), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_register_status_unregister),
      cmocka_unit_test(test_register_errors),
      cmocka_unit_test(test_use_bounds_and_offset),
      cmocka_unit_test(test_unregister_while_used),
      cmocka_unit_test(test_cycles_leave_no_mapping),
      cmocka_unit_test(test_free_with_register_in_flight),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
