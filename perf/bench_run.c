/*
 * Buffers and timing. With --cold, each size gets as many copies of its
 * buffers as fit in twice the last-level cache (at most 1 GiB), and
 * successive calls rotate through them, so no call finds its data in cache.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZSH_BENCH_COLD_CAP      (1ull << 30)
/* When the system does not say how big its last-level cache is. */
#define ZSH_BENCH_COLD_FALLBACK (512ull << 20)
#define ZSH_BENCH_ALIGN         4096

size_t zsh_bench_cold_budget(void)
{
    long llc = -1;

#ifdef _SC_LEVEL3_CACHE_SIZE
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    if (llc <= 0) {
        return ZSH_BENCH_COLD_FALLBACK;
    }
    return (2ull * (size_t)llc < ZSH_BENCH_COLD_CAP) ? 2ull * (size_t)llc : ZSH_BENCH_COLD_CAP;
}

static size_t zsh_bench_round_up(size_t n)
{
    return (n + ZSH_BENCH_ALIGN - 1) / ZSH_BENCH_ALIGN * ZSH_BENCH_ALIGN;
}

size_t zsh_bench_set_bytes(const zsh_bench_bufs_t *b)
{
    return zsh_bench_round_up(b->send_bytes) + zsh_bench_round_up(b->recv_bytes);
}

char *zsh_bench_send(const zsh_bench_bufs_t *b, size_t set)
{
    return b->arena + set * zsh_bench_set_bytes(b);
}

char *zsh_bench_recv(const zsh_bench_bufs_t *b, size_t set)
{
    return zsh_bench_send(b, set) + zsh_bench_round_up(b->send_bytes);
}

int zsh_bench_bufs_init(zsh_bench_bufs_t *b, const zsh_bench_opts_t *opts, size_t count, int size)
{
    size_t esize = opts->dtype->esize, set_bytes;

    memset(b, 0, sizeof(*b));
    b->count = count;
    switch (opts->coll->coll) {
    case ZSH_BUSBW_ALLGATHER:
        b->send_bytes = count * esize;
        b->recv_bytes = (size_t)size * count * esize;
        break;
    case ZSH_BUSBW_REDUCE_SCATTER:
        b->send_bytes = (size_t)size * count * esize;
        b->recv_bytes = count * esize;
        break;
    case ZSH_BUSBW_ALLREDUCE:
        b->send_bytes = b->recv_bytes = count * esize;
        break;
    case ZSH_BUSBW_BROADCAST:
        b->send_bytes = count * esize; /* in place: the one buffer */
        break;
    case ZSH_BUSBW_ALLTOALL:
        b->send_bytes = b->recv_bytes = (size_t)size * count * esize;
        break;
    case ZSH_BUSBW_BARRIER:
        break; /* no buffers: an arena of one page keeps the pointers valid */
    }
    set_bytes = zsh_bench_set_bytes(b);
    b->nsets  = 1;
    if (opts->cold && (set_bytes > 0) && (set_bytes < zsh_bench_cold_budget())) {
        b->nsets = zsh_bench_cold_budget() / set_bytes;
    }
    b->arena = aligned_alloc(ZSH_BENCH_ALIGN, (set_bytes > 0) ? b->nsets * set_bytes : ZSH_BENCH_ALIGN);
    return b->arena != NULL;
}

void zsh_bench_bufs_free(zsh_bench_bufs_t *b)
{
    free(b->arena);
    b->arena = NULL;
}

static void zsh_bench_fail(const zsh_bench_opts_t *opts, const char *what, const char *why)
{
    fprintf(stderr, "zsh_bench: rank %d: %s %s failed: %s\n", zsh_bench_world_rank(), what,
            opts->coll->name, why);
    zsh_bench_world_abort(1);
}

zsh_status_t zsh_bench_zsh_call(const zsh_bench_opts_t *opts, char *send, char *recv, size_t count,
                                zsh_comm_t *comm)
{
    zsh_dtype_t dt = opts->dtype->dtype;

    switch (opts->coll->coll) {
    case ZSH_BUSBW_ALLGATHER:      return zsh_allgather(send, recv, count, dt, comm);
    case ZSH_BUSBW_REDUCE_SCATTER: return zsh_reduce_scatter(send, recv, count, dt, ZSH_SUM, comm);
    case ZSH_BUSBW_ALLREDUCE:      return zsh_allreduce(send, recv, count, dt, ZSH_SUM, comm);
    case ZSH_BUSBW_BROADCAST:      return zsh_broadcast(send, count, dt, 0, comm);
    case ZSH_BUSBW_ALLTOALL:       return zsh_alltoall(send, recv, count, dt, comm);
    case ZSH_BUSBW_BARRIER:        return zsh_barrier(comm);
    }
    return ZSH_ERR_INVALID_ARG;
}

static void zsh_bench_call_zsh(const zsh_bench_opts_t *opts, char *send, char *recv, size_t count,
                               zsh_comm_t *comm)
{
    zsh_status_t st = zsh_bench_zsh_call(opts, send, recv, count, comm);

    if (st != ZSH_OK) {
        zsh_bench_fail(opts, "zsh", zsh_last_error());
    }
}

#ifdef ZSH_BENCH_HAVE_MPI
static void zsh_bench_call_mpi(const zsh_bench_opts_t *opts, char *send, char *recv, size_t count)
{
    MPI_Datatype dt = opts->dtype->mpi;
    int          n  = (int)count, rc = MPI_SUCCESS;

    switch (opts->coll->coll) {
    case ZSH_BUSBW_ALLGATHER:
        rc = MPI_Allgather(send, n, dt, recv, n, dt, MPI_COMM_WORLD);
        break;
    case ZSH_BUSBW_REDUCE_SCATTER:
        rc = MPI_Reduce_scatter_block(send, recv, n, dt, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ZSH_BUSBW_ALLREDUCE:
        rc = MPI_Allreduce(send, recv, n, dt, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ZSH_BUSBW_BROADCAST:
        rc = MPI_Bcast(send, n, dt, 0, MPI_COMM_WORLD);
        break;
    case ZSH_BUSBW_ALLTOALL:
        rc = MPI_Alltoall(send, n, dt, recv, n, dt, MPI_COMM_WORLD);
        break;
    case ZSH_BUSBW_BARRIER:
        rc = MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
    if (rc != MPI_SUCCESS) {
        zsh_bench_fail(opts, "MPI", "the MPI call returned an error");
    }
}
#else
static void zsh_bench_call_mpi(const zsh_bench_opts_t *opts, char *send, char *recv, size_t count)
{
    (void)send;
    (void)recv;
    (void)count;
    zsh_bench_fail(opts, "MPI", "this zsh_bench was built without MPI");
}
#endif

void zsh_bench_call(const zsh_bench_opts_t *opts, const zsh_bench_bufs_t *b, size_t set,
                    zsh_comm_t *comm, int mpi)
{
    if (mpi) {
        zsh_bench_call_mpi(opts, zsh_bench_send(b, set), zsh_bench_recv(b, set), b->count);
    } else {
        zsh_bench_call_zsh(opts, zsh_bench_send(b, set), zsh_bench_recv(b, set), b->count, comm);
    }
}

zsh_bench_time_t zsh_bench_time_over_ranks(double local)
{
    zsh_bench_time_t t;

    t.avg = t.min = t.max = local;
    zsh_bench_world_allreduce_double(&t.avg, ZSH_SUM);
    zsh_bench_world_allreduce_double(&t.min, ZSH_MIN);
    zsh_bench_world_allreduce_double(&t.max, ZSH_MAX);
    t.avg /= zsh_bench_world_size();
    return t;
}

zsh_bench_time_t zsh_bench_time(const zsh_bench_opts_t *opts, zsh_bench_bufs_t *b, zsh_comm_t *comm,
                                int mpi, int iters)
{
    double start;
    int    i;

    zsh_bench_world_barrier();
    start = zsh_bench_world_time();
    for (i = 0; i < iters; i++) {
        zsh_bench_call(opts, b, b->next, comm, mpi);
        b->next = (b->next + 1) % b->nsets;
    }
    return zsh_bench_time_over_ranks((zsh_bench_world_time() - start) / iters);
}

void zsh_bench_bufs_replicate(zsh_bench_bufs_t *b)
{
    size_t set, set_bytes = zsh_bench_set_bytes(b);

    for (set = 1; set < b->nsets; set++) {
        memcpy(zsh_bench_send(b, set), zsh_bench_send(b, 0), set_bytes);
    }
}
