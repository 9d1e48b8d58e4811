/*
 * cuda_host_shim.h -- run CUDA kernel source on the CPU as plain C++ (lbgen test shim).
 *
 * Included before the generated .cu text, which is then compiled by g++ -x c++.  The
 * CUDA qualifiers become nothing and the built-in index variables become ordinary
 * globals that the generated launchers set, block by block and thread by thread, before
 * calling a kernel as a function.  Enough for kernels that use only blockIdx, threadIdx,
 * blockDim and gridDim (no shared memory, no __syncthreads, no warp intrinsics).
 * It also provides the part of the CUDA runtime API that the emitted host code uses
 * (cudaMalloc & co. on host memory, events, and cudaLaunchKernel, which runs the grid at
 * once), so that the emitted launch wrappers and example.cu run on the CPU too (a
 * cuda_runtime.h that includes this file stands in for the toolkit's).
 */
#ifndef LBGEN_CUDA_HOST_SHIM_H
#define LBGEN_CUDA_HOST_SHIM_H

#ifdef __CUDACC__
#error "cuda_host_shim.h is for host compilers only"
#endif

#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <chrono>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict

struct dim3 {
    unsigned int x, y, z;
    dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
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

/* ---- the host runtime API the emitted host code uses (device memory is host memory) ---- */

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2 };
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
                      cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 };
typedef struct lbgen_shim_stream *cudaStream_t;
typedef std::chrono::steady_clock::time_point *cudaEvent_t;

static inline const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : e == cudaErrorInvalidValue ? "invalid argument" : "out of memory";
}
static inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
static inline cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
static inline cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = bytes ? aligned_alloc(64, (bytes + 63) / 64 * 64) : NULL;
    return *p || !bytes ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
static inline cudaError_t cudaMemset(void *p, int value, size_t bytes) { memset(p, value, bytes); return cudaSuccess; }
static inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind)
{
    memmove(dst, src, bytes);
    return cudaSuccess;
}
static inline cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = new std::chrono::steady_clock::time_point(); return cudaSuccess; }
static inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
static inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = 0) { *e = std::chrono::steady_clock::now(); return cudaSuccess; }
static inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
static inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    *ms = std::chrono::duration<float, std::milli>(*b - *a).count();
    return cudaSuccess;
}

/* cudaLaunchKernel(kernel, grid, block, args, shared, stream): args[i] points to the i-th
   argument, as for the CUDA runtime; the grid runs at once, in order (1-D grids). */
template <typename... A, size_t... I>
static inline void lbgen_shim_call(void (*kernel)(A...), void **args, std::index_sequence<I...>)
{
    kernel(*static_cast<typename std::remove_reference<A>::type *>(args[I])...);
}

template <typename... A>
static inline cudaError_t cudaLaunchKernel(void (*kernel)(A...), dim3 grid, dim3 block, void **args,
                                           size_t = 0, cudaStream_t = 0)
{
    if (grid.y != 1 || grid.z != 1 || block.y != 1 || block.z != 1) return cudaErrorInvalidValue;
    LBGEN_SHIM_LAUNCH(grid.x, block.x, lbgen_shim_call(kernel, args, std::index_sequence_for<A...>()));
    return cudaSuccess;
}

#endif
