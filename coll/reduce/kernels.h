/*
 * Reduction kernels for every dtype x op.
 *
 * Reductions run in an accumulation type A (zsh_dtype_acc(): fp32 for fp16
 * and bf16, else the element type T itself), so half-precision inputs are
 * summed in fp32 and rounded once, when the result is stored. Partial results
 * travel between ranks in A. AVG accumulates as SUM; the division by the
 * number of ranks happens at store time.
 *
 * Aliasing: @acc never overlaps @src. @dst may be exactly @src (the in-place
 * case) but never partially overlaps it. @count may be 0.
 */
#ifndef ZSH_COLL_REDUCE_KERNELS_H_
#define ZSH_COLL_REDUCE_KERNELS_H_

#include <zeroshard.h>

#include <stddef.h>

/* acc[i] = A(src[i]) */
void zsh_reduce_load(void *acc, const void *src, size_t count, zsh_dtype_t dtype);

/* acc[i] = acc[i] op A(src[i]); @src holds elements of @dtype */
void zsh_reduce_acc(void *acc, const void *src, size_t count, zsh_dtype_t dtype, zsh_op_t op);

/* acc[i] = acc[i] op src[i]; both hold accumulation-type elements */
void zsh_reduce_acc_acc(void *acc, const void *src, size_t count, zsh_dtype_t dtype, zsh_op_t op);

/* dst[i] = T(acc[i]), divided by @nranks first for AVG; rounds to nearest even */
void zsh_reduce_store(void *dst, const void *acc, size_t count, zsh_dtype_t dtype, zsh_op_t op,
                      int nranks);

/* dst[i] = T(acc[i] op A(src[i])), divided by @nranks first for AVG */
void zsh_reduce_acc_store(void *dst, const void *acc, const void *src, size_t count,
                          zsh_dtype_t dtype, zsh_op_t op, int nranks);

#endif
