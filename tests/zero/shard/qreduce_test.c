/*
 * qgZ's reduce-scatter (zero/shard/qreduce.h) on nodes made of the ranks'
 * groups (the in-process ranks share one real node; qgZ sees only its
 * node and rail groups): two nodes where the ranks are even, placed round
 * robin or in blocks, one rank per node otherwise. Every rank's shard is
 * the sum over all ranks within the bound of one quantization per node,
 * differs from the exact sum (it was quantized), and is the same on every
 * run; the bytes across nodes are the rail's quantized parts. Started
 * without waiting, reductions stay in flight together and end with the
 * blocking call's bits.
 */
#include "harness/zsh_test.h"

#include "quant/quant.h"
#include "shard/qreduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_QR_COUNT 1000
#define ZSH_QR_BLOCK 128

static float zsh_qr_grad(int rank, size_t i)
{
    double mag = ldexp(1.0, (int)((i / 300) % 5) - 2);

    return (float)(mag * sin(0.11 * (double)i * (rank + 1) + rank));
}

static void zsh_qr_case(zsh_comm_t *comm, int bits, bool round_robin)
{
    int n = zsh_comm_size(comm), r = zsh_comm_rank(comm);
    int M = ((n % 2) == 0) ? 2 : n, L = n / M, node, local, m, l, q;
    int *owner = malloc((size_t)n * sizeof(int));
    float *grad = malloc((size_t)n * ZSH_QR_COUNT * sizeof(float));
    float *out = malloc(ZSH_QR_COUNT * sizeof(float)), *again = malloc(ZSH_QR_COUNT * sizeof(float));
    double levels = (bits == 4) ? 7.0 : 127.0;
    zsh_comm_t *nodec = NULL, *rail = NULL;
    zsh_qreduce_bytes_t bytes = {0, 0};
    size_t i, differ = 0, nonfinite = 0;

    for (q = 0; q < n; q++) {
        m = round_robin ? q % M : q / L;
        l = round_robin ? q / M : q % L;
        owner[m * L + l] = q;
    }
    node  = round_robin ? r % M : r / L;
    local = round_robin ? r / M : r % L;
    for (i = 0; i < (size_t)n * ZSH_QR_COUNT; i++) {
        grad[i] = zsh_qr_grad(r, i);
    }
    if ((zsh_comm_split(comm, node, local, &nodec) != ZSH_OK) ||
        (zsh_comm_split(comm, local, node, &rail) != ZSH_OK)) {
        zsh_test_fail(__FILE__, __LINE__, "split: %s", zsh_last_error());
        goto out;
    }
    {
        zsh_qreduce_map_t map = {nodec, rail, owner, NULL};
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_qreduce_scatter(grad, out, ZSH_QR_COUNT, ZSH_FLOAT32, &map, ZSH_QR_BLOCK,
                                                      bits, NULL, &bytes, &nonfinite));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_qreduce_scatter(grad, again, ZSH_QR_COUNT, ZSH_FLOAT32, &map,
                                                      ZSH_QR_BLOCK, bits, NULL, NULL, NULL));
    }
    ZSH_EXPECT_TRUE(memcmp(out, again, ZSH_QR_COUNT * sizeof(float)) == 0);
    ZSH_EXPECT_EQ(0, nonfinite);
    ZSH_EXPECT_EQ((size_t)n * ZSH_QR_COUNT * sizeof(float), bytes.node_bytes);
    ZSH_EXPECT_EQ((size_t)M * (((ZSH_QR_COUNT + ZSH_QR_BLOCK - 1) / ZSH_QR_BLOCK * 4 +
                                zsh_quant_bytes(ZSH_QR_COUNT, ZSH_QR_BLOCK, bits) + 3) / 4 * 4),
                  bytes.cross_bytes);
    /* The bound: each node's partial sum quantized once, half a scale of
     * its block each, plus fp32 rounding of the sums. */
    for (i = 0; i < ZSH_QR_COUNT; i++) {
        size_t g = (size_t)r * ZSH_QR_COUNT + i, b0 = i / ZSH_QR_BLOCK * ZSH_QR_BLOCK, j;
        double exact = 0.0, bound = 0.0, abs_sum = 0.0;

        for (m = 0; m < M; m++) {
            double mx = 0.0;
            for (j = b0; (j < b0 + ZSH_QR_BLOCK) && (j < ZSH_QR_COUNT); j++) {
                double part = 0.0;
                for (l = 0; l < L; l++) {
                    part += zsh_qr_grad(owner[m * L + l], (size_t)r * ZSH_QR_COUNT + j);
                }
                mx = fmax(mx, fabs(part));
            }
            bound += mx / levels / 2.0 * (1.0 + 0x1p-12);
        }
        for (q = 0; q < n; q++) {
            exact += zsh_qr_grad(q, g);
            abs_sum += fabs(zsh_qr_grad(q, g));
        }
        bound += abs_sum * (double)(n + 1) * 0x1p-24;
        differ += (double)out[i] != exact;
        if (!(fabs((double)out[i] - exact) <= bound)) {
            zsh_test_fail(__FILE__, __LINE__, "int%d %s, %d nodes: element %zu of rank %d's "
                          "shard is %.9g, the sum %.9g, beyond %.3g", bits,
                          round_robin ? "round robin" : "in blocks", M, i, r, (double)out[i],
                          exact, bound);
            break;
        }
    }
    ZSH_EXPECT_TRUE(differ > 0);
out:
    zsh_comm_destroy(nodec);
    zsh_comm_destroy(rail);
    free(owner);
    free(grad);
    free(out);
    free(again);
}

/* Two reductions in flight at once on round-robin nodes: the start does
 * not wait for the node's peers (rank 0 starts before the others do), the
 * caller's buffer is free again once it returns, the all-to-alls are
 * posted in start order and the two finished in the other order, each
 * with the bits and bytes of the blocking call. */
static void zsh_qr_inflight(zsh_comm_t *comm)
{
    int n = zsh_comm_size(comm), r = zsh_comm_rank(comm);
    int M = ((n % 2) == 0) ? 2 : n, L = n / M, q, k;
    int *owner = malloc((size_t)n * sizeof(int));
    float *grad = malloc((size_t)n * ZSH_QR_COUNT * sizeof(float));
    float *want[2], *got[2];
    zsh_comm_t *nodec = NULL, *rail = NULL;
    zsh_qreduce_t *qr[2] = {NULL, NULL};
    zsh_qreduce_bytes_t bytes = {0, 0}, each = {0, 0};
    size_t i;

    for (k = 0; k < 2; k++) {
        want[k] = malloc(ZSH_QR_COUNT * sizeof(float));
        got[k]  = malloc(ZSH_QR_COUNT * sizeof(float));
    }
    for (q = 0; q < n; q++) {
        owner[(q % M) * L + q / M] = q;
    }
    if ((zsh_comm_split(comm, r % M, r / M, &nodec) != ZSH_OK) ||
        (zsh_comm_split(comm, r / M, r % M, &rail) != ZSH_OK)) {
        zsh_test_fail(__FILE__, __LINE__, "split: %s", zsh_last_error());
        goto out;
    }
    {
        zsh_qreduce_map_t map = {nodec, rail, owner, NULL};
        for (k = 0; k < 2; k++) {
            for (i = 0; i < (size_t)n * ZSH_QR_COUNT; i++) {
                grad[i] = zsh_qr_grad(r + k * n, i);
            }
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_qreduce_scatter(grad, want[k], ZSH_QR_COUNT, ZSH_FLOAT32, &map,
                                                          ZSH_QR_BLOCK, 8, NULL, &bytes, NULL));
        }
        if (r != 0) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
        }
        for (k = 0; k < 2; k++) {
            for (i = 0; i < (size_t)n * ZSH_QR_COUNT; i++) {
                grad[i] = zsh_qr_grad(r + k * n, i);
            }
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_qreduce_start(grad, got[k], ZSH_QR_COUNT, ZSH_FLOAT32, &map,
                                                        ZSH_QR_BLOCK, 8, NULL, &qr[k]));
            memset(grad, 0xff, (size_t)n * ZSH_QR_COUNT * sizeof(float)); /* NaN */
            if ((r == 0) && (k == 0) && (L > 1) && (qr[0] != NULL)) {
                /* The node's peers have not started yet. */
                ZSH_EXPECT_STATUS(ZSH_INPROGRESS, zsh_qreduce_cross(qr[0], false));
                ZSH_EXPECT_TRUE(!zsh_qreduce_crossed(qr[0]));
            }
        }
        if (r == 0) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
        }
        if ((qr[0] == NULL) || (qr[1] == NULL)) {
            goto out;
        }
        ZSH_EXPECT_STATUS(ZSH_INPROGRESS, zsh_qreduce_finish(qr[1], false)); /* not crossed */
        for (k = 0; k < 2; k++) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_qreduce_cross(qr[k], true));
            ZSH_EXPECT_TRUE(zsh_qreduce_crossed(qr[k]));
        }
        for (k = 2; k-- > 0;) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_qreduce_finish(qr[k], true));
            zsh_qreduce_end(qr[k], &each, NULL);
            qr[k] = NULL;
            ZSH_EXPECT_TRUE(memcmp(got[k], want[k], ZSH_QR_COUNT * sizeof(float)) == 0);
            ZSH_EXPECT_EQ(bytes.node_bytes, each.node_bytes);
            ZSH_EXPECT_EQ(bytes.cross_bytes, each.cross_bytes);
        }
    }
out:
    zsh_qreduce_end(qr[0], NULL, NULL);
    zsh_qreduce_end(qr[1], NULL, NULL);
    zsh_comm_destroy(nodec);
    zsh_comm_destroy(rail);
    free(owner);
    free(grad);
    for (k = 0; k < 2; k++) {
        free(want[k]);
        free(got[k]);
    }
}

ZSH_RANK_TEST(shard_qreduce, reductions_in_flight_together_end_with_the_blocking_bits)
{
    zsh_qr_inflight(comm);
}

/* Tensors of the N * count buffer, ZSH_QR_NCUT of them: where each begins
 * (the buffer's size at the end), and a magnitude each, 2^7 apart from the
 * next, as a LayerNorm's gains beside a weight. */
#define ZSH_QR_NCUT 6

static void zsh_qr_cuts(int n, size_t *at)
{
    static const size_t per_mille[ZSH_QR_NCUT] = {0, 37, 400, 401, 1500, 2999};
    int c;

    for (c = 0; c < ZSH_QR_NCUT; c++) {
        at[c] = per_mille[c] * (size_t)n * ZSH_QR_COUNT / 3000;
    }
    at[ZSH_QR_NCUT] = (size_t)n * ZSH_QR_COUNT;
}

static double zsh_qr_cut_grad(const size_t *at, int rank, size_t g)
{
    int c = 0;

    while (g >= at[c + 1]) {
        c++;
    }
    return ldexp(1.0, (c % 3) * 7 - 7) * sin(0.11 * (double)g * (rank + 1) + rank);
}

/* In blocks (L local ranks a node), each rank's shard within the bound of
 * blocks that restart at every tensor: each node's partial sum quantized
 * once, half a step of its own block each. */
static void zsh_qr_cut_case(zsh_comm_t *comm, int bits)
{
    int n = zsh_comm_size(comm), r = zsh_comm_rank(comm);
    int M = ((n % 2) == 0) ? 2 : n, L = n / M, m, l, q, c;
    int *owner = malloc((size_t)n * sizeof(int));
    float *grad = malloc((size_t)n * ZSH_QR_COUNT * sizeof(float));
    float *out = malloc(ZSH_QR_COUNT * sizeof(float));
    double levels = (bits == 4) ? 7.0 : 127.0;
    size_t at[ZSH_QR_NCUT + 1], i, g, j, lo, hi, b0, mine = (size_t)r * ZSH_QR_COUNT;
    zsh_quant_cuts_t cuts = {at, ZSH_QR_NCUT};
    zsh_comm_t *nodec = NULL, *rail = NULL;

    zsh_qr_cuts(n, at);
    for (q = 0; q < n; q++) {
        owner[q] = q;
    }
    for (i = 0; i < (size_t)n * ZSH_QR_COUNT; i++) {
        grad[i] = (float)zsh_qr_cut_grad(at, r, i);
    }
    if ((zsh_comm_split(comm, r / L, r % L, &nodec) != ZSH_OK) ||
        (zsh_comm_split(comm, r % L, r / L, &rail) != ZSH_OK)) {
        zsh_test_fail(__FILE__, __LINE__, "split: %s", zsh_last_error());
        goto out;
    }
    {
        zsh_qreduce_map_t map = {nodec, rail, owner, &cuts};
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_qreduce_scatter(grad, out, ZSH_QR_COUNT, ZSH_FLOAT32, &map, ZSH_QR_BLOCK,
                                                      bits, NULL, NULL, NULL));
    }
    for (i = 0; i < ZSH_QR_COUNT; i++) {
        double exact = 0.0, bound = 0.0, abs_sum = 0.0;

        g = mine + i;
        for (c = 0; g >= at[c + 1]; c++) {
        }
        lo = (at[c] > mine) ? at[c] : mine;
        hi = (at[c + 1] < mine + ZSH_QR_COUNT) ? at[c + 1] : mine + ZSH_QR_COUNT;
        b0 = lo + (g - lo) / ZSH_QR_BLOCK * ZSH_QR_BLOCK;
        for (m = 0; m < M; m++) {
            double mx = 0.0;
            for (j = b0; (j < b0 + ZSH_QR_BLOCK) && (j < hi); j++) {
                double part = 0.0;
                for (l = 0; l < L; l++) {
                    part += (float)zsh_qr_cut_grad(at, owner[m * L + l], j);
                }
                mx = fmax(mx, fabs(part));
            }
            bound += mx / levels / 2.0 * (1.0 + 0x1p-12);
        }
        for (q = 0; q < n; q++) {
            exact += (float)zsh_qr_cut_grad(at, q, g);
            abs_sum += fabs((float)zsh_qr_cut_grad(at, q, g));
        }
        bound += abs_sum * (double)(n + 1) * 0x1p-24;
        if (!(fabs((double)out[i] - exact) <= bound)) {
            zsh_test_fail(__FILE__, __LINE__, "int%d, %d nodes, tensor %d: element %zu of rank "
                          "%d's shard is %.9g, the sum %.9g, beyond %.3g (its own blocks' step)",
                          bits, M, c, i, r, (double)out[i], exact, bound);
            break;
        }
    }
out:
    zsh_comm_destroy(nodec);
    zsh_comm_destroy(rail);
    free(owner);
    free(grad);
    free(out);
}

ZSH_RANK_TEST(shard_qreduce, blocks_restart_at_each_tensor_so_small_gradients_keep_their_step)
{
    zsh_qr_cut_case(comm, 8);
    zsh_qr_cut_case(comm, 4);
}

ZSH_RANK_TEST(shard_qreduce, sums_every_rank_within_one_quantization_per_node)
{
    zsh_qr_case(comm, 8, true);
    zsh_qr_case(comm, 4, true);
    zsh_qr_case(comm, 8, false);
}
