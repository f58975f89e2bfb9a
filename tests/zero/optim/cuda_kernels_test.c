/*
 * The device update kernels (zero/optim/rule/cuda) give the host kernels' bits.
 *
 * Every rule, gradient dtype (fp32, bf16, fp16) and model copy (none,
 * fp32, bf16, fp16) runs three steps on the device and on the host with
 * the same zsh_update_t; weights, states and the model copy must be the
 * same bits after each. The host side is what apply.c runs: bf16 gradients
 * through the bf16 kernels, fp16 ones widened, the copy rounded by
 * core/half.h. Lengths are 1 and an odd million (grid-stride tails); the
 * values span magnitudes from fp32 subnormals to beyond fp16's range, so
 * rounding, subnormals and overflow to inf in the copy are all exercised.
 * Without a visible device (or without nvcc) each test skips, saying why.
 */
#include "cuda_helpers.h"

#include "core/half.h"
#include "optim/rule/cuda/kernels.h"
#include "optim/rule/rule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_CK_STEPS 3

static const size_t zsh_ck_lengths[] = {1, 1000003};
static const zsh_dtype_t zsh_ck_grads[] = {ZSH_FLOAT32, ZSH_BFLOAT16, ZSH_FLOAT16};
/* -1: no model copy */
static const int zsh_ck_outs[] = {-1, ZSH_FLOAT32, ZSH_BFLOAT16, ZSH_FLOAT16};

/* The device form of the host's per-step scalars: the same fields, which
 * a field added to one struct and not the other is likely to break. */
_Static_assert(sizeof(zsh_cuda_update_t) == sizeof(zsh_update_t),
               "zsh_cuda_update_t mirrors zsh_update_t (optim/rule/rule.h)");

static zsh_cuda_update_t zsh_ck_update(const zsh_update_t *u)
{
    zsh_cuda_update_t d = {u->kind,     u->beta1, u->beta2,        u->omb1,
                           u->omb2,     u->eps,   u->weight_decay, u->momentum,
                           u->nesterov, u->decay, u->neg_step,     u->bc2_sqrt,
                           u->inv_bc2_sqrt, u->grad_mul};

    return d;
}

static size_t zsh_ck_esize(int dtype)
{
    return (dtype == ZSH_FLOAT32) ? 4 : 2;
}

/* Host buffers of one run; g16 holds the gradient in its dtype, g widened. */
typedef struct {
    float *p, *m, *v, *g, *got;
    void  *g16, *out, *got_out;
} zsh_ck_host_t;

typedef struct {
    float *p, *m, *v;
    void  *g, *out;
} zsh_ck_dev_t;

/* The first element where @a and @b differ, or @n. */
static size_t zsh_ck_diff(const void *a, const void *b, size_t n, size_t esize)
{
    size_t i;

    if (memcmp(a, b, n * esize) == 0) {
        return n;
    }
    for (i = 0; (i < n) && (memcmp((const char *)a + i * esize, (const char *)b + i * esize,
                                   esize) == 0); i++) {
    }
    return i;
}

/* Compares @n fp32 elements of @what; false (after a failure) if they differ. */
static bool zsh_ck_same(const char *ctx, const char *what, const float *host, const float *dev,
                        size_t n)
{
    size_t i = zsh_ck_diff(host, dev, n, sizeof(float));

    if (i < n) {
        zsh_test_fail(__FILE__, __LINE__, "%s: %s[%zu] is %.9g (0x%08x) on the device, %.9g "
                      "(0x%08x) on the host", ctx, what, i, (double)dev[i], zsh_float_bits(dev[i]),
                      (double)host[i], zsh_float_bits(host[i]));
        return false;
    }
    return true;
}

/* One step's gradients in @gd: g16 in the dtype, g widened as the host reads it. */
static void zsh_ck_fill_grads(zsh_ck_host_t *h, zsh_dtype_t gd, size_t n, uint64_t *rng)
{
    uint16_t *g16 = h->g16;
    float f;
    size_t i;

    for (i = 0; i < n; i++) {
        f = zsh_ck_float(rng, -30, 3);
        if (gd == ZSH_BFLOAT16) {
            g16[i]  = zsh_float_to_bf16(f);
            h->g[i] = zsh_bf16_to_float(g16[i]);
        } else if (gd == ZSH_FLOAT16) {
            g16[i]  = zsh_float_to_fp16(f);
            h->g[i] = zsh_fp16_to_float(g16[i]);
        } else {
            h->g[i] = f;
        }
    }
}

/* The host's step, as apply.c runs it, and the model copy. */
static void zsh_ck_host_step(zsh_ck_host_t *h, zsh_dtype_t gd, int od, size_t n,
                             const zsh_update_t *u)
{
    size_t i;

    if (u->kind == ZSH_OPTIM_SGD) {
        if (gd == ZSH_BFLOAT16) {
            zsh_sgd_update_bf16(h->p, h->g16, h->m, NULL, n, u);
        } else {
            zsh_sgd_update(h->p, h->g, h->m, n, u);
        }
    } else if (gd == ZSH_BFLOAT16) {
        zsh_adam_update_bf16(h->p, h->g16, h->m, h->v, NULL, n, u);
    } else {
        zsh_adam_update(h->p, h->g, h->m, h->v, n, u);
    }
    for (i = 0; i < n; i++) {
        if (od == ZSH_BFLOAT16) {
            ((uint16_t *)h->out)[i] = zsh_float_to_bf16(h->p[i]);
        } else if (od == ZSH_FLOAT16) {
            ((uint16_t *)h->out)[i] = zsh_float_to_fp16(h->p[i]);
        } else if (od == ZSH_FLOAT32) {
            ((float *)h->out)[i] = h->p[i];
        }
    }
}

/* Three steps of @c on @n elements on both sides; false after a failure. */
static bool zsh_ck_run(const zsh_optim_config_t *c, const char *what, size_t n, zsh_dtype_t gd,
                       int od, zsh_ck_host_t *h, zsh_ck_dev_t *d)
{
    uint64_t rng = 0x9e3779b97f4a7c15ull ^ (n * 31 + (size_t)gd * 7 + (size_t)(od + 1));
    size_t fb = n * sizeof(float), ob = n * zsh_ck_esize(od);
    bool adam = (c->kind != ZSH_OPTIM_SGD);
    zsh_cuda_step_args_t a;
    char ctx[160];
    zsh_update_t u;
    size_t i;
    int t;

    for (i = 0; i < n; i++) {
        h->p[i] = zsh_ck_float(&rng, -20, 17);
        h->m[i] = h->v[i] = 0.0f;
    }
    if (!zsh_ck_put(d->p, h->p, fb) || !zsh_ck_put(d->m, h->m, fb) ||
        !zsh_ck_put(d->v, h->v, fb)) {
        return false;
    }
    for (t = 1; t <= ZSH_CK_STEPS; t++) {
        snprintf(ctx, sizeof(ctx), "%s n=%zu grad dtype %d copy dtype %d step %d", what, n,
                 (int)gd, od, t);
        zsh_ck_fill_grads(h, gd, n, &rng);
        if (!zsh_ck_put(d->g, (gd == ZSH_FLOAT32) ? (void *)h->g : h->g16,
                        n * zsh_ck_esize(gd))) {
            return false;
        }
        u = zsh_update_make(c, (unsigned long)t, 0.37f);
        memset(&a, 0, sizeof(a));
        a.u          = zsh_ck_update(&u);
        a.p          = d->p;
        a.g          = d->g;
        a.grad_dtype = gd;
        a.m          = d->m;
        a.v          = adam ? d->v : NULL;
        a.out        = (od < 0) ? NULL : d->out;
        a.out_dtype  = (od < 0) ? ZSH_FLOAT32 : (zsh_dtype_t)od;
        a.n          = n;
        if (!ZSH_CK_OK(zsh_cuda_step(&a, NULL), ctx) || !zsh_ck_sync()) {
            return false;
        }
        zsh_ck_host_step(h, gd, od, n, &u);
        if (!zsh_ck_get(h->got, d->p, fb) || !zsh_ck_same(ctx, "p", h->p, h->got, n) ||
            ((adam || (c->momentum != 0.0f)) &&
             (!zsh_ck_get(h->got, d->m, fb) || !zsh_ck_same(ctx, "m", h->m, h->got, n))) ||
            (adam && (!zsh_ck_get(h->got, d->v, fb) || !zsh_ck_same(ctx, "v", h->v, h->got, n)))) {
            return false;
        }
        if ((od >= 0) && zsh_ck_get(h->got_out, d->out, ob) &&
            ((i = zsh_ck_diff(h->out, h->got_out, n, zsh_ck_esize(od))) < n)) {
            zsh_test_fail(__FILE__, __LINE__, "%s: the model copy differs at element %zu (weight "
                          "%.9g)", ctx, i, (double)h->p[i]);
            return false;
        }
    }
    return true;
}

/* Every length, gradient dtype and model copy of @c. */
static void zsh_ck_rule(const zsh_optim_config_t *c, const char *what)
{
    size_t nmax = zsh_ck_lengths[sizeof(zsh_ck_lengths) / sizeof(zsh_ck_lengths[0]) - 1];
    size_t fb = nmax * sizeof(float), l, gi, oi;
    zsh_ck_host_t h = {malloc(fb), malloc(fb), malloc(fb), malloc(fb), malloc(fb),
                       malloc(fb), malloc(fb), malloc(fb)};
    zsh_ck_dev_t d = {zsh_ck_dev_alloc(fb), zsh_ck_dev_alloc(fb), zsh_ck_dev_alloc(fb),
                      zsh_ck_dev_alloc(fb), zsh_ck_dev_alloc(fb)};
    bool ok = (h.p != NULL) && (h.m != NULL) && (h.v != NULL) && (h.g != NULL) &&
              (h.got != NULL) && (h.g16 != NULL) && (h.out != NULL) && (h.got_out != NULL) &&
              (d.p != NULL) && (d.m != NULL) && (d.v != NULL) && (d.g != NULL) && (d.out != NULL);

    ZSH_EXPECT_TRUE(ok);
    for (l = 0; ok && (l < sizeof(zsh_ck_lengths) / sizeof(zsh_ck_lengths[0])); l++) {
        for (gi = 0; ok && (gi < sizeof(zsh_ck_grads) / sizeof(zsh_ck_grads[0])); gi++) {
            for (oi = 0; ok && (oi < sizeof(zsh_ck_outs) / sizeof(zsh_ck_outs[0])); oi++) {
                ok = zsh_ck_run(c, what, zsh_ck_lengths[l], zsh_ck_grads[gi], zsh_ck_outs[oi],
                                &h, &d);
            }
        }
    }
    zsh_ck_dev_free(d.out);
    zsh_ck_dev_free(d.g);
    zsh_ck_dev_free(d.v);
    zsh_ck_dev_free(d.m);
    zsh_ck_dev_free(d.p);
    free(h.got_out);
    free(h.out);
    free(h.g16);
    free(h.got);
    free(h.g);
    free(h.v);
    free(h.m);
    free(h.p);
}

ZSH_TEST(cuda_kernels, adam_matches_the_host_kernel_bit_for_bit)
{
    zsh_optim_config_t c;

    ZSH_CK_NEED_DEVICE();
    zsh_optim_config_init(&c);
    c.kind         = ZSH_OPTIM_ADAM;
    c.lr           = 1e-3f;
    c.weight_decay = 0.01f;
    zsh_ck_rule(&c, "adam");
}

ZSH_TEST(cuda_kernels, adamw_matches_the_host_kernel_bit_for_bit)
{
    zsh_optim_config_t c;

    ZSH_CK_NEED_DEVICE();
    zsh_optim_config_init(&c);
    c.kind         = ZSH_OPTIM_ADAMW;
    c.lr           = 3e-3f;
    c.beta1        = 0.85f;
    c.beta2        = 0.99f;
    c.eps          = 1e-6f;
    c.weight_decay = 0.1f;
    zsh_ck_rule(&c, "adamw");
}

ZSH_TEST(cuda_kernels, sgd_matches_the_host_kernel_bit_for_bit)
{
    zsh_optim_config_t c;

    ZSH_CK_NEED_DEVICE();
    zsh_optim_config_init(&c);
    c.kind         = ZSH_OPTIM_SGD;
    c.lr           = 0.05f;
    c.weight_decay = 1e-4f;
    zsh_ck_rule(&c, "sgd without momentum");
    c.momentum = 0.9f;
    zsh_ck_rule(&c, "sgd with momentum");
    c.nesterov = 1;
    zsh_ck_rule(&c, "sgd nesterov");
}
