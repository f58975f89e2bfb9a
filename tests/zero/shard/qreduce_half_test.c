/*
 * qgZ's reduce-scatter (zero/shard/qreduce.h) of bf16 and fp16 gradients,
 * on two nodes made of the ranks' groups, in blocks (one rank per node
 * where the ranks are odd): every rank's shard is the sum over all ranks
 * within the bound of one quantization per node, the node's sums and the
 * final value each rounded in the precision; the same on every run; the
 * node moves the precision's bytes and the nodes the quantized parts; and
 * an infinity in one rank's gradient comes out as NaN over its block on
 * the shard that holds it, not quantized away (the loss scaler's overflow
 * check sees it).
 */
#include "harness/zsh_test.h"

#include "core/dtype.h"
#include "core/half.h"
#include "quant/quant.h"
#include "shard/qreduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_QRH_COUNT 700
#define ZSH_QRH_BLOCK 64

static float zsh_qrh_widen(zsh_dtype_t dt, uint16_t h)
{
    return (dt == ZSH_BFLOAT16) ? zsh_bf16_to_float(h) : zsh_fp16_to_float(h);
}

/* Rank @rank's gradient element @i, as @dt holds it. */
static float zsh_qrh_grad(zsh_dtype_t dt, int rank, size_t i)
{
    double mag = ldexp(1.0, (int)((i / 200) % 5) - 2);
    float v = (float)(mag * sin(0.13 * (double)i * (rank + 1) + rank));

    return zsh_qrh_widen(dt, (dt == ZSH_BFLOAT16) ? zsh_float_to_bf16(v) : zsh_float_to_fp16(v));
}

static void zsh_qrh_case(zsh_comm_t *comm, zsh_dtype_t dt, int bits, bool inf)
{
    int n = zsh_comm_size(comm), r = zsh_comm_rank(comm);
    int M = ((n % 2) == 0) ? 2 : n, L = n / M, m, l, q;
    int *owner = malloc((size_t)n * sizeof(int));
    uint16_t *grad = malloc((size_t)n * ZSH_QRH_COUNT * 2);
    uint16_t *out = malloc(ZSH_QRH_COUNT * 2), *again = malloc(ZSH_QRH_COUNT * 2);
    double levels = (bits == 4) ? 7.0 : 127.0, u = (dt == ZSH_BFLOAT16) ? 0x1p-8 : 0x1p-11;
    zsh_comm_t *nodec = NULL, *rail = NULL;
    zsh_qreduce_bytes_t bytes = {0, 0};
    size_t i, j, b0, nonfinite = 0;

    for (q = 0; q < n; q++) {
        owner[q] = q;
    }
    for (i = 0; i < (size_t)n * ZSH_QRH_COUNT; i++) {
        float v = zsh_qrh_grad(dt, r, i);
        grad[i] = (dt == ZSH_BFLOAT16) ? zsh_float_to_bf16(v) : zsh_float_to_fp16(v);
    }
    if (inf && (r == 0)) {
        for (q = 0; q < n; q++) {
            grad[(size_t)q * ZSH_QRH_COUNT + 5] = (dt == ZSH_BFLOAT16) ? 0x7f80u : 0x7c00u;
        }
    }
    if ((zsh_comm_split(comm, r / L, r % L, &nodec) != ZSH_OK) ||
        (zsh_comm_split(comm, r % L, r / L, &rail) != ZSH_OK)) {
        zsh_test_fail(__FILE__, __LINE__, "split: %s", zsh_last_error());
        goto out;
    }
    {
        zsh_qreduce_map_t map = {nodec, rail, owner, NULL};
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_qreduce_scatter(grad, out, ZSH_QRH_COUNT, dt, &map,
                                                      ZSH_QRH_BLOCK, bits, NULL, &bytes,
                                                      &nonfinite));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_qreduce_scatter(grad, again, ZSH_QRH_COUNT, dt, &map,
                                                      ZSH_QRH_BLOCK, bits, NULL, NULL, NULL));
    }
    ZSH_EXPECT_TRUE(memcmp(out, again, ZSH_QRH_COUNT * 2) == 0);
    ZSH_EXPECT_EQ((size_t)n * ZSH_QRH_COUNT * 2, bytes.node_bytes);
    ZSH_EXPECT_EQ((size_t)M * (((ZSH_QRH_COUNT + ZSH_QRH_BLOCK - 1) / ZSH_QRH_BLOCK * 4 +
                                zsh_quant_bytes(ZSH_QRH_COUNT, ZSH_QRH_BLOCK, bits) + 3) / 4 * 4),
                  bytes.cross_bytes);
    /* Rank 0's node sends the blocks holding its infinities. */
    ZSH_EXPECT_EQ((inf && (r < L)) ? (size_t)M : 0, nonfinite);
    for (i = 0; i < ZSH_QRH_COUNT; i++) {
        size_t g = (size_t)r * ZSH_QRH_COUNT + i;
        double exact = 0.0, abs_sum = 0.0, bound = 0.0, got = zsh_qrh_widen(dt, out[i]);

        if (inf && (i < ZSH_QRH_BLOCK)) {
            if (!isnan(got)) {
                zsh_test_fail(__FILE__, __LINE__, "%s int%d: element %zu of rank %d's shard is "
                              "%g, not NaN: the infinity was quantized away", zsh_dtype_name(dt),
                              bits, i, r, got);
                break;
            }
            continue;
        }
        b0 = i / ZSH_QRH_BLOCK * ZSH_QRH_BLOCK;
        for (m = 0; m < M; m++) {
            double mx = 0.0;
            for (j = b0; (j < b0 + ZSH_QRH_BLOCK) && (j < ZSH_QRH_COUNT); j++) {
                double part = 0.0, part_abs = 0.0;
                for (l = 0; l < L; l++) {
                    part += zsh_qrh_grad(dt, owner[m * L + l], (size_t)r * ZSH_QRH_COUNT + j);
                    part_abs += fabs(zsh_qrh_grad(dt, owner[m * L + l], (size_t)r * ZSH_QRH_COUNT + j));
                }
                mx = fmax(mx, fabs(part) + part_abs * (double)L * u);
            }
            bound += mx / levels / 2.0 * (1.0 + 0x1p-12);
        }
        for (q = 0; q < n; q++) {
            exact += zsh_qrh_grad(dt, q, g);
            abs_sum += fabs(zsh_qrh_grad(dt, q, g));
        }
        /* The node's sums rounded in the precision, the fp32 sum, the one
         * rounding into the shard. */
        bound += abs_sum * ((double)L * u + (double)(n + 1) * 0x1p-24) +
                 (fabs(exact) + bound) * u;
        if (!(fabs(got - exact) <= bound)) {
            zsh_test_fail(__FILE__, __LINE__, "%s int%d, %d nodes: element %zu of rank %d's "
                          "shard is %.9g, the sum %.9g, beyond %.3g", zsh_dtype_name(dt), bits,
                          M, i, r, got, exact, bound);
            break;
        }
    }
out:
    zsh_comm_destroy(nodec);
    zsh_comm_destroy(rail);
    free(owner);
    free(grad);
    free(out);
    free(again);
}

ZSH_RANK_TEST(shard_qreduce_half, sums_every_rank_within_one_quantization_per_node_rounded_once)
{
    static const zsh_dtype_t dts[] = {ZSH_BFLOAT16, ZSH_FLOAT16};
    int d, bits;

    for (d = 0; d < 2; d++) {
        for (bits = 4; bits <= 8; bits += 4) {
            zsh_qrh_case(comm, dts[d], bits, false);
        }
    }
}

ZSH_RANK_TEST(shard_qreduce_half, an_infinity_comes_out_as_nan_over_its_block)
{
    zsh_qrh_case(comm, ZSH_FLOAT16, 8, true);
    zsh_qrh_case(comm, ZSH_BFLOAT16, 4, true);
}
