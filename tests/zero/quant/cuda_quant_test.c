/*
 * The device quantization kernels (zero/quant/cuda/quant_cuda.h) against
 * the host's: the same levels, scales and values bit for bit (a NaN's
 * payload aside), at int8 and int4, over block sizes with short last blocks
 * and a block holding NaN (counted on the device as on the host); bf16 and
 * fp16 runs against the host's quant/half.h; and the refusals, which need no device. Without a device (or nvcc) the device cases skip with the reason.
 */
#include "zero/optim/cuda_helpers.h"

#include "core/half.h"
#include "quant/cuda/quant_cuda.h"
#include "quant/half.h"
#include "quant/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The first of @n floats whose bits differ between @a and @b, or @n. A NaN
 * matches any NaN: its payload is the hardware's (x86 keeps the operand's,
 * the GPU gives its canonical one), and the contract is only that a block
 * holding NaN or inf dequantizes to NaN. */
static size_t first_other_bits(const float *a, const float *b, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if ((isnan(a[i]) && isnan(b[i])) || (memcmp(&a[i], &b[i], sizeof(float)) == 0)) {
            continue;
        }
        return i;
    }
    return n;
}

ZSH_TEST(cuda_quant, device_levels_scales_and_values_are_the_hosts_bits)
{
    static const size_t blocks[] = {1, 7, 64, 2048, 4099};
    const zsh_quant_kernels_t *k = zsh_quant_kernels(ZSH_QUANT_SCALAR);
    size_t n = 100003, bi, i;
    float *x, *out, *dx, *dout;
    uint64_t rng = 7;
    int bits;

    ZSH_CK_NEED_DEVICE(); /* returns: nothing may be allocated before it */
    x   = malloc(n * sizeof(float));
    out = malloc(n * sizeof(float));
    ZSH_ASSERT_TRUE((x != NULL) && (out != NULL));
    for (i = 0; i < n; i++) {
        x[i] = zsh_ck_float(&rng, -20, 20);
    }
    x[5000] = NAN;
    dx   = zsh_ck_dev_alloc(n * sizeof(float));
    dout = zsh_ck_dev_alloc(n * sizeof(float));
    ZSH_ASSERT_TRUE((dx != NULL) && (dout != NULL) && zsh_ck_put(dx, x, n * sizeof(float)));
    for (bits = 4; bits <= 8; bits += 4) {
        for (bi = 0; bi < sizeof(blocks) / sizeof(blocks[0]); bi++) {
            size_t block = blocks[bi], nq = zsh_quant_bytes(n, block, bits);
            size_t ns = zsh_quant_blocks(n, block);
            uint8_t *q = malloc(nq), *hq = malloc(nq);
            float *s = malloc(ns * sizeof(float)), *hs = malloc(ns * sizeof(float));
            float *hout = malloc(n * sizeof(float));
            void *dq = zsh_ck_dev_alloc(nq);
            float *ds = zsh_ck_dev_alloc(ns * sizeof(float));
            unsigned int *dbad = zsh_ck_dev_alloc(sizeof(unsigned int)), bad = 0;
            size_t hbad = k->quantize(x, n, block, bits, hq, hs);

            k->dequantize(hq, hs, n, block, bits, hout);
            if ((dq != NULL) && (ds != NULL) && (dbad != NULL) &&
                zsh_ck_put(dbad, &bad, sizeof(bad)) &&
                ZSH_CK_OK(zsh_cuda_quantize(dx, n, block, bits, dq, ds, dbad, NULL), "quantize") &&
                ZSH_CK_OK(zsh_cuda_dequantize(dq, ds, n, block, bits, dout, 0, NULL),
                          "dequantize") &&
                zsh_ck_sync() && zsh_ck_get(q, dq, nq) && zsh_ck_get(s, ds, ns * sizeof(float)) &&
                zsh_ck_get(out, dout, n * sizeof(float)) && zsh_ck_get(&bad, dbad, sizeof(bad))) {
                ZSH_EXPECT_EQ(hbad, bad);
                size_t at;
                if (memcmp(q, hq, nq) != 0) {
                    zsh_test_fail(__FILE__, __LINE__, "int%d block %zu: the device's levels "
                                  "differ from the host's", bits, block);
                }
                if ((at = first_other_bits(s, hs, ns)) < ns) {
                    zsh_test_fail(__FILE__, __LINE__, "int%d block %zu: scale %zu is %a on the "
                                  "device, %a on the host", bits, block, at, s[at], hs[at]);
                }
                if ((at = first_other_bits(out, hout, n)) < n) {
                    zsh_test_fail(__FILE__, __LINE__, "int%d block %zu: value %zu is %a on the "
                                  "device, %a on the host", bits, block, at, out[at], hout[at]);
                }
            }
            zsh_ck_dev_free(dq);
            zsh_ck_dev_free(ds);
            zsh_ck_dev_free(dbad);
            free(q); free(hq); free(s); free(hs); free(hout);
        }
    }
    zsh_ck_dev_free(dx);
    zsh_ck_dev_free(dout);
    free(x);
    free(out);
}

/* bf16 and fp16 runs on the device against the host's quant/half.h: the
 * same levels and scales, and the same values rounded once. */
ZSH_TEST(cuda_quant, device_half_runs_give_the_hosts_bits)
{
    static const zsh_dtype_t dts[] = {ZSH_BFLOAT16, ZSH_FLOAT16};
    static const size_t blocks[] = {1, 64, 4099, 5000};
    const zsh_quant_kernels_t *k = zsh_quant_kernels(ZSH_QUANT_SCALAR);
    size_t n = 30011, bi, i;
    uint16_t *x, *out, *hout;
    void *dx, *dout;
    uint64_t rng = 9;
    int bits, d;

    ZSH_CK_NEED_DEVICE(); /* returns: nothing may be allocated before it */
    x    = malloc(n * 2);
    out  = malloc(n * 2);
    hout = malloc(n * 2);
    dx   = zsh_ck_dev_alloc(n * 2);
    dout = zsh_ck_dev_alloc(n * 2);
    ZSH_ASSERT_TRUE((x != NULL) && (out != NULL) && (hout != NULL) && (dx != NULL) &&
                    (dout != NULL));
    for (d = 0; d < 2; d++) {
        for (i = 0; i < n; i++) {
            float v = zsh_ck_float(&rng, -10, 10);
            x[i] = (dts[d] == ZSH_BFLOAT16) ? zsh_float_to_bf16(v) : zsh_float_to_fp16(v);
        }
        x[3001] = (dts[d] == ZSH_BFLOAT16) ? 0x7fc0u : 0x7e00u; /* NaN */
        ZSH_ASSERT_TRUE(zsh_ck_put(dx, x, n * 2));
        for (bits = 4; bits <= 8; bits += 4) {
            for (bi = 0; bi < sizeof(blocks) / sizeof(blocks[0]); bi++) {
                size_t block = blocks[bi], nq = zsh_quant_bytes(n, block, bits);
                size_t ns = zsh_quant_blocks(n, block);
                uint8_t *q = malloc(nq), *hq = malloc(nq);
                float *s = malloc(ns * 4), *hs = malloc(ns * 4);
                float *scratch = malloc(zsh_quant_half_scratch(block) * 4);
                void *dq = zsh_ck_dev_alloc(nq);
                float *ds = zsh_ck_dev_alloc(ns * 4);
                size_t at;

                zsh_quant_half_quantize(k, dts[d], x, n, block, bits, hq, hs, scratch);
                zsh_quant_half_dequantize(k, hq, hs, n, block, bits, dts[d], hout, scratch);
                if ((dq != NULL) && (ds != NULL) &&
                    ZSH_CK_OK(zsh_cuda_quantize_as(dts[d], dx, n, block, bits, dq, ds, NULL,
                                                   NULL), "quantize") &&
                    ZSH_CK_OK(zsh_cuda_dequantize_as(dq, ds, n, block, bits, dts[d], dout, NULL),
                              "dequantize") &&
                    zsh_ck_sync() && zsh_ck_get(q, dq, nq) && zsh_ck_get(s, ds, ns * 4) &&
                    zsh_ck_get(out, dout, n * 2)) {
                    if ((memcmp(q, hq, nq) != 0) || ((at = first_other_bits(s, hs, ns)) < ns)) {
                        zsh_test_fail(__FILE__, __LINE__, "dtype %d int%d block %zu: the "
                                      "device's levels or scales differ from the host's",
                                      (int)dts[d], bits, block);
                    }
                    for (i = 0; i < n; i++) {
                        /* A NaN's payload aside, as above. */
                        bool nan = (dts[d] == ZSH_BFLOAT16)
                                       ? (((out[i] & 0x7fffu) > 0x7f80u) &&
                                          ((hout[i] & 0x7fffu) > 0x7f80u))
                                       : (((out[i] & 0x7fffu) > 0x7c00u) &&
                                          ((hout[i] & 0x7fffu) > 0x7c00u));
                        if (!nan && (out[i] != hout[i])) {
                            zsh_test_fail(__FILE__, __LINE__, "dtype %d int%d block %zu: value "
                                          "%zu is %#x on the device, %#x on the host",
                                          (int)dts[d], bits, block, i, out[i], hout[i]);
                            break;
                        }
                    }
                }
                zsh_ck_dev_free(dq);
                zsh_ck_dev_free(ds);
                free(q); free(hq); free(s); free(hs); free(scratch);
            }
        }
    }
    zsh_ck_dev_free(dx);
    zsh_ck_dev_free(dout);
    free(x);
    free(out);
    free(hout);
}

ZSH_TEST(cuda_quant, bad_arguments_are_refused_before_anything_is_enqueued)
{
    float f = 0.0f;
    uint8_t q = 0;
    zsh_status_t st = zsh_cuda_quantize(&f, 1, 64, 8, &q, &f, NULL, NULL);

#ifndef ZSH_HAVE_NVCC
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, st);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "without nvcc");
    ZSH_SKIP("built without nvcc: the device kernels are stubs");
#endif
    /* Checked before CUDA is asked anything: a machine without a device gives the same. */
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_cuda_quantize(&f, 1, 64, 3, &q, &f, NULL, NULL));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "bits 3");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_cuda_quantize(NULL, 1, 64, 8, &q, &f, NULL, NULL));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "x is NULL");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_cuda_dequantize(&q, &f, 1, 0, 8, &f, 0, NULL));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "zsh_cuda_dequantize: quantization block of 0");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_cuda_quantize_as(ZSH_INT32, &f, 1, 64, 8, &q, &f, NULL, NULL));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "quantizes fp32, bf16 or fp16");
    (void)st;
    /* Pageable host memory is not device memory: refused naming it, where a
     * device exists to ask. */
    if (zsh_ck_no_device() == NULL) {
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                          zsh_cuda_quantize(&f, 1, 64, 8, &q, &f, NULL, NULL));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "x=");
    }
}
