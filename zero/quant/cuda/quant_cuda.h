/*
 * The quantization kernels (quant/quant.h) on CUDA device memory, callable
 * from C: the same layout, contract and bits as the host kernels (every
 * fp32 operation IEEE-rounded and unfused), so a run quantized on the
 * device dequantizes on the host and the reverse.
 *
 * Streams are `void *` (a cudaStream_t, NULL for the legacy default
 * stream); each call checks its arguments first (ZSH_ERR_INVALID_ARG,
 * nothing enqueued), then only enqueues work. A CUDA failure is
 * ZSH_ERR_TRANSPORT with CUDA's text in zsh_last_error(). Built only with
 * nvcc; without it every call returns ZSH_ERR_UNSUPPORTED.
 */
#ifndef ZSH_ZERO_QUANT_CUDA_H_
#define ZSH_ZERO_QUANT_CUDA_H_

#include <zeroshard.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* @x's @n fp32 elements into the levels @q and @scales, as the host's
 * quantize; where @nonfinite (a device unsigned int) is not NULL, the
 * number of blocks holding NaN or inf is added to it. */
zsh_status_t zsh_cuda_quantize(const float *x, size_t n, size_t block, int bits, void *q,
                               float *scales, unsigned int *nonfinite, void *stream);

/* out[i] = the value element i dequantizes to, or out[i] += it if @add. */
zsh_status_t zsh_cuda_dequantize(const void *q, const float *scales, size_t n, size_t block,
                                 int bits, float *out, int add, void *stream);

/* zsh_cuda_quantize() of @n elements of @dtype (fp32, bf16 or fp16) at
 * @x: a half run gives its fp32 conversion's levels and scales, as the
 * host's quant/half.h does. */
zsh_status_t zsh_cuda_quantize_as(zsh_dtype_t dtype, const void *x, size_t n, size_t block,
                                  int bits, void *q, float *scales, unsigned int *nonfinite,
                                  void *stream);

/* out[i] (of @dtype) = the value element i dequantizes to, rounded once
 * to nearest even into a half precision, as the host's quant/half.h does. */
zsh_status_t zsh_cuda_dequantize_as(const void *q, const float *scales, size_t n, size_t block,
                                    int bits, zsh_dtype_t dtype, void *out, void *stream);

#ifdef __cplusplus
}
#endif

#endif
