/*
 * One element of a buffer of any ZeroShard type, read as or written from a
 * double: what exact checks of collective results need, in the benchmark and
 * in the tests alike. Integers wrap through int64 as two's complement does.
 */
#ifndef ZSH_PERF_ELEM_H_
#define ZSH_PERF_ELEM_H_

#include <zeroshard.h>

#include "core/half.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

static inline double zsh_elem_get(const void *buf, zsh_dtype_t dtype, size_t i)
{
    switch (dtype) {
    case ZSH_INT8:     return ((const int8_t *)buf)[i];
    case ZSH_UINT8:    return ((const uint8_t *)buf)[i];
    case ZSH_INT32:    return ((const int32_t *)buf)[i];
    case ZSH_UINT32:   return ((const uint32_t *)buf)[i];
    case ZSH_INT64:    return (double)((const int64_t *)buf)[i];
    case ZSH_UINT64:   return (double)((const uint64_t *)buf)[i];
    case ZSH_FLOAT16:  return zsh_fp16_to_float(((const uint16_t *)buf)[i]);
    case ZSH_BFLOAT16: return zsh_bf16_to_float(((const uint16_t *)buf)[i]);
    case ZSH_FLOAT32:  return ((const float *)buf)[i];
    case ZSH_FLOAT64:  return ((const double *)buf)[i];
    }
    return NAN;
}

static inline void zsh_elem_set(void *buf, zsh_dtype_t dtype, size_t i, double v)
{
    uint64_t w = (uint64_t)(int64_t)v;

    switch (dtype) {
    case ZSH_INT8:     ((int8_t *)buf)[i] = (int8_t)(uint8_t)w; break;
    case ZSH_UINT8:    ((uint8_t *)buf)[i] = (uint8_t)w; break;
    case ZSH_INT32:    ((int32_t *)buf)[i] = (int32_t)(uint32_t)w; break;
    case ZSH_UINT32:   ((uint32_t *)buf)[i] = (uint32_t)w; break;
    case ZSH_INT64:    ((int64_t *)buf)[i] = (int64_t)w; break;
    case ZSH_UINT64:   ((uint64_t *)buf)[i] = w; break;
    case ZSH_FLOAT16:  ((uint16_t *)buf)[i] = zsh_float_to_fp16((float)v); break;
    case ZSH_BFLOAT16: ((uint16_t *)buf)[i] = zsh_float_to_bf16((float)v); break;
    case ZSH_FLOAT32:  ((float *)buf)[i] = (float)v; break;
    case ZSH_FLOAT64:  ((double *)buf)[i] = v; break;
    }
}

#endif
