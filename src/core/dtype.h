/*
 * Facts about element types and reduction operations, in one place, so
 * argument checks, kernels and messages agree.
 */
#ifndef ZSH_CORE_DTYPE_H_
#define ZSH_CORE_DTYPE_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>

#define ZSH_DTYPE_COUNT (ZSH_FLOAT64 + 1)
#define ZSH_OP_COUNT    (ZSH_AVG + 1)

bool        zsh_dtype_valid(zsh_dtype_t dtype);
bool        zsh_op_valid(zsh_op_t op);
bool        zsh_dtype_is_float(zsh_dtype_t dtype);

/* Bytes per element; 0 for an unknown dtype. */
size_t      zsh_dtype_size(zsh_dtype_t dtype);

/* The type reductions accumulate in: fp32 for fp16 and bf16, else the type itself. */
zsh_dtype_t zsh_dtype_acc(zsh_dtype_t dtype);

/* Whether @op is defined on @dtype (AVG needs a floating type). */
bool        zsh_op_supports(zsh_op_t op, zsh_dtype_t dtype);

const char *zsh_dtype_name(zsh_dtype_t dtype);  /* "fp32"; "unknown" if invalid */
const char *zsh_op_name(zsh_op_t op);           /* "sum"; "unknown" if invalid */

#endif
