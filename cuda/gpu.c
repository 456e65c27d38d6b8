/*
 * cuda/gpu.c - GPU discovery; without CUDA at build time, there is none.
 */
#include "cuda/gpu.h"

#ifdef IFD_HAVE_CUDA
#include <cuda_runtime_api.h>

int ifd_gpu_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

const char *ifd_gpu_build(void) {
  return "cuda";
}
#else
int ifd_gpu_count(void) {
  return 0;
}

const char *ifd_gpu_build(void) {
  return "cpu-only";
}
#endif
