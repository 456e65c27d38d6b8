/*
 * test/models/backends/cuda_add/kernel.cu - the cuda_add backend's kernel:
 * out[i] = in[i] + 1 on the device, launched on the caller's stream.
 * Compiled by nvcc (only when the CUDA toolkit is present); the backend
 * itself is C (cuda_add.c).
 */
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

__global__ static void add_one(const int32_t *in, int32_t *out, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + 1;
}

extern "C" int cuda_add_one(const int32_t *in, int32_t *out, size_t n,
                            cudaStream_t stream) {
  unsigned threads = 256;
  unsigned blocks = (unsigned)((n + threads - 1) / threads);
  if (n == 0) return 0;
  add_one<<<blocks, threads, 0, stream>>>(in, out, n);
  return (int)cudaGetLastError();
}
