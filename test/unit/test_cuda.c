/*
 * test/unit/test_cuda.c - the cuda/ module and the GPU parts of backend_api.
 *
 * Everywhere: the pool allocator (over malloc'd memory: it never touches
 * the bytes it manages, so host memory stands in for a device's), the pool
 * flags' parser, what a CPU-only build or machine answers (GPU memory, IPC,
 * device copies and thread binding refused with "GPUs not supported",
 * pinned memory served as CPU memory), NVML through a fake libnvidia-ml
 * (build/test/libfake_nvml.so, found beside this binary's folder), and the
 * model statistics' memory usage.
 *
 * On a GPU (make test-gpu; skipped, saying why, without one): pools on the
 * device, their fallback to cudaMalloc, copies both ways on a bound thread's
 * stream, thread binding.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_api/internal.h"
#include "core/stats.h"
#include "cuda/cuda_mem.h"
#include "cuda/gpu.h"
#include "cuda/internal.h"

/* ---- the pool allocator ---------------------------------------------- */

#define POOL_BYTES (64 * 1024)

typedef struct pool_fixture {
  ifd__mempool_t pool;
  void *mem;
} pool_fixture_t;

static int pool_setup(void **state) {
  pool_fixture_t *f = calloc(1, sizeof(*f));
  if (f == NULL || posix_memalign(&f->mem, IFD__MEMPOOL_ALIGN, POOL_BYTES))
    return -1;
  if (ifd__mempool_init(&f->pool, f->mem, POOL_BYTES) < 0) return -1;
  *state = f;
  return 0;
}

static int pool_teardown(void **state) {
  pool_fixture_t *f = *state;
  ifd__mempool_fini(&f->pool);
  free(f->mem);
  free(f);
  return 0;
}

static void test_pool_alloc_aligned_and_counted(void **state) {
  pool_fixture_t *f = *state;
  char *a = ifd__mempool_alloc(&f->pool, 1);
  char *b = ifd__mempool_alloc(&f->pool, 300);
  assert_non_null(a);
  assert_non_null(b);
  assert_ptr_equal(a, f->mem); /* first fit */
  assert_int_equal((uintptr_t)b % IFD__MEMPOOL_ALIGN, 0);
  assert_true(b >= a + IFD__MEMPOOL_ALIGN);
  assert_int_equal(ifd__mempool_used(&f->pool), 256 + 512);
  assert_true(ifd__mempool_owns(&f->pool, b + 10));
  assert_false(ifd__mempool_owns(&f->pool, (char *)f->mem + POOL_BYTES));
  assert_int_equal(ifd__mempool_free(&f->pool, a), 0);
  assert_int_equal(ifd__mempool_free(&f->pool, b), 0);
  assert_int_equal(ifd__mempool_used(&f->pool), 0);
  assert_int_equal(f->pool.n_segs, 1);
}

static void test_pool_exhaustion_and_bad_frees(void **state) {
  pool_fixture_t *f = *state;
  char *all = ifd__mempool_alloc(&f->pool, POOL_BYTES);
  int local;
  assert_ptr_equal(all, f->mem);
  assert_null(ifd__mempool_alloc(&f->pool, 1));
  assert_null(ifd__mempool_alloc(&f->pool, 0));
  assert_null(ifd__mempool_alloc(&f->pool, POOL_BYTES + 1));
  /* Not handed out: the middle of a buffer, memory outside, twice. */
  assert_int_equal(ifd__mempool_free(&f->pool, all + 256), IFD_EINVAL);
  assert_int_equal(ifd__mempool_free(&f->pool, &local), IFD_EINVAL);
  assert_int_equal(ifd__mempool_free(&f->pool, all), 0);
  assert_int_equal(ifd__mempool_free(&f->pool, all), IFD_EINVAL);
  assert_int_equal(ifd__mempool_used(&f->pool), 0);
}

static void test_pool_coalesces_neighbours(void **state) {
  pool_fixture_t *f = *state;
  const uint64_t q = POOL_BYTES / 4;
  char *p[4];
  int i;
  for (i = 0; i < 4; i++)
    assert_non_null(p[i] = ifd__mempool_alloc(&f->pool, q));
  assert_null(ifd__mempool_alloc(&f->pool, 1));
  /* Two free quarters side by side make room for a half. */
  assert_int_equal(ifd__mempool_free(&f->pool, p[1]), 0);
  assert_null(ifd__mempool_alloc(&f->pool, 2 * q));
  assert_int_equal(ifd__mempool_free(&f->pool, p[2]), 0);
  assert_ptr_equal(ifd__mempool_alloc(&f->pool, 2 * q), p[1]);
  assert_int_equal(ifd__mempool_free(&f->pool, p[1]), 0);
  /* Freed out of order, everything merges back into one run. */
  assert_int_equal(ifd__mempool_free(&f->pool, p[3]), 0);
  assert_int_equal(ifd__mempool_free(&f->pool, p[0]), 0);
  assert_int_equal(f->pool.n_segs, 1);
  assert_ptr_equal(ifd__mempool_alloc(&f->pool, POOL_BYTES), f->mem);
}

static void test_pool_churn(void **state) {
  pool_fixture_t *f = *state;
  char *live[40] = {0};
  unsigned seed = 12345;
  int i, k;
  for (i = 0; i < 20000; i++) {
    seed = seed * 1103515245u + 12345u;
    k = (int)((seed >> 16) % 40);
    if (live[k] != NULL) {
      assert_int_equal(ifd__mempool_free(&f->pool, live[k]), 0);
      live[k] = NULL;
    } else {
      live[k] = ifd__mempool_alloc(&f->pool, 1 + (seed >> 8) % 3000);
    }
  }
  for (k = 0; k < 40; k++)
    if (live[k] != NULL)
      assert_int_equal(ifd__mempool_free(&f->pool, live[k]), 0);
  assert_int_equal(ifd__mempool_used(&f->pool), 0);
  assert_int_equal(f->pool.n_segs, 1);
}

/* ---- flags ----------------------------------------------------------- */

static void test_parse_pool_flag(void **state) {
  ifd_cuda_mem_opts_t o;
  ifd_errmsg_t err;
  (void)state;
  ifd_cuda_mem_opts_default(&o);
  assert_int_equal(o.pinned_bytes, 268435456);
  assert_int_equal(o.cuda_bytes[0], 67108864);
  assert_int_equal(o.cuda_bytes[IFD_CUDA_MAX_DEVICES - 1], 67108864);
  assert_int_equal(ifd_cuda_mem_parse_pool(&o, "1:1048576", &err), 0);
  assert_int_equal(o.cuda_bytes[1], 1048576);
  assert_int_equal(ifd_cuda_mem_parse_pool(&o, "0:0", &err), 0);
  assert_int_equal(o.cuda_bytes[0], 0);
  assert_int_equal(ifd_cuda_mem_parse_pool(&o, "1048576", &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "<integer>:<integer>"));
  assert_int_equal(ifd_cuda_mem_parse_pool(&o, "0:", &err), IFD_EINVAL);
  assert_int_equal(ifd_cuda_mem_parse_pool(&o, ":5", &err), IFD_EINVAL);
  assert_int_equal(ifd_cuda_mem_parse_pool(&o, "-1:5", &err), IFD_EINVAL);
  assert_int_equal(ifd_cuda_mem_parse_pool(&o, "0:5x", &err), IFD_EINVAL);
  assert_int_equal(
      ifd_cuda_mem_parse_pool(&o, "0:99999999999999999999999", &err),
      IFD_EINVAL);
  assert_int_equal(ifd_cuda_mem_parse_pool(&o, "64:1", &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "device 64"));
}

/* ---- without a GPU --------------------------------------------------- */

#define NEEDS_NO_GPU()                                                  \
  do {                                                                  \
    if (ifd_gpu_count() > 0) {                                          \
      print_message("this machine has a GPU: CPU-only case skipped\n"); \
      skip();                                                           \
    }                                                                   \
  } while (0)

#define NEEDS_GPU()                                                            \
  do {                                                                         \
    if (ifd_gpu_count() == 0) {                                                \
      print_message("no GPU (%s build): GPU case skipped\n", ifd_gpu_build()); \
      skip();                                                                  \
    }                                                                          \
  } while (0)

static void test_no_gpu_answers(void **state) {
  ifd_cuda_mem_opts_t o;
  ifd_cuda_pool_info_t pools[4];
  ifd_errmsg_t err;
  int32_t type;
  int64_t id;
  void *p = NULL;
  char a[8] = "abcdefg", b[8] = {0};
  (void)state;
  NEEDS_NO_GPU();
  ifd_cuda_mem_opts_default(&o);
  ifd_cuda_mem_init(&o, 0);
  assert_int_equal(ifd_cuda_pools(pools, 4), 0);

  type = IFD_CUDA_MEM_GPU;
  id = 0;
  assert_int_equal(ifd_cuda_alloc(&type, &id, 64, &p, &err), IFD_EUNSUPPORTED);
  assert_string_equal(err.text, "GPUs not supported");
  assert_null(p);

  /* Pinned memory falls back to CPU memory, and says so. */
  type = IFD_CUDA_MEM_CPU_PINNED;
  id = 3;
  assert_int_equal(ifd_cuda_alloc(&type, &id, 64, &p, &err), 0);
  assert_int_equal(type, IFD_CUDA_MEM_CPU);
  assert_int_equal(id, 0);
  memset(p, 1, 64);
  assert_true(ifd_cuda_free_is_cheap(p, type, id));
  ifd_cuda_free(p, type, id);

  assert_int_equal(ifd_cuda_copy(b, IFD_CUDA_MEM_CPU, 0, a, IFD_CUDA_MEM_CPU, 0,
                                 sizeof(a), &err),
                   0);
  assert_string_equal(b, "abcdefg");
  assert_int_equal(ifd_cuda_copy(b, IFD_CUDA_MEM_CPU, 0, a, IFD_CUDA_MEM_GPU, 0,
                                 sizeof(a), &err),
                   IFD_EUNSUPPORTED);
  assert_string_equal(err.text, "GPUs not supported");
  assert_int_equal(ifd_cuda_ipc_open(a, 64, 0, &p, &err), IFD_EUNSUPPORTED);
  assert_null(p);
  ifd_cuda_ipc_close(NULL, 0);

  assert_int_equal(ifd_gpu_thread_bind(0, &err), IFD_EUNSUPPORTED);
  assert_null(ifd_gpu_thread_stream());
  assert_int_equal(ifd_gpu_thread_device(), -1);
  ifd_gpu_thread_unbind();
  ifd_cuda_mem_fini();
}

/* The backend ABI's GPU parts step aside without a GPU. */
static void test_no_gpu_backend_buffers(void **state) {
  ifd_output_t o;
  ifd_input_t in;
  const void *dev = (const void *)1;
  ifd_errmsg_t err;
  (void)state;
  NEEDS_NO_GPU();
  memset(&o, 0, sizeof(o));
  assert_int_equal(ifd__gpu_output_buffer(&o, 128, 0), 0);
  assert_null(o.buffer);
  assert_int_equal(o.mem_type, IFD_MEM_CPU);
  memset(&in, 0, sizeof(in));
  in.data = "x";
  in.byte_size = 1;
  assert_int_equal(ifd__gpu_input_copy(NULL, &in, 0, &dev, &err), 0);
  assert_null(dev);
  /* Not on an instance thread: no request owns this input. */
  assert_null(ifd__instance_request_of(&in));
}

/* ---- NVML ------------------------------------------------------------ */

/* build/test/libfake_nvml.so, from this binary's path
 * (build/test/unit/test_cuda). */
static void fake_nvml_path(char *buf, size_t len) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  char *slash;
  assert_true(n > 0);
  exe[n] = '\0';
  slash = strrchr(exe, '/');
  assert_non_null(slash);
  *slash = '\0';
  snprintf(buf, len, "%s/../libfake_nvml.so", exe);
}

static void test_nvml_fake(void **state) {
  char path[PATH_MAX + 32];
  ifd_nvml_t *n = NULL;
  ifd_gpu_sample_t s[4];
  (void)state;
  fake_nvml_path(path, sizeof(path));
  unsetenv("FAKE_NVML_COUNT");
  unsetenv("FAKE_NVML_FAIL_INIT");
  assert_int_equal(ifd_nvml_open(path, &n), 0);
  assert_int_equal(ifd_nvml_count(n), 2);
  assert_int_equal(ifd_nvml_sample(n, s, 4), 2);
  assert_string_equal(s[0].uuid, "GPU-fake-0");
  assert_string_equal(s[1].uuid, "GPU-fake-1");
  assert_true(s[0].has_util && s[0].has_mem && s[0].has_power &&
              s[0].has_limit && s[0].has_energy);
  assert_true(s[0].utilization > 0.369 && s[0].utilization < 0.371);
  assert_int_equal(s[0].mem_total, 17179869184ull);
  assert_int_equal(s[0].mem_used, 1073741824ull);
  assert_true(s[0].power_w > 42.49 && s[0].power_w < 42.51);
  assert_true(s[0].power_limit_w > 299.9 && s[0].power_limit_w < 300.1);
  assert_false(s[1].has_power); /* the fake's second GPU has no reading */
  assert_true(s[1].energy_mj > s[0].energy_mj);
  /* Room for one: one written. */
  assert_int_equal(ifd_nvml_sample(n, s, 1), 1);
  ifd_nvml_close(n);
  assert_int_equal(ifd_nvml_sample(NULL, s, 4), 0);
  ifd_nvml_close(NULL);
}

static void test_nvml_absent(void **state) {
  char path[PATH_MAX + 32];
  ifd_nvml_t *n = (ifd_nvml_t *)1;
  (void)state;
  fake_nvml_path(path, sizeof(path));
  assert_int_equal(ifd_nvml_open("/nonexistent/libnvidia-ml.so.1", &n),
                   IFD_EUNSUPPORTED);
  assert_null(n);
  setenv("FAKE_NVML_COUNT", "0", 1);
  assert_int_equal(ifd_nvml_open(path, &n), IFD_EUNSUPPORTED);
  unsetenv("FAKE_NVML_COUNT");
  setenv("FAKE_NVML_FAIL_INIT", "1", 1);
  assert_int_equal(ifd_nvml_open(path, &n), IFD_EUNSUPPORTED);
  unsetenv("FAKE_NVML_FAIL_INIT");
  /* $INFERD_NVML_LIBRARY picks the library when no path is given. */
  setenv("INFERD_NVML_LIBRARY", path, 1);
  assert_int_equal(ifd_nvml_open(NULL, &n), 0);
  ifd_nvml_close(n);
  unsetenv("INFERD_NVML_LIBRARY");
}

/* ---- statistics' memory usage ---------------------------------------- */

static void test_memory_usage_rows(void **state) {
  ifd_model_stats_t st;
  ifd_mem_usage_t rows[IFD_STATS_MEM_SLOTS];
  (void)state;
  memset(&st, 0, sizeof(st));
  assert_int_equal(ifd_stats_memory_usage(&st, rows, IFD_STATS_MEM_SLOTS), 0);
  ifd_stats_memory_add(&st, IFD_MEM_GPU, 3, 500);
  ifd_stats_memory_add(&st, IFD_MEM_CPU, 0, 100);
  ifd_stats_memory_add(&st, IFD_MEM_CPU, 0, 28);
  ifd_stats_memory_add(&st, IFD_MEM_CPU_PINNED, 0, 7);
  ifd_stats_memory_add(&st, IFD_MEM_GPU, IFD_STATS_MEM_GPUS, 1); /* dropped */
  ifd_stats_memory_add(&st, 9, 0, 1);                            /* dropped */
  assert_int_equal(ifd_stats_memory_usage(&st, rows, IFD_STATS_MEM_SLOTS), 3);
  assert_string_equal(rows[0].type, "CPU");
  assert_int_equal(rows[0].byte_size, 128);
  assert_string_equal(rows[1].type, "CPU_PINNED");
  assert_int_equal(rows[1].byte_size, 7);
  assert_string_equal(rows[2].type, "GPU");
  assert_int_equal(rows[2].id, 3);
  assert_int_equal(rows[2].byte_size, 500);
  /* Counted past max, written up to it. */
  assert_int_equal(ifd_stats_memory_usage(&st, rows, 1), 3);
}

/* ---- on a GPU -------------------------------------------------------- */

static void test_gpu_pools_and_copies(void **state) {
  ifd_cuda_mem_opts_t o;
  ifd_cuda_pool_info_t pools[IFD_CUDA_MAX_DEVICES + 1];
  ifd_errmsg_t err;
  int32_t type;
  int64_t id;
  void *small = NULL, *big = NULL, *pinned = NULL;
  int32_t host[1024], back[1024];
  size_t n, i;
  (void)state;
  NEEDS_GPU();
  ifd_cuda_mem_opts_default(&o);
  o.pinned_bytes = 1 << 20;
  o.cuda_bytes[0] = 1 << 20;
  ifd_cuda_mem_init(&o, ifd_gpu_count());
  n = ifd_cuda_pools(pools, IFD_CUDA_MAX_DEVICES + 1);
  assert_true(n >= 2);
  assert_int_equal(pools[0].mem_type, IFD_CUDA_MEM_CPU_PINNED);
  assert_int_equal(pools[1].mem_type, IFD_CUDA_MEM_GPU);
  assert_int_equal(pools[1].byte_size, 1 << 20);

  type = IFD_CUDA_MEM_GPU;
  id = 0;
  assert_int_equal(ifd_cuda_alloc(&type, &id, sizeof(host), &small, &err), 0);
  assert_true(ifd_cuda_free_is_cheap(small, type, id)); /* from the pool */
  ifd_cuda_pools(pools, 2);
  assert_int_equal(pools[1].used, sizeof(host));
  /* Past the pool: cudaMalloc. */
  assert_int_equal(ifd_cuda_alloc(&type, &id, 2 << 20, &big, &err), 0);
  assert_false(ifd_cuda_free_is_cheap(big, type, id));
  type = IFD_CUDA_MEM_CPU_PINNED;
  assert_int_equal(ifd_cuda_alloc(&type, &id, 4096, &pinned, &err), 0);
  assert_int_equal(type, IFD_CUDA_MEM_CPU_PINNED);

  for (i = 0; i < 1024; i++) host[i] = (int32_t)i * 3;
  /* On the default stream, then on a bound thread's own. */
  assert_int_equal(ifd_cuda_copy(small, IFD_CUDA_MEM_GPU, 0, host,
                                 IFD_CUDA_MEM_CPU, 0, sizeof(host), &err),
                   0);
  assert_int_equal(ifd_gpu_thread_bind(0, &err), 0);
  assert_non_null(ifd_gpu_thread_stream());
  assert_int_equal(ifd_gpu_thread_device(), 0);
  assert_int_equal(ifd_cuda_copy(big, IFD_CUDA_MEM_GPU, 0, small,
                                 IFD_CUDA_MEM_GPU, 0, sizeof(host), &err),
                   0);
  assert_int_equal(ifd_cuda_copy(back, IFD_CUDA_MEM_CPU, 0, big,
                                 IFD_CUDA_MEM_GPU, 0, sizeof(back), &err),
                   0);
  assert_memory_equal(host, back, sizeof(host));
  ifd_gpu_thread_unbind();
  assert_null(ifd_gpu_thread_stream());
  assert_int_equal(ifd_gpu_thread_bind(ifd_gpu_count(), &err), IFD_EINVAL);

  ifd_cuda_free(small, IFD_CUDA_MEM_GPU, 0);
  ifd_cuda_free(big, IFD_CUDA_MEM_GPU, 0);
  ifd_cuda_free(pinned, IFD_CUDA_MEM_CPU_PINNED, 0);
  ifd_cuda_pools(pools, 2);
  assert_int_equal(pools[0].used, 0);
  assert_int_equal(pools[1].used, 0);
  ifd_cuda_mem_fini();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_pool_alloc_aligned_and_counted,
                                      pool_setup, pool_teardown),
      cmocka_unit_test_setup_teardown(test_pool_exhaustion_and_bad_frees,
                                      pool_setup, pool_teardown),
      cmocka_unit_test_setup_teardown(test_pool_coalesces_neighbours,
                                      pool_setup, pool_teardown),
      cmocka_unit_test_setup_teardown(test_pool_churn, pool_setup,
                                      pool_teardown),
      cmocka_unit_test(test_parse_pool_flag),
      cmocka_unit_test(test_no_gpu_answers),
      cmocka_unit_test(test_no_gpu_backend_buffers),
      cmocka_unit_test(test_nvml_fake),
      cmocka_unit_test(test_nvml_absent),
      cmocka_unit_test(test_memory_usage_rows),
      cmocka_unit_test(test_gpu_pools_and_copies),
  };
  /* make test-gpu sets IFD_TEST_GPU: say up front why the GPU cases will
   * skip there. */
  if (getenv("IFD_TEST_GPU") != NULL && ifd_gpu_count() == 0)
    fprintf(stderr,
            "test_cuda: no GPU is usable (%s build): the GPU cases skip\n",
            ifd_gpu_build());
  return cmocka_run_group_tests(tests, NULL, NULL);
}
