/*
 * qwZ, the quantized forward gather of stage 3, forced on (ZSH_QUANTIZE_ON:
 * the in-process ranks share one node, where auto leaves it off): a
 * bucket's first gather after an update gives every element within half
 * its block's scale of the shard's value, a later gather (backward's, here
 * after an eviction, or once backward has begun where the forward's copy was
 * cached, by the first gradient or the caller's zsh_optim_backward_begin())
 * gives the exact values, an update makes the next gather quantized again,
 * zsh_optim_get_param() reads the exact values always without sparing the
 * forward its int8 gather, and the stats count the quantized bytes as they
 * travelled; training stays within a stated distance of the run without
 * it (bf16 and fp16: qwz_half_test.c); what cannot apply is refused by name (int4 weights, qgZ on one node or
 * below stage 2 among them), and auto is off on one node, for weights and
 * gradients. Across nodes, tests/zero/optim/run_hpz.sh trains with both.
 */
#include "quad.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_QWZ_N     5000
#define ZSH_QWZ_BLOCK 256

/* Values whose magnitudes differ from block to block, with zeros among them. */
static float zsh_qwz_value(int p, size_t i)
{
    double mag = ldexp(1.0, (int)((i / ZSH_QWZ_BLOCK) % 9) - 4);

    return (i % 17 == 3) ? 0.0f : (float)(mag * sin(0.37 * (double)i + p));
}

/* @got against the exact values of parameter @p: exactly, or where
 * @quantized within its block's bound (half the block's largest magnitude
 * over 127, with the fp32 rounding quant.h allows) and different somewhere.
 * Blocks start at each rank's part of @count elements. */
static void zsh_qwz_check(const float *got, int p, size_t count, bool quantized,
                          const char *what)
{
    size_t i, differ = 0, last_b0 = SIZE_MAX;
    double m = 0.0, bound;

    for (i = 0; i < ZSH_QWZ_N; i++) {
        float want = zsh_qwz_value(p, i);
        size_t part = i / count * count, b0 = part + (i - part) / ZSH_QWZ_BLOCK * ZSH_QWZ_BLOCK;
        size_t b1 = b0 + ZSH_QWZ_BLOCK, j;

        for (j = b0; (b0 != last_b0) && (j < b1) && (j < part + count) && (j < ZSH_QWZ_N); j++) {
            m = fmax((j == b0) ? 0.0 : m, fabs((double)zsh_qwz_value(p, j)));
        }
        last_b0 = b0;
        bound   = quantized ? m / 127.0 / 2.0 * (1.0 + 0x1p-12) : 0.0;
        differ += got[i] != want;
        if ((fabs((double)got[i] - (double)want) > bound) || ((want == 0.0f) && (got[i] != 0.0f))) {
            zsh_test_fail(__FILE__, __LINE__, "%s: element %zu of parameter %d is %a, not %a "
                          "within %a", what, i, p, (double)got[i], (double)want, bound);
            return;
        }
    }
    if (quantized && (differ == 0)) {
        zsh_test_fail(__FILE__, __LINE__, "%s: parameter %d came back exact: not quantized",
                      what, p);
    }
}

/* Fetch parameter @p, check it, release it. */
static bool zsh_qwz_fetch(zsh_optim_t *opt, zsh_param_t *param, int p, size_t count,
                          bool quantized, const char *what)
{
    void *data = NULL;

    if (zsh_optim_fetch(opt, param, &data) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "%s: fetch of %d: %s", what, p, zsh_last_error());
        return false;
    }
    zsh_qwz_check(data, p, count, quantized, what);
    return zsh_optim_release(opt, param) == ZSH_OK;
}

/* Stage 3 with qwZ on, an SGD step that changes nothing (the values stay
 * known), no prefetch, buckets of @bucket_size bytes and @max_live of them
 * gathered; parameters "a" and "b" of ZSH_QWZ_N values each (init[p], which
 * the caller frees), set up. False, with the failure reported, if any of
 * that failed. */
static bool zsh_qwz_open(zsh_comm_t *comm, size_t bucket_size, size_t max_live,
                         zsh_optim_t **opt, zsh_param_t *param[2], float *init[2])
{
    zsh_optim_config_t cfg;
    size_t i;
    int p;

    zsh_optim_config_init(&cfg);
    cfg.stage            = 3;
    cfg.kind             = ZSH_OPTIM_SGD;
    cfg.lr               = 0.0f;
    cfg.bucket_size      = bucket_size;
    cfg.max_live_bytes   = max_live;
    cfg.prefetch         = 0;
    cfg.quantize_weights = ZSH_QUANTIZE_ON;
    cfg.quantize_block   = ZSH_QWZ_BLOCK;
    if (zsh_optim_create(comm, &cfg, opt) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "create: %s", zsh_last_error());
        return false;
    }
    for (p = 0; p < 2; p++) {
        init[p] = malloc(ZSH_QWZ_N * sizeof(float));
        if (init[p] == NULL) {
            zsh_test_fail(__FILE__, __LINE__, "no memory");
            return false;
        }
        for (i = 0; i < ZSH_QWZ_N; i++) {
            init[p][i] = zsh_qwz_value(p, i);
        }
        if (zsh_optim_register(*opt, p ? "b" : "a", ZSH_QWZ_N, ZSH_FLOAT32, init[p],
                               &param[p]) != ZSH_OK) {
            zsh_test_fail(__FILE__, __LINE__, "register: %s", zsh_last_error());
            return false;
        }
    }
    if (zsh_optim_setup(*opt) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "setup: %s", zsh_last_error());
        return false;
    }
    return true;
}

ZSH_RANK_TEST(optim_qwz, first_gather_is_quantized_within_the_bound_and_later_ones_exact)
{
    int n = zsh_comm_size(comm), p, applied = 0;
    size_t count = (ZSH_QWZ_N + (size_t)n - 1) / (size_t)n;
    size_t nb = (count + ZSH_QWZ_BLOCK - 1) / ZSH_QWZ_BLOCK;
    size_t part = (nb * 4 + count + 3) / 4 * 4;
    float *init[2] = {NULL, NULL}, *grad = calloc(ZSH_QWZ_N, sizeof(float));
    zsh_optim_stats_t st;
    zsh_optim_t *opt = NULL;
    zsh_param_t *param[2];

    /* A bucket per parameter, one gathered at a time. */
    if (!zsh_qwz_open(comm, 1024, ZSH_QWZ_N * sizeof(float), &opt, param, init) ||
        !zsh_qwz_fetch(opt, param[0], 0, count, true, "a, forward") ||
        !zsh_qwz_fetch(opt, param[1], 1, count, true, "b, forward (a evicted)") ||
        !zsh_qwz_fetch(opt, param[0], 0, count, false, "a, backward")) {
        goto out;
    }
    for (p = 0; p < 2; p++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, param[p], grad));
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, &applied));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, &st));
    ZSH_EXPECT_EQ(1, st.quantize_weights);
    ZSH_EXPECT_EQ(2, st.qwz_gathers);
    ZSH_EXPECT_EQ(0, st.qwz_nonfinite_blocks);
    /* Two gathers as int8 parts, one in fp32, the reduce-scatters in fp32. */
    ZSH_EXPECT_EQ(2 * part * (size_t)n, st.comm_bytes_quantized_last_step);
    ZSH_EXPECT_EQ(2 * part * (size_t)n + 3 * count * (size_t)n * sizeof(float),
                  st.comm_bytes_last_step);
    /* The update makes the next gather the first again. */
    zsh_qwz_fetch(opt, param[1], 1, count, true, "b, after the step");
out:
    zsh_optim_destroy(opt);
    free(init[0]);
    free(init[1]);
    free(grad);
}

/* One bucket holding both parameters and room to keep it: the forward's
 * int8 copy stays cached between its uses, and the first gradient of the
 * step (backward has begun) drops it, so that backward gathers the exact
 * values rather than compute its gradients through the rounded ones. */
ZSH_RANK_TEST(optim_qwz, backward_gathers_exact_values_where_the_forwards_int8_copy_was_cached)
{
    int n = zsh_comm_size(comm), applied = 0;
    size_t count = (2 * ZSH_QWZ_N + (size_t)n - 1) / (size_t)n;
    float *init[2] = {NULL, NULL}, *grad = calloc(ZSH_QWZ_N, sizeof(float));
    zsh_optim_stats_t st;
    zsh_optim_t *opt = NULL;
    zsh_param_t *param[2];
    void *data = NULL;

    /* Both in one bucket, which stays cached. */
    if (!zsh_qwz_open(comm, 4 * ZSH_QWZ_N * sizeof(float), 4 * ZSH_QWZ_N * sizeof(float), &opt,
                      param, init)) {
        goto out;
    }
    /* a leads the bucket, so the check's parts (from a's first element)
     * are the bucket's; b, from the cached copy, is fetched unchecked. */
    if (!zsh_qwz_fetch(opt, param[0], 0, count, true, "a, forward") ||
        (zsh_optim_fetch(opt, param[1], &data) != ZSH_OK) ||
        (zsh_optim_release(opt, param[1]) != ZSH_OK)) {
        zsh_test_fail(__FILE__, __LINE__, "the forward: %s", zsh_last_error());
        goto out;
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, param[1], grad));
    if (!zsh_qwz_fetch(opt, param[0], 0, count, false, "a, backward")) {
        goto out;
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, param[0], grad));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, &applied));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, &st));
    ZSH_EXPECT_EQ(1, st.qwz_gathers);
    /* The next step's forward is quantized again. */
    zsh_qwz_fetch(opt, param[0], 0, count, true, "a, forward after the step");
out:
    zsh_optim_destroy(opt);
    free(init[0]);
    free(init[1]);
    free(grad);
}

/* The same bucket, where backward's first gather comes before any gradient
 * (the unit that ran last in the forward is the first to run backward): the
 * caller's zsh_optim_backward_begin() drops the forward's int8 copy, once
 * however often it is called, and the step's next forward is int8 again. */
ZSH_RANK_TEST(optim_qwz, backward_begin_makes_the_gather_before_any_gradient_exact)
{
    int n = zsh_comm_size(comm), p, s, applied = 0;
    size_t count = (2 * ZSH_QWZ_N + (size_t)n - 1) / (size_t)n;
    float *init[2] = {NULL, NULL}, *grad = calloc(ZSH_QWZ_N, sizeof(float));
    zsh_optim_stats_t st;
    zsh_optim_t *opt = NULL;
    zsh_param_t *param[2];
    void *data = NULL;

    if (!zsh_qwz_open(comm, 4 * ZSH_QWZ_N * sizeof(float), 4 * ZSH_QWZ_N * sizeof(float), &opt,
                      param, init)) {
        goto out;
    }
    for (s = 0; s < 2; s++) {
        if (!zsh_qwz_fetch(opt, param[0], 0, count, true, "a, forward") ||
            (zsh_optim_fetch(opt, param[1], &data) != ZSH_OK) ||
            (zsh_optim_release(opt, param[1]) != ZSH_OK)) {
            zsh_test_fail(__FILE__, __LINE__, "step %d, the forward: %s", s, zsh_last_error());
            goto out;
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_backward_begin(opt));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_backward_begin(opt));
        if (!zsh_qwz_fetch(opt, param[0], 0, count, false, "a, backward before any gradient")) {
            goto out;
        }
        for (p = 0; p < 2; p++) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, param[p], grad));
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, &applied));
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, &st));
    ZSH_EXPECT_EQ(2, st.qwz_gathers);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_backward_begin(NULL));
out:
    zsh_optim_destroy(opt);
    free(init[0]);
    free(init[1]);
    free(grad);
}

/* zsh_optim_get_param() reads the exact values (a state dict, a model
 * given back) wherever a fetch would give int8: before the forward, from
 * the forward's cached int8 copy, after a step; the copy a read leaves
 * cached does not spare the forward its int8 gather; a bucket fetched with
 * int8 values is refused until released. */
ZSH_RANK_TEST(optim_qwz, get_param_reads_the_exact_values_and_leaves_the_forward_int8)
{
    int n = zsh_comm_size(comm), p, applied = 0;
    size_t count = (2 * ZSH_QWZ_N + (size_t)n - 1) / (size_t)n;
    float *init[2] = {NULL, NULL}, *grad = calloc(ZSH_QWZ_N, sizeof(float));
    float *out = malloc(ZSH_QWZ_N * sizeof(float));
    zsh_optim_stats_t st;
    zsh_optim_t *opt = NULL;
    zsh_param_t *param[2];
    void *data = NULL;

    /* Both in one bucket, which stays cached. */
    if ((grad == NULL) || (out == NULL) ||
        !zsh_qwz_open(comm, 4 * ZSH_QWZ_N * sizeof(float), 4 * ZSH_QWZ_N * sizeof(float), &opt,
                      param, init)) {
        goto out;
    }
    for (p = 0; p < 2; p++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(opt, param[p], out));
        zsh_qwz_check(out, p, count, false, "read before the forward");
    }
    if (!zsh_qwz_fetch(opt, param[0], 0, count, true, "a, forward after a read")) {
        goto out;
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(opt, param[0], out));
    zsh_qwz_check(out, 0, count, false, "read of the forward's cached int8 copy");
    /* The bucket comes back as int8 only from a step's first gather: the
     * read's exact copy serves the rest of the step. */
    if (!zsh_qwz_fetch(opt, param[0], 0, count, false, "a, after the read")) {
        goto out;
    }
    for (p = 0; p < 2; p++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, param[p], grad));
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, &applied));
    /* The next step: a fetched and held as int8; neither it nor its
     * bucket's b can be read exact until it is released. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_fetch(opt, param[0], &data));
    if (data != NULL) {
        zsh_qwz_check(data, 0, count, true, "a, forward after the step");
    }
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_get_param(opt, param[0], out));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_get_param(opt, param[1], out));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, param[0]));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(opt, param[1], out));
    zsh_qwz_check(out, 1, count, false, "b, read after the step's int8 gather");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, &st));
    ZSH_EXPECT_EQ(2, st.qwz_gathers);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_get_param(opt, param[0], NULL));
out:
    zsh_optim_destroy(opt);
    free(init[0]);
    free(init[1]);
    free(grad);
    free(out);
}

ZSH_RANK_TEST(optim_qwz, training_stays_within_a_thousandth_of_the_loss_without_it)
{
    zsh_quad_run_t plain = {.bad_rank = -1}, quant = {.bad_rank = -1};
    zsh_optim_config_t cfg;
    int s;

    zsh_optim_config_init(&cfg);
    cfg.stage          = 3;
    cfg.lr             = 0.01f;
    cfg.bucket_size    = 1;
    cfg.max_live_bytes = 1;
    cfg.quantize_block = 64;
    if (zsh_quad_train(comm, &cfg, 10, &plain)) {
        cfg.quantize_weights = ZSH_QUANTIZE_ON;
        if (zsh_quad_train(comm, &cfg, 10, &quant)) {
            for (s = 0; s < 10; s++) {
                if (!(fabs(quant.loss[s] - plain.loss[s]) <= 1e-3 * fabs(plain.loss[s]))) {
                    zsh_test_fail(__FILE__, __LINE__, "step %d: loss %.9g with qwZ, %.9g "
                                  "without", s + 1, quant.loss[s], plain.loss[s]);
                }
            }
            ZSH_EXPECT_TRUE(quant.stats.qwz_gathers > 0);
            ZSH_EXPECT_TRUE(quant.stats.comm_bytes_quantized_last_step > 0);
            ZSH_EXPECT_TRUE(quant.stats.comm_bytes_last_step < plain.stats.comm_bytes_last_step);
        }
    }
    zsh_quad_free(&plain);
    zsh_quad_free(&quant);
}

/* A LayerNorm's gains (about 1.0), a weight of about 0.02 and a zero bias,
 * one bucket: the first gather must give each parameter's elements within
 * half a step of its own blocks, blocks that restart at each parameter
 * (quant/cuts.h) and at each rank's part. Blocks that ran on from the
 * gains into the weight gave that weight the gains' step, 1/127: errors up
 * to 0.0039 on values of 0.02 (train_gpt.py's model lost 10% of its loss
 * over 300 steps so). */
#define ZSH_QWZ_NCUT 3

static const size_t zsh_qwz_cut_numel[ZSH_QWZ_NCUT] = {100, 3000, 40};

static float zsh_qwz_cut_value(int p, size_t i)
{
    return (p == 0) ? (float)(1.0 + 0.01 * sin((double)i))
                    : (p == 1) ? (float)(0.02 * sin(0.37 * (double)i + 1.0)) : 0.0f;
}

ZSH_RANK_TEST(optim_qwz, blocks_restart_at_each_parameter_so_small_weights_keep_their_step)
{
    int n = zsh_comm_size(comm), p;
    size_t start[ZSH_QWZ_NCUT + 1] = {0}, total, count, i, g, j, lo, hi, b0, differ = 0;
    float *init[ZSH_QWZ_NCUT] = {NULL};
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *param[ZSH_QWZ_NCUT];
    void *data = NULL;
    double m, bound;
    char name[8];

    for (p = 0; p < ZSH_QWZ_NCUT; p++) {
        start[p + 1] = start[p] + zsh_qwz_cut_numel[p];
    }
    total = start[ZSH_QWZ_NCUT];
    count = (total + (size_t)n - 1) / (size_t)n;
    zsh_optim_config_init(&cfg);
    cfg.stage            = 3;
    cfg.kind             = ZSH_OPTIM_SGD;
    cfg.bucket_size      = 1u << 20; /* one bucket */
    cfg.prefetch         = 0;
    cfg.quantize_weights = ZSH_QUANTIZE_ON;
    cfg.quantize_block   = ZSH_QWZ_BLOCK;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    for (p = 0; p < ZSH_QWZ_NCUT; p++) {
        init[p] = malloc(zsh_qwz_cut_numel[p] * sizeof(float));
        for (i = 0; i < zsh_qwz_cut_numel[p]; i++) {
            init[p][i] = zsh_qwz_cut_value(p, i);
        }
        snprintf(name, sizeof(name), "p%d", p);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, name, zsh_qwz_cut_numel[p],
                                                     ZSH_FLOAT32, init[p], &param[p]));
    }
    if (zsh_optim_setup(opt) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "setup: %s", zsh_last_error());
        goto out;
    }
    for (p = 0; p < ZSH_QWZ_NCUT; p++) {
        if (zsh_optim_fetch(opt, param[p], &data) != ZSH_OK) {
            zsh_test_fail(__FILE__, __LINE__, "fetch of p%d: %s", p, zsh_last_error());
            goto out;
        }
        for (i = 0; i < zsh_qwz_cut_numel[p]; i++) {
            /* Element i's block: within its parameter and its rank's part. */
            g  = start[p] + i;
            lo = (g / count * count > start[p]) ? g / count * count : start[p];
            hi = (g / count * count + count < start[p + 1]) ? g / count * count + count
                                                             : start[p + 1];
            b0 = lo + (g - lo) / ZSH_QWZ_BLOCK * ZSH_QWZ_BLOCK;
            for (m = 0.0, j = b0; (j < b0 + ZSH_QWZ_BLOCK) && (j < hi); j++) {
                m = fmax(m, fabs((double)zsh_qwz_cut_value(p, j - start[p])));
            }
            bound = m / 127.0 / 2.0 * (1.0 + 0x1p-12);
            differ += ((const float *)data)[i] != init[p][i];
            if (!(fabs((double)((const float *)data)[i] - (double)init[p][i]) <= bound)) {
                zsh_test_fail(__FILE__, __LINE__, "p%d element %zu is %.9g, not %.9g within "
                              "%.3g (its block's own step)", p, i,
                              (double)((const float *)data)[i], (double)init[p][i], bound);
                break;
            }
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, param[p]));
    }
    ZSH_EXPECT_TRUE(differ > 0);
out:
    zsh_optim_destroy(opt);
    for (p = 0; p < ZSH_QWZ_NCUT; p++) {
        free(init[p]);
    }
}

/* zsh_optim_create with qwZ @mode at @stage, @precision, @offload; the
 * status, with the error in @err. */
static zsh_status_t zsh_qwz_create(zsh_comm_t *comm, int mode, int stage, zsh_dtype_t precision,
                                   zsh_offload_t offload, size_t block, zsh_optim_stats_t *st,
                                   char *err, size_t errlen)
{
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_status_t status;

    zsh_optim_config_init(&cfg);
    cfg.stage            = stage;
    cfg.precision        = precision;
    cfg.offload_params   = offload;
    cfg.quantize_weights = mode;
    cfg.quantize_block   = block;
    status = zsh_optim_create(comm, &cfg, &opt);
    snprintf(err, errlen, "%s", zsh_last_error());
    if ((status == ZSH_OK) && (st != NULL)) {
        zsh_optim_get_stats(opt, st);
    }
    zsh_optim_destroy(opt);
    return status;
}

/* Weights on at stage 3 with @bits of levels. */
static zsh_status_t zsh_qwz_create_bits(zsh_comm_t *comm, int bits, char *err, size_t errlen)
{
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_status_t status;

    zsh_optim_config_init(&cfg);
    cfg.stage                = 3;
    cfg.quantize_weights     = ZSH_QUANTIZE_ON;
    cfg.quantize_weight_bits = bits;
    status = zsh_optim_create(comm, &cfg, &opt);
    snprintf(err, errlen, "%s", zsh_last_error());
    zsh_optim_destroy(opt);
    return status;
}

/* Gradients in @mode at @stage; auto must leave them off on one node. */
static zsh_status_t zsh_qwz_create_grads(zsh_comm_t *comm, int mode, int stage, char *err,
                                         size_t errlen)
{
    zsh_optim_config_t cfg;
    zsh_optim_stats_t st;
    zsh_optim_t *opt = NULL;
    zsh_status_t status;

    zsh_optim_config_init(&cfg);
    cfg.stage          = stage;
    cfg.quantize_grads = mode;
    status = zsh_optim_create(comm, &cfg, &opt);
    snprintf(err, errlen, "%s", zsh_last_error());
    if (status == ZSH_OK) {
        zsh_optim_get_stats(opt, &st);
        ZSH_EXPECT_EQ(0, st.quantize_grads);
    }
    zsh_optim_destroy(opt);
    return status;
}

ZSH_RANK_TEST(optim_qwz, what_cannot_apply_is_refused_by_name_and_auto_is_off_on_one_node)
{
    char err[512];
    zsh_optim_stats_t st;

    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_qwz_create(comm, ZSH_QUANTIZE_ON, 2, ZSH_FLOAT32,
                                                          ZSH_OFFLOAD_NONE, 0, NULL, err,
                                                          sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "quantize_weights needs stage 3");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_qwz_create(comm, ZSH_QUANTIZE_ON, 3, ZSH_FLOAT32,
                                                          ZSH_OFFLOAD_CPU, 0, NULL, err,
                                                          sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "offload_params=cpu");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_qwz_create(comm, ZSH_QUANTIZE_ON, 3, ZSH_FLOAT32,
                                                          ZSH_OFFLOAD_NONE, (1u << 20) + 1, NULL,
                                                          err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "quantize_block: quantization block of 1048577");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_qwz_create(comm, 7, 3, ZSH_FLOAT32,
                                                          ZSH_OFFLOAD_NONE, 0, NULL, err,
                                                          sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "quantize_weights is 7");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_qwz_create_bits(comm, 4, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "quantize_weight_bits=4: qwZ sends int8 weights only");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_qwz_create_grads(comm, ZSH_QUANTIZE_ON, 2, err,
                                                                sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "quantize_grads on one node");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_qwz_create_grads(comm, ZSH_QUANTIZE_ON, 1, err,
                                                                sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "quantize_grads needs stage 2 or 3");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_qwz_create_grads(comm, ZSH_QUANTIZE_AUTO, 3, err, sizeof(err)));
    /* One node: auto leaves it off, on is honoured (its cost is the point). */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_qwz_create(comm, ZSH_QUANTIZE_AUTO, 3, ZSH_FLOAT32,
                                             ZSH_OFFLOAD_NONE, 0, &st, err, sizeof(err)));
    ZSH_EXPECT_EQ(0, st.quantize_weights);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_qwz_create(comm, ZSH_QUANTIZE_ON, 3, ZSH_FLOAT32,
                                             ZSH_OFFLOAD_NONE, 0, &st, err, sizeof(err)));
    ZSH_EXPECT_EQ(1, st.quantize_weights);
    /* Every precision quantizes; auto below stage 3 is simply off. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_qwz_create(comm, ZSH_QUANTIZE_ON, 3, ZSH_BFLOAT16,
                                             ZSH_OFFLOAD_NONE, 0, &st, err, sizeof(err)));
    ZSH_EXPECT_EQ(1, st.quantize_weights);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_qwz_create(comm, ZSH_QUANTIZE_ON, 3, ZSH_FLOAT16,
                                             ZSH_OFFLOAD_NONE, 0, &st, err, sizeof(err)));
    ZSH_EXPECT_EQ(1, st.quantize_weights);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_qwz_create(comm, ZSH_QUANTIZE_AUTO, 1, ZSH_BFLOAT16,
                                             ZSH_OFFLOAD_NONE, 0, &st, err, sizeof(err)));
    ZSH_EXPECT_EQ(0, st.quantize_weights);
}

ZSH_RANK_TEST(optim_qwz, the_deterministic_mode_refuses_it_and_auto_leaves_it_off)
{
    zsh_optim_config_t cfg;
    zsh_optim_stats_t st;
    zsh_optim_t *opt = NULL;
    zsh_comm_t *dup = NULL;

    /* A communicator of its own: the mode, once set, stays with it. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, 0, zsh_comm_rank(comm), &dup));
    zsh_optim_config_init(&cfg);
    cfg.stage            = 3;
    cfg.deterministic    = 1;
    cfg.quantize_weights = ZSH_QUANTIZE_ON;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_create(dup, &cfg, &opt));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "quantize_weights with the deterministic mode");
    cfg.quantize_weights = ZSH_QUANTIZE_OFF;
    cfg.quantize_grads   = ZSH_QUANTIZE_ON;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_create(dup, &cfg, &opt));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "quantize_grads with the deterministic mode");
    /* The communicator's mode alone is enough, and auto stays off. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_set_deterministic(dup, 1));
    cfg.deterministic    = 0;
    cfg.quantize_weights = ZSH_QUANTIZE_AUTO;
    cfg.quantize_grads   = ZSH_QUANTIZE_AUTO;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(dup, &cfg, &opt));
    zsh_optim_get_stats(opt, &st);
    ZSH_EXPECT_EQ(0, st.quantize_weights);
    ZSH_EXPECT_EQ(0, st.quantize_grads);
    zsh_optim_destroy(opt);
    zsh_comm_destroy(dup);
}
