/*
 * The global gradient norm, for clipping and for fp16 overflow detection.
 *
 * Each rank sums the squares of the reduced gradients it owns (all of them
 * at stage 0, where every rank holds the same full reduction), in double;
 * at stages 1-3 one 8-byte all-reduce adds the shards' sums. An inf or NaN
 * anywhere makes the sum non-finite on every rank, so the same all-reduce
 * is the overflow check, and every rank takes the same decision. Which
 * gradients a rank sums, and whether the sums are added up, is the
 * stage's (its table's grads_owned and norm_sum). In the deterministic
 * mode the sums are exact (norm.h), and the all-reduce adds their digits.
 */
#include "optim/optim_impl.h"

#include "core/half.h"
#include "core/status.h"

#include <math.h>
#include <string.h>

#define ZSH_NORM_CHUNK 512

/* The exponent of the fixed point's lowest digit, and the adds before a carry. */
#define ZSH_NORM_LSB        298
#define ZSH_NORM_CARRY_ADDS (1u << 30)

void zsh_norm_sum_init(zsh_norm_sum_t *s, bool exact)
{
    memset(s, 0, sizeof(*s));
    s->exact = exact;
}

void zsh_norm_sum_carry(zsh_norm_sum_t *s)
{
    int64_t c;
    int k;

    for (k = 0; k < ZSH_NORM_LIMBS - 1; k++) {
        c = s->limb[k] >> 32; /* arithmetic: the limbs are never negative */
        s->limb[k] -= c * ((int64_t)1 << 32);
        s->limb[k + 1] += c;
    }
    s->adds = 0;
}

/* @d = f * f, finite: its 53-bit significand M at bit p of the fixed point,
 * over three digits. */
static void zsh_norm_sum_add(zsh_norm_sum_t *s, double d)
{
    unsigned __int128 v;
    uint64_t m;
    int e, p;

    if (d == 0.0) {
        return;
    }
    m = (uint64_t)ldexp(frexp(d, &e), 53);
    p = e - 53 + ZSH_NORM_LSB;
    if (p < 0) {
        m >>= -p; /* only zeros go: d is a multiple of 2^-298 */
        p = 0;
    }
    v = (unsigned __int128)m << (p & 31);
    s->limb[p >> 5] += (int64_t)(uint32_t)v;
    s->limb[(p >> 5) + 1] += (int64_t)(uint32_t)(v >> 32);
    s->limb[(p >> 5) + 2] += (int64_t)(uint32_t)(v >> 64);
    if (++s->adds == ZSH_NORM_CARRY_ADDS) {
        zsh_norm_sum_carry(s);
    }
}

void zsh_norm_sum_floats(zsh_norm_sum_t *s, const float *f, size_t n)
{
    double d;
    size_t j;

    for (j = 0; j < n; j++) {
        d = (double)f[j] * (double)f[j];
        s->sum += d;
        if (s->exact && isfinite(d)) {
            zsh_norm_sum_add(s, d);
        }
    }
}

void zsh_norm_sum_merge(zsh_norm_sum_t *s, const zsh_norm_sum_t *from)
{
    zsh_norm_sum_t f = *from;
    int k;

    s->sum += from->sum;
    if (s->exact) {
        zsh_norm_sum_carry(s);
        zsh_norm_sum_carry(&f);
        for (k = 0; k < ZSH_NORM_LIMBS; k++) {
            s->limb[k] += f.limb[k];
        }
        s->adds = 1;
    }
}

double zsh_norm_sum_value(zsh_norm_sum_t *s)
{
    double v = 0.0;
    int k;

    if (!s->exact || !isfinite(s->sum)) {
        return s->sum;
    }
    zsh_norm_sum_carry(s);
    /* From the top: the same digits give the same double. */
    for (k = ZSH_NORM_LIMBS - 1; k >= 0; k--) {
        v += ldexp((double)s->limb[k], 32 * k - ZSH_NORM_LSB);
    }
    return v;
}

void zsh_optim_sumsq(const zsh_optim_t *opt, const void *g, size_t n, zsh_norm_sum_t *acc)
{
    float chunk[ZSH_NORM_CHUNK];
    const float *f;
    size_t i, c;

    for (i = 0; i < n; i += c) {
        c = (n - i < ZSH_NORM_CHUNK) ? n - i : ZSH_NORM_CHUNK;
        if (opt->mixed) {
            zsh_half_widen(opt->cfg.precision, (const char *)g + i * opt->esize, c, chunk);
            f = chunk;
        } else {
            f = (const float *)g + i;
        }
        zsh_norm_sum_floats(acc, f, c);
    }
}

/* The host's sum of the owned gradients (the device's tables: where the
 * model is, device.c; on the host with the optimizer offloaded). */
zsh_status_t zsh_optim_host_grad_sumsq(zsh_optim_t *opt, zsh_norm_sum_t *acc)
{
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        opt->tiers.ops[ZSH_TK_GRADS]->grad_sumsq(opt, &opt->buckets[i], acc);
    }
    return ZSH_OK;
}

zsh_status_t zsh_optim_grad_sumsq(zsh_optim_t *opt, double *sumsq_p)
{
    zsh_norm_sum_t acc;
    zsh_status_t status;

    zsh_norm_sum_init(&acc, zsh_optim_exact_norm(opt));
    status = opt->dev_ops->grad_sumsq(opt, &acc);
    if (status != ZSH_OK) {
        return status;
    }
    status = opt->stage_ops->norm_sum(opt, &acc);
    if (status != ZSH_OK) {
        return status;
    }
    *sumsq_p = zsh_norm_sum_value(&acc);
    return ZSH_OK;
}
