/*
 * One rank of a link-failure trial: a loop of large collectives (an
 * all-gather, a reduce-scatter and an all-reduce of a few MiB each, so that
 * a call is almost always in flight) until one fails.
 * tests/system/cluster/run_link_fault.sh launches it across the nodes of a
 * simulated cluster and takes one node's link down while the loop runs.
 *
 * Every rank prints "rank R iter N" after each round, then, when a call
 * fails, one line that the script reads:
 *   "rank R: <call> failed at <epoch seconds>: ZSH_ERR_... (<status>): <message>"
 * and, after a peer failure, calls a barrier, which must fail at once (the
 * communicator is unusable then), before it destroys the communicator.
 * The epoch time is CLOCK_REALTIME, which every node of the
 * simulated cluster shares with the script that cut the link.
 *
 * Exit status: 0 if the failure was ZSH_ERR_PEER_FAILED or ZSH_ERR_TIMEOUT
 * (and the barrier after a peer failure failed too); 2 for any other failure; 3 if the
 * loop ran out (LINK_FAULT_SECONDS, 60 by default) without a failure; 1 if
 * the communicator could not be made.
 */
#include <zeroshard.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double link_fault_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The status's name, which the script matches, beside its description. */
static const char *link_fault_name(zsh_status_t status)
{
    switch (status) {
    case ZSH_ERR_PEER_FAILED: return "ZSH_ERR_PEER_FAILED";
    case ZSH_ERR_TIMEOUT: return "ZSH_ERR_TIMEOUT";
    case ZSH_ERR_TRANSPORT: return "ZSH_ERR_TRANSPORT";
    case ZSH_ERR_ABORTED: return "ZSH_ERR_ABORTED";
    case ZSH_ERR_MISMATCH: return "ZSH_ERR_MISMATCH";
    case ZSH_OK: return "ZSH_OK";
    default: return "another status";
    }
}

static int link_fault_expected(zsh_status_t status)
{
    return (status == ZSH_ERR_PEER_FAILED) || (status == ZSH_ERR_TIMEOUT);
}

/* Reports the failure of WHAT. After a peer failure the communicator is
 * unusable, so a barrier must fail at once too; after a timeout it stays
 * usable (a timeout fails only its call), so nothing more is asked. */
static int link_fault_report(zsh_comm_t *comm, int rank, const char *what, zsh_status_t status)
{
    zsh_status_t again;

    printf("rank %d: %s failed at %.6f: %s (%s): %s\n", rank, what, link_fault_now(),
           link_fault_name(status), zsh_status_string(status), zsh_last_error());
    fflush(stdout);
    if (!link_fault_expected(status)) {
        return 2;
    }
    if (status != ZSH_ERR_PEER_FAILED) {
        return 0;
    }
    again = zsh_barrier(comm);
    printf("rank %d: the barrier after it: %s: %s\n", rank, link_fault_name(again),
           (again == ZSH_OK) ? "" : zsh_last_error());
    fflush(stdout);
    return (again == ZSH_OK) ? 2 : 0;
}

int main(void)
{
    /* Per rank: 1 Mi fp32 elements (4 MiB) for the all-reduce and the
     * reduce-scatter's block, a quarter of that for the all-gather's. */
    const size_t count = (size_t)1 << 20, gcount = count / 4;
    const char *limit_env = getenv("LINK_FAULT_SECONDS");
    double limit = (limit_env != NULL) ? atof(limit_env) : 60.0, start;
    float *send = NULL, *recv = NULL;
    char host[256] = "?";
    zsh_comm_t *comm = NULL;
    zsh_status_t status;
    int rank, size, ret = 3;
    long iter;
    size_t i;

    gethostname(host, sizeof(host) - 1);
    status = zsh_comm_init(&comm);
    if (status != ZSH_OK) {
        fprintf(stderr, "on %s: zsh_comm_init: %s: %s\n", host, zsh_status_string(status),
                zsh_last_error());
        return 1;
    }
    rank = zsh_comm_rank(comm);
    size = zsh_comm_size(comm);
    send = malloc(count * (size_t)size * sizeof(float));
    recv = malloc(count * (size_t)size * sizeof(float));
    if ((send == NULL) || (recv == NULL)) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        ret = 1;
        goto out;
    }
    for (i = 0; i < count * (size_t)size; i++) {
        send[i] = (float)((i + (size_t)rank) % 7);
    }
    printf("rank %d of %d on %s: running\n", rank, size, host);
    fflush(stdout);
    start = link_fault_now();
    for (iter = 0; link_fault_now() - start < limit; iter++) {
        status = zsh_allgather(send, recv, gcount, ZSH_FLOAT32, comm);
        if (status != ZSH_OK) {
            ret = link_fault_report(comm, rank, "allgather", status);
            break;
        }
        status = zsh_reduce_scatter(send, recv, count, ZSH_FLOAT32, ZSH_SUM, comm);
        if (status != ZSH_OK) {
            ret = link_fault_report(comm, rank, "reduce_scatter", status);
            break;
        }
        status = zsh_allreduce(send, recv, count, ZSH_FLOAT32, ZSH_SUM, comm);
        if (status != ZSH_OK) {
            ret = link_fault_report(comm, rank, "allreduce", status);
            break;
        }
        printf("rank %d iter %ld\n", rank, iter);
        fflush(stdout);
    }
    if (ret == 3) {
        printf("rank %d: no failure in %.0f s\n", rank, limit);
    }
out:
    /* The buffers of a failed call stay allocated until the communicator is
     * gone: transfers with live peers may still be under way. */
    status = zsh_comm_destroy(comm);
    if (status != ZSH_OK) {
        printf("rank %d: zsh_comm_destroy: %s: %s\n", rank, zsh_status_string(status),
               zsh_last_error());
    }
    printf("rank %d: exiting at %.6f\n", rank, link_fault_now());
    fflush(stdout);
    free(recv);
    free(send);
    return ret;
}
