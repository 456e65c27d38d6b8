/*
 * cuda/nvml.c - GPU gauges through NVML, opened with dlopen.
 *
 * No NVML header is needed at build time: the few entry points used are
 * declared here with the types NVML documents (a device handle is an opaque
 * pointer, every call returns 0 on success), and resolved with dlsym. The
 * same code serves the CUDA and the CPU-only build, and a test can stand a
 * fake library in for the driver's ($INFERD_NVML_LIBRARY).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gpu.h"

#define NVML_DEFAULT_LIB "libnvidia-ml.so.1"

typedef void *nvml_device_t;
typedef struct nvml_memory {
  unsigned long long total, free, used;
} nvml_memory_t;
typedef struct nvml_utilization {
  unsigned int gpu, memory; /* percent */
} nvml_utilization_t;

struct ifd_nvml {
  void *dl; /* owned: dlopen handle */
  int count;
  int (*shutdown)(void);
  int (*handle_by_index)(unsigned int, nvml_device_t *);
  int (*uuid)(nvml_device_t, char *, unsigned int);
  int (*utilization)(nvml_device_t, nvml_utilization_t *);
  int (*memory)(nvml_device_t, nvml_memory_t *);
  int (*power)(nvml_device_t, unsigned int *);        /* milliwatts */
  int (*power_limit)(nvml_device_t, unsigned int *);  /* milliwatts */
  int (*energy)(nvml_device_t, unsigned long long *); /* millijoules */
};

/* dlsym of the versioned name when the library has it, else the plain one. */
static void *sym2(void *dl, const char *v2, const char *plain) {
  void *p = v2 != NULL ? dlsym(dl, v2) : NULL;
  return p != NULL ? p : dlsym(dl, plain);
}

int ifd_nvml_open(const char *path, ifd_nvml_t **out) {
  int (*init)(void);
  int (*count)(unsigned int *);
  unsigned int n = 0;
  ifd_nvml_t *h;
  void *dl;

  *out = NULL;
  if (path == NULL) path = getenv("INFERD_NVML_LIBRARY");
  if (path == NULL || path[0] == '\0') path = NVML_DEFAULT_LIB;
  dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) return IFD_EUNSUPPORTED;
  init = (int (*)(void))sym2(dl, "nvmlInit_v2", "nvmlInit");
  count = (int (*)(unsigned int *))sym2(dl, "nvmlDeviceGetCount_v2",
                                        "nvmlDeviceGetCount");
  h = calloc(1, sizeof(*h));
  if (h == NULL) {
    dlclose(dl);
    return IFD_ENOMEM;
  }
  h->dl = dl;
  h->shutdown = (int (*)(void))dlsym(dl, "nvmlShutdown");
  h->handle_by_index = (int (*)(unsigned int, nvml_device_t *))sym2(
      dl, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  h->uuid = (int (*)(nvml_device_t, char *, unsigned int))dlsym(
      dl, "nvmlDeviceGetUUID");
  h->utilization = (int (*)(nvml_device_t, nvml_utilization_t *))dlsym(
      dl, "nvmlDeviceGetUtilizationRates");
  h->memory = (int (*)(nvml_device_t, nvml_memory_t *))dlsym(
      dl, "nvmlDeviceGetMemoryInfo");
  h->power = (int (*)(nvml_device_t, unsigned int *))dlsym(
      dl, "nvmlDeviceGetPowerUsage");
  h->power_limit = (int (*)(nvml_device_t, unsigned int *))dlsym(
      dl, "nvmlDeviceGetPowerManagementLimit");
  h->energy = (int (*)(nvml_device_t, unsigned long long *))dlsym(
      dl, "nvmlDeviceGetTotalEnergyConsumption");
  if (init == NULL || count == NULL || h->handle_by_index == NULL ||
      init() != 0) {
    /* No shutdown: NVML was not initialized. */
    h->shutdown = NULL;
    ifd_nvml_close(h);
    return IFD_EUNSUPPORTED;
  }
  if (count(&n) != 0 || n == 0) {
    ifd_nvml_close(h);
    return IFD_EUNSUPPORTED;
  }
  h->count = (int)n;
  *out = h;
  return 0;
}

int ifd_nvml_count(const ifd_nvml_t *n) {
  return n != NULL ? n->count : 0;
}

size_t ifd_nvml_sample(ifd_nvml_t *n, ifd_gpu_sample_t *out, size_t max) {
  size_t k = 0;
  int i;
  if (n == NULL) return 0;
  for (i = 0; i < n->count && k < max; i++) {
    ifd_gpu_sample_t *s = &out[k];
    nvml_device_t dev = NULL;
    nvml_utilization_t u;
    nvml_memory_t m;
    unsigned int mw;
    unsigned long long mj;
    memset(s, 0, sizeof(*s));
    if (n->handle_by_index((unsigned int)i, &dev) != 0) continue;
    if (n->uuid == NULL || n->uuid(dev, s->uuid, sizeof(s->uuid)) != 0)
      snprintf(s->uuid, sizeof(s->uuid), "GPU-%d", i);
    s->uuid[sizeof(s->uuid) - 1] = '\0';
    if (n->utilization != NULL && n->utilization(dev, &u) == 0) {
      s->utilization = u.gpu / 100.0;
      s->has_util = 1;
    }
    if (n->memory != NULL && n->memory(dev, &m) == 0) {
      s->mem_total = m.total;
      s->mem_used = m.used;
      s->has_mem = 1;
    }
    if (n->power != NULL && n->power(dev, &mw) == 0) {
      s->power_w = mw / 1000.0;
      s->has_power = 1;
    }
    if (n->power_limit != NULL && n->power_limit(dev, &mw) == 0) {
      s->power_limit_w = mw / 1000.0;
      s->has_limit = 1;
    }
    if (n->energy != NULL && n->energy(dev, &mj) == 0) {
      s->energy_mj = mj;
      s->has_energy = 1;
    }
    k++;
  }
  return k;
}

void ifd_nvml_close(ifd_nvml_t *n) {
  if (n == NULL) return;
  if (n->shutdown != NULL) n->shutdown();
  dlclose(n->dl);
  free(n);
}
