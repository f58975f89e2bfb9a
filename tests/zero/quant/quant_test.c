/*
 * The quantization kernels against their contract (zero/quant/quant.h), at
 * every width this CPU runs: the round trip within half a scale for every
 * block size from 1 to 67 and the usual powers of two with a short last
 * block, zeros back as zeros, tiny blocks stored as zeros, blocks with NaN
 * or inf counted and NaN only within themselves, int4 blocks cut out and
 * dequantized alone, dequantize_add summing in fp32, and every width giving
 * the scalar reference's bits.
 */
#include "harness/zsh_test.h"

#include "quant/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t zsh_qt_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

/* Values of either sign over 2^-20 .. 2^20, a zero every 13th element, and
 * in each block a different spread, so scales differ from block to block. */
static void zsh_qt_fill(float *x, size_t n, uint64_t seed)
{
    uint64_t s = seed | 1;
    size_t   i;

    for (i = 0; i < n; i++) {
        uint64_t r = zsh_qt_next(&s);
        double   mag = ldexp((double)(r >> 40) / (double)(1u << 24), (int)(r % 41) - 20);
        x[i] = (i % 13 == 5) ? 0.0f : (float)(((r >> 8) & 1) ? -mag : mag);
    }
}

typedef struct {
    void  *q;
    float *scales;
    float *out;
} zsh_qt_bufs_t;

static void zsh_qt_alloc(zsh_qt_bufs_t *b, size_t n, size_t block, int bits)
{
    b->q      = calloc(zsh_quant_bytes(n, block, bits) + 1, 1);
    b->scales = calloc(zsh_quant_blocks(n, block) + 1, sizeof(float));
    b->out    = calloc(n + 1, sizeof(float));
}

static void zsh_qt_free(zsh_qt_bufs_t *b)
{
    free(b->q);
    free(b->scales);
    free(b->out);
}

/* Each element of @x against its dequantized @y, within its block's bound. */
static int zsh_qt_within(const float *x, const float *y, const float *scales, size_t n,
                         size_t block, int bits, const char *what)
{
    size_t i;

    for (i = 0; i < n; i++) {
        float  s = scales[i / block];
        double err = fabs((double)x[i] - (double)y[i]);
        double bound = (s == 0.0f) ? (double)ZSH_QUANT_TINY : s / 2.0 * (1.0 + 0x1p-12);

        if ((err > bound) || ((x[i] == 0.0f) && (y[i] != 0.0f))) {
            zsh_test_fail(__FILE__, __LINE__, "%s int%d block %zu n %zu: x[%zu] = %a came back "
                          "%a, error %a over the bound %a (scale %a)", what, bits, block, n, i,
                          (double)x[i], (double)y[i], err, bound, (double)s);
            return 0;
        }
    }
    return 1;
}

static const size_t zsh_qt_big_blocks[] = {128, 255, 256, 1000, 1024, 2048, 4096};

ZSH_TEST(quant, round_trip_is_within_half_a_scale_for_every_block_size_and_width)
{
    int w, bits;

    for (w = 0; w < ZSH_QUANT_NWIDTHS; w++) {
        const zsh_quant_kernels_t *k = zsh_quant_kernels((zsh_quant_width_t)w);
        for (bits = 4; (k != NULL) && (bits <= 8); bits += 4) {
            size_t c, nb = 67 + sizeof(zsh_qt_big_blocks) / sizeof(zsh_qt_big_blocks[0]);
            for (c = 0; c < nb; c++) {
                size_t block = (c < 67) ? c + 1 : zsh_qt_big_blocks[c - 67];
                size_t n = 3 * block + block / 2 + 1;
                float *x = malloc(n * sizeof(float));
                zsh_qt_bufs_t b;
                size_t bad;

                zsh_qt_alloc(&b, n, block, bits);
                zsh_qt_fill(x, n, block * 7 + (size_t)bits);
                bad = k->quantize(x, n, block, bits, b.q, b.scales);
                k->dequantize(b.q, b.scales, n, block, bits, b.out);
                ZSH_EXPECT_EQ(0, bad);
                if (!zsh_qt_within(x, b.out, b.scales, n, block, bits, k->name)) {
                    w = ZSH_QUANT_NWIDTHS;
                    c = nb;
                }
                free(x);
                zsh_qt_free(&b);
            }
        }
    }
}

ZSH_TEST(quant, every_width_gives_the_scalar_references_bits)
{
    const zsh_quant_kernels_t *ref = zsh_quant_kernels(ZSH_QUANT_SCALAR);
    static const size_t blocks[] = {1, 2, 3, 31, 64, 100, 2048};
    size_t n = 10007, bi;
    float *x = malloc(n * sizeof(float)), *acc_ref = malloc(n * sizeof(float));
    float *acc = malloc(n * sizeof(float));
    int w, bits, tried = 0;

    ZSH_ASSERT_TRUE(ref != NULL);
    zsh_qt_fill(x, n, 99);
    x[77] = NAN;
    for (w = ZSH_QUANT_SCALAR + 1; w < ZSH_QUANT_NWIDTHS; w++) {
        const zsh_quant_kernels_t *k = zsh_quant_kernels((zsh_quant_width_t)w);
        for (bits = 4; (k != NULL) && (bits <= 8); bits += 4) {
            for (bi = 0; bi < sizeof(blocks) / sizeof(blocks[0]); bi++) {
                size_t block = blocks[bi], nq = zsh_quant_bytes(n, block, bits);
                size_t ns = zsh_quant_blocks(n, block);
                zsh_qt_bufs_t r, b;

                zsh_qt_alloc(&r, n, block, bits);
                zsh_qt_alloc(&b, n, block, bits);
                ZSH_EXPECT_EQ(ref->quantize(x, n, block, bits, r.q, r.scales),
                              k->quantize(x, n, block, bits, b.q, b.scales));
                ref->dequantize(r.q, r.scales, n, block, bits, r.out);
                k->dequantize(r.q, r.scales, n, block, bits, b.out);
                memcpy(acc_ref, x, n * sizeof(float));
                memcpy(acc, x, n * sizeof(float));
                ref->dequantize_add(r.q, r.scales, n, block, bits, acc_ref);
                k->dequantize_add(r.q, r.scales, n, block, bits, acc);
                if ((memcmp(r.q, b.q, nq) != 0) ||
                    (memcmp(r.scales, b.scales, ns * sizeof(float)) != 0) ||
                    (memcmp(r.out, b.out, n * sizeof(float)) != 0) ||
                    (memcmp(acc_ref, acc, n * sizeof(float)) != 0)) {
                    zsh_test_fail(__FILE__, __LINE__, "%s int%d block %zu: levels, scales, "
                                  "values or sums differ from the scalar kernel's", k->name,
                                  bits, block);
                }
                tried++;
                zsh_qt_free(&r);
                zsh_qt_free(&b);
            }
        }
    }
    free(x);
    free(acc_ref);
    free(acc);
    if (tried == 0) {
        ZSH_SKIP("this CPU runs no vector width (neither AVX2 nor AVX-512)");
    }
}

ZSH_TEST(quant, nan_or_inf_makes_its_own_block_nan_counted_and_no_other)
{
    const zsh_quant_kernels_t *k = zsh_quant_best();
    static const float poison[] = {NAN, INFINITY, -INFINITY};
    size_t block = 16, n = 64, p, i;
    int bits;

    for (bits = 4; bits <= 8; bits += 4) {
        for (p = 0; p < 3; p++) {
            float x[64];
            zsh_qt_bufs_t b;

            zsh_qt_alloc(&b, n, block, bits);
            zsh_qt_fill(x, n, 5);
            x[16 + 3] = poison[p];     /* block 1 */
            x[63]     = poison[p];     /* block 3, its last element */
            ZSH_EXPECT_EQ(2, k->quantize(x, n, block, bits, b.q, b.scales));
            k->dequantize(b.q, b.scales, n, block, bits, b.out);
            for (i = 0; i < n; i++) {
                int in_poisoned = (i / block == 1) || (i / block == 3);
                if (in_poisoned != (isnan(b.out[i]) != 0)) {
                    zsh_test_fail(__FILE__, __LINE__, "int%d poison %zu: element %zu came back "
                                  "%a", bits, p, i, (double)b.out[i]);
                    break;
                }
            }
            ZSH_EXPECT_TRUE(zsh_qt_within(x, b.out, b.scales, block, block, bits, "block 0"));
            ZSH_EXPECT_TRUE(zsh_qt_within(x + 32, b.out + 32, b.scales + 2, block, block, bits,
                                          "block 2"));
            zsh_qt_free(&b);
        }
    }
}

ZSH_TEST(quant, zero_and_tiny_blocks_are_stored_as_zeros_with_scale_zero)
{
    const zsh_quant_kernels_t *k = zsh_quant_best();
    float x[12] = {0.0f, -0.0f, 0.0f, 0.0f,                       /* zeros */
                   1e-40f, -3e-38f, 0x1p-113f, 0.0f,              /* tiny, subnormals too */
                   0x1p-112f, 0x1p-130f, 0.0f, -0x1p-112f};       /* the smallest quantized */
    zsh_qt_bufs_t b;
    int bits, i;

    for (bits = 4; bits <= 8; bits += 4) {
        zsh_qt_alloc(&b, 12, 4, bits);
        ZSH_EXPECT_EQ(0, k->quantize(x, 12, 4, bits, b.q, b.scales));
        k->dequantize(b.q, b.scales, 12, 4, bits, b.out);
        ZSH_EXPECT_TRUE(b.scales[0] == 0.0f);
        ZSH_EXPECT_TRUE(b.scales[1] == 0.0f);
        ZSH_EXPECT_TRUE(isnormal(b.scales[2]));
        for (i = 0; i < 8; i++) {
            ZSH_EXPECT_TRUE(b.out[i] == 0.0f);
        }
        ZSH_EXPECT_TRUE(b.out[8] == 0x1p-112f);
        ZSH_EXPECT_TRUE(b.out[11] == -0x1p-112f);
        ZSH_EXPECT_TRUE(zsh_qt_within(x, b.out, b.scales, 12, 4, bits, "tiny"));
        zsh_qt_free(&b);
    }
}

ZSH_TEST(quant, int4_blocks_of_odd_length_start_on_their_own_byte)
{
    const zsh_quant_kernels_t *k = zsh_quant_best();
    size_t block = 7, n = 5 * 7 + 3, nb = zsh_quant_blocks(n, block);
    float x[38], part[7];
    zsh_qt_bufs_t b;
    size_t blk;

    ZSH_EXPECT_EQ(4 * 5 + 2, zsh_quant_bytes(n, block, 4));
    ZSH_EXPECT_EQ(6, nb);
    zsh_qt_alloc(&b, n, block, 4);
    zsh_qt_fill(x, n, 3);
    k->quantize(x, n, block, 4, b.q, b.scales);
    k->dequantize(b.q, b.scales, n, block, 4, b.out);
    for (blk = 0; blk < nb; blk++) {
        size_t len = (blk + 1 < nb) ? block : n - blk * block;
        k->dequantize((const uint8_t *)b.q + blk * 4, b.scales + blk, len, block, 4, part);
        ZSH_EXPECT_TRUE(memcmp(part, b.out + blk * block, len * sizeof(float)) == 0);
    }
    zsh_qt_free(&b);
}

ZSH_TEST(quant, dequantize_add_sums_in_fp32_onto_the_accumulator)
{
    const zsh_quant_kernels_t *k = zsh_quant_best();
    size_t n = 1000, block = 64, i;
    float *x = malloc(n * sizeof(float)), *acc = malloc(n * sizeof(float));
    zsh_qt_bufs_t b;
    int bits;

    zsh_qt_fill(x, n, 11);
    for (bits = 4; bits <= 8; bits += 4) {
        zsh_qt_alloc(&b, n, block, bits);
        k->quantize(x, n, block, bits, b.q, b.scales);
        k->dequantize(b.q, b.scales, n, block, bits, b.out);
        for (i = 0; i < n; i++) {
            acc[i] = 0.5f * (float)i;
        }
        k->dequantize_add(b.q, b.scales, n, block, bits, acc);
        for (i = 0; i < n; i++) {
            if (acc[i] != 0.5f * (float)i + b.out[i]) {
                zsh_test_fail(__FILE__, __LINE__, "int%d: acc[%zu] = %a, not %a + %a", bits, i,
                              (double)acc[i], 0.5 * (double)i, (double)b.out[i]);
                break;
            }
        }
        zsh_qt_free(&b);
    }
    free(x);
    free(acc);
}

ZSH_TEST(quant, bits_other_than_4_or_8_and_bad_blocks_are_refused_by_name)
{
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_quant_check(2048, 8));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_quant_check(1, 4));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_quant_check(2048, 2));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "bits 2");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_quant_check(0, 8));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "block of 0 elements");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_quant_check(ZSH_QUANT_BLOCK_MAX + 1, 4));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "block of 1048577");
}
