/*
 * cuda_host_shim.h -- run CUDA kernel source on the CPU as plain C++ (lbgen test shim).
 *
 * Included before the generated .cu text, which is then compiled by g++ -x c++.  The
 * CUDA qualifiers become nothing and the built-in index variables become ordinary
 * globals that the generated launchers set, block by block and thread by thread, before
 * calling a kernel as a function.  Enough for kernels that use only blockIdx, threadIdx,
 * blockDim and gridDim (no shared memory, no __syncthreads, no warp intrinsics).
 */
#ifndef LBGEN_CUDA_HOST_SHIM_H
#define LBGEN_CUDA_HOST_SHIM_H

#ifdef __CUDACC__
#error "cuda_host_shim.h is for host compilers only"
#endif

#include <stddef.h>
#include <math.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict

struct dim3 {
    unsigned int x, y, z;
};

/* the "built-ins": set by the launchers (one host thread runs a whole grid) */
static dim3 blockIdx = {0, 0, 0};
static dim3 threadIdx = {0, 0, 0};
static dim3 blockDim = {1, 1, 1};
static dim3 gridDim = {1, 1, 1};

/* Run a kernel over a 1-D grid of `blocks` blocks of `threads` threads, in the order a
   sequential GPU would: block by block, thread by thread. */
#define LBGEN_SHIM_LAUNCH(blocks, threads, call) do { \
    gridDim.x = (blocks); gridDim.y = gridDim.z = 1; \
    blockDim.x = (threads); blockDim.y = blockDim.z = 1; \
    blockIdx.y = blockIdx.z = threadIdx.y = threadIdx.z = 0; \
    for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x) \
        for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x) \
            call; \
} while (0)

#endif
