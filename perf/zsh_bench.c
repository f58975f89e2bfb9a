/*
 * zsh_bench: latency and bandwidth of ZeroShard's collectives under mpirun or
 * zshrun, printed the way the OSU micro-benchmarks print theirs (the header
 * lines, then Size and Avg Latency(us) first, -f and -c columns as OSU's),
 * with nccl-tests' algbw and busbw after them, and optionally a baseline timed
 * on the same buffers in alternating rounds: the MPI library's own collective
 * on host buffers, or with --device cuda the bare NCCL call on device buffers.
 *
 * Size is the number of bytes nccl-tests quotes for the collective
 * (perf/busbw.h): for allgather the gathered buffer, that is ranks times
 * OSU's per-rank message size; for reduce_scatter its input.
 */
#include "bench.h"

#include <zeroshard/device.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    zsh_bench_opts_t opts;
    int              rank, size;
    int              baseline;  /* --baseline mpi and MPI has the type, or --device cuda */
    FILE            *csv;       /* rank 0 only */
    zsh_comm_t      *comm;
    zsh_bench_cuda_t *cuda;     /* --device cuda */
} zsh_bench_t;

static int zsh_bench_on_device(const zsh_bench_t *bench)
{
    return bench->opts.device == ZSH_BENCH_CUDA;
}

static void zsh_bench_header(const zsh_bench_t *bench)
{
    const zsh_bench_opts_t *o = &bench->opts;

    printf("# OSU-style ZeroShard %s Latency Test v%s (zsh_bench)\n", o->coll->title, ZSH_VERSION_STRING);
    printf("# Ranks: %d, Datatype: %s%s%s\n", bench->size, o->dtype->name,
           (o->coll->coll == ZSH_BUSBW_BROADCAST) ? ", Root: 0" : "",
           (o->coll->coll == ZSH_BUSBW_REDUCE_SCATTER || o->coll->coll == ZSH_BUSBW_ALLREDUCE) ? ", Op: sum" : "");
    printf("# Message size: total bytes per call as nccl-tests counts them: %s\n", o->coll->size_note);
    printf("# Avg Latency: time per call averaged over the ranks%s\n",
           o->full ? "; Min/Max Latency: the fastest and slowest rank" : "");
    printf("# algbw = Size / Avg Latency, busbw = algbw * %s (nccl-tests), in GB/s (1e9 B/s)\n",
           o->coll->factor);
    if (o->cold) {
        printf("# Cold: calls rotate through %zu MiB of buffers per size\n", zsh_bench_cold_budget() >> 20);
    }
    if (zsh_bench_on_device(bench)) {
        printf("# Device: cuda, %s\n", zsh_bench_cuda_describe(bench->cuda));
        printf("# Timing: both sides enqueue on one stream (zsh_comm_set_stream ZSH_STREAM_ENQUEUE), "
               "the clock stops after cudaStreamSynchronize\n");
        printf("# Memory type: %s\n", o->mem_told ? "told once (zsh_comm_set_mem_type ZSH_MEM_CUDA)"
                                                   : "asked of CUDA for each call's buffers (auto)");
        printf("# Baseline: %s on the same buffers and stream, its own NCCL communicator, %d alternating "
               "rounds of zsh then NCCL, medians; zsh/NCCL > 1: zsh is faster\n", o->coll->nccl_call,
               ZSH_BENCH_BASELINE_ROUNDS);
    } else if (bench->baseline) {
        printf("# Baseline: %s on the same buffers, %d alternating rounds of zsh then MPI, medians;"
               " zsh/MPI > 1: zsh is faster\n", o->coll->mpi_call, ZSH_BENCH_BASELINE_ROUNDS);
    } else if (o->baseline_mpi) {
        printf("# Baseline: MPI has no %s type; the MPI columns are left out\n", o->dtype->name);
    }
    printf("%-10s%18s", "# Size", "Avg Latency(us)");
    if (o->full) {
        printf("%18s%18s%12s", "Min Latency(us)", "Max Latency(us)", "Iterations");
    }
    printf("%14s%14s", "algbw(GB/s)", "busbw(GB/s)");
    if (zsh_bench_on_device(bench)) {
        printf("%18s%18s%10s", "NCCL Latency(us)", "NCCL busbw(GB/s)", "zsh/NCCL");
    } else if (bench->baseline) {
        printf("%18s%10s", "MPI busbw(GB/s)", "zsh/MPI");
    }
    if (o->check) {
        printf("%12s", "Validation");
    }
    printf("\n");
    fflush(stdout);
}

static void zsh_bench_print_row(const zsh_bench_t *bench, const zsh_bench_row_t *row)
{
    const zsh_bench_opts_t *o = &bench->opts;
    zsh_busbw_coll_t        c = o->coll->coll;
    double algbw   = zsh_busbw_algbw(row->bytes, row->zsh.avg);
    double busbw   = zsh_busbw_busbw(c, row->bytes, row->zsh.avg, bench->size);
    double base_bus = zsh_busbw_busbw(c, row->bytes, row->base_avg, bench->size);
    double ratio    = (row->zsh.avg > 0.0) ? row->base_avg / row->zsh.avg : 0.0;

    printf("%-10zu%18.2f", row->bytes, row->zsh.avg * 1e6);
    if (o->full) {
        printf("%18.2f%18.2f%12d", row->zsh.min * 1e6, row->zsh.max * 1e6, row->iterations);
    }
    printf("%14.3f%14.3f", algbw, busbw);
    if (zsh_bench_on_device(bench)) {
        printf("%18.2f%18.3f%10.3f", row->base_avg * 1e6, base_bus, ratio);
    } else if (bench->baseline) {
        printf("%18.3f%10.2f", base_bus, ratio);
    }
    if (o->check) {
        printf("%12s", row->validated ? "Pass" : "Fail");
    }
    printf("\n");
    fflush(stdout);
    if (bench->csv == NULL) {
        return;
    }
    fprintf(bench->csv, "%s,%d,%s,%zu,%zu,%d,%.4f,%.4f,%.4f,%.6f,%.6f,", o->coll->name, bench->size,
            o->dtype->name, row->bytes, row->count, row->iterations, row->zsh.avg * 1e6,
            row->zsh.min * 1e6, row->zsh.max * 1e6, algbw, busbw);
    if (bench->baseline) {
        fprintf(bench->csv, "%.4f,%.6f,%.6f,", row->base_avg * 1e6, base_bus, ratio);
    } else {
        fprintf(bench->csv, ",,,");
    }
    fprintf(bench->csv, "%s\n", o->check ? (row->validated ? "pass" : "fail") : "");
}

static int zsh_bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double zsh_bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), zsh_bench_cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One timed block on the host or the device; @base: the baseline's. */
static zsh_bench_time_t zsh_bench_block(const zsh_bench_t *bench, zsh_bench_bufs_t *b, int base, int iters)
{
    if (zsh_bench_on_device(bench)) {
        return zsh_bench_cuda_time(bench->cuda, &bench->opts, bench->comm, base, iters);
    }
    return zsh_bench_time(&bench->opts, b, bench->comm, base, iters);
}

/* Time zsh (and the baseline) over the rounds; fill the row's times. */
static void zsh_bench_measure(const zsh_bench_t *bench, zsh_bench_bufs_t *b, int iters, int warmup,
                              zsh_bench_row_t *row)
{
    double zavg[ZSH_BENCH_BASELINE_ROUNDS], mavg[ZSH_BENCH_BASELINE_ROUNDS];
    int    rounds = bench->baseline ? ZSH_BENCH_BASELINE_ROUNDS : 1, r;

    if (zsh_bench_on_device(bench) && (warmup < 1)) {
        warmup = 1; /* ZeroShard's first device call creates its NCCL communicator: never timed */
    }
    if (warmup > 0) {
        zsh_bench_block(bench, b, 0, warmup);
        if (bench->baseline) {
            zsh_bench_block(bench, b, 1, warmup);
        }
    }
    for (r = 0; r < rounds; r++) {
        zsh_bench_time_t t = zsh_bench_block(bench, b, 0, iters);

        zavg[r]      = t.avg;
        row->zsh.min = (r == 0 || t.min < row->zsh.min) ? t.min : row->zsh.min;
        row->zsh.max = (r == 0 || t.max > row->zsh.max) ? t.max : row->zsh.max;
        if (bench->baseline) {
            mavg[r] = zsh_bench_block(bench, b, 1, iters).avg;
        }
    }
    row->zsh.avg    = zsh_bench_median(zavg, rounds);
    row->base_avg   = bench->baseline ? zsh_bench_median(mavg, rounds) : 0.0;
    row->iterations = iters * rounds;
}

/* -c: fresh inputs and poisoned outputs in the first and last set, one more
 * zsh call on each, every element checked on every rank. */
static int zsh_bench_validate(const zsh_bench_t *bench, zsh_bench_bufs_t *b)
{
    size_t sets[2] = {0, b->nsets - 1}, k;
    long   wrong = 0, all = 0;

    if (zsh_bench_on_device(bench)) {
        wrong = (long)zsh_bench_cuda_validate(bench->cuda, &bench->opts, bench->comm, bench->rank, bench->size);
    }
    for (k = 0; !zsh_bench_on_device(bench) && (k < (b->nsets > 1 ? 2u : 1u)); k++) {
        zsh_bench_fill(&bench->opts, b, sets[k], bench->rank);
        zsh_bench_call(&bench->opts, b, sets[k], bench->comm, 0);
        wrong += (long)zsh_bench_verify(&bench->opts, b, sets[k], bench->rank, bench->size);
    }
    all = wrong;
    zsh_bench_world_allreduce_long(&all, ZSH_SUM);
    return all == 0;
}

/* One size: returns 0 when -c found a wrong element. */
static int zsh_bench_size(zsh_bench_t *bench, size_t size_bytes)
{
    const zsh_bench_opts_t *o = &bench->opts;
    zsh_busbw_coll_t        c = o->coll->coll;
    size_t           per   = (c == ZSH_BUSBW_ALLGATHER || c == ZSH_BUSBW_REDUCE_SCATTER || c == ZSH_BUSBW_ALLTOALL)
                                 ? (size_t)bench->size : 1;
    size_t           count = size_bytes / (per * o->dtype->esize);
    int              large = size_bytes > ZSH_BENCH_LARGE_SIZE;
    int              iters = large ? (o->iters + ZSH_BENCH_LARGE_DIVISOR - 1) / ZSH_BENCH_LARGE_DIVISOR : o->iters;
    int              warm  = large ? (o->warmup + ZSH_BENCH_LARGE_DIVISOR - 1) / ZSH_BENCH_LARGE_DIVISOR : o->warmup;
    zsh_bench_bufs_t b;
    zsh_bench_row_t  row;
    long             ok;

    if ((count == 0) && (c != ZSH_BUSBW_BARRIER)) {
        return 1; /* less than one element per rank */
    }
    memset(&b, 0, sizeof(b));
    ok = zsh_bench_on_device(bench) ? zsh_bench_cuda_bufs_init(bench->cuda, o, count, bench->size, bench->rank)
                                    : zsh_bench_bufs_init(&b, o, count, bench->size);
    zsh_bench_world_allreduce_long(&ok, ZSH_MIN);
    if (!ok) {
        fprintf(stderr, "zsh_bench: rank %d: out of %s memory for %zu-byte buffers\n", bench->rank,
                zsh_bench_on_device(bench) ? "device" : "host", size_bytes);
        zsh_bench_world_abort(1);
    }
    if (!zsh_bench_on_device(bench)) {
        zsh_bench_fill(o, &b, 0, bench->rank);
        zsh_bench_bufs_replicate(&b);
    }
    memset(&row, 0, sizeof(row));
    row.bytes     = zsh_busbw_bytes(c, count, o->dtype->esize, bench->size);
    row.count     = count;
    zsh_bench_measure(bench, &b, iters, warm, &row);
    row.validated = o->check ? zsh_bench_validate(bench, &b) : 1;
    if (bench->rank == 0) {
        zsh_bench_print_row(bench, &row);
    }
    if (zsh_bench_on_device(bench)) {
        zsh_bench_cuda_bufs_free(bench->cuda);
    } else {
        zsh_bench_bufs_free(&b);
    }
    return row.validated;
}

/* Rank 0 opens the CSV file; every rank learns whether it could. */
static int zsh_bench_open_csv(zsh_bench_t *bench)
{
    const char *base = zsh_bench_on_device(bench) ? "nccl" : "mpi";
    long        ok   = 1;

    if ((bench->rank == 0) && (bench->opts.csv_path != NULL)) {
        bench->csv = fopen(bench->opts.csv_path, "w");
        if (bench->csv == NULL) {
            fprintf(stderr, "zsh_bench: --csv %s: %s\n", bench->opts.csv_path, strerror(errno));
            ok = 0;
        } else {
            fprintf(bench->csv, "collective,ranks,dtype,size_bytes,count,iterations,avg_us,min_us,max_us,"
                                "algbw_gbs,busbw_gbs,%s_avg_us,%s_busbw_gbs,zsh_over_%s,validation\n",
                    base, base, base);
        }
    }
    zsh_bench_world_allreduce_long(&ok, ZSH_MIN);
    return (int)ok;
}

/* --device cuda: the GPU, the stream and the NCCL baseline on every rank, or
 * each rank that cannot says why. */
static int zsh_bench_open_device(zsh_bench_t *bench)
{
    char err[256] = "";
    long ok;

    ok = (zsh_bench_cuda_open(bench->comm, &bench->cuda, err, sizeof(err)) == 0);
    if (ok && bench->opts.mem_told && (zsh_comm_set_mem_type(bench->comm, ZSH_MEM_CUDA) != ZSH_OK)) {
        snprintf(err, sizeof(err), "zsh_comm_set_mem_type: %s", zsh_last_error());
        ok = 0;
    }
    zsh_bench_world_allreduce_long(&ok, ZSH_MIN);
    if (!ok) {
        if (err[0] != '\0') {
            fprintf(stderr, "zsh_bench: rank %d: --device cuda: %s\n", bench->rank, err);
        }
        zsh_bench_cuda_close(bench->cuda);
        bench->cuda = NULL;
    }
    return (int)ok;
}

/* The sweep: 0 when every size ran and validated, 1 when one did not, 2
 * when --device cuda cannot run here. */
static int zsh_bench_run(zsh_bench_t *bench)
{
    size_t s;
    int    ok = 1, rc, t;

    if (zsh_bench_world_open(&bench->comm) != ZSH_OK) {
        fprintf(stderr, "zsh_bench: rank %d: creating the communicator failed: %s\n", bench->rank,
                zsh_last_error());
        return 1;
    }
    bench->rank = zsh_bench_world_rank();
    bench->size = zsh_bench_world_size();
    if (zsh_bench_on_device(bench) && !zsh_bench_open_device(bench)) {
        rc = 2;
        goto out_comm;
    }
    if (!bench->opts.determinism && !zsh_bench_open_csv(bench)) {
        rc = 1;
        goto out_device;
    }
    /* Each type in turn, a table of its own (one CSV: its rows name it). */
    for (t = 0; t < bench->opts.ndtypes; t++) {
        bench->opts.dtype = bench->opts.dtypes[t];
        bench->baseline   = zsh_bench_on_device(bench) ||
                            (bench->opts.baseline_mpi && (bench->opts.dtype->mpi != ZSH_BENCH_MPI_NONE));
        if (bench->opts.determinism) {
            ok &= zsh_bench_determinism(&bench->opts, bench->comm);
            continue;
        }
        if (bench->rank == 0) {
            if (t > 0) {
                printf("\n");
            }
            zsh_bench_header(bench);
        }
        if (bench->opts.coll->coll == ZSH_BUSBW_BARRIER) {
            ok &= zsh_bench_size(bench, 0); /* one row: it moves no data */
        }
        for (s = bench->opts.min_size; (bench->opts.coll->coll != ZSH_BUSBW_BARRIER) &&
                                       (s <= bench->opts.max_size); s *= 2) {
            ok &= zsh_bench_size(bench, s);
            if (s > SIZE_MAX / 2) {
                break;
            }
        }
    }
    rc = ok ? 0 : 1;
out_device:
    zsh_bench_cuda_close(bench->cuda);
out_comm:
    if (zsh_bench_world_close(bench->comm) != ZSH_OK) {
        fprintf(stderr, "zsh_bench: rank %d: zsh_comm_destroy failed: %s\n", bench->rank, zsh_last_error());
        rc = (rc == 0) ? 1 : rc;
    }
    return rc;
}

/* Options the job cannot take, past what the parser knows: 0, or -1 with @err. */
static int zsh_bench_check_job(const zsh_bench_opts_t *o, char *err, size_t errlen)
{
    if (o->baseline_mpi && !zsh_bench_world_is_mpi()) {
        snprintf(err, errlen, "--baseline mpi needs an MPI job (mpirun), not a torchrun-style one%s",
#ifdef ZSH_BENCH_HAVE_MPI
                 ""
#else
                 "; this zsh_bench was built without MPI"
#endif
                 );
        return -1;
    }
    for (int t = 0; t < o->ndtypes; t++) {
        if (o->baseline_mpi && (o->max_size / o->dtypes[t]->esize > INT_MAX)) {
            snprintf(err, errlen, "--baseline mpi: %zu bytes of %s is more elements than MPI counts take",
                     o->max_size, o->dtypes[t]->name);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    zsh_bench_t bench;
    char        err[256];
    int         rc;

    /* The options first: one refused (or --help) answers at once, without
     * starting MPI (a singleton MPI_Init starts a runtime daemon). */
    zsh_bench_world_choose();
    memset(&bench, 0, sizeof(bench));
    rc = zsh_bench_parse(argc, argv, &bench.opts, err, sizeof(err));
    if (rc == 0) {
        rc = zsh_bench_check_job(&bench.opts, err, sizeof(err));
    }
    if (rc != 0) {
        if (zsh_bench_world_rank() == 0) {
            if (rc < 0) {
                fprintf(stderr, "zsh_bench: %s\n", err);
            }
            zsh_bench_usage(rc < 0 ? stderr : stdout);
        }
        return rc < 0 ? 2 : 0;
    }
    zsh_bench_world_init(&argc, &argv);
    bench.rank = zsh_bench_world_rank();
    bench.size = zsh_bench_world_size();
    rc = zsh_bench_run(&bench);
    if ((bench.csv != NULL) && (fclose(bench.csv) != 0)) {
        fprintf(stderr, "zsh_bench: --csv %s: %s\n", bench.opts.csv_path, strerror(errno));
        rc = (rc == 0) ? 1 : rc;
    }
    zsh_bench_world_finalize();
    return rc;
}
