/*
 * cuda/gpu.h - what the GPU side of inferd can do on this build and machine:
 * discovery, binding a worker thread to its device and stream, and the GPU
 * gauges read through NVML.
 *
 * CUDA is optional. A CPU-only build (no CUDA toolkit at build time) compiles
 * this module without CUDA and reports no GPU; a CUDA build asks the runtime.
 * NVML needs no toolkit at build time: it is opened with dlopen when metrics
 * start, in either flavour, and is simply absent when the machine has no
 * libnvidia-ml or no GPU.
 */
#ifndef IFD_CUDA_GPU_H
#define IFD_CUDA_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/** Number of CUDA devices usable now; 0 on a CPU-only build or machine.
 *  Asks the runtime once and remembers the answer. */
int ifd_gpu_count(void);

/** Human-readable build flavour: "cuda" or "cpu-only". */
const char *ifd_gpu_build(void);

/**
 * Binds the calling thread to `device`: makes it the thread's current
 * device and creates the thread's own CUDA stream (non-blocking with
 * respect to the default stream), which ifd_cuda_copy then uses. For the
 * instance thread of a GPU instance, before TRITONBACKEND_
 * ModelInstanceInitialize. Returns 0, or IFD_EUNSUPPORTED ("GPUs not
 * supported") without a GPU, IFD_EINVAL for a device that does not exist,
 * IFD_EINTERNAL when the runtime refuses.
 */
int ifd_gpu_thread_bind(int device, ifd_errmsg_t *err);

/** Destroys the calling thread's stream (after waiting for it) and forgets
 *  the binding. A thread that is not bound is left alone. */
void ifd_gpu_thread_unbind(void);

/** The calling thread's stream (a cudaStream_t), or NULL when unbound. */
void *ifd_gpu_thread_stream(void);

/** The calling thread's bound device, or -1. */
int ifd_gpu_thread_device(void);

/**
 * The GPUs below `min_cc` (--min-supported-compute-capability; 0 means
 * tritonserver's default, 6.0), as bit d for GPU d (GPUs from 64 on are
 * never marked): tritonserver ignores them, and so do model configs
 * (core/config.h ifd_config_gpu_ok). Logs one info line per GPU ignored.
 * Start-up only (asks the runtime). 0 on a CPU-only build.
 */
uint64_t ifd_gpu_unsupported(double min_cc);

/** The calling thread's device's memory: bytes free and in total
 *  (cudaMemGetInfo). Returns 0, or IFD_EUNSUPPORTED (no GPU, or the thread
 *  is not bound) / IFD_EINTERNAL with `err` filled. */
int ifd_gpu_mem_info(uint64_t *free_bytes, uint64_t *total_bytes,
                     ifd_errmsg_t *err);

/* ---- NVML (cuda/nvml.c) ---------------------------------------------------
 */

/** One GPU's gauges at one sampling. A value NVML could not read is left 0
 *  and its `has_*` flag 0 (the family is then left out for that GPU). */
typedef struct ifd_gpu_sample {
  char uuid[96];        /* "GPU-..." (Triton's gpu_uuid label) */
  double utilization;   /* 0..1 */
  uint64_t mem_total;   /* bytes */
  uint64_t mem_used;    /* bytes */
  double power_w;       /* watts */
  double power_limit_w; /* watts */
  uint64_t energy_mj;   /* millijoules since the driver loaded */
  int has_util, has_mem, has_power, has_limit, has_energy;
} ifd_gpu_sample_t;

typedef struct ifd_nvml ifd_nvml_t;

/**
 * Opens NVML: dlopen of `path` (NULL: $INFERD_NVML_LIBRARY when set, else
 * "libnvidia-ml.so.1"), nvmlInit, and a device count. Blocking: the thread
 * pool, or start-up. Returns 0 and *out, or IFD_EUNSUPPORTED when the
 * library is absent, does not initialize, or sees no GPU (no error to log:
 * the GPU families are then simply absent), IFD_ENOMEM.
 */
int ifd_nvml_open(const char *path, ifd_nvml_t **out);

/** GPUs NVML sees (> 0 for an opened handle). */
int ifd_nvml_count(const ifd_nvml_t *n);

/**
 * Reads up to `max` GPUs' gauges into `out`; returns how many it wrote.
 * Blocking (the driver may take milliseconds): the thread pool only.
 */
size_t ifd_nvml_sample(ifd_nvml_t *n, ifd_gpu_sample_t *out, size_t max);

/** nvmlShutdown and dlclose. NULL is fine. */
void ifd_nvml_close(ifd_nvml_t *n);

#endif
