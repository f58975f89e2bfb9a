/*
 * The bucket-sized host buffers of a step (zero/optim/bufs.c): the staging
 * buffers that collect gradients at stages 2-3, the buffers the step
 * all-gathers parameters in at stages 1-2 and those stage 3 gathers buckets
 * in are kept in the optimizer's pools and taken again by the next step: five steps allocate at most one per
 * bucket in all, not one per bucket each step; a parameter
 * alone in its bucket and unpadded is all-gathered in its own buffer, with
 * no bucket buffer at all. The parameters are SGD's exactly either way
 * (dyadic values: every sum and product here is exact), and the gradient
 * norm is theirs: a kept buffer that another bucket takes brings nothing
 * into its padding, whose reduced shard stays zero.
 */
#include "harness/zsh_test.h"
#include "optim/optim_impl.h"

#include <zeroshard/optim.h>

#include <math.h>
#include <stdlib.h>

#define ZSH_BB_STEPS 5
#define ZSH_BB_LR    0.25f

static float zsh_bb_init(size_t p, size_t i)
{
    return (float)((i * 3 + p) % 11) * 0.5f;
}

static float zsh_bb_grad(size_t p, size_t i)
{
    return (float)((int)((i + p * 5) % 7) - 3) * 0x1p-6f;
}

#define ZSH_BB_MAXPARAMS 8

/* An optimizer trained by zsh_bb_train(), and the buffers registered with it. */
typedef struct zsh_bb {
    zsh_optim_t  *opt;
    float        *bufs[ZSH_BB_MAXPARAMS];
    size_t        nparams;
    unsigned long allocs; /* the pool's allocations after the first step */
} zsh_bb_t;

static void zsh_bb_done(zsh_bb_t *bb)
{
    size_t p;

    zsh_optim_destroy(bb->opt);
    for (p = 0; p < bb->nparams; p++) {
        free(bb->bufs[p]);
    }
}

/* Stages 2-3: the padding of each reduced gradient shard is zero. */
static void zsh_bb_expect_zero_padding(const zsh_optim_t *opt)
{
    const zsh_obucket_t *b;
    size_t i, j;

    if (opt->cfg.stage < 2) {
        return;
    }
    for (i = 0; i < opt->nbuckets; i++) {
        b = &opt->buckets[i];
        for (j = (b->hi > b->lo) ? b->hi - b->lo : 0; j < b->count; j++) {
            if (((const float *)b->grad_shard)[j] != 0.0f) {
                zsh_test_fail(__FILE__, __LINE__, "bucket %zu: padding element %zu of the "
                              "gradient shard holds %g", i, j,
                              (double)((const float *)b->grad_shard)[j]);
                return;
            }
        }
    }
}

/* Train @nparams parameters of @sizes for ZSH_BB_STEPS steps of SGD at
 * @stage; each rank hands over the same gradients, so the update is n times
 * theirs. Expects the exact result; @bb: the optimizer, still alive. */
static void zsh_bb_train(zsh_comm_t *comm, int stage, size_t bucket_size, const size_t *sizes,
                         size_t nparams, zsh_bb_t *bb)
{
    int n = zsh_comm_size(comm), step, applied;
    zsh_optim_config_t cfg;
    zsh_param_t *params[ZSH_BB_MAXPARAMS];
    float *grads[ZSH_BB_MAXPARAMS] = {NULL}, *data;
    zsh_optim_stats_t stats;
    zsh_optim_t *opt;
    size_t p, i;
    bool exact = true;
    double norm = 0.0, g;

    zsh_optim_config_init(&cfg);
    cfg.stage       = stage;
    cfg.kind        = ZSH_OPTIM_SGD;
    cfg.lr          = ZSH_BB_LR;
    cfg.bucket_size = bucket_size;
    /* Far above the norm: nothing is clipped, but the step computes it. */
    cfg.max_grad_norm = 1e6f;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    bb->opt     = opt;
    bb->nparams = nparams;
    for (p = 0; p < nparams; p++) {
        bb->bufs[p] = malloc(sizes[p] * sizeof(float));
        grads[p]    = malloc(sizes[p] * sizeof(float));
        ZSH_ASSERT_TRUE((bb->bufs[p] != NULL) && (grads[p] != NULL));
        for (i = 0; i < sizes[p]; i++) {
            bb->bufs[p][i] = zsh_bb_init(p, i);
            grads[p][i]    = zsh_bb_grad(p, i);
        }
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "w", sizes[p], ZSH_FLOAT32,
                                                     bb->bufs[p], &params[p]));
        for (i = 0; i < sizes[p]; i++) {
            g = (double)n * (double)grads[p][i];
            norm += g * g;
        }
    }
    norm = sqrt(norm);
    for (step = 1; step <= ZSH_BB_STEPS; step++) {
        for (p = 0; p < nparams; p++) { /* forward: stage 3 gathers */
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_fetch(opt, params[p], (void **)&data));
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_release(opt, params[p]));
        }
        for (p = nparams; p-- > 0;) {
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, params[p], grads[p]));
        }
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_step(opt, &applied));
        ZSH_EXPECT_EQ(1, applied);
        /* A kept buffer taken by another bucket must not bring what it held
         * into that bucket's padding: the norm counts only the gradients
         * (squares of multiples of 2^-6 add up exactly in any order). */
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, &stats));
        ZSH_EXPECT_TRUE(stats.last_grad_norm == norm);
        zsh_bb_expect_zero_padding(opt);
        if (step == 1) {
            bb->allocs = opt->bufs.allocs;
        }
    }
    for (p = 0; p < nparams; p++) {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_fetch(opt, params[p], (void **)&data));
        for (i = 0; i < sizes[p]; i++) {
            exact = exact && (data[i] == zsh_bb_init(p, i) - (float)ZSH_BB_STEPS * ZSH_BB_LR *
                                                                 (float)n * zsh_bb_grad(p, i));
        }
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_release(opt, params[p]));
    }
    ZSH_EXPECT_TRUE(exact);
    for (p = 0; p < nparams; p++) {
        free(grads[p]);
    }
}

ZSH_RANK_TEST(optim_bucket_bufs, steps_allocate_at_most_one_buffer_per_bucket_in_all)
{
    /* Two buckets of two parameters, and one parameter of its own. */
    static const size_t sizes[5] = {300, 700, 37, 19, 2001};
    zsh_bb_t bb = {0};
    int stage;

    for (stage = 1; stage <= 3; stage++) {
        zsh_bb_train(comm, stage, 4096, sizes, 5, &bb);
        if (zsh_test_failures() == 0) {
            /* How many are in flight at once depends on when reductions
             * finish; never more than one per bucket. */
            ZSH_EXPECT_TRUE(bb.allocs > 0);
            ZSH_EXPECT_TRUE(bb.opt->bufs.allocs <= bb.opt->nbuckets);
            ZSH_EXPECT_TRUE(bb.opt->bufs.held > 0);
            /* Stage 3's gathered buckets likewise. */
            ZSH_EXPECT_TRUE((stage == 3) == (bb.opt->gathers.allocs > 0));
            ZSH_EXPECT_TRUE(bb.opt->gathers.allocs <= bb.opt->nbuckets);
        }
        zsh_bb_done(&bb);
    }
}

ZSH_RANK_TEST(optim_bucket_bufs, a_lone_unpadded_parameter_is_all_gathered_in_its_own_buffer)
{
    /* 840 elements: a multiple of every rank count the runner uses. */
    static const size_t sizes[1] = {840};
    zsh_optim_stats_t stats;
    zsh_bb_t bb = {0};

    zsh_bb_train(comm, 1, 1 << 20, sizes, 1, &bb);
    if (zsh_test_failures() == 0) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(bb.opt, &stats));
        ZSH_EXPECT_EQ(0, stats.buffer_peak_bytes);
        ZSH_EXPECT_EQ(0, bb.allocs);
    }
    zsh_bb_done(&bb);
}
