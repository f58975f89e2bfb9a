/*
 * zsh_bench: OSU-style latency and nccl-tests-style bandwidth of ZeroShard's
 * collectives under mpirun, optionally against the MPI library's own
 * collectives on the same buffers.
 *
 * The program is split along its seams: options (bench_options.c), element
 * types and the exact check of results (bench_dtype.c), buffers and timing
 * (bench_run.c), and the report (zsh_bench.c).
 */
#ifndef ZSH_PERF_BENCH_H_
#define ZSH_PERF_BENCH_H_

#include "busbw.h"

#include <zeroshard/mpi.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Rounds of zsh then MPI timing per size with --baseline mpi; the median is
 * reported, so one noisy round on a shared machine does not decide it. */
#define ZSH_BENCH_BASELINE_ROUNDS 5
/* Above this size (bytes) the iteration and warmup counts drop by
 * ZSH_BENCH_LARGE_DIVISOR, as OSU does, so a sweep to 32 MiB stays short. */
#define ZSH_BENCH_LARGE_SIZE      (1u << 20)
#define ZSH_BENCH_LARGE_DIVISOR   5

typedef struct {
    const char      *name;   /* as -T spells it */
    zsh_dtype_t      dtype;
    size_t           esize;  /* bytes per element */
    MPI_Datatype     mpi;    /* MPI_DATATYPE_NULL: MPI has no such type */
} zsh_bench_dtype_t;

typedef struct {
    const char      *name;      /* as the command line spells it */
    const char      *title;     /* for the header line */
    zsh_busbw_coll_t coll;
    const char      *size_note; /* what Size counts */
    const char      *factor;    /* busbw / algbw, as the header states it */
    const char      *mpi_call;  /* the baseline */
} zsh_bench_coll_t;

typedef struct {
    const zsh_bench_coll_t  *coll;
    const zsh_bench_dtype_t *dtype;
    size_t       min_size, max_size; /* bytes, -m */
    int          iters, warmup;      /* -i, -x: for sizes up to ZSH_BENCH_LARGE_SIZE */
    int          full;               /* -f */
    int          check;              /* -c */
    int          baseline_mpi;       /* --baseline mpi */
    int          cold;               /* --cold */
    const char  *csv_path;           /* --csv, or NULL */
} zsh_bench_opts_t;

/* The buffers of one size: `nsets` copies of (send, recv), used in turn. */
typedef struct {
    size_t   count;            /* the count the zsh call takes */
    size_t   send_bytes, recv_bytes;
    size_t   nsets, next;      /* next: the set the next call uses */
    char    *arena;            /* nsets * (send_bytes + recv_bytes) */
} zsh_bench_bufs_t;

/* What one timed block measured, over the ranks: per-iteration seconds. */
typedef struct {
    double avg, min, max;
} zsh_bench_time_t;

/* One row of the report. */
typedef struct {
    size_t            bytes;       /* nccl-tests bytes, the Size column */
    size_t            count;
    int               iterations;  /* timed iterations per implementation */
    zsh_bench_time_t  zsh;         /* median round's avg; min/max over all rounds */
    double            mpi_avg;     /* median round's avg; 0 without a baseline */
    int               validated;   /* -c: 1 pass, 0 fail */
} zsh_bench_row_t;

/* ---- bench_options.c ---- */
/* Parse argv into @opts: 0 to run, 1 for --help, -1 on a bad option, with
 * @err (of @errlen bytes) saying why. */
int zsh_bench_parse(int argc, char **argv, zsh_bench_opts_t *opts, char *err, size_t errlen);
void zsh_bench_usage(FILE *out);

/* ---- bench_dtype.c ---- */
const zsh_bench_dtype_t *zsh_bench_dtype_find(const char *name);
const char *zsh_bench_dtype_names(void);
/* The input value of element @i on rank @r: a small integer, so every sum
 * over ranks is exact in every type and any order. */
double zsh_bench_value(int r, size_t i);
/* Fill a set's input for @rank (and poison its output) as the collective expects. */
void zsh_bench_fill(const zsh_bench_opts_t *opts, const zsh_bench_bufs_t *b, size_t set, int rank);
/* Check every element of a set's output; returns the number of wrong ones
 * and prints the first to stderr. */
size_t zsh_bench_verify(const zsh_bench_opts_t *opts, const zsh_bench_bufs_t *b, size_t set,
                        int rank, int size);

/* ---- bench_run.c ---- */
size_t zsh_bench_cold_budget(void);
int zsh_bench_bufs_init(zsh_bench_bufs_t *b, const zsh_bench_opts_t *opts, size_t count, int size);
void zsh_bench_bufs_free(zsh_bench_bufs_t *b);
/* Copy set 0 into every other set. */
void zsh_bench_bufs_replicate(zsh_bench_bufs_t *b);
char *zsh_bench_send(const zsh_bench_bufs_t *b, size_t set);
char *zsh_bench_recv(const zsh_bench_bufs_t *b, size_t set);
/* Time @iters calls after a barrier, rotating through the sets; @mpi picks
 * the MPI collective instead of ZeroShard's. Aborts the job on a failed call. */
zsh_bench_time_t zsh_bench_time(const zsh_bench_opts_t *opts, zsh_bench_bufs_t *b, zsh_comm_t *comm,
                                int mpi, int iters);
/* One untimed call on set @set. */
void zsh_bench_call(const zsh_bench_opts_t *opts, const zsh_bench_bufs_t *b, size_t set,
                    zsh_comm_t *comm, int mpi);

#endif
