/*
 * cuda/gpu.h - what the GPU side of inferd can do on this build and machine.
 *
 * CUDA is optional. A CPU-only build (no CUDA toolkit at build time) compiles
 * this module without CUDA and reports no GPU; a CUDA build asks the runtime.
 */
#ifndef IFD_CUDA_GPU_H
#define IFD_CUDA_GPU_H

/** Number of CUDA devices usable now; 0 on a CPU-only build or machine. */
int ifd_gpu_count(void);

/** Human-readable build flavour: "cuda" or "cpu-only". */
const char *ifd_gpu_build(void);

#endif
