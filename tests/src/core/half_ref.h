/*
 * A reference for the half-precision formats, written without half.h: values
 * are decoded with ldexp and encoded with nearbyint (round to nearest even in
 * the default rounding mode), for fp16 and bf16 alike. Also half_narrow(),
 * half.h's narrowing to either format, which the tests compare against it.
 */
#ifndef ZSH_TESTS_UNIT_HALF_REF_H_
#define ZSH_TESTS_UNIT_HALF_REF_H_

#include "core/dtype.h"
#include "core/half.h"

#include <math.h>
#include <stdint.h>

static inline int half_man_bits(zsh_dtype_t dtype)
{
    return (dtype == ZSH_FLOAT16) ? 10 : 7;
}

static inline int half_bias(zsh_dtype_t dtype)
{
    return (dtype == ZSH_FLOAT16) ? 15 : 127;
}

static inline double ref_half_decode(uint16_t h, zsh_dtype_t dtype)
{
    int      mb   = half_man_bits(dtype);
    int      emax = (1 << (15 - mb)) - 1;
    int      exp  = (h >> mb) & emax;
    uint32_t man  = h & ((1u << mb) - 1u);
    double   v;

    if (exp == emax) {
        v = (man != 0) ? NAN : INFINITY;
    } else if (exp == 0) {
        v = ldexp(man, 1 - half_bias(dtype) - mb);
    } else {
        v = ldexp(man + (1u << mb), exp - half_bias(dtype) - mb);
    }
    return (h & 0x8000u) ? -v : v;
}

/* Round to nearest even with nearbyint() in the default rounding mode. */
static inline uint16_t ref_half_encode(double v, zsh_dtype_t dtype)
{
    int      mb   = half_man_bits(dtype);
    int      emax = (1 << (15 - mb)) - 1;
    uint16_t sign = signbit(v) ? 0x8000u : 0u;
    int      exp;
    double   steps;
    long     bits;

    if (isnan(v)) {
        return (uint16_t)(sign | (emax << mb) | (1u << (mb - 1)));
    }
    if (isinf(v) || (v == 0.0)) {
        return (uint16_t)(sign | (isinf(v) ? (emax << mb) : 0));
    }
    frexp(fabs(v), &exp);
    exp = (exp - 1 < 1 - half_bias(dtype)) ? 1 - half_bias(dtype) : exp - 1;
    steps = nearbyint(ldexp(fabs(v), mb - exp));
    bits  = ((long)(exp + half_bias(dtype) - 1) << mb) + (long)steps;
    return (uint16_t)(sign | ((bits >= ((long)emax << mb)) ? (emax << mb) : bits));
}

static inline uint16_t half_narrow(zsh_dtype_t dt, float f)
{
    return (dt == ZSH_FLOAT16) ? zsh_float_to_fp16(f) : zsh_float_to_bf16(f);
}

#endif /* ZSH_TESTS_UNIT_HALF_REF_H_ */
