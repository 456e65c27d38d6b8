/*
 * test/unit/lib/fake_nvml.c - a stand-in for libnvidia-ml.so.1, built as
 * build/test/libfake_nvml.so, so that the GPU gauges (cuda/nvml.c,
 * core/metrics.c) are tested on machines without a GPU: point
 * $INFERD_NVML_LIBRARY (or ifd_nvml_open's path) at it.
 *
 * It shows two GPUs with fixed readings (the tests check these numbers);
 * the second has no power reading, as some boards do not report one. The
 * energy counter grows by one joule per reading. $FAKE_NVML_FAIL_INIT makes
 * nvmlInit fail, $FAKE_NVML_COUNT sets how many GPUs it sees (0 allowed).
 */
#include <stdlib.h>
#include <string.h>

typedef struct fake_dev {
  int index;
} fake_dev_t;

typedef struct nvml_memory {
  unsigned long long total, free, used;
} nvml_memory_t;

typedef struct nvml_utilization {
  unsigned int gpu, memory;
} nvml_utilization_t;

static fake_dev_t devs[2] = {{0}, {1}};
static unsigned long long energy_mj = 5000;

/* NVML's codes: 0 success, 1 uninitialized, 2 invalid argument, 3 not
 * supported. */
int nvmlInit_v2(void) {
  return getenv("FAKE_NVML_FAIL_INIT") != NULL ? 1 : 0;
}

int nvmlShutdown(void) {
  return 0;
}

int nvmlDeviceGetCount_v2(unsigned int *n) {
  const char *c = getenv("FAKE_NVML_COUNT");
  *n = c != NULL ? (unsigned int)atoi(c) : 2;
  if (*n > 2) *n = 2;
  return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev) {
  if (i >= 2) return 2;
  *dev = &devs[i];
  return 0;
}

int nvmlDeviceGetUUID(void *dev, char *buf, unsigned int len) {
  const char *u = ((fake_dev_t *)dev)->index == 0 ? "GPU-fake-0" : "GPU-fake-1";
  if (len < strlen(u) + 1) return 2;
  strcpy(buf, u);
  return 0;
}

int nvmlDeviceGetUtilizationRates(void *dev, nvml_utilization_t *u) {
  u->gpu = ((fake_dev_t *)dev)->index == 0 ? 37 : 0;
  u->memory = 5;
  return 0;
}

int nvmlDeviceGetMemoryInfo(void *dev, nvml_memory_t *m) {
  (void)dev;
  m->total = 17179869184ull;
  m->used = 1073741824ull;
  m->free = m->total - m->used;
  return 0;
}

int nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw) {
  if (((fake_dev_t *)dev)->index != 0) return 3;
  *mw = 42500;
  return 0;
}

int nvmlDeviceGetPowerManagementLimit(void *dev, unsigned int *mw) {
  (void)dev;
  *mw = 300000;
  return 0;
}

int nvmlDeviceGetTotalEnergyConsumption(void *dev, unsigned long long *mj) {
  (void)dev;
  energy_mj += 1000;
  *mj = energy_mj;
  return 0;
}
