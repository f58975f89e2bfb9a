/*
 * The job zsh_bench runs in. Under mpirun it is MPI's world, and the
 * bench's own bookkeeping (barriers before timed blocks, the reductions of
 * the timings, the abort) goes over MPI, as the MPI baseline needs. Under a
 * torchrun-style launcher (zshrun), or in a build without MPI, it is
 * ZeroShard's own bootstrap (zsh_comm_init()), and the bookkeeping goes over
 * the benchmarked communicator's host path: a GPU machine need not have MPI.
 *
 * The choice: RANK or ZSH_RANK in the environment means a torchrun-style
 * launcher; otherwise MPI where the build has it. A process started with
 * neither, in a build without MPI, is a job of one.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct {
    int         mpi;     /* 1: MPI's world; 0: ZeroShard's bootstrap */
    int         started; /* MPI_Init was called */
    int         rank, size;
    zsh_comm_t *comm;    /* ZeroShard's bootstrap: the bookkeeping communicator */
} zsh_bench_world;

static int zsh_bench_env_int(const char *name, const char *fallback, int dflt)
{
    const char *v = getenv(name);

    if ((v == NULL) || (*v == '\0')) {
        v = getenv(fallback);
    }
    return ((v == NULL) || (*v == '\0')) ? dflt : atoi(v);
}

void zsh_bench_world_choose(void)
{
    int launched = (getenv("RANK") != NULL) || (getenv("ZSH_RANK") != NULL);

#ifdef ZSH_BENCH_HAVE_MPI
    if (!launched) {
        /* Until zsh_bench_world_init(), only to choose who prints the
         * usage: mpirun's rank, or 0 for a process started alone. */
        zsh_bench_world.mpi  = 1;
        zsh_bench_world.rank = zsh_bench_env_int("OMPI_COMM_WORLD_RANK", "PMIX_RANK", 0);
        zsh_bench_world.size = zsh_bench_env_int("OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", 1);
        return;
    }
#endif
    if (!launched && (getenv("PMIX_RANK") == NULL)) {
        /* no launcher: a job of one, which needs no store */
        setenv("ZSH_RANK", "0", 1);
        setenv("ZSH_WORLD_SIZE", "1", 1);
    }
    /* Until zsh_bench_world_open(), only to choose who prints the usage. */
    zsh_bench_world.rank = zsh_bench_env_int("ZSH_RANK", "RANK", 0);
    zsh_bench_world.size = zsh_bench_env_int("ZSH_WORLD_SIZE", "WORLD_SIZE", 1);
}

void zsh_bench_world_init(int *argc, char ***argv)
{
#ifdef ZSH_BENCH_HAVE_MPI
    if (zsh_bench_world.mpi) {
        MPI_Init(argc, argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &zsh_bench_world.rank);
        MPI_Comm_size(MPI_COMM_WORLD, &zsh_bench_world.size);
        zsh_bench_world.started = 1;
    }
#endif
    (void)argc;
    (void)argv;
}

int zsh_bench_world_rank(void)
{
    return zsh_bench_world.rank;
}

int zsh_bench_world_size(void)
{
    return zsh_bench_world.size;
}

int zsh_bench_world_is_mpi(void)
{
    return zsh_bench_world.mpi;
}

zsh_status_t zsh_bench_world_open(zsh_comm_t **comm_p)
{
    zsh_status_t st;

#ifdef ZSH_BENCH_HAVE_MPI
    if (zsh_bench_world.mpi) {
        return zsh_comm_init_mpi(MPI_COMM_WORLD, comm_p);
    }
#endif
    st = zsh_comm_init(&zsh_bench_world.comm);
    if (st == ZSH_OK) {
        zsh_bench_world.rank = zsh_comm_rank(zsh_bench_world.comm);
        zsh_bench_world.size = zsh_comm_size(zsh_bench_world.comm);
        *comm_p = zsh_bench_world.comm;
    }
    return st;
}

zsh_status_t zsh_bench_world_close(zsh_comm_t *comm)
{
    zsh_bench_world.comm = NULL;
    return zsh_comm_destroy(comm);
}

void zsh_bench_world_finalize(void)
{
#ifdef ZSH_BENCH_HAVE_MPI
    if (zsh_bench_world.started) {
        MPI_Finalize();
    }
#endif
}

void zsh_bench_world_abort(int code)
{
#ifdef ZSH_BENCH_HAVE_MPI
    if (zsh_bench_world.started) {
        MPI_Abort(MPI_COMM_WORLD, code);
    }
#endif
    if (zsh_bench_world.comm != NULL) {
        zsh_comm_abort(zsh_bench_world.comm); /* the peers' calls fail instead of waiting */
    }
    exit(code);
}

double zsh_bench_world_time(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void zsh_bench_world_check(zsh_status_t st, const char *what)
{
    if (st != ZSH_OK) {
        fprintf(stderr, "zsh_bench: rank %d: %s failed: %s\n", zsh_bench_world.rank, what,
                zsh_last_error());
        zsh_bench_world_abort(1);
    }
}

void zsh_bench_world_barrier(void)
{
#ifdef ZSH_BENCH_HAVE_MPI
    if (zsh_bench_world.mpi) {
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
#endif
    zsh_bench_world_check(zsh_barrier(zsh_bench_world.comm), "the barrier");
}

void zsh_bench_world_allreduce_double(double *v, zsh_op_t op)
{
#ifdef ZSH_BENCH_HAVE_MPI
    if (zsh_bench_world.mpi) {
        MPI_Op mop = (op == ZSH_MIN) ? MPI_MIN : (op == ZSH_MAX) ? MPI_MAX : MPI_SUM;

        MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_DOUBLE, mop, MPI_COMM_WORLD);
        return;
    }
#endif
    zsh_bench_world_check(zsh_allreduce(v, v, 1, ZSH_FLOAT64, op, zsh_bench_world.comm),
                          "the reduction of the timings");
}

void zsh_bench_world_allreduce_long(long *v, zsh_op_t op)
{
    int64_t x = *v;

#ifdef ZSH_BENCH_HAVE_MPI
    if (zsh_bench_world.mpi) {
        MPI_Op mop = (op == ZSH_MIN) ? MPI_MIN : (op == ZSH_MAX) ? MPI_MAX : MPI_SUM;

        MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT64_T, mop, MPI_COMM_WORLD);
        *v = (long)x;
        return;
    }
#endif
    zsh_bench_world_check(zsh_allreduce(&x, &x, 1, ZSH_INT64, op, zsh_bench_world.comm),
                          "the reduction of the results");
    *v = (long)x;
}
