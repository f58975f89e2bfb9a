/*
 * zsh_bench: OSU-style latency and nccl-tests-style bandwidth of ZeroShard's
 * collectives under mpirun or zshrun, optionally against the MPI library's
 * own collectives on the same host buffers, or, with --device cuda, on CUDA
 * device buffers against bare NCCL calls on the same buffers.
 *
 * The program is split along its seams: options (bench_options.c), element
 * types and the exact check of results (bench_dtype.c), the job it runs in
 * (bench_world.c), host buffers and timing (bench_run.c), device buffers and
 * timing (bench_cuda.c), and the report (zsh_bench.c).
 */
#ifndef ZSH_PERF_BENCH_H_
#define ZSH_PERF_BENCH_H_

#include "busbw.h"

#ifdef ZSH_BENCH_HAVE_MPI
#include <zeroshard/mpi.h>
typedef MPI_Datatype zsh_bench_mpi_type_t;
#define ZSH_BENCH_MPI(t)   (t)
#define ZSH_BENCH_MPI_NONE MPI_DATATYPE_NULL
#else
#include <zeroshard.h>
typedef int zsh_bench_mpi_type_t; /* a build without MPI: never used */
#define ZSH_BENCH_MPI(t)   0
#define ZSH_BENCH_MPI_NONE 0
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Rounds of zsh then baseline (MPI, or NCCL with --device cuda) timing per
 * size; the median is reported, so one noisy round on a shared machine does
 * not decide it. */
#define ZSH_BENCH_BASELINE_ROUNDS 5
/* Above this size (bytes) the iteration and warmup counts drop by
 * ZSH_BENCH_LARGE_DIVISOR, as OSU does, so a sweep to 32 MiB stays short. */
#define ZSH_BENCH_LARGE_SIZE      (1u << 20)
#define ZSH_BENCH_LARGE_DIVISOR   5

typedef struct {
    const char      *name;   /* as -T spells it */
    zsh_dtype_t      dtype;
    size_t           esize;  /* bytes per element */
    zsh_bench_mpi_type_t mpi; /* ZSH_BENCH_MPI_NONE: MPI has no such type */
} zsh_bench_dtype_t;

typedef struct {
    const char      *name;      /* as the command line spells it */
    const char      *title;     /* for the header line */
    zsh_busbw_coll_t coll;
    const char      *size_note; /* what Size counts */
    const char      *factor;    /* busbw / algbw, as the header states it */
    const char      *mpi_call;  /* the baseline on host buffers */
    const char      *nccl_call; /* the baseline on device buffers */
} zsh_bench_coll_t;

typedef enum {
    ZSH_BENCH_HOST,
    ZSH_BENCH_CUDA
} zsh_bench_device_t;

/* The most element types one run takes (-T all: every one). */
#define ZSH_BENCH_MAX_DTYPES 16

typedef struct {
    const zsh_bench_coll_t  *coll;
    const zsh_bench_dtype_t *dtype;  /* the type being run: dtypes[i] in turn */
    const zsh_bench_dtype_t *dtypes[ZSH_BENCH_MAX_DTYPES]; /* -T, in order */
    int          ndtypes;
    size_t       min_size, max_size; /* bytes, -m */
    int          iters, warmup;      /* -i, -x: for sizes up to ZSH_BENCH_LARGE_SIZE */
    int          full;               /* -f */
    int          check;              /* -c */
    int          baseline_mpi;       /* --baseline mpi */
    int          cold;               /* --cold */
    zsh_bench_device_t device;       /* --device */
    int          mem_told;           /* --mem-type cuda: zsh_comm_set_mem_type, no queries */
    int          determinism;        /* --check-determinism */
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
    double            base_avg;    /* the baseline's median round's avg; 0 without one */
    int               validated;   /* -c: 1 pass, 0 fail */
} zsh_bench_row_t;

/* ---- bench_options.c ---- */
/* Parse argv into @opts: 0 to run, 1 for --help, -1 on a bad option, with
 * @err (of @errlen bytes) saying why. */
int zsh_bench_parse(int argc, char **argv, zsh_bench_opts_t *opts, char *err, size_t errlen);

/* One blocking ZeroShard call of the benchmarked collective (sum, root 0). */
zsh_status_t zsh_bench_zsh_call(const zsh_bench_opts_t *opts, char *send, char *recv, size_t count,
                                zsh_comm_t *comm);
void zsh_bench_usage(FILE *out);

/* ---- bench_dtype.c ---- */
const zsh_bench_dtype_t *zsh_bench_dtype_find(const char *name);
const char *zsh_bench_dtype_names(void);
/* -T's argument: "all", or names separated by commas, into @out (at most
 * @max); the count, or 0 for an unknown or empty name or too many. */
int zsh_bench_dtype_list(const char *spec, const zsh_bench_dtype_t **out, int max);
/* The input value of element @i on rank @r: a small integer, so every sum
 * over ranks is exact in every type and any order. */
double zsh_bench_value(int r, size_t i);
/* Fill a set's input for @rank (and poison its output) as the collective expects. */
void zsh_bench_fill(const zsh_bench_opts_t *opts, const zsh_bench_bufs_t *b, size_t set, int rank);
/* Check every element of a set's output; returns the number of wrong ones
 * and prints the first to stderr. */
size_t zsh_bench_verify(const zsh_bench_opts_t *opts, const zsh_bench_bufs_t *b, size_t set,
                        int rank, int size);

/* ---- bench_world.c ---- */
/* Pick the job (MPI's or ZeroShard's bootstrap) before the options are
 * read, starting nothing: options refused, or --help, need no MPI_Init. */
void zsh_bench_world_choose(void);
/* Start MPI where it was chosen, once the options are accepted. */
void zsh_bench_world_init(int *argc, char ***argv);
int zsh_bench_world_rank(void);
int zsh_bench_world_size(void);
/* 1 when the job is MPI's, so the MPI baseline can run. */
int zsh_bench_world_is_mpi(void);
/* The communicator to benchmark (collective); the bookkeeping below works after it. */
zsh_status_t zsh_bench_world_open(zsh_comm_t **comm_p);
zsh_status_t zsh_bench_world_close(zsh_comm_t *comm);
void zsh_bench_world_finalize(void);
/* End the whole job: no rank waits for this one. */
void zsh_bench_world_abort(int code);
/* Seconds on a monotonic clock. */
double zsh_bench_world_time(void);
void zsh_bench_world_barrier(void);
/* In place over the ranks; @op is ZSH_SUM, ZSH_MIN or ZSH_MAX. */
void zsh_bench_world_allreduce_double(double *v, zsh_op_t op);
void zsh_bench_world_allreduce_long(long *v, zsh_op_t op);

/* ---- bench_run.c ---- */
size_t zsh_bench_cold_budget(void);
int zsh_bench_bufs_init(zsh_bench_bufs_t *b, const zsh_bench_opts_t *opts, size_t count, int size);
void zsh_bench_bufs_free(zsh_bench_bufs_t *b);
/* The bytes of one set, send and receive buffers aligned as in the arena. */
size_t zsh_bench_set_bytes(const zsh_bench_bufs_t *b);
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
/* The timings of the ranks' per-iteration @local seconds. */
zsh_bench_time_t zsh_bench_time_over_ranks(double local);

/* ---- bench_determinism.c ---- */
/* --check-determinism: the bits of every setting compared, then the
 * deterministic mode's cost, over the sizes of @opts; 1 when the bits held. */
int zsh_bench_determinism(const zsh_bench_opts_t *opts, zsh_comm_t *world);

/* ---- bench_cuda.c: --device cuda; in a build without CUDA and NCCL every
 * call fails, saying so ---- */
typedef struct zsh_bench_cuda zsh_bench_cuda_t;
/* Whether this build has the device path. */
int zsh_bench_cuda_built(void);
/* Collective over @comm: choose the GPU (LOCAL_RANK modulo the devices
 * visible), make a stream, put @comm's device calls on it (enqueue only:
 * both sides are timed up to a stream synchronisation), and create the bare
 * NCCL communicator of the baseline (its id broadcast over @comm). 0 on
 * success on every rank; else -1 with @err saying why on this rank. */
int zsh_bench_cuda_open(zsh_comm_t *comm, zsh_bench_cuda_t **cuda_p, char *err, size_t errlen);
void zsh_bench_cuda_close(zsh_bench_cuda_t *cuda);
/* The GPU and NCCL version, for the header. */
const char *zsh_bench_cuda_describe(const zsh_bench_cuda_t *cuda);
/* Device buffers of one size, with the inputs set; 0 when out of memory. */
int zsh_bench_cuda_bufs_init(zsh_bench_cuda_t *cuda, const zsh_bench_opts_t *opts, size_t count,
                             int size, int rank);
void zsh_bench_cuda_bufs_free(zsh_bench_cuda_t *cuda);
/* Time @iters calls after a barrier, the stream synchronised before the
 * clock stops; @nccl picks the bare NCCL call. Aborts the job on a failed call. */
zsh_bench_time_t zsh_bench_cuda_time(zsh_bench_cuda_t *cuda, const zsh_bench_opts_t *opts,
                                     zsh_comm_t *comm, int nccl, int iters);
/* -c on the device: fresh inputs, poisoned outputs, one zsh call, every
 * element copied back and checked; returns this rank's wrong elements. */
size_t zsh_bench_cuda_validate(zsh_bench_cuda_t *cuda, const zsh_bench_opts_t *opts,
                               zsh_comm_t *comm, int rank, int size);

#endif
