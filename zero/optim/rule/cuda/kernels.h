/*
 * The optimizer's update kernels on CUDA device memory, callable from C.
 *
 * They compute what the host kernels (optim/rule/rule.h, apply.c, norm.c)
 * compute, element for element and in the same operation order: built with
 * -fmad=false, IEEE division and square root and no flush-to-zero, the
 * updated weights, states and model copies are the host's bits. Only the
 * sum of squares differs, in the last bits of a double: a tree adds the
 * terms in another order than the host's loop (see zsh_cuda_sumsq()).
 *
 * This header needs no CUDA header: streams are `void *` (a cudaStream_t,
 * NULL for the legacy default stream), and every call only enqueues work on
 * it. Every call checks its arguments first and refuses bad ones with
 * ZSH_ERR_INVALID_ARG before anything is enqueued; a CUDA failure is
 * ZSH_ERR_TRANSPORT (ZSH_ERR_INVALID_ARG where CUDA rejected an argument)
 * with CUDA's own text in zsh_last_error(). Pointers must be device memory
 * or memory the device can reach (pinned or managed); pageable host memory
 * is refused.
 *
 * Built only with nvcc (ZSH_HAVE_NVCC); without it every call returns
 * ZSH_ERR_UNSUPPORTED. Nothing here touches CUDA before the first call.
 */
#ifndef ZSH_OPTIM_CUDA_KERNELS_H_
#define ZSH_OPTIM_CUDA_KERNELS_H_

#include <zeroshard.h>
#include <zeroshard/optim.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A step's scalars: the fields of the host rule's zsh_update_t
 * (optim/rule/rule.h), in the same order, taken from zsh_update_make() so the
 * device runs the host's numbers. */
typedef struct zsh_cuda_update {
    zsh_optim_kind_t kind;
    float beta1, beta2, omb1, omb2, eps, weight_decay, momentum;
    int   nesterov;
    float decay, neg_step, bc2_sqrt, inv_bc2_sqrt, grad_mul;
} zsh_cuda_update_t;

/* One update over @n elements, the device form of zsh_optim_apply_out(). */
typedef struct zsh_cuda_step_args {
    zsh_cuda_update_t u;
    float       *p;          /* fp32 (master) weights, updated in place */
    const void  *g;          /* gradients, @grad_dtype */
    zsh_dtype_t  grad_dtype; /* ZSH_FLOAT32, ZSH_BFLOAT16 or ZSH_FLOAT16 */
    float       *m;          /* Adam: exp_avg; SGD: the momentum buffer (NULL without momentum) */
    float       *v;          /* Adam: exp_avg_sq; SGD: unused */
    void        *out;        /* NULL, or the model copy: the updated @p rounded to @out_dtype */
    zsh_dtype_t  out_dtype;  /* ZSH_FLOAT32, ZSH_BFLOAT16 or ZSH_FLOAT16 */
    size_t       n;
} zsh_cuda_step_args_t;

/* Adam or AdamW (a->u.kind), as zsh_adam_update(). */
zsh_status_t zsh_cuda_adam_step(const zsh_cuda_step_args_t *a, void *stream);

/* SGD (a->u.kind ZSH_OPTIM_SGD), as zsh_sgd_update(). */
zsh_status_t zsh_cuda_sgd_step(const zsh_cuda_step_args_t *a, void *stream);

/* The rule a->u.kind names. */
zsh_status_t zsh_cuda_step(const zsh_cuda_step_args_t *a, void *stream);

/* Doubles of scratch zsh_cuda_sumsq() needs. */
#define ZSH_CUDA_SUMSQ_SCRATCH 1024

/*
 * The sum of the squares of @n elements of @x (@dtype: fp32, bf16 or fp16),
 * each widened to double and squared exactly, as zsh_optim_sumsq() does,
 * into the device double @sum (added to it if @accumulate). The terms are
 * added in a fixed tree, so the result is the same on every run for the
 * same @n, and differs from the host's sequential sum by at most
 * 2 * n * 2^-53 of the sum (all terms are >= 0). An inf or NaN makes it
 * non-finite, the host's overflow test. @scratch: ZSH_CUDA_SUMSQ_SCRATCH
 * device doubles, not used by anything else on another stream meanwhile.
 */
zsh_status_t zsh_cuda_sumsq(const void *x, zsh_dtype_t dtype, size_t n, double *sum,
                            int accumulate, double *scratch, void *stream);

/* Sets the device int @flag to 1 if any of @n elements of @x is inf or NaN
 * (fp16 overflow), else leaves it 0; with @accumulate a 1 already there
 * stays (several buffers, one flag). */
zsh_status_t zsh_cuda_nonfinite(const void *x, zsh_dtype_t dtype, size_t n, int *flag,
                                int accumulate, void *stream);

/* @x[i] = @x[i] * @mul, in fp32, rounded back to @dtype to nearest even. */
zsh_status_t zsh_cuda_scale(void *x, zsh_dtype_t dtype, size_t n, float mul, void *stream);

/* fp32 @src rounded into @dst of @dtype, as zsh_half_narrow(). */
zsh_status_t zsh_cuda_from_float(const float *src, void *dst, zsh_dtype_t dtype, size_t n,
                                 void *stream);

/* @src of @dtype widened into fp32 @dst, as zsh_half_widen(). */
zsh_status_t zsh_cuda_to_float(const void *src, zsh_dtype_t dtype, float *dst, size_t n,
                               void *stream);

/* The CUDA devices visible to this process into *@count_p; an error naming
 * CUDA's reason where none can be (no driver, no device), for callers and
 * tests that skip. */
zsh_status_t zsh_cuda_devices(int *count_p);

#ifdef __cplusplus
}
#endif

#endif
