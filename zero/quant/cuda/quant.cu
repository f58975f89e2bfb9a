/*
 * The quantization kernels on the device (quant_cuda.h): the host's
 * arithmetic (quant/kernels.c) spelled with round-to-nearest intrinsics, so
 * the levels, scales and values are the host's bits.
 *
 * Quantizing: a thread block per quantization block (a grid-stride loop
 * over blocks), the largest magnitude an integer maximum over the bits with
 * the sign cleared, as on the host, then the levels. Dequantizing: a
 * grid-stride loop over elements. A block of very few elements leaves most
 * of a thread block idle; the block sizes ZeRO++ uses (2k-4k) fill it.
 *
 * bf16 and fp16 runs are widened element by element as they are read and
 * narrowed as they are written (core/half.h, the host's functions), so a
 * half run quantizes to its fp32 conversion's bits as on the host
 * (quant/half.h), with no scratch buffer.
 */
#include "quant/cuda/quant_cuda.h"

extern "C" {
#include "core/status.h"
#include "quant/quant.h"
}
#include "core/half.h"

#include <cuda_runtime.h>
#include <stdint.h>

#define ZSH_QC_THREADS 256
#define ZSH_QC_GRID_MAX (65536u * 16u)
#define ZSH_QC_ROUNDER 0x1.8p23f

static zsh_status_t zsh_qc_error(cudaError_t err, const char *what)
{
    return zsh_error(ZSH_ERR_TRANSPORT, "%s: CUDA error %d (%s): %s", what, (int)err,
                     cudaGetErrorName(err), cudaGetErrorString(err));
}

static zsh_status_t zsh_qc_ptr(const void *ptr, const char *what, const char *name)
{
    cudaPointerAttributes attr;
    cudaError_t err = cudaPointerGetAttributes(&attr, ptr);

    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return zsh_qc_error(err, what);
    }
    if ((attr.type == cudaMemoryTypeUnregistered) ||
        ((attr.type == cudaMemoryTypeHost) && (attr.devicePointer == NULL))) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s=%p is host memory the device cannot "
                         "reach (not cudaMalloc'd, pinned or managed)", what, name, ptr);
    }
    return ZSH_OK;
}

static unsigned zsh_qc_grid(size_t units)
{
    return (unsigned)((units < ZSH_QC_GRID_MAX) ? units : ZSH_QC_GRID_MAX);
}

static __device__ __forceinline__ float zsh_qc_level(float x, float inv)
{
    return __fsub_rn(__fadd_rn(__fmul_rn(x, inv), ZSH_QC_ROUNDER), ZSH_QC_ROUNDER);
}

/* An element of a run of @dt: read as fp32 (exact), written rounded once. */
template <int DT> struct zsh_qc_elem;
template <> struct zsh_qc_elem<ZSH_FLOAT32> {
    typedef float T;
    static __device__ __forceinline__ float load(const T *x, size_t i) { return x[i]; }
    static __device__ __forceinline__ void store(T *x, size_t i, float v) { x[i] = v; }
};
template <> struct zsh_qc_elem<ZSH_BFLOAT16> {
    typedef uint16_t T;
    static __device__ __forceinline__ float load(const T *x, size_t i)
    {
        return zsh_bf16_to_float(x[i]);
    }
    static __device__ __forceinline__ void store(T *x, size_t i, float v)
    {
        x[i] = zsh_float_to_bf16(v);
    }
};
template <> struct zsh_qc_elem<ZSH_FLOAT16> {
    typedef uint16_t T;
    static __device__ __forceinline__ float load(const T *x, size_t i)
    {
        return zsh_fp16_to_float(x[i]);
    }
    static __device__ __forceinline__ void store(T *x, size_t i, float v)
    {
        x[i] = zsh_float_to_fp16(v);
    }
};

template <int DT>
__global__ void zsh_qc_quantize(const typename zsh_qc_elem<DT>::T *__restrict__ x, size_t n,
                                size_t block, int bits,
                                uint8_t *__restrict__ q, float *__restrict__ scales,
                                unsigned int *nonfinite, size_t nblocks)
{
    __shared__ unsigned int sh_m;
    size_t k, i;

    for (k = blockIdx.x; k < nblocks; k += gridDim.x) {
        size_t off = k * block, len = (n - off < block) ? n - off : block;
        size_t qlen = (bits == 4) ? (len + 1) / 2 : len;
        uint8_t *qb = q + ((bits == 4) ? k * ((block + 1) / 2) : off);
        float levels = (bits == 4) ? 7.0f : 127.0f, m, inv;
        unsigned int mb = 0;

        if (threadIdx.x == 0) {
            sh_m = 0;
        }
        __syncthreads();
        for (i = threadIdx.x; i < len; i += blockDim.x) {
            mb = max(mb, __float_as_uint(zsh_qc_elem<DT>::load(x, off + i)) & 0x7fffffffu);
        }
        atomicMax(&sh_m, mb);
        __syncthreads();
        mb = sh_m;
        m  = __uint_as_float(mb);
        if ((mb >= 0x7f800000u) || (m < ZSH_QUANT_TINY)) {
            for (i = threadIdx.x; i < qlen; i += blockDim.x) {
                qb[i] = 0;
            }
            if (threadIdx.x == 0) {
                scales[k] = (mb >= 0x7f800000u) ? __int_as_float(0x7fc00000) : 0.0f;
                if ((mb >= 0x7f800000u) && (nonfinite != NULL)) {
                    atomicAdd(nonfinite, 1u);
                }
            }
        } else {
            inv = __fdiv_rn(levels, m);
            if (threadIdx.x == 0) {
                scales[k] = __fdiv_rn(m, levels);
            }
            for (i = threadIdx.x; i < qlen; i += blockDim.x) {
                if (bits == 4) {
                    int lo = (int)zsh_qc_level(zsh_qc_elem<DT>::load(x, off + 2 * i), inv);
                    int hi = (2 * i + 1 < len)
                                 ? (int)zsh_qc_level(zsh_qc_elem<DT>::load(x, off + 2 * i + 1), inv)
                                 : 0;
                    qb[i] = (uint8_t)(((uint32_t)lo & 0xfu) | (((uint32_t)hi & 0xfu) << 4));
                } else {
                    qb[i] = (uint8_t)(int8_t)(int)zsh_qc_level(zsh_qc_elem<DT>::load(x, off + i),
                                                               inv);
                }
            }
        }
        __syncthreads(); /* sh_m is reset for the next block */
    }
}

/* @add only for fp32: a half run takes each value rounded once. */
template <int DT>
__global__ void zsh_qc_dequantize(const uint8_t *__restrict__ q, const float *__restrict__ scales,
                                  size_t n, size_t block, int bits,
                                  typename zsh_qc_elem<DT>::T *out, int add)
{
    size_t i;

    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t k = i / block, j = i - k * block;
        float level, v;

        if (bits == 4) {
            uint8_t b = q[k * ((block + 1) / 2) + j / 2];
            level = (float)(((j & 1) == 0) ? ((int8_t)(uint8_t)(b << 4) >> 4) : ((int8_t)b >> 4));
        } else {
            level = (float)(int8_t)q[i];
        }
        v = __fmul_rn(level, scales[k]);
        zsh_qc_elem<DT>::store(out, i, add ? __fadd_rn(zsh_qc_elem<DT>::load(out, i), v) : v);
    }
}

static zsh_status_t zsh_qc_check(const char *what, size_t block, int bits, const void *a,
                                 const char *an, const void *b, const char *bn, const void *c,
                                 const char *cn)
{
    zsh_status_t status = zsh_quant_check(block, bits);

    if (status != ZSH_OK) {
        zsh_error_prefix("%s: ", what);
        return status;
    }
    if ((a == NULL) || (b == NULL) || (c == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL", what,
                         (a == NULL) ? an : (b == NULL) ? bn : cn);
    }
    if (((status = zsh_qc_ptr(a, what, an)) == ZSH_OK) &&
        ((status = zsh_qc_ptr(b, what, bn)) == ZSH_OK)) {
        status = zsh_qc_ptr(c, what, cn);
    }
    return status;
}

static zsh_status_t zsh_qc_dtype(const char *what, zsh_dtype_t dtype)
{
    if ((dtype == ZSH_FLOAT32) || (dtype == ZSH_BFLOAT16) || (dtype == ZSH_FLOAT16)) {
        return ZSH_OK;
    }
    return zsh_error(ZSH_ERR_INVALID_ARG, "%s: quantizes fp32, bf16 or fp16, not dtype %d",
                     what, (int)dtype);
}

extern "C" zsh_status_t zsh_cuda_quantize_as(zsh_dtype_t dtype, const void *x, size_t n,
                                             size_t block, int bits, void *q, float *scales,
                                             unsigned int *nonfinite, void *stream)
{
    const char *what = "zsh_cuda_quantize";
    cudaStream_t st = (cudaStream_t)stream;
    zsh_status_t status = zsh_qc_dtype(what, dtype);
    cudaError_t err;
    unsigned grid;
    size_t nb;

    if ((status != ZSH_OK) || (n == 0)) {
        return (status != ZSH_OK) ? status : zsh_quant_check(block, bits);
    }
    status = zsh_qc_check(what, block, bits, x, "x", q, "q", scales, "scales");
    if ((status == ZSH_OK) && (nonfinite != NULL)) {
        status = zsh_qc_ptr(nonfinite, what, "nonfinite");
    }
    if (status != ZSH_OK) {
        return status;
    }
    nb   = zsh_quant_blocks(n, block);
    grid = zsh_qc_grid(nb);
    if (dtype == ZSH_FLOAT32) {
        zsh_qc_quantize<ZSH_FLOAT32><<<grid, ZSH_QC_THREADS, 0, st>>>(
            (const float *)x, n, block, bits, (uint8_t *)q, scales, nonfinite, nb);
    } else if (dtype == ZSH_BFLOAT16) {
        zsh_qc_quantize<ZSH_BFLOAT16><<<grid, ZSH_QC_THREADS, 0, st>>>(
            (const uint16_t *)x, n, block, bits, (uint8_t *)q, scales, nonfinite, nb);
    } else {
        zsh_qc_quantize<ZSH_FLOAT16><<<grid, ZSH_QC_THREADS, 0, st>>>(
            (const uint16_t *)x, n, block, bits, (uint8_t *)q, scales, nonfinite, nb);
    }
    err = cudaGetLastError();
    return (err == cudaSuccess) ? ZSH_OK : zsh_qc_error(err, what);
}

extern "C" zsh_status_t zsh_cuda_quantize(const float *x, size_t n, size_t block, int bits,
                                          void *q, float *scales, unsigned int *nonfinite,
                                          void *stream)
{
    return zsh_cuda_quantize_as(ZSH_FLOAT32, x, n, block, bits, q, scales, nonfinite, stream);
}

/* The dequantize of @dtype, @add for fp32 only. */
static zsh_status_t zsh_qc_dequantize_as(const char *what, const void *q, const float *scales,
                                         size_t n, size_t block, int bits, zsh_dtype_t dtype,
                                         void *out, int add, void *stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    zsh_status_t status = zsh_qc_dtype(what, dtype);
    unsigned grid = zsh_qc_grid((n + ZSH_QC_THREADS - 1) / ZSH_QC_THREADS);
    cudaError_t err;

    if ((status != ZSH_OK) || (n == 0)) {
        return (status != ZSH_OK) ? status : zsh_quant_check(block, bits);
    }
    status = zsh_qc_check(what, block, bits, q, "q", scales, "scales", out, "out");
    if (status != ZSH_OK) {
        return status;
    }
    if (dtype == ZSH_FLOAT32) {
        zsh_qc_dequantize<ZSH_FLOAT32><<<grid, ZSH_QC_THREADS, 0, st>>>(
            (const uint8_t *)q, scales, n, block, bits, (float *)out, add);
    } else if (dtype == ZSH_BFLOAT16) {
        zsh_qc_dequantize<ZSH_BFLOAT16><<<grid, ZSH_QC_THREADS, 0, st>>>(
            (const uint8_t *)q, scales, n, block, bits, (uint16_t *)out, 0);
    } else {
        zsh_qc_dequantize<ZSH_FLOAT16><<<grid, ZSH_QC_THREADS, 0, st>>>(
            (const uint8_t *)q, scales, n, block, bits, (uint16_t *)out, 0);
    }
    err = cudaGetLastError();
    return (err == cudaSuccess) ? ZSH_OK : zsh_qc_error(err, what);
}

extern "C" zsh_status_t zsh_cuda_dequantize_as(const void *q, const float *scales, size_t n,
                                               size_t block, int bits, zsh_dtype_t dtype,
                                               void *out, void *stream)
{
    return zsh_qc_dequantize_as("zsh_cuda_dequantize", q, scales, n, block, bits, dtype, out, 0,
                                stream);
}

extern "C" zsh_status_t zsh_cuda_dequantize(const void *q, const float *scales, size_t n,
                                            size_t block, int bits, float *out, int add,
                                            void *stream)
{
    return zsh_qc_dequantize_as("zsh_cuda_dequantize", q, scales, n, block, bits, ZSH_FLOAT32,
                                out, add, stream);
}
