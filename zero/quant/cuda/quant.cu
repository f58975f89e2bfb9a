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
 */
#include "quant/cuda/quant_cuda.h"

extern "C" {
#include "core/status.h"
#include "quant/quant.h"
}

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

__global__ void zsh_qc_quantize(const float *__restrict__ x, size_t n, size_t block, int bits,
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
            mb = max(mb, __float_as_uint(x[off + i]) & 0x7fffffffu);
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
                    int lo = (int)zsh_qc_level(x[off + 2 * i], inv);
                    int hi = (2 * i + 1 < len) ? (int)zsh_qc_level(x[off + 2 * i + 1], inv) : 0;
                    qb[i] = (uint8_t)(((uint32_t)lo & 0xfu) | (((uint32_t)hi & 0xfu) << 4));
                } else {
                    qb[i] = (uint8_t)(int8_t)(int)zsh_qc_level(x[off + i], inv);
                }
            }
        }
        __syncthreads(); /* sh_m is reset for the next block */
    }
}

__global__ void zsh_qc_dequantize(const uint8_t *__restrict__ q, const float *__restrict__ scales,
                                  size_t n, size_t block, int bits, float *out, int add)
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
        out[i] = add ? __fadd_rn(out[i], v) : v;
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

extern "C" zsh_status_t zsh_cuda_quantize(const float *x, size_t n, size_t block, int bits,
                                          void *q, float *scales, unsigned int *nonfinite,
                                          void *stream)
{
    const char *what = "zsh_cuda_quantize";
    zsh_status_t status;
    cudaError_t err;
    size_t nb;

    if (n == 0) {
        return zsh_quant_check(block, bits);
    }
    status = zsh_qc_check(what, block, bits, x, "x", q, "q", scales, "scales");
    if ((status == ZSH_OK) && (nonfinite != NULL)) {
        status = zsh_qc_ptr(nonfinite, what, "nonfinite");
    }
    if (status != ZSH_OK) {
        return status;
    }
    nb = zsh_quant_blocks(n, block);
    zsh_qc_quantize<<<zsh_qc_grid(nb), ZSH_QC_THREADS, 0, (cudaStream_t)stream>>>(
        x, n, block, bits, (uint8_t *)q, scales, nonfinite, nb);
    err = cudaGetLastError();
    return (err == cudaSuccess) ? ZSH_OK : zsh_qc_error(err, what);
}

extern "C" zsh_status_t zsh_cuda_dequantize(const void *q, const float *scales, size_t n,
                                            size_t block, int bits, float *out, int add,
                                            void *stream)
{
    const char *what = "zsh_cuda_dequantize";
    zsh_status_t status;
    cudaError_t err;

    if (n == 0) {
        return zsh_quant_check(block, bits);
    }
    status = zsh_qc_check(what, block, bits, q, "q", scales, "scales", out, "out");
    if (status != ZSH_OK) {
        return status;
    }
    zsh_qc_dequantize<<<zsh_qc_grid((n + ZSH_QC_THREADS - 1) / ZSH_QC_THREADS), ZSH_QC_THREADS,
                        0, (cudaStream_t)stream>>>((const uint8_t *)q, scales, n, block, bits,
                                                   out, add);
    err = cudaGetLastError();
    return (err == cudaSuccess) ? ZSH_OK : zsh_qc_error(err, what);
}
