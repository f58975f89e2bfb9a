/*
 * The deterministic mode (zsh_comm_set_deterministic(), zeroshard.h): a
 * reduce-scatter's or all-reduce's bits are the rank-order fold of the
 * inputs, whatever algorithm is forced, whatever the chunk size, pipeline
 * depth or the element's offset in the message; and without the mode some
 * of those settings give other bits, so the comparison can fail.
 *
 * Inputs are floats of mixed sign and magnitude, so the order of the sums
 * shows in the bits. Every rank computes every rank's inputs, and the
 * expected result from the contract written out here: ranks 0 .. n-1 into
 * an accumulator of fp32 (fp64 for fp64), AVG divided there, rounded once.
 */
#include "coll/check.h"

#include "algo/eager.h"
#include "base/desc.h"
#include "core/dtype.h"
#include "core/half.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A call of the matrix: which collective, its type and op, where its
 * vector starts in the inputs' index space, its count (per rank for a
 * reduce-scatter), and whether it runs in place. */
typedef struct zsh_det_call {
    zsh_coll_type_t type;
    zsh_dtype_t     dtype;
    zsh_op_t        op;
    size_t          offset, count;
    bool            inplace;
} zsh_det_call_t;

/* The settings a call runs under. */
typedef struct zsh_det_setting {
    zsh_algo_t algo;
    size_t     chunk;
    unsigned   depth;
} zsh_det_setting_t;

static const zsh_algo_t zsh_det_algos[] = {ZSH_ALGO_AUTO,  ZSH_ALGO_RING,  ZSH_ALGO_RD,
                                           ZSH_ALGO_DIRECT, ZSH_ALGO_EAGER, ZSH_ALGO_HIER,
                                           ZSH_ALGO_ORDERED};
#define ZSH_DET_NALGOS (sizeof(zsh_det_algos) / sizeof(zsh_det_algos[0]))

static const size_t   zsh_det_chunks[] = {256, 4096, 65536};
static const unsigned zsh_det_depths[] = {2, 3, 8};

static const zsh_dtype_t zsh_det_dtypes[] = {ZSH_FLOAT32, ZSH_BFLOAT16, ZSH_FLOAT16, ZSH_FLOAT64};

/* Rank @rank's input at index @idx, as a double the dtype holds exactly. */
static double zsh_det_input(zsh_dtype_t dtype, int rank, size_t idx)
{
    uint32_t s = (uint32_t)(idx * 2654435761u) ^ (uint32_t)(rank * 40503u + 977u);
    double v;

    s = s * 1664525u + 1013904223u;
    s ^= s >> 13;
    s = s * 1664525u + 1013904223u;
    v = ((double)(s >> 8) / 16777216.0 - 0.5) * (double)(1u << (s % 11u)) / 64.0;
    switch (dtype) {
    case ZSH_FLOAT16:  return zsh_fp16_to_float(zsh_float_to_fp16((float)v));
    case ZSH_BFLOAT16: return zsh_bf16_to_float(zsh_float_to_bf16((float)v));
    case ZSH_FLOAT32:  return (float)v;
    default:           return v * 1.000000123456789;
    }
}

/* The contract's result at @idx over @n ranks, stored into @dst[0]. */
static void zsh_det_expected(void *dst, zsh_dtype_t dtype, zsh_op_t op, int n, size_t idx)
{
    float accf = 0.0f;
    double accd = 0.0;
    int r;

    for (r = 0; r < n; r++) {
        if (dtype == ZSH_FLOAT64) {
            accd = (r == 0) ? zsh_det_input(dtype, r, idx) : accd + zsh_det_input(dtype, r, idx);
        } else {
            accf = (r == 0) ? (float)zsh_det_input(dtype, r, idx)
                            : accf + (float)zsh_det_input(dtype, r, idx);
        }
    }
    if (op == ZSH_AVG) {
        accf /= (float)n;
        accd /= (double)n;
    }
    switch (dtype) {
    case ZSH_FLOAT16:  *(uint16_t *)dst = zsh_float_to_fp16(accf); break;
    case ZSH_BFLOAT16: *(uint16_t *)dst = zsh_float_to_bf16(accf); break;
    case ZSH_FLOAT32:  memcpy(dst, &accf, sizeof(accf)); break;
    default:           memcpy(dst, &accd, sizeof(accd)); break;
    }
}

/* Elements of the call's input vector (the whole vector, every rank's). */
static size_t zsh_det_total(const zsh_det_call_t *c, int n)
{
    return (c->type == ZSH_COLL_REDUCE_SCATTER) ? c->count * (size_t)n : c->count;
}

/* Run @c under @s; NULL when it ran, with *@first_p the result's first
 * index and @got its bits; else why it could not run here. */
static const char *zsh_det_run(zsh_comm_t *comm, const zsh_det_call_t *c,
                               const zsh_det_setting_t *s, char *got, size_t *first_p)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    size_t esize = zsh_dtype_size(c->dtype), total = zsh_det_total(c, n), i;
    zsh_coll_config_t *cfg = zsh_check_cfg(comm), saved = *cfg;
    char *send = zsh_check_alloc(total * esize), *recv;
    zsh_status_t status;

    if ((s->algo == ZSH_ALGO_DIRECT) && !comm->local.direct) {
        free(send);
        return "direct cannot run on these ranks";
    }
    if ((s->algo == ZSH_ALGO_EAGER) && !zsh_eager_fits(comm, total * esize)) {
        free(send);
        return "eager does not fit";
    }
    for (i = 0; i < total; i++) {
        zsh_check_set(send, c->dtype, i, zsh_det_input(c->dtype, rank, c->offset + i));
    }
    cfg->chunk_size      = s->chunk;
    cfg->pipeline_depth  = s->depth;
    cfg->direct_min_size = 0;
    if (c->type == ZSH_COLL_REDUCE_SCATTER) {
        cfg->reduce_scatter_algo = s->algo;
        *first_p = c->offset + c->count * (size_t)rank;
        recv     = c->inplace ? send + c->count * (size_t)rank * esize : got;
        status   = zsh_reduce_scatter(send, recv, c->count, c->dtype, c->op, comm);
    } else {
        cfg->allreduce_algo = s->algo;
        *first_p = c->offset;
        recv     = c->inplace ? send : got;
        status   = zsh_allreduce(send, recv, c->count, c->dtype, c->op, comm);
    }
    if (recv != got) {
        memcpy(got, recv, c->count * esize);
    }
    *cfg = saved;
    free(send);
    ZSH_EXPECT_STATUS(ZSH_OK, status);
    return NULL;
}

/* Calls of mixed types, ops, sizes and offsets (the same indexes reduced
 * from other places in the message), a third of them in place. */
static size_t zsh_det_calls(zsh_det_call_t *calls, size_t max)
{
    static const size_t offsets[] = {0, 3, 1001};
    size_t k = 0, d, o, t;

    for (t = 0; t < 2; t++) {
        for (d = 0; d < sizeof(zsh_det_dtypes) / sizeof(zsh_det_dtypes[0]); d++) {
            for (o = 0; (o < sizeof(offsets) / sizeof(offsets[0])) && (k < max); o++) {
                calls[k++] = (zsh_det_call_t){
                    .type    = t ? ZSH_COLL_ALLREDUCE : ZSH_COLL_REDUCE_SCATTER,
                    .dtype   = zsh_det_dtypes[d],
                    .op      = ((d + o) % 2) ? ZSH_AVG : ZSH_SUM,
                    .offset  = offsets[o],
                    .count   = t ? 1500 + 7 * o : 301 + o,
                    .inplace = (o == 1)};
            }
        }
    }
    return k;
}

/* Whether the result of @c at @first has the contract's bits; reports the
 * first element that does not when @report. */
static bool zsh_det_matches(const zsh_det_call_t *c, const zsh_det_setting_t *s, int n,
                            const char *got, size_t first, bool report)
{
    size_t esize = zsh_dtype_size(c->dtype), i;
    char want[8];

    for (i = 0; i < c->count; i++) {
        zsh_det_expected(want, c->dtype, c->op, n, first + i);
        if (memcmp(want, got + i * esize, esize) != 0) {
            if (report) {
                zsh_test_fail(__FILE__, __LINE__, "%s %s %s offset %zu count %zu%s, %s chunk %zu "
                              "depth %u: element %zu is %.17g, the rank-order fold %.17g",
                              zsh_desc_type_name(c->type), zsh_dtype_name(c->dtype),
                              zsh_op_name(c->op), c->offset, c->count,
                              c->inplace ? " in place" : "", zsh_algo_name(s->algo),
                              s->chunk, s->depth, i, zsh_check_get(got, c->dtype, i),
                              zsh_check_get(want, c->dtype, 0));
            }
            return false;
        }
    }
    return true;
}

/* Every call under every algorithm, each with one chunk size and depth of
 * the lists in turn (and every pair of them for fp32 SUM's reduce-scatter);
 * returns how many results differed from the contract. */
static size_t zsh_det_matrix(zsh_comm_t *comm, bool report)
{
    zsh_det_call_t calls[32];
    size_t ncalls = zsh_det_calls(calls, 32), a, k, ci, di, turn = 0, differ = 0, first = 0;
    int n = zsh_comm_size(comm);
    char *got = zsh_check_alloc(2000 * 8);
    zsh_det_setting_t s;

    for (a = 0; a < ZSH_DET_NALGOS; a++) {
        for (k = 0; k < ncalls; k++, turn++) {
            s = (zsh_det_setting_t){zsh_det_algos[a], zsh_det_chunks[turn % 3],
                                    zsh_det_depths[(turn / 3) % 3]};
            if ((zsh_det_run(comm, &calls[k], &s, got, &first) == NULL) &&
                !zsh_det_matches(&calls[k], &s, n, got, first, report)) {
                differ++;
            }
        }
        for (ci = 0; ci < 3; ci++) {
            for (di = 0; di < 3; di++) {
                s = (zsh_det_setting_t){zsh_det_algos[a], zsh_det_chunks[ci], zsh_det_depths[di]};
                if ((zsh_det_run(comm, &calls[0], &s, got, &first) == NULL) &&
                    !zsh_det_matches(&calls[0], &s, n, got, first, report)) {
                    differ++;
                }
            }
        }
    }
    free(got);
    return differ;
}

ZSH_RANK_TEST(determinism, every_algorithm_chunk_depth_and_offset_gives_the_rank_order_fold)
{
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_set_deterministic(comm, 1));
    ZSH_EXPECT_EQ(0, zsh_det_matrix(comm, true));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_set_deterministic(comm, 0));
}

/* On one or two ranks every order gives the same bits (a sum of two is
 * commutative); from three on, some algorithm's own order shows. */
ZSH_RANK_TEST(determinism, without_the_mode_some_setting_gives_other_bits_from_three_ranks)
{
    size_t differ;

    ZSH_ASSERT_TRUE(zsh_comm_get_deterministic(comm) == 0);
    differ = zsh_det_matrix(comm, false);
    if (zsh_comm_size(comm) < 3) {
        ZSH_EXPECT_EQ(0, differ);
    } else {
        ZSH_EXPECT_TRUE(differ > 0);
    }
}

ZSH_RANK_TEST(determinism, the_setting_is_checked_and_a_split_inherits_it)
{
    zsh_comm_t *child = NULL;

    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_set_deterministic(comm, 2));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "expected 0 or 1");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_set_deterministic(NULL, 1));
    ZSH_EXPECT_EQ(-1, zsh_comm_get_deterministic(NULL));
    ZSH_EXPECT_EQ(0, zsh_comm_get_deterministic(comm));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_set_deterministic(comm, 1));
    ZSH_EXPECT_EQ(1, zsh_comm_get_deterministic(comm));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, 0, zsh_comm_rank(comm), &child));
    ZSH_EXPECT_EQ(1, zsh_comm_get_deterministic(child));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(child));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_set_deterministic(comm, 0));
}
