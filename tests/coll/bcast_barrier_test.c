#include "algo/eager.h"
#include "coll/check.h"

#include "core/clock.h"
#include "core/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One broadcast, blocking or (@nonblocking) as a request waited for. */
static void zsh_bcast_run(zsh_comm_t *comm, zsh_dtype_t dtype, size_t count, int root,
                          bool nonblocking)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    size_t bytes = count * zsh_dtype_size(dtype);
    char *buf    = zsh_check_alloc(bytes);
    char what[128];

    if (rank == root) {
        zsh_check_fill(buf, dtype, ZSH_MIN, root, n, 0, count);
    } else {
        memset(buf, 0x5a, bytes);
    }
    if (nonblocking) {
        zsh_request_t *req = NULL;

        ZSH_EXPECT_STATUS(ZSH_OK, zsh_ibroadcast(buf, count, dtype, root, comm, &req));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
        zsh_request_free(req);
    } else {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_broadcast(buf, count, dtype, root, comm));
    }
    snprintf(what, sizeof(what), "%sbroadcast %s count=%zu root=%d", nonblocking ? "i" : "",
             zsh_dtype_name(dtype), count, root);
    zsh_check_buf(buf, dtype, ZSH_MIN, n, root, 0, count, what, __FILE__, __LINE__);
    free(buf);
}

/* Every algorithm a one-node job can run: the binomial tree, the direct
 * reads where cross-memory attach works, and eager on 2 to 8 ranks for the
 * counts its message holds; every root, dtype and count. */
static void zsh_bcast_every_algorithm(zsh_comm_t *comm, bool nonblocking)
{
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    const zsh_algo_t algos[] = {ZSH_ALGO_BINOMIAL, ZSH_ALGO_DIRECT, ZSH_ALGO_EAGER};
    int n = zsh_comm_size(comm);
    int roots[3] = {0, n - 1, n / 2};
    size_t a, d, c, r, bytes;

    for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
        /* Every rank takes the same branches: one job, one node. */
        if (((algos[a] == ZSH_ALGO_DIRECT) && ((n < 2) || !comm->local.direct)) ||
            ((algos[a] == ZSH_ALGO_EAGER) && ((n < 2) || (n > ZSH_EAGER_MAX_RANKS)))) {
            continue;
        }
        cfg->broadcast_algo = algos[a];
        cfg->chunk_size     = ZSH_CHECK_CHUNK;
        for (r = 0; r < 3; r++) {
            for (d = 0; d < ZSH_CHECK_NDTYPES; d++) {
                for (c = 0; c < zsh_check_ncounts; c++) {
                    bytes = zsh_check_counts[c] * zsh_dtype_size(zsh_check_dtypes[d]);
                    if ((algos[a] != ZSH_ALGO_EAGER) || zsh_eager_fits(comm, bytes)) {
                        zsh_bcast_run(comm, zsh_check_dtypes[d], zsh_check_counts[c], roots[r],
                                      nonblocking);
                    }
                }
            }
        }
        cfg->chunk_size = saved.chunk_size;
        if (algos[a] != ZSH_ALGO_EAGER) {
            /* above the default chunk size */
            zsh_bcast_run(comm, ZSH_FLOAT64, 100003, n - 1, nonblocking);
        }
    }
    *cfg = saved;
}

ZSH_RANK_TEST(broadcast, every_root_dtype_and_count_reaches_every_rank_by_every_algorithm)
{
    zsh_bcast_every_algorithm(comm, false);
}

ZSH_RANK_TEST(broadcast, ibroadcast_reaches_every_rank_by_every_algorithm)
{
    zsh_bcast_every_algorithm(comm, true);
}

/* Nobody leaves a barrier before the last rank enters it: rank 0 enters
 * 200 ms late, and every rank's exit time must follow rank 0's entry time
 * (CLOCK_MONOTONIC is one clock for all processes of a node). */
ZSH_RANK_TEST(barrier, no_rank_leaves_before_the_last_one_enters)
{
    const struct timespec late = {0, 200 * 1000 * 1000};
    int n = zsh_comm_size(comm), r;
    double times[2] = {0, 0}; /* rank 0's entry, this rank's exit */
    double *all = zsh_check_alloc(sizeof(times) * (size_t)n);

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_barrier(comm));
    if (zsh_comm_rank(comm) == 0) {
        nanosleep(&late, NULL);
        times[0] = zsh_clock_now();
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
    times[1] = zsh_clock_now();
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allgather(times, all, 2, ZSH_FLOAT64, comm));
    for (r = 0; r < n; r++) {
        if (all[2 * r + 1] < all[0]) {
            zsh_test_fail(__FILE__, __LINE__, "rank %d left the barrier %.3f s before rank 0 "
                          "entered it", r, all[0] - all[2 * r + 1]);
        }
    }
    free(all);
}

ZSH_RANK_TEST(barrier, many_barriers_in_a_row_complete)
{
    int i;

    for (i = 0; i < 50; i++) {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_barrier(comm));
    }
}
