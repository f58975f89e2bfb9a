/*
 * bf16 and fp16 runs through the quantization kernels (zero/quant/half.h)
 * at every width this CPU runs: the levels and scales are, bit for bit,
 * those of the run's fp32 conversion for block sizes below, at and above
 * the conversion's chunk, with zeros, a NaN block and an inf block among
 * them (counted, and NaN only within themselves); dequantized values are
 * the fp32 dequantization rounded once, so within the contract's bound
 * plus half a step of the precision, zeros come back as zeros; the cut
 * variant gives the fp32 cut variant's bits.
 */
#include "harness/zsh_test.h"

#include "core/dtype.h"
#include "core/half.h"
#include "quant/cuts.h"
#include "quant/half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const zsh_dtype_t zsh_qht_dtypes[] = {ZSH_BFLOAT16, ZSH_FLOAT16};
static const size_t zsh_qht_blocks[] = {1, 3, 64, 100, 1000, 4096, 5000, 9000};

/* Values within the precision's range (2^-12 .. 2^12 either sign), a zero
 * every 11th, a NaN in block 1 and an infinity in block 2, as @dt holds
 * them (@h) and widened (@x). */
static void zsh_qht_fill(zsh_dtype_t dt, size_t n, size_t block, uint16_t *h, float *x)
{
    size_t i;

    for (i = 0; i < n; i++) {
        double mag = ldexp(1.0 + (double)((i * 37) % 101) / 101.0, (int)((i * 7 / 5) % 25) - 12);
        float v = (i % 11 == 4) ? 0.0f : (float)(((i * 13) % 3 == 1) ? -mag : mag);

        if (i == block + block / 2) {
            v = NAN;
        } else if (i == 2 * block) {
            v = -INFINITY;
        }
        h[i] = (dt == ZSH_BFLOAT16) ? zsh_float_to_bf16(v) : zsh_float_to_fp16(v);
        x[i] = (dt == ZSH_BFLOAT16) ? zsh_bf16_to_float(h[i]) : zsh_fp16_to_float(h[i]);
    }
}

/* The run's round trip against its fp32 conversion's, one block size. */
static bool zsh_qht_case(const zsh_quant_kernels_t *k, zsh_dtype_t dt, size_t block, int bits)
{
    size_t n = 3 * block + block / 2 + 1, nq = zsh_quant_bytes(n, block, bits);
    size_t ns = zsh_quant_blocks(n, block), i, bad_h, bad_f;
    double half_step = (dt == ZSH_BFLOAT16) ? 0x1p-8 : 0x1p-11;
    uint16_t *h = malloc(n * 2), *y = malloc(n * 2);
    float *x = malloc(n * 4), *yf = malloc(n * 4), *sh = malloc(ns * 4), *sf = malloc(ns * 4);
    float *scratch = malloc(zsh_quant_half_scratch(block) * 4);
    char *qh = malloc(nq), *qf = malloc(nq);
    bool ok = true;

    zsh_qht_fill(dt, n, block, h, x);
    bad_h = zsh_quant_half_quantize(k, dt, h, n, block, bits, qh, sh, scratch);
    bad_f = k->quantize(x, n, block, bits, qf, sf);
    ZSH_EXPECT_EQ(bad_f, bad_h);
    ZSH_EXPECT_EQ(2, bad_h); /* the NaN block and the inf block */
    if ((memcmp(qh, qf, nq) != 0) || (memcmp(sh, sf, ns * 4) != 0)) {
        zsh_test_fail(__FILE__, __LINE__, "%s %s int%d block %zu: levels or scales differ from "
                      "the fp32 conversion's", k->name, zsh_dtype_name(dt), bits, block);
        ok = false;
    }
    zsh_quant_half_dequantize(k, qh, sh, n, block, bits, dt, y, scratch);
    k->dequantize(qf, sf, n, block, bits, yf);
    for (i = 0; ok && (i < n); i++) {
        float s = sf[i / block];
        float got = (dt == ZSH_BFLOAT16) ? zsh_bf16_to_float(y[i]) : zsh_fp16_to_float(y[i]);
        uint16_t once = (dt == ZSH_BFLOAT16) ? zsh_float_to_bf16(yf[i]) : zsh_float_to_fp16(yf[i]);
        double bound = s / 2.0 * (1.0 + 0x1p-12) + fabs((double)got) * half_step + 0x1p-25;
        bool nan_block = isnan(s);

        if ((y[i] != once) || (nan_block != isnan(got)) ||
            (!nan_block && ((fabs((double)got - (double)x[i]) > bound) ||
                            ((x[i] == 0.0f) && (got != 0.0f))))) {
            zsh_test_fail(__FILE__, __LINE__, "%s %s int%d block %zu: x[%zu] = %a came back %a "
                          "(fp32 %a rounded once: %a), bound %a", k->name, zsh_dtype_name(dt),
                          bits, block, i, (double)x[i], (double)got, (double)yf[i],
                          (double)((dt == ZSH_BFLOAT16) ? zsh_bf16_to_float(once)
                                                        : zsh_fp16_to_float(once)),
                          bound);
            ok = false;
        }
    }
    free(h);
    free(y);
    free(x);
    free(yf);
    free(sh);
    free(sf);
    free(scratch);
    free(qh);
    free(qf);
    return ok;
}

ZSH_TEST(quant_half, runs_quantize_as_their_fp32_conversion_and_dequantize_rounded_once)
{
    size_t nb = sizeof(zsh_qht_blocks) / sizeof(zsh_qht_blocks[0]), b;
    int w, bits, d;

    for (w = 0; w < ZSH_QUANT_NWIDTHS; w++) {
        const zsh_quant_kernels_t *k = zsh_quant_kernels((zsh_quant_width_t)w);
        for (d = 0; (k != NULL) && (d < 2); d++) {
            for (bits = 4; bits <= 8; bits += 4) {
                for (b = 0; b < nb; b++) {
                    if (!zsh_qht_case(k, zsh_qht_dtypes[d], zsh_qht_blocks[b], bits)) {
                        return;
                    }
                }
            }
        }
    }
}

ZSH_TEST(quant_half, cut_runs_give_the_fp32_cut_runs_bits)
{
    static const size_t at[] = {0, 70, 71, 300, 1200};
    zsh_quant_cuts_t cuts = {at, sizeof(at) / sizeof(at[0])};
    const zsh_quant_kernels_t *k = zsh_quant_best();
    size_t first = 50, n = 2000, block = 64, nq, ns;
    uint16_t *h = malloc(n * 2), *y = malloc(n * 2);
    float *x = malloc(n * 4), *yf = malloc(n * 4), *scratch = malloc(zsh_quant_half_scratch(block) * 4);
    float *sh, *sf;
    char *qh, *qf;
    size_t i;
    int d;

    nq = zsh_quant_cut_bytes(&cuts, first, n, block, 4);
    ns = zsh_quant_cut_blocks(&cuts, first, n, block);
    qh = malloc(nq);
    qf = malloc(nq);
    sh = malloc(ns * 4);
    sf = malloc(ns * 4);
    for (d = 0; d < 2; d++) {
        zsh_dtype_t dt = zsh_qht_dtypes[d];

        zsh_qht_fill(dt, n, block, h, x);
        ZSH_EXPECT_EQ(zsh_quant_cut_quantize(k, &cuts, first, x, n, block, 4, qf, sf),
                      zsh_quant_cut_quantize_as(k, &cuts, first, dt, h, n, block, 4, qh, sh,
                                                scratch));
        ZSH_EXPECT_TRUE((memcmp(qh, qf, nq) == 0) && (memcmp(sh, sf, ns * 4) == 0));
        zsh_quant_cut_dequantize(k, &cuts, first, qf, sf, n, block, 4, 0, yf);
        zsh_quant_cut_dequantize_as(k, &cuts, first, qh, sh, n, block, 4, dt, y, scratch);
        for (i = 0; i < n; i++) {
            uint16_t once = (dt == ZSH_BFLOAT16) ? zsh_float_to_bf16(yf[i])
                                                 : zsh_float_to_fp16(yf[i]);
            if (y[i] != once) {
                zsh_test_fail(__FILE__, __LINE__, "%s element %zu: %#x, not %#x",
                              zsh_dtype_name(dt), i, y[i], once);
                break;
            }
        }
    }
    free(h);
    free(y);
    free(x);
    free(yf);
    free(scratch);
    free(qh);
    free(qf);
    free(sh);
    free(sf);
}
