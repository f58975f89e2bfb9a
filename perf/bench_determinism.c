/*
 * zsh_bench --check-determinism: the deterministic mode (zeroshard.h)
 * held to its word on this job, and what it costs.
 *
 * Bits: every setting a reduce-scatter or all-reduce can run under here
 * (each algorithm the collective has, forced through ZSH_<COLL>_ALGO,
 * under a few chunk sizes and pipeline depths) reduces the same inputs,
 * floats of mixed sign and magnitude whose sum depends on its order. Each
 * setting gets a communicator of its own, made over this job's
 * communicator as the out-of-band exchange with the variables set, since
 * a communicator reads them once. Every rank's result must hash alike
 * under every setting in the mode; without it, how many settings differ is
 * printed, to show that the comparison can fail. A setting that cannot run
 * here (direct without cross-memory attach, eager past its size) is
 * counted as skipped.
 *
 * Cost: the automatic choice on this job's communicator, the default mode
 * and the deterministic one timed in alternating rounds on the same
 * buffers, medians, and their ratio.
 */
#include "bench.h"

#include "core/elem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const zsh_bench_det_algos[] = {"auto", "ring", "rd", "direct", "eager", "hier",
                                                  "ordered", "chain"};
/* Chunk sizes, each with a pipeline depth: a communicator costs a
 * transport's set-up, so the pairs cover both lists without their product
 * (the unit tests, determinism_test.c, take the product). */
static const char *const zsh_bench_det_chunks[] = {"4k", "64k", "1m"};
static const char *const zsh_bench_det_depths[] = {"2", "8", "3"};

#define ZSH_BENCH_DET_NALGOS  (sizeof(zsh_bench_det_algos) / sizeof(zsh_bench_det_algos[0]))
#define ZSH_BENCH_DET_NCHUNKS (sizeof(zsh_bench_det_chunks) / sizeof(zsh_bench_det_chunks[0]))

/* The most an eager call takes (on shared-memory boards). */
#define ZSH_BENCH_DET_EAGER_MAX (16u << 10)

/* The out-of-band exchange of a setting's communicator: an all-gather on
 * the job's. */
static zsh_status_t zsh_bench_det_oob_allgather(const void *send, void *recv, size_t len,
                                                void *ctx, void **req_p)
{
    return zsh_iallgather(send, recv, len, ZSH_UINT8, ctx, (zsh_request_t **)req_p);
}

static zsh_status_t zsh_bench_det_oob_test(void *req)
{
    return zsh_request_test(req);
}

static void zsh_bench_det_oob_free(void *req)
{
    zsh_request_free(req);
}

/* Input element @i of rank @r: its order of summation shows in the bits. */
static double zsh_bench_det_value(int r, size_t i)
{
    uint64_t s = (uint64_t)i * 0x9e3779b97f4a7c15ull + (uint64_t)(r + 1) * 0xbf58476d1ce4e5b9ull;

    s ^= s >> 31;
    s *= 0x94d049bb133111ebull;
    s ^= s >> 29;
    return ((double)(s >> 11) / 9007199254740992.0 - 0.5) * (double)(1u << (s % 9u));
}

/* FNV-1a over @len bytes. */
static uint64_t zsh_bench_det_hash(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    uint64_t h             = 0xcbf29ce484222325ull;
    size_t i;

    for (i = 0; i < len; i++) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}

/* One call of the benchmarked collective; its status. */
static zsh_status_t zsh_bench_det_call(const zsh_bench_opts_t *opts, zsh_bench_bufs_t *b,
                                       zsh_comm_t *comm)
{
    return zsh_bench_zsh_call(opts, zsh_bench_send(b, 0), zsh_bench_recv(b, 0), b->count, comm);
}

/* A communicator over @world with the setting's variables. */
static zsh_status_t zsh_bench_det_comm(zsh_comm_t *world, const char *algo_var, const char *algo,
                                       const char *chunk, const char *depth, zsh_comm_t **comm_p)
{
    zsh_oob_t oob = {.rank      = zsh_comm_rank(world),
                     .size      = zsh_comm_size(world),
                     .ctx       = world,
                     .allgather = zsh_bench_det_oob_allgather,
                     .test      = zsh_bench_det_oob_test,
                     .free      = zsh_bench_det_oob_free};

    setenv(algo_var, algo, 1);
    setenv("ZSH_CHUNK_SIZE", chunk, 1);
    setenv("ZSH_PIPELINE_DEPTH", depth, 1);
    return zsh_comm_init_oob(&oob, comm_p);
}

/* Elements of a call of @bytes as nccl-tests counts them. */
static size_t zsh_bench_det_count(const zsh_bench_opts_t *opts, size_t bytes, int size)
{
    size_t n = bytes / opts->dtype->esize;

    if (opts->coll->coll == ZSH_BUSBW_REDUCE_SCATTER) {
        n /= (size_t)size;
    }
    return (n > 0) ? n : 1;
}

/* What the settings gave at one size. */
typedef struct zsh_bench_det_tally {
    long     ran, skipped, failed;
    long     differ[2];   /* settings whose bits differed from the first's: default, mode */
    uint64_t first[2];    /* the first setting's hash of this rank's result */
    int      have[2];
} zsh_bench_det_tally_t;

static void zsh_bench_det_fill(const zsh_bench_opts_t *opts, zsh_bench_bufs_t *b, int rank);

/* Both modes of one setting's communicator at one size, into @t. */
static void zsh_bench_det_one(const zsh_bench_opts_t *opts, zsh_comm_t *comm, size_t bytes,
                              const char *what, zsh_bench_det_tally_t *t)
{
    int rank = zsh_comm_rank(comm), mode;
    zsh_bench_bufs_t b;
    zsh_status_t st;
    uint64_t h;

    if (!zsh_bench_bufs_init(&b, opts, zsh_bench_det_count(opts, bytes, zsh_comm_size(comm)),
                             zsh_comm_size(comm))) {
        fprintf(stderr, "zsh_bench: rank %d: no memory for %zu bytes\n", rank, bytes);
        t->failed++;
        return;
    }
    zsh_bench_det_fill(opts, &b, rank);
    for (mode = 1; mode >= 0; mode--) {
        zsh_comm_set_deterministic(comm, mode);
        st = zsh_bench_det_call(opts, &b, comm);
        if (st == ZSH_ERR_UNSUPPORTED) {
            t->skipped += mode; /* alike on every rank: a choice made of what they share */
            continue;
        }
        if (st != ZSH_OK) {
            fprintf(stderr, "zsh_bench: --check-determinism: %s, %zu bytes: %s\n", what, bytes,
                    zsh_last_error());
            t->failed++;
            continue;
        }
        h = zsh_bench_det_hash(zsh_bench_recv(&b, 0), b.recv_bytes);
        t->ran += mode;
        if (!t->have[mode]) {
            t->first[mode] = h;
            t->have[mode]  = 1;
        } else if (h != t->first[mode]) {
            t->differ[mode]++;
        }
    }
    zsh_bench_bufs_free(&b);
}

/* Every setting at every size of @opts, a communicator per setting; a row
 * per size, and 1 when the mode held at all of them. Bits is a digest of
 * the mode's results over the ranks, the same for any layout of the job. */
static int zsh_bench_det_bits(const zsh_bench_opts_t *opts, zsh_comm_t *world)
{
    const char *var = (opts->coll->coll == ZSH_BUSBW_REDUCE_SCATTER) ? "ZSH_REDUCE_SCATTER_ALGO"
                                                                      : "ZSH_ALLREDUCE_ALGO";
    zsh_bench_det_tally_t t[64];
    size_t a, c, i, nsizes = 0, s;
    int ok = 1;
    long v[4];
    char what[96];
    zsh_comm_t *comm;

    memset(t, 0, sizeof(t));
    for (s = opts->min_size; (s <= opts->max_size) && (nsizes < 64); s *= 2) {
        nsizes++;
    }
    for (a = 0; a < ZSH_BENCH_DET_NALGOS; a++) {
        for (c = 0; c < ZSH_BENCH_DET_NCHUNKS; c++) {
            snprintf(what, sizeof(what), "%s=%s ZSH_CHUNK_SIZE=%s ZSH_PIPELINE_DEPTH=%s", var,
                     zsh_bench_det_algos[a], zsh_bench_det_chunks[c], zsh_bench_det_depths[c]);
            if (zsh_bench_det_comm(world, var, zsh_bench_det_algos[a], zsh_bench_det_chunks[c],
                                   zsh_bench_det_depths[c], &comm) != ZSH_OK) {
                fprintf(stderr, "zsh_bench: --check-determinism: %s: %s\n", what,
                        zsh_last_error());
                t[0].failed++;
                continue;
            }
            for (i = 0, s = opts->min_size; i < nsizes; i++, s *= 2) {
                /* Past the largest descriptor message eager is refused: no need to hear why. */
                if ((strcmp(zsh_bench_det_algos[a], "eager") == 0) &&
                    (s > ZSH_BENCH_DET_EAGER_MAX)) {
                    t[i].skipped++;
                    continue;
                }
                zsh_bench_det_one(opts, comm, s, what, &t[i]);
            }
            zsh_comm_destroy(comm);
        }
    }
    for (i = 0, s = opts->min_size; i < nsizes; i++, s *= 2) {
        /* Settings that differed on any rank, and the digest. */
        v[0] = t[i].differ[1], v[1] = t[i].differ[0], v[2] = t[i].failed;
        v[3] = (long)(t[i].first[1] >> 24);
        zsh_bench_world_allreduce_long(&v[0], ZSH_MAX);
        zsh_bench_world_allreduce_long(&v[1], ZSH_MAX);
        zsh_bench_world_allreduce_long(&v[2], ZSH_MAX);
        zsh_bench_world_allreduce_long(&v[3], ZSH_SUM);
        if (zsh_bench_world_rank() == 0) {
            printf("%-10zu%10ld%10ld%14ld%18ld%16lx%8s\n", s, t[i].ran, t[i].skipped, v[0], v[1],
                   (unsigned long)v[3], ((v[0] == 0) && (v[2] == 0)) ? "Pass" : "FAIL");
        }
        ok &= (v[0] == 0) && (v[2] == 0);
    }
    return ok;
}

static int zsh_bench_det_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The default mode and the deterministic one on @world, alternating
 * rounds, medians of the rounds' averages. */
static void zsh_bench_det_cost(const zsh_bench_opts_t *opts, zsh_bench_bufs_t *b,
                               zsh_comm_t *world, size_t bytes)
{
    double t[2][ZSH_BENCH_BASELINE_ROUNDS];
    int iters = (bytes > ZSH_BENCH_LARGE_SIZE) ? opts->iters / ZSH_BENCH_LARGE_DIVISOR : opts->iters;
    int round, mode;

    iters = (iters > 0) ? iters : 1;
    for (mode = 0; mode < 2; mode++) {
        zsh_comm_set_deterministic(world, mode);
        zsh_bench_time(opts, b, world, 0, (opts->warmup > 0) ? opts->warmup : 1);
    }
    for (round = 0; round < ZSH_BENCH_BASELINE_ROUNDS; round++) {
        for (mode = 0; mode < 2; mode++) {
            zsh_comm_set_deterministic(world, mode);
            t[mode][round] = zsh_bench_time(opts, b, world, 0, iters).avg;
        }
    }
    zsh_comm_set_deterministic(world, 0);
    qsort(t[0], ZSH_BENCH_BASELINE_ROUNDS, sizeof(double), zsh_bench_det_cmp);
    qsort(t[1], ZSH_BENCH_BASELINE_ROUNDS, sizeof(double), zsh_bench_det_cmp);
    if (zsh_bench_world_rank() == 0) {
        printf("%-10zu%20.2f%20.2f%12.3f\n", bytes, t[0][ZSH_BENCH_BASELINE_ROUNDS / 2] * 1e6,
               t[1][ZSH_BENCH_BASELINE_ROUNDS / 2] * 1e6,
               t[1][ZSH_BENCH_BASELINE_ROUNDS / 2] / t[0][ZSH_BENCH_BASELINE_ROUNDS / 2]);
    }
}

/* Fill set 0 with this rank's inputs. */
static void zsh_bench_det_fill(const zsh_bench_opts_t *opts, zsh_bench_bufs_t *b, int rank)
{
    size_t n = b->send_bytes / opts->dtype->esize, i;

    for (i = 0; i < n; i++) {
        zsh_elem_set(zsh_bench_send(b, 0), opts->dtype->dtype, i, zsh_bench_det_value(rank, i));
    }
}

int zsh_bench_determinism(const zsh_bench_opts_t *opts, zsh_comm_t *world)
{
    int rank = zsh_comm_rank(world), size = zsh_comm_size(world), ok;
    zsh_bench_bufs_t b;
    size_t s;

    if (rank == 0) {
        printf("# Determinism: %s %s, every ZSH_*_ALGO x (ZSH_CHUNK_SIZE, "
               "ZSH_PIPELINE_DEPTH) (4k, 2), (64k, 8), (1m, 3) on the same inputs, a communicator each; Differ: "
               "settings whose bits differ from the first's\n", opts->coll->name,
               opts->dtype->name);
        printf("%-10s%10s%10s%14s%18s%16s%8s\n", "# Size", "Settings", "Skipped", "Differ(det)",
               "Differ(default)", "Bits(det)", "Result");
    }
    ok = zsh_bench_det_bits(opts, world);
    if (rank == 0) {
        printf("# Cost: the automatic choice, default and deterministic mode in %d "
               "alternating rounds, medians\n", ZSH_BENCH_BASELINE_ROUNDS);
        printf("%-10s%20s%20s%12s\n", "# Size", "Default(us)", "Deterministic(us)",
               "det/default");
    }
    for (s = opts->min_size; s <= opts->max_size; s *= 2) {
        if (!zsh_bench_bufs_init(&b, opts, zsh_bench_det_count(opts, s, size), size)) {
            fprintf(stderr, "zsh_bench: rank %d: no memory for %zu bytes\n", rank, s);
            return 0;
        }
        zsh_bench_det_fill(opts, &b, rank);
        zsh_bench_det_cost(opts, &b, world, s);
        zsh_bench_bufs_free(&b);
    }
    return ok;
}
