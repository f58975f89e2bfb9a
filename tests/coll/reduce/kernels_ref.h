/*
 * One element of any dtype as the reduction kernels' tests hold it: integers
 * sign-extended to 64 bits, floating types as doubles. Halves go through
 * half_ref.h, not half.h, so the kernels are never checked against their own
 * conversions.
 */
#ifndef ZSH_TESTS_COLL_REDUCE_KERNELS_REF_H_
#define ZSH_TESTS_COLL_REDUCE_KERNELS_REF_H_

#include "core/dtype.h"
#include "src/core/half_ref.h"

#include <stddef.h>
#include <stdint.h>

/* One value in the reference: @u for integers (sign-extended), @f for floats. */
typedef struct {
    uint64_t u;
    double   f;
} ref_t;

static inline ref_t ref_get(const void *buf, zsh_dtype_t dtype, size_t i)
{
    ref_t v = {0, 0.0};

    switch (dtype) {
    case ZSH_INT8:     v.u = (uint64_t)(int64_t)((const int8_t *)buf)[i]; break;
    case ZSH_UINT8:    v.u = ((const uint8_t *)buf)[i]; break;
    case ZSH_INT32:    v.u = (uint64_t)(int64_t)((const int32_t *)buf)[i]; break;
    case ZSH_UINT32:   v.u = ((const uint32_t *)buf)[i]; break;
    case ZSH_INT64:    v.u = (uint64_t)((const int64_t *)buf)[i]; break;
    case ZSH_UINT64:   v.u = ((const uint64_t *)buf)[i]; break;
    case ZSH_FLOAT16:
    case ZSH_BFLOAT16: v.f = ref_half_decode(((const uint16_t *)buf)[i], dtype); break;
    case ZSH_FLOAT32:  v.f = ((const float *)buf)[i]; break;
    case ZSH_FLOAT64:  v.f = ((const double *)buf)[i]; break;
    }
    return v;
}

static inline void ref_put(void *buf, zsh_dtype_t dtype, size_t i, ref_t v)
{
    switch (dtype) {
    case ZSH_INT8:     ((int8_t *)buf)[i] = (int8_t)v.u; break;
    case ZSH_UINT8:    ((uint8_t *)buf)[i] = (uint8_t)v.u; break;
    case ZSH_INT32:    ((int32_t *)buf)[i] = (int32_t)v.u; break;
    case ZSH_UINT32:   ((uint32_t *)buf)[i] = (uint32_t)v.u; break;
    case ZSH_INT64:    ((int64_t *)buf)[i] = (int64_t)v.u; break;
    case ZSH_UINT64:   ((uint64_t *)buf)[i] = v.u; break;
    case ZSH_FLOAT16:
    case ZSH_BFLOAT16: ((uint16_t *)buf)[i] = ref_half_encode(v.f, dtype); break;
    case ZSH_FLOAT32:  ((float *)buf)[i] = (float)v.f; break;
    case ZSH_FLOAT64:  ((double *)buf)[i] = v.f; break;
    }
}

#endif
