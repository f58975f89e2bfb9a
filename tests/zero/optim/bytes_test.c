/*
 * The bytes a rank holds and moves, as the layer counts them at allocation
 * and at every collective, against the ZeRO paper's formulas (Ψ parameters,
 * N ranks): fp32 Adam holds 16Ψ, 8Ψ + 8Ψ/N, 4Ψ + 12Ψ/N and 16Ψ/N bytes at
 * stages 0-3, mixed precision (2 + 2 + 12)Ψ/N at stage 3, and a step moves
 * 2Ψ elements at stages 0-2 and 3Ψ at stage 3. Padding to N equal blocks
 * adds less than N elements per bucket, and the estimator agrees.
 */
#include "quad.h"

#include "mem/pool.h"

#include <math.h>
#include <stdio.h>

/* One bucket per parameter, or one for all, and the padded sum of blocks. */
static size_t zsh_bytes_padded(int n, bool per_param)
{
    size_t p, total = 0;

    if (!per_param) {
        return (zsh_quad_psi() + (size_t)n - 1) / (size_t)n * (size_t)n;
    }
    for (p = 0; p < ZSH_QUAD_NPARAMS; p++) {
        total += (zsh_quad_sizes[p] + (size_t)n - 1) / (size_t)n * (size_t)n;
    }
    return total;
}

static void zsh_bytes_expect_near(double formula, size_t actual, double slack, const char *what)
{
    if (!(fabs((double)actual - formula) <= slack)) {
        zsh_test_fail(__FILE__, __LINE__, "%s: %zu bytes, formula %.1f (slack %.0f)", what, actual,
                      formula, slack);
    }
}

static void zsh_bytes_stage(zsh_comm_t *comm, zsh_dtype_t precision, int stage, bool per_param)
{
    int n = zsh_comm_size(comm);
    double psi = (double)zsh_quad_psi(), e = (precision == ZSH_FLOAT32) ? 4.0 : 2.0;
    double k = (precision == ZSH_FLOAT32) ? 8.0 : 12.0;
    double padded = (double)zsh_bytes_padded(n, per_param), count = padded / n;
    double slack  = 16.0 * n * (per_param ? ZSH_QUAD_NPARAMS : 1);
    double want_p[4] = {e * psi, e * psi, e * psi, e * count};
    double want_g[4] = {e * psi, e * padded, e * count, e * count};
    double want_s[4] = {k * psi, k * count, k * count, k * count};
    double formula[4] = {(2 * e + k) * psi, 2 * e * psi + k * psi / n, e * psi + (e + k) * psi / n,
                         (2 * e + k) * psi / n};
    zsh_quad_run_t run = {.bad_rank = -1};
    zsh_optim_estimate_in_t in = {psi, n, stage, precision, 0};
    zsh_optim_estimate_out_t est;
    zsh_optim_config_t cfg;
    /* fp16 checks overflow with one 8-byte all-reduce of the squared norm. */
    size_t norm = ((precision == ZSH_FLOAT16) && (stage > 0) && (n > 1)) ? 16 : 0;
    size_t total, kept;
    char what[96];

    zsh_optim_config_init(&cfg);
    cfg.stage          = stage;
    cfg.precision      = precision;
    cfg.bucket_size    = per_param ? 1 : (1 << 20);
    cfg.max_live_bytes = per_param ? 1 : (1 << 20);
    cfg.loss_scale     = 256.0f; /* small enough that no fp16 gradient overflows */
    snprintf(what, sizeof(what), "%s stage %d, %d ranks, %s", (e == 4.0) ? "fp32" : "mixed", stage,
             n, per_param ? "a bucket per parameter" : "one bucket");
    if (!zsh_quad_train(comm, &cfg, 2, &run)) {
        zsh_quad_free(&run);
        return;
    }
    /* What was allocated, exactly, and the paper's formula up to padding. */
    ZSH_EXPECT_EQ((size_t)want_p[stage], run.stats.param_bytes);
    ZSH_EXPECT_EQ((size_t)want_g[stage], run.stats.grad_bytes);
    ZSH_EXPECT_EQ((size_t)want_s[stage], run.stats.state_bytes);
    total = run.stats.param_bytes + run.stats.grad_bytes + run.stats.state_bytes;
    zsh_bytes_expect_near(formula[stage], total, slack, what);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_estimate(&in, &est));
    zsh_bytes_expect_near(est.param_bytes + est.grad_bytes + est.state_bytes, total, slack, what);
    /* Traffic: an all-reduce counts twice its buffer, so 2Ψ at stages 0-2;
     * stage 3 gathers forward and backward: 3Ψ when nothing stays cached. */
    if (stage == 0) {
        ZSH_EXPECT_EQ((size_t)(2 * e * psi) + norm, run.stats.comm_bytes_last_step);
    } else if ((stage < 3) || per_param) {
        ZSH_EXPECT_EQ((size_t)(((stage < 3) ? 2 : 3) * e * padded) + norm,
                      run.stats.comm_bytes_last_step);
        zsh_bytes_expect_near(est.comm_bytes, run.stats.comm_bytes_last_step, slack, what);
    } else {
        /* One bucket stays live through the step: it is gathered once. */
        ZSH_EXPECT_EQ((size_t)(2 * e * padded) + norm, run.stats.comm_bytes_last_step);
    }
    /* Buffers: at most one gathered and one staged copy of the model (in
     * whole pages where the budget lets the pools keep them); after the
     * final parameters are read, stage 3 keeps a gathered bucket cached,
     * and stages 1-3 the bucket's staging or publishing buffer for the next
     * step, each only if the budget allows it. */
    kept = ((stage > 0) && !per_param) ? zsh_pool_round((size_t)(e * padded)) : 0;
    ZSH_EXPECT_TRUE(run.stats.buffer_peak_bytes <= 2 * zsh_pool_round((size_t)(e * padded)));
    ZSH_EXPECT_EQ(((stage == 3) ? kept : 0) + kept, run.stats.buffer_bytes);
    zsh_quad_free(&run);
}

ZSH_RANK_TEST(optim_bytes, fp32_adam_holds_16_8_plus_8_over_n_4_plus_12_over_n_16_over_n_psi)
{
    int stage;

    for (stage = 0; stage <= 3; stage++) {
        zsh_bytes_stage(comm, ZSH_FLOAT32, stage, false);
        zsh_bytes_stage(comm, ZSH_FLOAT32, stage, true);
    }
}

ZSH_RANK_TEST(optim_bytes, mixed_precision_holds_2_plus_2_plus_12_psi_sharded_by_stage)
{
    int stage;

    for (stage = 0; stage <= 3; stage++) {
        zsh_bytes_stage(comm, ZSH_BFLOAT16, stage, false);
        zsh_bytes_stage(comm, ZSH_FLOAT16, stage, true);
    }
}

ZSH_TEST(optim_bytes, estimator_follows_the_zero_paper)
{
    zsh_optim_estimate_in_t in = {7.5e9, 64, 0, ZSH_FLOAT16, 0};
    zsh_optim_estimate_out_t out;
    double psi = 7.5e9;

    /* The paper's example: 7.5B parameters, 64 GPUs, mixed precision. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_estimate(&in, &out));
    ZSH_EXPECT_TRUE(out.device_bytes == 16 * psi);
    in.stage = 1;
    zsh_optim_estimate(&in, &out);
    ZSH_EXPECT_TRUE(out.device_bytes == 4 * psi + 12 * psi / 64);
    in.stage = 2;
    zsh_optim_estimate(&in, &out);
    ZSH_EXPECT_TRUE(out.device_bytes == 2 * psi + 14 * psi / 64);
    in.stage = 3;
    zsh_optim_estimate(&in, &out);
    ZSH_EXPECT_TRUE(out.device_bytes == 16 * psi / 64);
    ZSH_EXPECT_TRUE(out.comm_bytes == 3 * 2 * psi);
    in.offload = 1;
    zsh_optim_estimate(&in, &out);
    ZSH_EXPECT_TRUE(out.device_bytes == 2 * psi / 64);
    ZSH_EXPECT_TRUE(out.host_bytes == 14 * psi / 64);
    in.stage = 4;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_estimate(&in, &out));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "stage=4");
}
