/*
 * Element types, and the exact check of -c. Inputs are small integers, so
 * every sum over ranks is exact in every type, in any order (as nccl-tests
 * chooses its inputs); the check compares every element with its exact value.
 */
#include "bench.h"

#include "core/elem.h"

#include <stdio.h>
#include <string.h>

static const zsh_bench_dtype_t zsh_bench_dtypes[] = {
    {"int8", ZSH_INT8, 1, ZSH_BENCH_MPI(MPI_INT8_T)},     {"uint8", ZSH_UINT8, 1, ZSH_BENCH_MPI(MPI_UINT8_T)},
    {"int32", ZSH_INT32, 4, ZSH_BENCH_MPI(MPI_INT32_T)},  {"uint32", ZSH_UINT32, 4, ZSH_BENCH_MPI(MPI_UINT32_T)},
    {"int64", ZSH_INT64, 8, ZSH_BENCH_MPI(MPI_INT64_T)},  {"uint64", ZSH_UINT64, 8, ZSH_BENCH_MPI(MPI_UINT64_T)},
    {"fp16", ZSH_FLOAT16, 2, ZSH_BENCH_MPI_NONE},         {"bf16", ZSH_BFLOAT16, 2, ZSH_BENCH_MPI_NONE},
    {"fp32", ZSH_FLOAT32, 4, ZSH_BENCH_MPI(MPI_FLOAT)},   {"fp64", ZSH_FLOAT64, 8, ZSH_BENCH_MPI(MPI_DOUBLE)},
};
#define ZSH_BENCH_NDTYPES (sizeof(zsh_bench_dtypes) / sizeof(zsh_bench_dtypes[0]))

/* What a poisoned output element holds: every input and result is at least 1. */
#define ZSH_BENCH_POISON 0.0

const zsh_bench_dtype_t *zsh_bench_dtype_find(const char *name)
{
    size_t i;

    for (i = 0; i < ZSH_BENCH_NDTYPES; i++) {
        if (strcmp(zsh_bench_dtypes[i].name, name) == 0) {
            return &zsh_bench_dtypes[i];
        }
    }
    return NULL;
}

const char *zsh_bench_dtype_names(void)
{
    return "int8, uint8, int32, uint32, int64, uint64, fp16, bf16, fp32, fp64";
}

int zsh_bench_dtype_list(const char *spec, const zsh_bench_dtype_t **out, int max)
{
    char name[16];
    const char *p = spec, *comma;
    size_t len, i;
    int n = 0;

    if (strcmp(spec, "all") == 0) {
        for (i = 0; (i < ZSH_BENCH_NDTYPES) && (n < max); i++) {
            out[n++] = &zsh_bench_dtypes[i];
        }
        return (i == ZSH_BENCH_NDTYPES) ? n : 0;
    }
    for (;;) {
        comma = strchr(p, ',');
        len   = (comma != NULL) ? (size_t)(comma - p) : strlen(p);
        if ((len == 0) || (len >= sizeof(name)) || (n == max)) {
            return 0;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        if ((out[n++] = zsh_bench_dtype_find(name)) == NULL) {
            return 0;
        }
        if (comma == NULL) {
            return n;
        }
        p = comma + 1;
    }
}

/* 1..7; a sum over up to 18 ranks stays below 127 (int8) and 256 (bf16's
 * exact integers). */
double zsh_bench_value(int r, size_t i)
{
    return (double)(r % 3 + 1 + (int)(i % 5));
}

/* The sum over ranks of element @i's input. */
static double zsh_bench_sum(size_t i, int size)
{
    double s = 0.0;
    int    r;

    for (r = 0; r < size; r++) {
        s += zsh_bench_value(r, i);
    }
    return s;
}

void zsh_bench_fill(const zsh_bench_opts_t *opts, const zsh_bench_bufs_t *b, size_t set, int rank)
{
    zsh_dtype_t dt   = opts->dtype->dtype;
    char       *send = zsh_bench_send(b, set), *recv = zsh_bench_recv(b, set);
    size_t      nsend = b->send_bytes / opts->dtype->esize;
    size_t      nrecv = b->recv_bytes / opts->dtype->esize;
    size_t      i;

    for (i = 0; i < nsend; i++) {
        /* broadcast: only the root's buffer holds the data */
        int bcast_dest = (opts->coll->coll == ZSH_BUSBW_BROADCAST) && (rank != 0);

        zsh_elem_set(send, dt, i, bcast_dest ? ZSH_BENCH_POISON : zsh_bench_value(rank, i));
    }
    for (i = 0; i < nrecv; i++) {
        zsh_elem_set(recv, dt, i, ZSH_BENCH_POISON);
    }
}

/* The exact value of output element @i on @rank. */
static double zsh_bench_expected(const zsh_bench_opts_t *opts, size_t count, size_t i, int rank,
                                 int size)
{
    switch (opts->coll->coll) {
    case ZSH_BUSBW_ALLGATHER:      return zsh_bench_value((int)(i / count), i % count);
    case ZSH_BUSBW_REDUCE_SCATTER: return zsh_bench_sum((size_t)rank * count + i, size);
    case ZSH_BUSBW_ALLREDUCE:      return zsh_bench_sum(i, size);
    case ZSH_BUSBW_BROADCAST:      return zsh_bench_value(0, i);
    /* block j came from rank j: its block for this rank */
    case ZSH_BUSBW_ALLTOALL:       return zsh_bench_value((int)(i / count),
                                                          (size_t)rank * count + i % count);
    case ZSH_BUSBW_BARRIER:        break; /* no output */
    }
    return 0.0;
}

size_t zsh_bench_verify(const zsh_bench_opts_t *opts, const zsh_bench_bufs_t *b, size_t set,
                        int rank, int size)
{
    zsh_dtype_t dt = opts->dtype->dtype;
    /* broadcast works in place on the send buffer */
    int         bcast = opts->coll->coll == ZSH_BUSBW_BROADCAST;
    const char *out   = bcast ? zsh_bench_send(b, set) : zsh_bench_recv(b, set);
    size_t      n     = (bcast ? b->send_bytes : b->recv_bytes) / opts->dtype->esize;
    size_t      i, wrong = 0;

    for (i = 0; i < n; i++) {
        double want = zsh_bench_expected(opts, b->count, i, rank, size);
        double got  = zsh_elem_get(out, dt, i);

        if (got != want) {
            if (wrong == 0) {
                fprintf(stderr, "zsh_bench: rank %d: %s of count %zu, %s: element %zu is %g, expected %g\n",
                        rank, opts->coll->name, b->count, opts->dtype->name, i, got, want);
            }
            wrong++;
        }
    }
    /* the inputs of the out-of-place collectives must come back untouched */
    for (i = 0; !bcast && (i < b->send_bytes / opts->dtype->esize); i++) {
        if (zsh_elem_get(zsh_bench_send(b, set), dt, i) != zsh_bench_value(rank, i)) {
            if (wrong == 0) {
                fprintf(stderr, "zsh_bench: rank %d: %s of count %zu changed its input at element %zu\n",
                        rank, opts->coll->name, b->count, i);
            }
            wrong++;
        }
    }
    return wrong;
}
