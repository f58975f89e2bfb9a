/*
 * qwZ in mixed precision (bf16 and fp16 parameters and gradients, fp32
 * master weights), forced on as in qwz_test.c (the in-process ranks share
 * one node): a bucket's first gather after an update gives every element
 * within half its block's scale, plus the one rounding into the precision,
 * of the shard's value, and differs from it somewhere; the gather after it
 * is exact; the stats count the int8 parts as they travelled in place of
 * the forward's gather; training stays within a stated distance of the
 * loss of the run without it (fp16: fp32's thousandth; bf16: 4e-3). qgZ in these precisions runs across made-up nodes in
 * tests/zero/optim/run_hpz.sh.
 */
#include "quad.h"

#include "core/dtype.h"
#include "core/half.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define ZSH_QH_N     3000
#define ZSH_QH_BLOCK 128

static const zsh_dtype_t zsh_qh_dtypes[] = {ZSH_BFLOAT16, ZSH_FLOAT16};

static float zsh_qh_widen(zsh_dtype_t dt, uint16_t h)
{
    return (dt == ZSH_BFLOAT16) ? zsh_bf16_to_float(h) : zsh_fp16_to_float(h);
}

static uint16_t zsh_qh_narrow(zsh_dtype_t dt, float f)
{
    return (dt == ZSH_BFLOAT16) ? zsh_float_to_bf16(f) : zsh_float_to_fp16(f);
}

/* Magnitudes from 2^-4 to 2^4 changing from block to block, zeros among them. */
static float zsh_qh_value(zsh_dtype_t dt, size_t i)
{
    double mag = ldexp(1.0, (int)((i / ZSH_QH_BLOCK) % 9) - 4);

    float v = (i % 17 == 3) ? 0.0f : (float)(mag * sin(0.37 * (double)i));

    return zsh_qh_widen(dt, zsh_qh_narrow(dt, v));
}

/* @got (the gathered @dt values) against the exact ones: exactly, or
 * where @quantized within the block's bound, widened by half a step of
 * the precision (2^-8 of the value in bf16, 2^-11 in fp16), and different
 * somewhere. Blocks start at each rank's part of @count elements. */
static void zsh_qh_check(zsh_dtype_t dt, const uint16_t *got, size_t count, bool quantized,
                         const char *what)
{
    double half_step = (dt == ZSH_BFLOAT16) ? 0x1p-8 : 0x1p-11, m = 0.0, bound;
    size_t i, j, differ = 0;

    for (i = 0; i < ZSH_QH_N; i++) {
        size_t part = i / count * count, b0 = part + (i - part) / ZSH_QH_BLOCK * ZSH_QH_BLOCK;
        float want = zsh_qh_value(dt, i), y = zsh_qh_widen(dt, got[i]);

        if ((i == b0) || (i == 0)) {
            m = 0.0;
            for (j = b0; (j < b0 + ZSH_QH_BLOCK) && (j < part + count) && (j < ZSH_QH_N); j++) {
                m = fmax(m, fabs((double)zsh_qh_value(dt, j)));
            }
        }
        bound = quantized ? m / 127.0 / 2.0 * (1.0 + 0x1p-12) + fabs((double)y) * half_step : 0.0;
        differ += y != want;
        if ((fabs((double)y - (double)want) > bound) || ((want == 0.0f) && (y != 0.0f))) {
            zsh_test_fail(__FILE__, __LINE__, "%s %s: element %zu is %a, not %a within %a",
                          zsh_dtype_name(dt), what, i, (double)y, (double)want, bound);
            return;
        }
    }
    if (quantized && (differ == 0)) {
        zsh_test_fail(__FILE__, __LINE__, "%s %s: came back exact: not quantized",
                      zsh_dtype_name(dt), what);
    }
}

static bool zsh_qh_fetch(zsh_optim_t *opt, zsh_param_t *param, zsh_dtype_t dt, size_t count,
                         bool quantized, const char *what)
{
    void *data = NULL;

    if (zsh_optim_fetch(opt, param, &data) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "%s: fetch: %s", what, zsh_last_error());
        return false;
    }
    zsh_qh_check(dt, data, count, quantized, what);
    return zsh_optim_release(opt, param) == ZSH_OK;
}

/* One SGD step that changes nothing, with qwZ @on or off: the forward's
 * gather is int8 within the bound where on, exact where off, backward's
 * exact; *@st_p gets the stats after the step. */
static void zsh_qh_step(zsh_comm_t *comm, zsh_dtype_t dt, bool on, uint16_t *init,
                        const uint16_t *zeros, zsh_optim_stats_t *st_p)
{
    size_t count = (ZSH_QH_N + (size_t)zsh_comm_size(comm) - 1) / (size_t)zsh_comm_size(comm);
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *param = NULL;
    int applied = 0;

    zsh_optim_config_init(&cfg);
    cfg.stage            = 3;
    cfg.precision        = dt;
    cfg.kind             = ZSH_OPTIM_SGD;
    cfg.prefetch         = 0;
    cfg.quantize_weights = on ? ZSH_QUANTIZE_ON : ZSH_QUANTIZE_OFF;
    cfg.quantize_block   = ZSH_QH_BLOCK;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "a", ZSH_QH_N, dt, init, &param));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_setup(opt));
    if ((param != NULL) && zsh_qh_fetch(opt, param, dt, count, on, "forward") &&
        (zsh_optim_backward_begin(opt) == ZSH_OK) &&
        zsh_qh_fetch(opt, param, dt, count, false, "backward")) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, param, zeros));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, &applied));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, st_p));
    }
    zsh_optim_destroy(opt);
}

ZSH_RANK_TEST(optim_qwz_half, first_gather_is_int8_within_the_bound_and_one_rounding)
{
    int n = zsh_comm_size(comm), d;
    size_t count = (ZSH_QH_N + (size_t)n - 1) / (size_t)n, i;
    size_t nb = (count + ZSH_QH_BLOCK - 1) / ZSH_QH_BLOCK;
    size_t part = (nb * 4 + count + 3) / 4 * 4;
    uint16_t *init = malloc(ZSH_QH_N * sizeof(uint16_t));
    uint16_t *zeros = calloc(ZSH_QH_N, sizeof(uint16_t));

    ZSH_ASSERT_TRUE((init != NULL) && (zeros != NULL));
    for (d = 0; d < 2; d++) {
        zsh_dtype_t dt = zsh_qh_dtypes[d];
        zsh_optim_stats_t plain = {0}, quant = {0};

        for (i = 0; i < ZSH_QH_N; i++) {
            init[i] = zsh_qh_narrow(dt, zsh_qh_value(dt, i));
        }
        zsh_qh_step(comm, dt, false, init, zeros, &plain);
        zsh_qh_step(comm, dt, true, init, zeros, &quant);
        ZSH_EXPECT_EQ(1, quant.qwz_gathers);
        ZSH_EXPECT_EQ(0, quant.qwz_nonfinite_blocks);
        ZSH_EXPECT_EQ(0, plain.comm_bytes_quantized_last_step);
        /* The forward's int8 parts come on top of the run without qwZ,
         * whose forward gather backward reuses: everything else, backward's
         * gather in the precision among it, is the same. */
        ZSH_EXPECT_EQ(part * (size_t)n, quant.comm_bytes_quantized_last_step);
        ZSH_EXPECT_EQ(plain.comm_bytes_last_step + part * (size_t)n, quant.comm_bytes_last_step);
        ZSH_EXPECT_TRUE(part < count * sizeof(uint16_t));
    }
    free(init);
    free(zeros);
}

/* fp16 within fp32's thousandth. bf16 keeps 8 significant bits, as many
 * as the int8 levels of a block's largest values: a dequantized value
 * rounded back to bf16 lands a bf16 step away as often as not, the two
 * grids aliasing, which shifts the loss further (measured: 2.2e-3 at
 * step 2, below 1e-3 from step 4). */
ZSH_RANK_TEST(optim_qwz_half, training_stays_within_the_stated_distance_of_the_loss_without_it)
{
    static const double tol[] = {4e-3, 1e-3};
    int d, s;

    for (d = 0; d < 2; d++) {
        zsh_quad_run_t plain = {.bad_rank = -1}, quant = {.bad_rank = -1};
        zsh_optim_config_t cfg;

        zsh_optim_config_init(&cfg);
        cfg.stage          = 3;
        cfg.precision      = zsh_qh_dtypes[d];
        cfg.lr             = 0.01f;
        cfg.bucket_size    = 1;
        cfg.max_live_bytes = 1;
        cfg.quantize_block = 64;
        if (zsh_quad_train(comm, &cfg, 10, &plain)) {
            cfg.quantize_weights = ZSH_QUANTIZE_ON;
            if (zsh_quad_train(comm, &cfg, 10, &quant)) {
                for (s = 0; s < 10; s++) {
                    if (!(fabs(quant.loss[s] - plain.loss[s]) <= tol[d] * fabs(plain.loss[s]))) {
                        zsh_test_fail(__FILE__, __LINE__, "%s step %d: loss %.9g with qwZ, %.9g "
                                      "without", zsh_dtype_name(cfg.precision), s + 1,
                                      quant.loss[s], plain.loss[s]);
                    }
                }
                ZSH_EXPECT_TRUE(quant.stats.qwz_gathers > 0);
                ZSH_EXPECT_TRUE(quant.stats.comm_bytes_quantized_last_step > 0);
                ZSH_EXPECT_TRUE(quant.stats.comm_bytes_last_step <
                                plain.stats.comm_bytes_last_step);
            }
        }
        zsh_quad_free(&plain);
        zsh_quad_free(&quant);
    }
}
