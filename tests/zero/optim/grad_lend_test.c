/*
 * zsh_optim_grad_lend(): a gradient reduced from the caller's memory where
 * its bucket holds it alone, instead of copied into a staging buffer first.
 * Four parameters: one of 5040 elements (every rank count up to 8 divides
 * it) in a bucket of its own, one of 37 (divided by no count above 1), two
 * of 100 that share a bucket. Adam in fp32, bf16 and fp16 at every stage,
 * each rank's gradients different and not exact, handed over times 1 and
 * times 1/N: lent, they train bit for bit as handed over with
 * zsh_optim_grad_ready_scaled() (a power-of-two N averages after the sum,
 * which gives the scaled copies' bits). done() comes exactly once per
 * gradient: before the call returns wherever the layer copies, by the end
 * of the step where it lends, before zsh_optim_grad_wait() of the parameter
 * returns where the caller waits; the caller's gradients are left as they
 * were.
 * At stage 2 the lent gradient takes no staging buffer of the layer's. Lent
 * gradients stay within max_live_bytes; refusals give the gradient back at
 * once and change nothing.
 */
#include "harness/zsh_test.h"

#include "core/dtype.h"
#include "core/half.h"

#include <zeroshard/optim.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZSH_GL_NPARAMS 4
#define ZSH_GL_MOST    5040
#define ZSH_GL_STEPS   3

static const size_t zsh_gl_sizes[ZSH_GL_NPARAMS] = {ZSH_GL_MOST, 37, 100, 100};

typedef struct {
    zsh_optim_t *opt;
    zsh_param_t *param[ZSH_GL_NPARAMS];
    void        *buf[ZSH_GL_NPARAMS];
    zsh_dtype_t  precision;
    int          stage;
} zsh_gl_run_t;

/* What one lent gradient's done() saw. */
typedef struct {
    int         calls;
    const void *grad;
    void       *copy; /* the gradient as lent, to find it unchanged */
    size_t      bytes;
    bool        changed;
} zsh_gl_lent_t;

static void zsh_gl_done(void *arg)
{
    zsh_gl_lent_t *l = arg;

    l->calls++;
    l->changed = l->changed || (memcmp(l->grad, l->copy, l->bytes) != 0);
}

static size_t zsh_gl_esize(zsh_dtype_t precision)
{
    return (precision == ZSH_FLOAT32) ? sizeof(float) : sizeof(uint16_t);
}

static bool zsh_gl_make(zsh_comm_t *comm, int stage, zsh_dtype_t precision, size_t max_live,
                        zsh_gl_run_t *r)
{
    size_t es = zsh_gl_esize(precision), i;
    float init[ZSH_GL_MOST];
    zsh_optim_config_t cfg;
    char name[2] = "a";
    int p;

    memset(r, 0, sizeof(*r));
    r->precision = precision;
    r->stage     = stage;
    zsh_optim_config_init(&cfg);
    cfg.stage          = stage;
    cfg.kind           = ZSH_OPTIM_ADAMW;
    cfg.lr             = 0.01;
    cfg.weight_decay   = 0.1;
    cfg.precision      = precision;
    cfg.bucket_size    = 1024;
    cfg.max_live_bytes = max_live;
    if (zsh_optim_create(comm, &cfg, &r->opt) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "create: %s", zsh_last_error());
        return false;
    }
    for (p = 0; p < ZSH_GL_NPARAMS; p++) {
        r->buf[p] = malloc(zsh_gl_sizes[p] * es);
        for (i = 0; i < zsh_gl_sizes[p]; i++) {
            init[i] = (float)sin(0.3 * (double)i + p);
        }
        zsh_half_narrow(precision, init, zsh_gl_sizes[p], r->buf[p]);
        name[0] = (char)('a' + p);
        if (zsh_optim_register(r->opt, name, zsh_gl_sizes[p], precision, r->buf[p],
                               &r->param[p]) != ZSH_OK) {
            zsh_test_fail(__FILE__, __LINE__, "register: %s", zsh_last_error());
            return false;
        }
    }
    if (zsh_optim_setup(r->opt) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "setup: %s", zsh_last_error());
        return false;
    }
    return true;
}

static void zsh_gl_free(zsh_gl_run_t *r)
{
    int p;

    zsh_optim_destroy(r->opt);
    for (p = 0; p < ZSH_GL_NPARAMS; p++) {
        free(r->buf[p]);
    }
}

/* Whether the layer reduces @p's gradient times @mul from where it lies:
 * its bucket holds it alone and unpadded, at stage 2 or 3, in fp32 or
 * bf16, and the factor is 1 or 1/N for a power-of-two N. The layout is
 * read through zsh_optim_param_place(). */
static bool zsh_gl_lendable(zsh_gl_run_t *r, int p, float mul, int n)
{
    size_t bucket, offset, numel, other, o_off, o_numel;
    int q;

    ZSH_EXPECT_STATUS(ZSH_OK,
                      zsh_optim_param_place(r->opt, r->param[p], &bucket, &offset, &numel));
    for (q = 0; q < ZSH_GL_NPARAMS; q++) {
        ZSH_EXPECT_STATUS(ZSH_OK,
                          zsh_optim_param_place(r->opt, r->param[q], &other, &o_off, &o_numel));
        if ((q != p) && (other == bucket)) {
            return false;
        }
    }
    return (r->stage >= 2) && (r->precision != ZSH_FLOAT16) && (numel == zsh_gl_sizes[p]) &&
           ((mul == 1.0f) || (((n & (n - 1)) == 0) && (mul == 1.0f / (float)n)));
}

/* Rank @rank's gradient of @p at step @t: not exact in any precision. */
static void zsh_gl_grad(zsh_dtype_t precision, int p, int t, int rank, void *out)
{
    float g[ZSH_GL_MOST];
    size_t i;

    for (i = 0; i < zsh_gl_sizes[p]; i++) {
        g[i] = (float)(sin(0.7 * (double)i + p + 1.3 * t + 0.4 * rank) * 0.37);
    }
    zsh_half_narrow(precision, g, zsh_gl_sizes[p], out);
}

/* ZSH_GL_STEPS steps of @r, every gradient lent (@lend; waited for with
 * @wait) or handed over scaled, times @mul; each lend's done() checked. */
static bool zsh_gl_train(zsh_gl_run_t *r, int rank, int n, float mul, bool lend, bool wait,
                         const char *how)
{
    uint32_t grads[ZSH_GL_NPARAMS][ZSH_GL_MOST], kept[ZSH_GL_NPARAMS][ZSH_GL_MOST];
    size_t es = zsh_gl_esize(r->precision);
    zsh_gl_lent_t lent[ZSH_GL_NPARAMS];
    zsh_status_t status = ZSH_OK;
    bool lendable;
    int p, t;

    for (t = 1; (status == ZSH_OK) && (t <= ZSH_GL_STEPS); t++) {
        memset(lent, 0, sizeof(lent));
        for (p = ZSH_GL_NPARAMS; (status == ZSH_OK) && (p-- > 0);) {
            zsh_gl_grad(r->precision, p, t, rank, grads[p]);
            if (!lend) {
                status = zsh_optim_grad_ready_scaled(r->opt, r->param[p], grads[p], mul);
                continue;
            }
            memcpy(kept[p], grads[p], zsh_gl_sizes[p] * es);
            lent[p].grad  = grads[p];
            lent[p].copy  = kept[p];
            lent[p].bytes = zsh_gl_sizes[p] * es;
            lendable      = zsh_gl_lendable(r, p, mul, n);
            status = zsh_optim_grad_lend(r->opt, r->param[p], grads[p], mul, zsh_gl_done,
                                         &lent[p]);
            if ((status == ZSH_OK) && wait) {
                status = zsh_optim_grad_wait(r->opt, r->param[p]);
            }
            if ((!lendable || wait) && (lent[p].calls != 1)) {
                zsh_test_fail(__FILE__, __LINE__,
                              "%s, step %d: '%c' was %s, yet done() came %d times before the "
                              "%s returned", how, t, 'a' + p, lendable ? "waited for" : "copied",
                              lent[p].calls, wait ? "wait" : "hand-over");
                return false;
            }
        }
        if (status == ZSH_OK) {
            status = zsh_optim_step(r->opt, NULL);
        }
        for (p = 0; lend && (status == ZSH_OK) && (p < ZSH_GL_NPARAMS); p++) {
            if ((lent[p].calls != 1) || lent[p].changed) {
                zsh_test_fail(__FILE__, __LINE__,
                              "%s, step %d: '%c': done() came %d times by the step's end%s", how,
                              t, 'a' + p, lent[p].calls,
                              lent[p].changed ? ", and the gradient had changed" : "");
                return false;
            }
        }
    }
    if (status != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "%s, step %d: %s", how, t - 1, zsh_last_error());
    }
    return status == ZSH_OK;
}

static void zsh_gl_same_training(zsh_comm_t *comm, zsh_dtype_t precision, int stage, float mul,
                                  bool wait)
{
    uint32_t got[ZSH_GL_MOST], want[ZSH_GL_MOST];
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), p;
    size_t es = zsh_gl_esize(precision), i;
    zsh_optim_stats_t lent_stats, scaled_stats;
    zsh_gl_run_t a, b;
    char how[128];

    snprintf(how, sizeof(how), "%s, stage %d, %d ranks, times %g%s", zsh_dtype_name(precision),
             stage, n, (double)mul, wait ? ", waited for" : "");
    memset(&b, 0, sizeof(b));
    if (!zsh_gl_make(comm, stage, precision, 0, &a) ||
        !zsh_gl_make(comm, stage, precision, 0, &b) ||
        !zsh_gl_train(&a, rank, n, mul, true, wait, how) ||
        !zsh_gl_train(&b, rank, n, mul, false, false, how)) {
        goto out;
    }
    for (p = 0; p < ZSH_GL_NPARAMS; p++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(a.opt, a.param[p], got));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(b.opt, b.param[p], want));
        for (i = 0; i < zsh_gl_sizes[p]; i++) {
            if (memcmp((char *)got + i * es, (char *)want + i * es, es) != 0) {
                zsh_test_fail(__FILE__, __LINE__,
                              "%s: '%c' element %zu after %d steps differs lent and scaled",
                              how, 'a' + p, i, ZSH_GL_STEPS);
                goto out;
            }
        }
    }
    /* Where 'a' was lent at stage 2, no staging buffer ever held its bytes
     * (the other buckets' buffers are a few pages); handed over scaled,
     * one did. */
    if ((stage == 2) && zsh_gl_lendable(&a, 0, mul, n)) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(a.opt, &lent_stats));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(b.opt, &scaled_stats));
        if ((lent_stats.buffer_peak_bytes >= ZSH_GL_MOST * es) ||
            (scaled_stats.buffer_peak_bytes < ZSH_GL_MOST * es)) {
            zsh_test_fail(__FILE__, __LINE__,
                          "%s: buffers peaked at %zu bytes lent, %zu scaled; 'a' is %zu bytes",
                          how, lent_stats.buffer_peak_bytes, scaled_stats.buffer_peak_bytes,
                          ZSH_GL_MOST * es);
        }
    }
out:
    zsh_gl_free(&a);
    zsh_gl_free(&b);
}

ZSH_RANK_TEST(optim_grad_lend, a_lent_gradient_trains_as_one_handed_over_scaled)
{
    static const zsh_dtype_t precisions[] = {ZSH_FLOAT32, ZSH_BFLOAT16, ZSH_FLOAT16};
    float muls[2] = {1.0f, 1.0f / (float)zsh_comm_size(comm)};
    size_t k, m;
    int stage;

    for (k = 0; k < sizeof(precisions) / sizeof(precisions[0]); k++) {
        for (stage = 0; stage <= 3; stage++) {
            for (m = 0; m < 2; m++) {
                zsh_gl_same_training(comm, precisions[k], stage, muls[m], false);
            }
            zsh_gl_same_training(comm, precisions[k], stage, muls[1], true);
        }
    }
}

ZSH_RANK_TEST(optim_grad_lend, lent_gradients_stay_within_max_live_bytes)
{
    uint32_t grads[ZSH_GL_NPARAMS][ZSH_GL_MOST];
    zsh_gl_lent_t lent[ZSH_GL_NPARAMS];
    int rank = zsh_comm_rank(comm), p;
    zsh_gl_run_t r;

    /* A bound of 'a's bytes: 'a' lent fills it, so the staging buffer of
     * the next bucket, which the layer copies, must wait for 'a's
     * reduction. The other ranks lend 'a' only after a pause, so on rank 0
     * that reduction cannot have completed by itself: done() before the
     * next hand-over returns means the lent bytes were counted. */
    if (!zsh_gl_make(comm, 3, ZSH_FLOAT32, ZSH_GL_MOST * sizeof(float), &r)) {
        zsh_gl_free(&r);
        return;
    }
    memset(lent, 0, sizeof(lent));
    for (p = 0; p < ZSH_GL_NPARAMS; p++) {
        zsh_gl_grad(ZSH_FLOAT32, p, 1, rank, grads[p]);
        lent[p].grad = lent[p].copy = grads[p];
        lent[p].bytes = zsh_gl_sizes[p] * sizeof(float);
    }
    if (rank != 0) {
        usleep(200 * 1000);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_lend(r.opt, r.param[0], grads[0], 1.0f,
                                                  zsh_gl_done, &lent[0]));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_lend(r.opt, r.param[1], grads[1], 1.0f,
                                                  zsh_gl_done, &lent[1]));
    ZSH_EXPECT_TRUE(lent[1].calls == 1);
    ZSH_EXPECT_TRUE(lent[0].calls == 1);
    for (p = 2; p < ZSH_GL_NPARAMS; p++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_lend(r.opt, r.param[p], grads[p], 1.0f,
                                                      zsh_gl_done, &lent[p]));
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(r.opt, NULL));
    for (p = 0; p < ZSH_GL_NPARAMS; p++) {
        ZSH_EXPECT_TRUE(lent[p].calls == 1);
    }
    zsh_gl_free(&r);
}

ZSH_RANK_TEST(optim_grad_lend, a_refused_hand_over_gives_the_gradient_back_and_changes_nothing)
{
    uint32_t grad[ZSH_GL_MOST] = {0};
    zsh_gl_lent_t l;
    zsh_gl_run_t r;

    if (!zsh_gl_make(comm, 3, ZSH_FLOAT32, 0, &r)) {
        zsh_gl_free(&r);
        return;
    }
    memset(&l, 0, sizeof(l));
    l.grad = l.copy = grad;
    l.bytes         = sizeof(float);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_optim_grad_lend(r.opt, r.param[0], grad, INFINITY, zsh_gl_done, &l));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "zsh_optim_grad_lend: parameter 'a': the factor "
                                             "inf is not finite") != NULL);
    ZSH_EXPECT_TRUE(l.calls == 1);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_optim_grad_lend(r.opt, r.param[0], NULL, 1.0f, zsh_gl_done, &l));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "grad is NULL") != NULL);
    ZSH_EXPECT_TRUE(l.calls == 2);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_optim_grad_lend(NULL, r.param[0], grad, 1.0f, zsh_gl_done, &l));
    ZSH_EXPECT_TRUE(l.calls == 3);
    /* None took the gradient: a lend does, and a second one is refused and
     * given back at once, the first still lent or already back. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_lend(r.opt, r.param[0], grad, 1.0f, NULL, NULL));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_optim_grad_lend(r.opt, r.param[0], grad, 1.0f, zsh_gl_done, &l));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "already has a gradient pending") != NULL);
    ZSH_EXPECT_TRUE(l.calls == 4);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_zero_grad(r.opt));
    zsh_gl_free(&r);
}
