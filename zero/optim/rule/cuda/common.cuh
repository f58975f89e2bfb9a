/*
 * What the device kernels share: the host's own fp16 and bf16 conversions
 * (core/half.h, built for the device too), element access by dtype, the
 * launch geometry, and the argument and error checks of the C entry points.
 *
 * Every fp32 operation is spelled as its round-to-nearest intrinsic
 * (__fmul_rn, __fadd_rn, ...): nvcc never contracts those into an FMA, so
 * the host's operation order holds even without -fmad=false, and the FMAs
 * the host rule has (explicit fmaf) are spelled __fmaf_rn.
 */
#ifndef ZSH_OPTIM_CUDA_COMMON_CUH_
#define ZSH_OPTIM_CUDA_COMMON_CUH_

#include "optim/rule/cuda/kernels.h"

extern "C" {
#include "core/status.h"
}

#include "core/half.h"

#include <cuda_runtime.h>
#include <stdint.h>

/* Element types: how an element of each dtype reads as, and is written
 * from, fp32. */
struct zsh_d_f32 {
    typedef float elem_t;
    static __device__ __forceinline__ float load(const float *x, size_t i) { return x[i]; }
    static __device__ __forceinline__ void store(float *x, size_t i, float f) { x[i] = f; }
};

struct zsh_d_bf16 {
    typedef uint16_t elem_t;
    static __device__ __forceinline__ float load(const uint16_t *x, size_t i)
    {
        return zsh_bf16_to_float(x[i]);
    }
    static __device__ __forceinline__ void store(uint16_t *x, size_t i, float f)
    {
        x[i] = zsh_float_to_bf16(f);
    }
};

struct zsh_d_fp16 {
    typedef uint16_t elem_t;
    static __device__ __forceinline__ float load(const uint16_t *x, size_t i)
    {
        return zsh_fp16_to_float(x[i]);
    }
    static __device__ __forceinline__ void store(uint16_t *x, size_t i, float f)
    {
        x[i] = zsh_float_to_fp16(f);
    }
};

/* No model copy. */
struct zsh_d_none {
    typedef uint16_t elem_t;
    static __device__ __forceinline__ void store(uint16_t *, size_t, float) {}
};

#define ZSH_CUDA_THREADS 256

/* Blocks for a grid-stride loop over @n elements (n > 0). */
static inline unsigned zsh_cuda_blocks(size_t n)
{
    size_t b = (n + ZSH_CUDA_THREADS - 1) / ZSH_CUDA_THREADS;

    return (unsigned)((b < 65536u * 16u) ? b : 65536u * 16u);
}

/* Whether @d is one of the dtypes the kernels take. */
static inline bool zsh_cuda_dtype_ok(zsh_dtype_t d)
{
    return (d == ZSH_FLOAT32) || (d == ZSH_BFLOAT16) || (d == ZSH_FLOAT16);
}

/* The status for CUDA error @err in @what (err != cudaSuccess), with CUDA's
 * text. */
zsh_status_t zsh_cuda_error(cudaError_t err, const char *what);

/* The status of the launch just made by @what (cudaGetLastError()). */
zsh_status_t zsh_cuda_launched(const char *what);

/* ZSH_OK if @ptr (@name of @what) is memory the device can reach;
 * ZSH_ERR_INVALID_ARG for pageable host memory. */
zsh_status_t zsh_cuda_check_ptr(const void *ptr, const char *what, const char *name);

/* The checks of every rule's entry point @what, before anything is
 * enqueued: @a, the dtypes, the pointers (non-NULL where the rule reads
 * them: m if @need_m, v if @need_v) and that they are device memory.
 * ZSH_OK for n == 0 without looking at the pointers. */
zsh_status_t zsh_cuda_step_check(const zsh_cuda_step_args_t *a, const char *what, bool need_m,
                                 bool need_v);

#endif
