/*
 * zsh_demo: one ZeRO step in miniature, repeated.
 *
 * Each rank owns a shard of a parameter vector of P fp32 elements. Every
 * iteration it all-gathers the full parameters, builds a gradient over the
 * full vector, reduce-scatters the gradients back onto its shard and applies
 * an SGD step there, which is what a ZeRO stage 3 step does with each bucket.
 * Every result is checked exactly, and rank 0 prints the time, algbw and
 * busbw of both collectives (nccl-tests' definitions, perf/busbw.h).
 *
 * Launch it with mpirun, srun, or torchrun-style variables:
 *   mpirun -np 4 ./zsh_demo
 *   RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29611 ./zsh_demo & ...
 *
 * The values are chosen so fp32 arithmetic is exact in any reduction order:
 *   param_0[i]          = i mod 1024
 *   grad_r[i] at step t = s_t * (r + 1) * (i mod 7 + 1),  s_t = +1 for even t, -1 for odd t
 * so the reduced gradient is s_t * (i mod 7 + 1) * N(N+1)/2 for SUM, or
 * (N+1)/2 times it for AVG, and with a learning rate of 1/4 the parameters
 * alternate between two exact values however many iterations run.
 */
#include "busbw.h"

#include <zeroshard.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ZSH_DEMO_WARMUP      2
#define ZSH_DEMO_MASTER_PORT "29517"
#define ZSH_DEMO_LR          0.25

typedef struct {
    size_t   numel;  /* P, parameters in the whole model */
    int      iters;  /* timed iterations, after the warmup */
    zsh_op_t op;     /* ZSH_SUM or ZSH_AVG */
} zsh_demo_opts_t;

typedef struct {
    zsh_demo_opts_t opts;
    zsh_comm_t     *comm;
    int             rank, size;
    size_t          shard;       /* ceil(P / N): every buffer is padded to it */
    float          *param_shard; /* shard: the parameters this rank owns */
    float          *grad_shard;  /* shard: the reduced gradient of those */
    float          *params;      /* N * shard: gathered parameters */
    float          *grads;       /* N * shard: this rank's gradient of all of them */
    double          ag_sec, rs_sec; /* summed over the timed iterations */
    uint64_t        errors;         /* mismatches seen by this rank */
} zsh_demo_t;

/* ------------------------------------------------------------------------ */
/* Launcher environment                                                     */
/* ------------------------------------------------------------------------ */

static int zsh_demo_isset(const char *name)
{
    return getenv(name) != NULL;
}

/*
 * zsh_comm_init() reads only torchrun-style variables (RANK, WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT, or their ZSH_ forms). Translating what mpirun or
 * srun sets is the application's business, not the library's, so the mapping
 * lives here. MASTER_ADDR defaults to this host: a multi-node job must set it.
 */
static void zsh_demo_map_launcher_env(void)
{
    static const char *const launchers[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                               {"PMI_RANK", "PMI_SIZE"},
                                               {"SLURM_PROCID", "SLURM_NTASKS"}};
    size_t i;

    if (zsh_demo_isset("RANK") || zsh_demo_isset("ZSH_RANK")) {
        return;
    }
    for (i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
        if (zsh_demo_isset(launchers[i][0]) && zsh_demo_isset(launchers[i][1])) {
            setenv("RANK", getenv(launchers[i][0]), 1);
            setenv("WORLD_SIZE", getenv(launchers[i][1]), 1);
            return;
        }
    }
    /* No launcher and no size either: a lone process is a job of one. */
    if (!zsh_demo_isset("WORLD_SIZE") && !zsh_demo_isset("ZSH_WORLD_SIZE")) {
        setenv("RANK", "0", 1);
        setenv("WORLD_SIZE", "1", 1);
    }
}

static void zsh_demo_default_master(void)
{
    /* setenv(..., 0) keeps a value the user set; a ZSH_ form wins anyway. */
    setenv("MASTER_ADDR", "127.0.0.1", 0);
    setenv("MASTER_PORT", ZSH_DEMO_MASTER_PORT, 0);
}

/* ------------------------------------------------------------------------ */
/* Options                                                                  */
/* ------------------------------------------------------------------------ */

static void zsh_demo_usage(FILE *out, const char *prog)
{
    fprintf(out,
            "Usage: %s [-n elements] [-i iters] [-o sum|avg] [-h]\n"
            "  -n elements  parameters in the model, fp32 (default 16777216)\n"
            "  -i iters     timed iterations after %d warmup ones (default 10)\n"
            "  -o op        gradient reduction, sum or avg (default avg)\n"
            "  -h           this text\n"
            "Launch with mpirun, srun, or RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT.\n",
            prog, ZSH_DEMO_WARMUP);
}

/* Parse a positive decimal integer no larger than @max; 0 on success. */
static int zsh_demo_parse_count(const char *text, unsigned long long max, unsigned long long *out)
{
    unsigned long long v;
    char *end;

    if ((text[0] < '0') || (text[0] > '9')) {
        return -1;
    }
    v = strtoull(text, &end, 10);
    if ((*end != '\0') || (v == 0) || (v > max)) {
        return -1;
    }
    *out = v;
    return 0;
}

static int zsh_demo_parse_op(const char *text, zsh_op_t *op)
{
    if (strcmp(text, "sum") == 0) {
        *op = ZSH_SUM;
    } else if (strcmp(text, "avg") == 0) {
        *op = ZSH_AVG;
    } else {
        return -1;
    }
    return 0;
}

/* 0: run; 1: exit 0 (help); 2: exit 2 (bad usage, already reported). */
static int zsh_demo_parse_args(int argc, char **argv, zsh_demo_opts_t *opts)
{
    unsigned long long v;
    int opt;

    *opts = (zsh_demo_opts_t){.numel = 16u << 20, .iters = 10, .op = ZSH_AVG};
    while ((opt = getopt(argc, argv, "n:i:o:h")) != -1) {
        switch (opt) {
        case 'n':
            if (zsh_demo_parse_count(optarg, SIZE_MAX / sizeof(float) / 2, &v) != 0) {
                fprintf(stderr, "%s: -n wants a positive element count, got '%s'\n", argv[0],
                        optarg);
                return 2;
            }
            opts->numel = (size_t)v;
            break;
        case 'i':
            if (zsh_demo_parse_count(optarg, 1000000, &v) != 0) {
                fprintf(stderr, "%s: -i wants 1 to 1000000 iterations, got '%s'\n", argv[0],
                        optarg);
                return 2;
            }
            opts->iters = (int)v;
            break;
        case 'o':
            if (zsh_demo_parse_op(optarg, &opts->op) != 0) {
                fprintf(stderr, "%s: -o wants sum or avg, got '%s'\n", argv[0], optarg);
                return 2;
            }
            break;
        case 'h':
            zsh_demo_usage(stdout, argv[0]);
            return 1;
        default:
            zsh_demo_usage(stderr, argv[0]);
            return 2;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Values and their checks                                                  */
/* ------------------------------------------------------------------------ */

static double zsh_demo_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* s_t of the header comment: the sign of step @t's gradient. */
static double zsh_demo_sign(int t)
{
    return (t % 2 == 0) ? 1.0 : -1.0;
}

/* The reduced gradient of element @i at step @t, as the header derives it. */
static float zsh_demo_grad_reduced(const zsh_demo_t *d, size_t i, int t)
{
    double n = d->size, sum = n * (n + 1) / 2;
    double total = (d->opts.op == ZSH_AVG) ? sum / n : sum;

    if (i >= d->opts.numel) {
        return 0.0f; /* padding carries no gradient */
    }
    return (float)(zsh_demo_sign(t) * (double)(i % 7 + 1) * total);
}

/* Element @i of the parameters after @t steps: steps alternate in sign, so
 * after an odd number of them one step's worth is applied. */
static float zsh_demo_param(const zsh_demo_t *d, size_t i, int t)
{
    double p0 = (double)(i % 1024);

    if (i >= d->opts.numel) {
        return 0.0f; /* padding stays zero */
    }
    return (t % 2 == 0) ? (float)p0 : (float)(p0 - ZSH_DEMO_LR * zsh_demo_grad_reduced(d, i, 0));
}

/* Compare @n elements with their expected values; report the first
 * mismatch with rank, index, expected and actual value. */
static void zsh_demo_check(zsh_demo_t *d, const char *what, const float *buf, size_t first,
                           size_t n, int t, float (*expect)(const zsh_demo_t *, size_t, int))
{
    uint64_t bad = 0;
    size_t j;

    for (j = 0; j < n; j++) {
        float want = expect(d, first + j, t);

        if (buf[j] != want) {
            if (bad++ == 0) {
                fprintf(stderr, "zsh_demo: rank %d step %d: %s[%zu] = %.9g, expected %.9g\n",
                        d->rank, t, what, first + j, (double)buf[j], (double)want);
            }
        }
    }
    d->errors += bad;
}

static void zsh_demo_fill_grads(zsh_demo_t *d, int t)
{
    double scale = zsh_demo_sign(t) * (d->rank + 1);
    size_t i, total = d->shard * (size_t)d->size;

    for (i = 0; i < total; i++) {
        d->grads[i] = (i < d->opts.numel) ? (float)(scale * (double)(i % 7 + 1)) : 0.0f;
    }
}

/* Plain SGD on the owned, unpadded elements. */
static void zsh_demo_sgd(zsh_demo_t *d)
{
    size_t first = (size_t)d->rank * d->shard, j;

    for (j = 0; (j < d->shard) && (first + j < d->opts.numel); j++) {
        d->param_shard[j] -= (float)(ZSH_DEMO_LR * d->grad_shard[j]);
    }
}

/* ------------------------------------------------------------------------ */
/* Setup and teardown                                                       */
/* ------------------------------------------------------------------------ */

/* Before the communicator exists there is no rank to name. */
static int zsh_demo_fail(const zsh_demo_t *d, const char *what, zsh_status_t status)
{
    char who[32] = "";

    if (d->rank >= 0) {
        snprintf(who, sizeof(who), "rank %d: ", d->rank);
    }
    fprintf(stderr, "zsh_demo: %s%s failed: %s: %s\n", who, what, zsh_status_string(status),
            zsh_last_error());
    return -1;
}

static void zsh_demo_free_buffers(zsh_demo_t *d)
{
    free(d->grads);
    free(d->params);
    free(d->grad_shard);
    free(d->param_shard);
}

/* Allocate the padded buffers and give this rank's shard its step-0 values. */
static int zsh_demo_alloc_buffers(zsh_demo_t *d)
{
    size_t n = (size_t)d->size, first, j;

    d->shard       = (d->opts.numel + n - 1) / n;
    d->param_shard = calloc(d->shard, sizeof(float));
    d->grad_shard  = calloc(d->shard, sizeof(float));
    d->params      = calloc(d->shard * n, sizeof(float));
    d->grads       = calloc(d->shard * n, sizeof(float));
    if (!d->param_shard || !d->grad_shard || !d->params || !d->grads) {
        fprintf(stderr, "zsh_demo: rank %d: out of memory for %zu-element buffers\n", d->rank,
                d->shard * n);
        zsh_demo_free_buffers(d);
        return -1;
    }
    first = (size_t)d->rank * d->shard;
    for (j = 0; j < d->shard; j++) {
        d->param_shard[j] = zsh_demo_param(d, first + j, 0);
    }
    return 0;
}

static int zsh_demo_setup(zsh_demo_t *d)
{
    zsh_status_t status;

    zsh_demo_map_launcher_env();
    zsh_demo_default_master();
    status = zsh_comm_init(&d->comm);
    if (status != ZSH_OK) {
        return zsh_demo_fail(d, "zsh_comm_init", status);
    }
    d->rank = zsh_comm_rank(d->comm);
    d->size = zsh_comm_size(d->comm);
    if (zsh_demo_alloc_buffers(d) != 0) {
        goto err_destroy_comm;
    }
    return 0;

err_destroy_comm:
    zsh_comm_destroy(d->comm);
    return -1;
}

/* ------------------------------------------------------------------------ */
/* The step                                                                 */
/* ------------------------------------------------------------------------ */

/* The barrier keeps a slow rank's checking out of the others' timings. */
static int zsh_demo_allgather(zsh_demo_t *d, int t, int timed)
{
    zsh_status_t status;
    double start;

    status = zsh_barrier(d->comm);
    if (status != ZSH_OK) {
        return zsh_demo_fail(d, "zsh_barrier", status);
    }
    start  = zsh_demo_now();
    status = zsh_allgather(d->param_shard, d->params, d->shard, ZSH_FLOAT32, d->comm);
    if (status != ZSH_OK) {
        return zsh_demo_fail(d, "zsh_allgather", status);
    }
    d->ag_sec += timed ? zsh_demo_now() - start : 0.0;
    zsh_demo_check(d, "params", d->params, 0, d->shard * (size_t)d->size, t, zsh_demo_param);
    return 0;
}

static int zsh_demo_reduce_scatter(zsh_demo_t *d, int t, int timed)
{
    zsh_status_t status;
    double start;

    zsh_demo_fill_grads(d, t);
    status = zsh_barrier(d->comm);
    if (status != ZSH_OK) {
        return zsh_demo_fail(d, "zsh_barrier", status);
    }
    start  = zsh_demo_now();
    status = zsh_reduce_scatter(d->grads, d->grad_shard, d->shard, ZSH_FLOAT32, d->opts.op,
                                d->comm);
    if (status != ZSH_OK) {
        return zsh_demo_fail(d, "zsh_reduce_scatter", status);
    }
    d->rs_sec += timed ? zsh_demo_now() - start : 0.0;
    zsh_demo_check(d, "grad_shard", d->grad_shard, (size_t)d->rank * d->shard, d->shard, t,
                   zsh_demo_grad_reduced);
    return 0;
}

/* Warmup steps first, then the timed ones; then check the final shard. */
static int zsh_demo_run(zsh_demo_t *d)
{
    int t, steps = ZSH_DEMO_WARMUP + d->opts.iters;

    for (t = 0; t < steps; t++) {
        if ((zsh_demo_allgather(d, t, t >= ZSH_DEMO_WARMUP) != 0) ||
            (zsh_demo_reduce_scatter(d, t, t >= ZSH_DEMO_WARMUP) != 0)) {
            return -1;
        }
        zsh_demo_sgd(d);
    }
    zsh_demo_check(d, "param_shard", d->param_shard, (size_t)d->rank * d->shard, d->shard, steps,
                   zsh_demo_param);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Report                                                                   */
/* ------------------------------------------------------------------------ */

static void zsh_demo_print_row(const zsh_demo_t *d, const char *name, zsh_busbw_coll_t coll,
                               double sec)
{
    size_t bytes = zsh_busbw_bytes(coll, d->shard, sizeof(float), d->size);

    printf("  %-15s %12zu %12.1f %11.2f %11.2f\n", name, bytes, sec * 1e6,
           zsh_busbw_algbw(bytes, sec), zsh_busbw_busbw(coll, bytes, sec, d->size));
}

/* Times are the slowest rank's, as a step is only as fast as that rank. */
static int zsh_demo_report(zsh_demo_t *d, uint64_t *errors_p)
{
    double sec[2] = {d->ag_sec / d->opts.iters, d->rs_sec / d->opts.iters};
    zsh_status_t status;

    status = zsh_allreduce(sec, sec, 2, ZSH_FLOAT64, ZSH_MAX, d->comm);
    if (status == ZSH_OK) {
        status = zsh_allreduce(&d->errors, errors_p, 1, ZSH_UINT64, ZSH_SUM, d->comm);
    }
    if (status != ZSH_OK) {
        return zsh_demo_fail(d, "zsh_allreduce", status);
    }
    if (d->rank != 0) {
        return 0;
    }
    printf("zsh_demo: ZeRO step in miniature on %d rank(s)\n", d->size);
    printf("  parameters: %zu fp32 (%.2f MiB), shard %zu per rank (padded total %zu)\n",
           d->opts.numel, (double)d->opts.numel * sizeof(float) / (1 << 20), d->shard,
           d->shard * (size_t)d->size);
    printf("  iterations: %d timed after %d warmup; gradients reduced with %s; SGD lr %g\n",
           d->opts.iters, ZSH_DEMO_WARMUP, (d->opts.op == ZSH_AVG) ? "avg" : "sum", ZSH_DEMO_LR);
    printf("  %-15s %12s %12s %11s %11s\n", "collective", "bytes", "avg us", "algbw GB/s",
           "busbw GB/s");
    zsh_demo_print_row(d, "all-gather", ZSH_BUSBW_ALLGATHER, sec[0]);
    zsh_demo_print_row(d, "reduce-scatter", ZSH_BUSBW_REDUCE_SCATTER, sec[1]);
    if (*errors_p == 0) {
        printf("  verified: yes\n");
    } else {
        printf("  verified: NO, %" PRIu64 " mismatching element(s)\n", *errors_p);
    }
    return 0;
}

int main(int argc, char **argv)
{
    zsh_demo_t d = {.rank = -1};
    uint64_t errors = 0;
    zsh_status_t status;
    int rc;

    rc = zsh_demo_parse_args(argc, argv, &d.opts);
    if (rc != 0) {
        return (rc == 1) ? 0 : 2;
    }
    if (zsh_demo_setup(&d) != 0) {
        return 1;
    }
    rc = ((zsh_demo_run(&d) == 0) && (zsh_demo_report(&d, &errors) == 0) && (errors == 0)) ? 0 : 1;
    zsh_demo_free_buffers(&d);
    status = zsh_comm_destroy(d.comm);
    if (status != ZSH_OK) {
        zsh_demo_fail(&d, "zsh_comm_destroy", status);
        rc = 1;
    }
    return rc;
}
