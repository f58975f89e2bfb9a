/*
 * zsh_optim_grad_ready_scaled(): a gradient handed over times a factor, in
 * the pass that copies it into its bucket. SGD with momentum over three
 * parameters of awkward sizes, in fp32, bf16 and fp16, at every stage and
 * with the states in the NVMe tier: each rank's gradients (not exact in any
 * precision, different per rank) handed over times 1/3 train bit for bit as
 * the same gradients multiplied first (each element widened, times the
 * fp32 factor, rounded once: torch's Tensor.mul in fp32) and handed over
 * with zsh_optim_grad_ready() to an optimizer of the same layout (the
 * ranks' sums are the same only in the same order); the caller's
 * gradients are left as they were. Refusals: a factor that is not finite,
 * NULL arguments, a second gradient for a parameter; each leaves the
 * parameter's step as it was.
 */
#include "param_state_run.h"

#include "core/dtype.h"
#include "core/half.h"

#include <zeroshard/optim.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define ZSH_GS_STEPS 3

static const float zsh_gs_mul = 1.0f / 3.0f;

/* Rank @rank's gradient of parameter @p at step @t, in @precision. */
static void zsh_gs_grad(zsh_dtype_t precision, int p, int t, int rank, void *out)
{
    float g[ZSH_PS_MOST];
    size_t i;

    for (i = 0; i < zsh_ps_sizes[p]; i++) {
        g[i] = (float)(sin(0.7 * (double)i + p + 1.3 * t + 0.4 * rank) * 0.37);
    }
    zsh_half_narrow(precision, g, zsh_ps_sizes[p], out);
}

/* @n elements of @precision times @mul, each rounded once, element by
 * element: the reference the layer's kernel is held to. */
static void zsh_gs_times(zsh_dtype_t precision, const void *in, size_t n, float mul, void *out)
{
    const uint16_t *h = in;
    const float *f    = in;
    uint16_t *ho      = out;
    float *fo         = out;
    size_t i;

    for (i = 0; i < n; i++) {
        if (precision == ZSH_FLOAT32) {
            fo[i] = f[i] * mul;
        } else if (precision == ZSH_BFLOAT16) {
            ho[i] = zsh_float_to_bf16(zsh_bf16_to_float(h[i]) * mul);
        } else {
            ho[i] = zsh_float_to_fp16(zsh_fp16_to_float(h[i]) * mul);
        }
    }
}

/* Steps 1..ZSH_GS_STEPS of @r, its gradients handed over scaled (@scaled)
 * or multiplied first. */
static bool zsh_gs_train(zsh_ps_run_t *r, int rank, bool scaled, const char *how)
{
    uint32_t grad[ZSH_PS_MOST], kept[ZSH_PS_MOST], times[ZSH_PS_MOST]; /* room for fp32 */
    size_t es = (r->precision == ZSH_FLOAT32) ? sizeof(float) : sizeof(uint16_t);
    int p, t;
    zsh_status_t status = ZSH_OK;
    char what[160];

    for (t = 1; (status == ZSH_OK) && (t <= ZSH_GS_STEPS); t++) {
        for (p = ZSH_PS_NPARAMS; (status == ZSH_OK) && (p-- > 0);) {
            zsh_gs_grad(r->precision, p, t, rank, grad);
            if (scaled) {
                memcpy(kept, grad, zsh_ps_sizes[p] * es);
                status = zsh_optim_grad_ready_scaled(r->opt, r->param[p], grad, zsh_gs_mul);
                snprintf(what, sizeof(what), "%s: the gradient of '%c' handed over", how,
                         'a' + p);
                if (!zsh_ps_same_bits(grad, kept, zsh_ps_sizes[p], es, what)) {
                    return false;
                }
            } else {
                zsh_gs_times(r->precision, grad, zsh_ps_sizes[p], zsh_gs_mul, times);
                status = zsh_optim_grad_ready(r->opt, r->param[p], times);
            }
        }
        if (status == ZSH_OK) {
            status = zsh_optim_step(r->opt, NULL);
        }
    }
    if (status != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "%s, step %d: %s", how, t - 1, zsh_last_error());
    }
    return status == ZSH_OK;
}

static void zsh_gs_same_training(zsh_comm_t *comm, zsh_dtype_t precision, int stage, bool nvme)
{
    uint32_t got[ZSH_PS_MOST], want[ZSH_PS_MOST];
    size_t es = (precision == ZSH_FLOAT32) ? sizeof(float) : sizeof(uint16_t);
    zsh_ps_run_t a, b;
    char how[96], what[160];
    int p;

    snprintf(how, sizeof(how), "%s, stage %d%s, %d ranks", zsh_dtype_name(precision), stage,
             nvme ? " (NVMe)" : "", zsh_comm_size(comm));
    memset(&b, 0, sizeof(b));
    if (!zsh_ps_make(comm, ZSH_OPTIM_SGD, stage, precision, nvme, &a) ||
        !zsh_ps_make(comm, ZSH_OPTIM_SGD, stage, precision, nvme, &b) ||
        !zsh_gs_train(&a, zsh_comm_rank(comm), true, how) ||
        !zsh_gs_train(&b, zsh_comm_rank(comm), false, how)) {
        goto out;
    }
    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        snprintf(what, sizeof(what), "%s: '%c' after %d steps", how, 'a' + p, ZSH_GS_STEPS);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(a.opt, a.param[p], got));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(b.opt, b.param[p], want));
        if (!zsh_ps_same_bits(got, want, zsh_ps_sizes[p], es, what)) {
            break;
        }
    }
out:
    zsh_ps_free(&a);
    zsh_ps_free(&b);
}

ZSH_RANK_TEST(optim_grad_scaled, a_gradient_handed_over_scaled_trains_as_one_multiplied_first)
{
    static const zsh_dtype_t precisions[] = {ZSH_FLOAT32, ZSH_BFLOAT16, ZSH_FLOAT16};
    size_t k;
    int stage;

    for (k = 0; k < sizeof(precisions) / sizeof(precisions[0]); k++) {
        for (stage = 0; stage <= 3; stage++) {
            zsh_gs_same_training(comm, precisions[k], stage, false);
        }
        zsh_gs_same_training(comm, precisions[k], 2, true);
    }
}

ZSH_RANK_TEST(optim_grad_scaled, a_factor_that_is_not_finite_is_refused_and_changes_nothing)
{
    float grad[ZSH_PS_MOST] = {0};
    zsh_ps_run_t r;

    if (!zsh_ps_make(comm, ZSH_OPTIM_SGD, 2, ZSH_FLOAT32, false, &r)) {
        zsh_ps_free(&r);
        return;
    }
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_optim_grad_ready_scaled(r.opt, r.param[0], grad, INFINITY));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "parameter 'a': the factor inf is not finite") !=
                    NULL);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_optim_grad_ready_scaled(r.opt, r.param[0], grad, NAN));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_optim_grad_ready_scaled(r.opt, r.param[0], NULL, 0.5f));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "grad is NULL") != NULL);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_grad_ready_scaled(NULL, r.param[0], grad,
                                                                       0.5f));
    /* None of them took the parameter's gradient: the step's own hand-over
     * does, and a second one is refused. */
    ZSH_EXPECT_TRUE(zsh_ps_steps(&r, 1, 1));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready_scaled(r.opt, r.param[0], grad, 0.5f));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_optim_grad_ready_scaled(r.opt, r.param[0], grad, 0.5f));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "already has a gradient pending") != NULL);
    zsh_ps_free(&r);
}
