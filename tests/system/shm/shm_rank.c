/*
 * One rank of a job that uses the node-local shortcuts the way a small
 * training step does: all-gathers, reduce-scatters and all-reduces from a
 * few bytes (mailboxes or boards) to a megabyte (direct copies), on the
 * world communicator and on one split off it. tests/system/shm/run_ulimit.sh
 * runs it under mpirun with a bounded address space. Prints "rank R of N:
 * ok" and the process's peak and current address space, or what failed.
 */
#include <zeroshard.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each rank contributes rank + 1 + i at element i. */
static int shm_rank_sizes(zsh_comm_t *comm, size_t count)
{
    int rank = zsh_comm_rank(comm), size = zsh_comm_size(comm), r;
    size_t n = count * (size_t)size, i;
    int64_t *send = malloc(n * sizeof(int64_t)), *recv = malloc(n * sizeof(int64_t));
    int64_t want;
    int ok = (send != NULL) && (recv != NULL);

    for (i = 0; ok && (i < n); i++) {
        send[i] = rank + 1 + (int64_t)i;
    }
    ok = ok && (zsh_allreduce(send, recv, n, ZSH_INT64, ZSH_SUM, comm) == ZSH_OK);
    for (i = 0; ok && (i < n); i++) {
        ok = (recv[i] == (int64_t)size * (size + 1) / 2 + (int64_t)(size * i));
    }
    ok = ok && (zsh_reduce_scatter(send, recv, count, ZSH_INT64, ZSH_SUM, comm) == ZSH_OK);
    for (i = 0; ok && (i < count); i++) {
        want = (int64_t)size * (size + 1) / 2 + (int64_t)size * (int64_t)(rank * count + i);
        ok   = (recv[i] == want);
    }
    ok = ok && (zsh_allgather(send, recv, count, ZSH_INT64, comm) == ZSH_OK);
    for (r = 0; ok && (r < size); r++) {
        for (i = 0; ok && (i < count); i++) {
            ok = (recv[(size_t)r * count + i] == r + 1 + (int64_t)i);
        }
    }
    free(send);
    free(recv);
    return ok;
}

static int shm_rank_run(zsh_comm_t *comm)
{
    static const size_t counts[] = {1, 64, 512, 16384}; /* int64 elements per rank */
    size_t k;
    int ok = 1, round;

    for (round = 0; ok && (round < 3); round++) {
        for (k = 0; ok && (k < sizeof(counts) / sizeof(counts[0])); k++) {
            ok = shm_rank_sizes(comm, counts[k]);
        }
    }
    return ok;
}

/* "VmPeak: 123 kB" and "VmSize: ..." from /proc/self/status, as "123/456 kB". */
static void shm_rank_vm(char *buf, size_t cap)
{
    unsigned long peak = 0, now = 0;
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");

    while ((f != NULL) && (fgets(line, sizeof(line), f) != NULL)) {
        sscanf(line, "VmPeak: %lu", &peak);
        sscanf(line, "VmSize: %lu", &now);
    }
    if (f != NULL) {
        fclose(f);
    }
    snprintf(buf, cap, "VmPeak %lu kB, VmSize %lu kB", peak, now);
}

int main(void)
{
    zsh_comm_t *comm, *half = NULL;
    zsh_status_t status;
    char vm[96];
    int ok;

    status = zsh_comm_init(&comm);
    if (status != ZSH_OK) {
        fprintf(stderr, "zsh_comm_init: %s: %s\n", zsh_status_string(status), zsh_last_error());
        return 2;
    }
    ok = shm_rank_run(comm);
    if (ok) {
        status = zsh_comm_split(comm, zsh_comm_rank(comm) % 2, 0, &half);
        ok     = (status == ZSH_OK) && shm_rank_run(half);
    }
    if (!ok) {
        fprintf(stderr, "rank %d: %s\n", zsh_comm_rank(comm), zsh_last_error());
    }
    shm_rank_vm(vm, sizeof(vm));
    printf("rank %d of %d: %s (%s)\n", zsh_comm_rank(comm), zsh_comm_size(comm),
           ok ? "ok" : "failed", vm);
    if (half != NULL) {
        ok = (zsh_comm_destroy(half) == ZSH_OK) && ok;
    }
    status = zsh_comm_destroy(comm);
    return (ok && (status == ZSH_OK)) ? 0 : 1;
}
