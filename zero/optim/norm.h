/*
 * A sum of squares of gradients, as the global norm adds them: a double,
 * or in the deterministic mode an exact sum, whose value does not depend
 * on the order it was added in, so the norm's bits do not depend on which
 * rank owns which gradient (the bucket size, sub-group size, hpZ, offload
 * and node layout move that).
 *
 * Exact: the square of an fp32 value is exact in a double, a multiple of
 * 2^-298 below 2^256. The sum is held in fixed point, 32-bit digits from
 * 2^-298 in 64-bit limbs, so 2^31 squares can be added before a carry;
 * the ranks add their limbs with an integer all-reduce (exact, any order),
 * and the result is rounded to a double once, from the one normalized
 * form. The plain double is kept beside it, so an inf or NaN (an overflow
 * for the loss scaler) still shows.
 */
#ifndef ZSH_ZERO_OPTIM_NORM_H_
#define ZSH_ZERO_OPTIM_NORM_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZSH_NORM_LIMBS 20  /* 640 bits from 2^-298: past 2^256 with room for the carries */

typedef struct zsh_norm_sum {
    double   sum;                    /* the plain sum (every mode) */
    bool     exact;                  /* limb holds the exact sum too */
    uint32_t adds;                   /* squares added since the last carry */
    int64_t  limb[ZSH_NORM_LIMBS];   /* sum of limb[k] * 2^(32k - 298) */
} zsh_norm_sum_t;

/* An empty sum, exact when @exact. */
void   zsh_norm_sum_init(zsh_norm_sum_t *s, bool exact);

/* Add the squares of @n floats. */
void   zsh_norm_sum_floats(zsh_norm_sum_t *s, const float *f, size_t n);

/* Add @from into @s (both exact or both not). */
void   zsh_norm_sum_merge(zsh_norm_sum_t *s, const zsh_norm_sum_t *from);

/* Carry every limb into 32 bits (the top one keeps the rest): the one
 * form of a value, and limbs the ranks' integer sum cannot overflow. */
void   zsh_norm_sum_carry(zsh_norm_sum_t *s);

/* The sum as a double: the exact one rounded, unless the plain one is not finite. */
double zsh_norm_sum_value(zsh_norm_sum_t *s);

#endif
