/*
 * Sharded tensors, flat buckets and tiles: partition ranges, gather, reduce-
 * scatter with padding, views, and one-tile-at-a-time gathering. Values are
 * small integers so every float result is exact.
 */
#include "harness/zsh_test.h"

#include "core/half.h"
#include "shard/shard_impl.h"

#include <stdlib.h>

static const size_t zsh_shard_counts[] = {0, 1, 2, 7, 13, 1000, 70001};

/* Global element i of the test tensor. */
static float zsh_shard_value(size_t i)
{
    return (float)(i % 1009);
}

static void zsh_shard_fill_local(zsh_shard_t *s)
{
    float *local = zsh_shard_local(s);
    size_t i;

    for (i = 0; i < zsh_shard_owned(s); i++) {
        local[i] = zsh_shard_value(zsh_shard_begin(s) + i);
    }
}

ZSH_RANK_TEST(shard, ranges_cover_every_element_once_with_ceil_padding)
{
    int n = zsh_comm_size(comm), r = zsh_comm_rank(comm);
    size_t c, lo, hi;
    zsh_shard_t *s;

    for (c = 0; c < sizeof(zsh_shard_counts) / sizeof(zsh_shard_counts[0]); c++) {
        size_t numel = zsh_shard_counts[c], owned[8] = {0}, total = 0;
        int k;

        ZSH_ASSERT_STATUS(ZSH_OK, zsh_shard_create(comm, numel, ZSH_FLOAT32, &s));
        ZSH_EXPECT_EQ((numel + (size_t)n - 1) / (size_t)n, zsh_shard_count(s));
        ZSH_EXPECT_EQ(numel, zsh_shard_numel(s));
        for (k = 0; k < n; k++) {
            zsh_shard_part_range(numel, n, k, &lo, &hi);
            owned[k] = hi - lo;
            total += owned[k];
            ZSH_EXPECT_TRUE(lo == ((zsh_shard_count(s) * (size_t)k < numel)
                                       ? zsh_shard_count(s) * (size_t)k : numel));
        }
        ZSH_EXPECT_EQ(numel, total);
        ZSH_EXPECT_EQ(owned[r], zsh_shard_owned(s));
        zsh_shard_destroy(s);
    }
}

ZSH_RANK_TEST(shard, gather_returns_the_whole_tensor_and_release_frees_it)
{
    size_t c, i;
    zsh_shard_t *s;
    float *full;
    void *ptr;

    for (c = 0; c < sizeof(zsh_shard_counts) / sizeof(zsh_shard_counts[0]); c++) {
        size_t numel = zsh_shard_counts[c];

        ZSH_ASSERT_STATUS(ZSH_OK, zsh_shard_create(comm, numel, ZSH_FLOAT32, &s));
        zsh_shard_fill_local(s);
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_shard_gather(s, &ptr));
        full = ptr;
        for (i = 0; i < numel; i++) {
            if (full[i] != zsh_shard_value(i)) {
                zsh_test_fail(__FILE__, __LINE__, "numel %zu: element %zu is %g, expected %g",
                              numel, i, full[i], zsh_shard_value(i));
                break;
            }
        }
        ZSH_EXPECT_EQ(zsh_shard_count(s) * (size_t)zsh_comm_size(comm) * sizeof(float),
                      zsh_shard_gathered_bytes(s));
        /* A second gather before release is refused, and loses nothing. */
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_shard_gather(s, &ptr));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "release it first");
        zsh_shard_release(s);
        ZSH_EXPECT_EQ(0, zsh_shard_gathered_bytes(s));
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_shard_gather_start(s));
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_shard_gather_wait(s, &ptr));
        ZSH_EXPECT_TRUE((numel == 0) || (((float *)ptr)[numel - 1] == zsh_shard_value(numel - 1)));
        zsh_shard_destroy(s);
    }
}

/* Check the gathered @full of @numel test values; false after a failure. */
static bool zsh_shard_check_full(const float *full, size_t numel, const char *what)
{
    size_t i;

    for (i = 0; i < numel; i++) {
        if (full[i] != zsh_shard_value(i)) {
            zsh_test_fail(__FILE__, __LINE__, "%s: element %zu is %g, expected %g", what, i,
                          full[i], zsh_shard_value(i));
            return false;
        }
    }
    return true;
}

ZSH_RANK_TEST(shard, a_gather_from_a_given_block_or_staged_on_the_host_is_the_plain_one)
{
    size_t c, i;
    zsh_shard_t *s;
    float *block;
    void *full;

    for (c = 0; c < sizeof(zsh_shard_counts) / sizeof(zsh_shard_counts[0]); c++) {
        size_t numel = zsh_shard_counts[c];
        zsh_shard_src_t given, staged = {.staged = true};

        ZSH_ASSERT_STATUS(ZSH_OK, zsh_shard_create(comm, numel, ZSH_FLOAT32, &s));
        /* The local shard stays zero: only the given block has the values. */
        block = calloc(zsh_shard_count(s) + 1, sizeof(float));
        ZSH_ASSERT_TRUE(block != NULL);
        for (i = 0; i < zsh_shard_owned(s); i++) {
            block[i] = zsh_shard_value(zsh_shard_begin(s) + i);
        }
        given = (zsh_shard_src_t){.buf = block};
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_shard_gather_start_src(s, &given));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_shard_gather_wait(s, &full));
        zsh_shard_check_full(full, numel, "from a given block");
        zsh_shard_release(s);
        /* Host memory throughout: staged is the plain gather. */
        zsh_shard_fill_local(s);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_shard_gather_start_src(s, &staged));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_shard_gather_wait(s, &full));
        zsh_shard_check_full(full, numel, "staged on the host");
        zsh_shard_destroy(s);
        free(block);
    }
}

ZSH_RANK_TEST(shard, a_gather_over_a_group_takes_an_equal_part_from_each_of_its_ranks)
{
    int r = zsh_comm_rank(comm), n = zsh_comm_size(comm), gsize;
    size_t numel = 6 * (size_t)n, part, i;
    zsh_comm_t *group, *self;
    zsh_shard_src_t src;
    zsh_shard_t *s, *one;
    float *mine;
    void *full;

    /* Pairs of ranks (the last one alone at an odd size), as hpZ's node
     * groups: each pair gathers the whole tensor from its two parts. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, r / 2, r, &group));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, r, 0, &self));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_shard_create(comm, numel, ZSH_FLOAT32, &s));
    gsize = zsh_comm_size(group);
    part  = numel / (size_t)gsize;
    mine  = calloc(part, sizeof(float));
    ZSH_ASSERT_TRUE(mine != NULL);
    for (i = 0; i < part; i++) {
        mine[i] = zsh_shard_value((size_t)zsh_comm_rank(group) * part + i);
    }
    src = (zsh_shard_src_t){.buf = mine, .comm = group};
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_shard_gather_start_src(s, &src));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_shard_gather_wait(s, &full));
    zsh_shard_check_full(full, numel, "over a group");
    zsh_shard_release(s);
    /* A staged gather goes over the tensor's own communicator only. */
    src.staged = true;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_shard_gather_start_src(s, &src));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "staged");
    ZSH_EXPECT_EQ(0, zsh_shard_gathered_bytes(s));
    /* One element over this rank alone does not split over n > 1 ranks:
     * refused before anything is sent. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_shard_create(self, 1, ZSH_FLOAT32, &one));
    src = (zsh_shard_src_t){.comm = comm};
    if (n > 1) {
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_shard_gather_start_src(one, &src));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "do not split into equal parts");
    }
    zsh_shard_destroy(one);
    zsh_shard_destroy(s);
    free(mine);
    zsh_comm_destroy(self);
    zsh_comm_destroy(group);
}

ZSH_RANK_TEST(shard, a_tensor_without_a_local_shard_gathers_only_from_a_given_block)
{
    zsh_shard_src_t src = {0};
    zsh_shard_t *s;
    float *block;
    void *full;
    size_t i;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_shard_create_counted(comm, 1000, ZSH_FLOAT32, NULL, NULL,
                                                       ZSH_MEM_KINDS, &s));
    ZSH_EXPECT_TRUE(zsh_shard_local(s) == NULL);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_shard_gather_start_src(s, &src));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "keeps its shard elsewhere");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_shard_gather_start(s));
    block = calloc(zsh_shard_count(s), sizeof(float));
    ZSH_ASSERT_TRUE(block != NULL);
    for (i = 0; i < zsh_shard_owned(s); i++) {
        block[i] = zsh_shard_value(zsh_shard_begin(s) + i);
    }
    src.buf = block;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_shard_gather_start_src(s, &src));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_shard_gather_wait(s, &full));
    zsh_shard_check_full(full, 1000, "without a local shard");
    zsh_shard_destroy(s);
    free(block);
}

ZSH_RANK_TEST(shard, reduce_scatter_of_an_unpadded_gradient_sums_into_each_shard)
{
    int n = zsh_comm_size(comm), r = zsh_comm_rank(comm);
    zsh_dtype_t dtypes[] = {ZSH_FLOAT32, ZSH_BFLOAT16};
    size_t c, i, d;
    zsh_shard_t *s;

    for (d = 0; d < 2; d++) {
        for (c = 0; c < sizeof(zsh_shard_counts) / sizeof(zsh_shard_counts[0]); c++) {
            size_t numel = zsh_shard_counts[c], count;
            float *grad32 = malloc((numel + 1) * sizeof(float)), *out32;
            uint16_t *grad16 = malloc((numel + 1) * sizeof(uint16_t)), *out16;
            void *out;

            ZSH_ASSERT_STATUS(ZSH_OK, zsh_shard_create(comm, numel, dtypes[d], &s));
            count = zsh_shard_count(s);
            out   = calloc(count + 1, sizeof(float));
            out32 = out;
            out16 = out;
            /* Rank r contributes (r + 1) * (i mod 7): the sum is exact in bf16. */
            for (i = 0; i < numel; i++) {
                grad32[i] = (float)((r + 1) * (int)(i % 7));
                grad16[i] = (uint16_t)(zsh_float_bits(grad32[i]) >> 16);
            }
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_shard_reduce_scatter(s, (d == 0) ? (void *)grad32
                                                                          : (void *)grad16,
                                                               ZSH_SUM, out));
            for (i = 0; i < count; i++) {
                size_t g   = zsh_shard_begin(s) + i;
                float want = (i < zsh_shard_owned(s)) ? (float)(n * (n + 1) / 2 * (int)(g % 7))
                                                      : 0.0f;
                float got  = (d == 0) ? out32[i] : zsh_bits_float((uint32_t)out16[i] << 16);

                if (got != want) {
                    zsh_test_fail(__FILE__, __LINE__, "numel %zu dtype %d: shard element %zu is "
                                  "%g, expected %g", numel, (int)dtypes[d], i, got, want);
                    break;
                }
            }
            zsh_shard_destroy(s);
            free(out);
            free(grad32);
            free(grad16);
        }
    }
}

ZSH_RANK_TEST(shard, bucket_views_are_laid_out_back_to_back_and_gather_in_one_call)
{
    static const size_t sizes[] = {5, 1, 37, 3, 300};
    size_t off[5], i, k, o, len;
    zsh_bucket_t *b;
    zsh_shard_t *s;
    float *full, *local;
    void *ptr;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_bucket_create(comm, ZSH_FLOAT32, 50, &b));
    for (i = 0; i < 4; i++) {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_bucket_add(b, sizes[i], &off[i]));
    }
    /* 46 elements are in; 300 more exceed the capacity of 50. */
    ZSH_EXPECT_STATUS(ZSH_ERR_NO_MEMORY, zsh_bucket_add(b, sizes[4], &off[4]));
    ZSH_EXPECT_EQ(4, zsh_bucket_nviews(b));
    for (i = 0, o = 0; i < 4; o += sizes[i], i++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_bucket_view(b, i, &k, &len));
        ZSH_EXPECT_EQ(o, k);
        ZSH_EXPECT_EQ(sizes[i], len);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_bucket_seal(b, &s));
    ZSH_EXPECT_EQ(46, zsh_shard_numel(s));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_bucket_add(b, 1, &k));
    local = zsh_shard_local(s);
    for (i = 0; i < zsh_shard_owned(s); i++) {
        local[i] = zsh_shard_value(zsh_shard_begin(s) + i);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_shard_gather(s, &ptr));
    full = ptr;
    for (i = 0; i < 4; i++) {
        for (k = 0; k < sizes[i]; k++) {
            ZSH_EXPECT_TRUE(full[off[i] + k] == zsh_shard_value(off[i] + k));
        }
    }
    zsh_bucket_destroy(b);

    /* A tensor larger than the capacity still goes into an empty bucket. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_bucket_create(comm, ZSH_FLOAT32, 50, &b));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_bucket_add(b, 300, &k));
    ZSH_EXPECT_EQ(0, k);
    zsh_bucket_destroy(b);
}

ZSH_RANK_TEST(shard, tiles_gathered_one_at_a_time_hold_at_most_one_tile)
{
    size_t numel = 10007, ntiles = 4, k, i, off, most = 0, whole;
    double sum = 0.0, want = 0.0;
    zsh_tiled_t *t;
    zsh_shard_t *tile;
    float *local;
    void *full;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_tiled_create(comm, numel, ZSH_FLOAT32, ntiles, &t));
    ZSH_ASSERT_TRUE(zsh_tiled_ntiles(t) == ntiles);
    ZSH_EXPECT_TRUE(zsh_tiled_tile(t, ntiles, NULL) == NULL);
    for (k = 0; k < ntiles; k++) {
        tile  = zsh_tiled_tile(t, k, &off);
        local = zsh_shard_local(tile);
        for (i = 0; i < zsh_shard_owned(tile); i++) {
            local[i] = zsh_shard_value(off + zsh_shard_begin(tile) + i);
        }
    }
    /* Use the whole tensor (a sum), holding one tile at a time. */
    for (k = 0; k < ntiles; k++) {
        tile = zsh_tiled_tile(t, k, &off);
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_shard_gather(tile, &full));
        for (i = 0; i < zsh_shard_numel(tile); i++) {
            sum += ((float *)full)[i];
        }
        most = (zsh_shard_gathered_bytes(tile) > most) ? zsh_shard_gathered_bytes(tile) : most;
        zsh_shard_release(tile);
    }
    for (i = 0; i < numel; i++) {
        want += zsh_shard_value(i);
    }
    ZSH_EXPECT_TRUE(sum == want);
    whole = ((numel + (size_t)zsh_comm_size(comm) - 1) / (size_t)zsh_comm_size(comm)) *
            (size_t)zsh_comm_size(comm) * sizeof(float);
    /* A tile's full buffer is a quarter of the whole one, up to padding. */
    ZSH_EXPECT_TRUE(most <= whole / ntiles + (size_t)zsh_comm_size(comm) * sizeof(float) * 2);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_tiled_create(comm, 3, ZSH_FLOAT32, 0, &t));
    zsh_tiled_destroy(t);
}
