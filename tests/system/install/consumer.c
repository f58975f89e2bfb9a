/*
 * A program from outside the source tree, as a framework would write one: it
 * sees only the installed public API, is built with nothing but
 * `pkg-config --cflags --libs zeroshard`, and is started by mpirun, whose PMIx
 * server zsh_comm_init() bootstraps through. It checks that the headers and
 * the library it loaded are the same version, runs ZeRO's two collectives
 * and an all-reduce, and prints "rank R of N: ok" only if every value is right.
 */
#include <zeroshard.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 1031 /* per-rank elements: a prime, so no power-of-two luck */

static int consumer_fail(int rank, const char *what, zsh_status_t status)
{
    fprintf(stderr, "rank %d: %s: %s: %s\n", rank, what, zsh_status_string(status),
            zsh_last_error());
    return 1;
}

/* Rank r contributes r * COUNT + i: the gathered buffer counts 0, 1, 2, ... */
static int consumer_allgather(zsh_comm_t *comm, int rank, int size)
{
    int32_t send[COUNT], *recv = malloc(sizeof(int32_t) * COUNT * (size_t)size);
    zsh_status_t status;
    size_t i;
    int bad = 0;

    if (recv == NULL) {
        return consumer_fail(rank, "malloc", ZSH_ERR_NO_MEMORY);
    }
    for (i = 0; i < COUNT; i++) {
        send[i] = (int32_t)((size_t)rank * COUNT + i);
    }
    status = zsh_allgather(send, recv, COUNT, ZSH_INT32, comm);
    for (i = 0; (status == ZSH_OK) && (i < COUNT * (size_t)size) && !bad; i++) {
        if (recv[i] != (int32_t)i) {
            fprintf(stderr, "rank %d: allgather [%zu] = %d, expected %zu\n", rank, i, recv[i], i);
            bad = 1;
        }
    }
    free(recv);
    return (status != ZSH_OK) ? consumer_fail(rank, "zsh_allgather", status) : bad;
}

/* Rank r sends (r + 1) * (j + 1) for global index j: block `rank` of the sum
 * is (j + 1) * size * (size + 1) / 2, exact in float for these sizes. */
static int consumer_reduce_scatter(zsh_comm_t *comm, int rank, int size)
{
    float *send = malloc(sizeof(float) * COUNT * (size_t)size), recv[COUNT];
    zsh_status_t status;
    size_t i, j;
    int bad = 0;

    if (send == NULL) {
        return consumer_fail(rank, "malloc", ZSH_ERR_NO_MEMORY);
    }
    for (j = 0; j < COUNT * (size_t)size; j++) {
        send[j] = (float)((rank + 1) * (j + 1));
    }
    status = zsh_reduce_scatter(send, recv, COUNT, ZSH_FLOAT32, ZSH_SUM, comm);
    for (i = 0; (status == ZSH_OK) && (i < COUNT) && !bad; i++) {
        j = (size_t)rank * COUNT + i;
        if (recv[i] != (float)((j + 1) * (size_t)(size * (size + 1) / 2))) {
            fprintf(stderr, "rank %d: reduce_scatter [%zu] = %g\n", rank, i, recv[i]);
            bad = 1;
        }
    }
    free(send);
    return (status != ZSH_OK) ? consumer_fail(rank, "zsh_reduce_scatter", status) : bad;
}

/* The largest rank number, in place. */
static int consumer_allreduce(zsh_comm_t *comm, int rank, int size)
{
    int64_t value = rank;
    zsh_status_t status = zsh_allreduce(&value, &value, 1, ZSH_INT64, ZSH_MAX, comm);

    if (status != ZSH_OK) {
        return consumer_fail(rank, "zsh_allreduce", status);
    }
    if (value != size - 1) {
        fprintf(stderr, "rank %d: allreduce max = %lld, expected %d\n", rank, (long long)value,
                size - 1);
        return 1;
    }
    return 0;
}

int main(void)
{
    int major = -1, minor = -1, patch = -1, rank, size, bad;
    zsh_comm_t *comm;
    zsh_status_t status;

    zsh_get_version(&major, &minor, &patch);
    if ((major != ZSH_VERSION_MAJOR) || (minor != ZSH_VERSION_MINOR) ||
        (patch != ZSH_VERSION_PATCH)) {
        fprintf(stderr, "headers are %s but the library is %d.%d.%d\n", ZSH_VERSION_STRING, major,
                minor, patch);
        return 1;
    }
    status = zsh_comm_init(&comm);
    if (status != ZSH_OK) {
        return consumer_fail(-1, "zsh_comm_init", status);
    }
    rank = zsh_comm_rank(comm);
    size = zsh_comm_size(comm);
    bad  = consumer_allgather(comm, rank, size);
    bad |= consumer_reduce_scatter(comm, rank, size);
    bad |= consumer_allreduce(comm, rank, size);
    status = zsh_comm_destroy(comm);
    if (status != ZSH_OK) {
        return consumer_fail(rank, "zsh_comm_destroy", status);
    }
    if (!bad) {
        printf("rank %d of %d: ok (ZeroShard %s)\n", rank, size, ZSH_VERSION_STRING);
    }
    return bad;
}
