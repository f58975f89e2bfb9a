/*
 * All-to-all under the failures every collective must report: a call
 * mismatched with another names both, by every algorithm, and a call the
 * other ranks never make ends at its own deadline naming the silent peers.
 * Each case runs on a communicator of its own, split off for it, since a
 * failure leaves its communicator revoked or out of step.
 */
#include "coll/check.h"

#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A communicator of its own, or NULL (skipped on one rank). */
static zsh_comm_t *zsh_a2a_fault_comm(zsh_comm_t *comm)
{
    zsh_comm_t *child = NULL;

    if (zsh_comm_size(comm) < 2) {
        zsh_test_skip(__FILE__, __LINE__, "a failure between calls needs two ranks");
        return NULL;
    }
    if (zsh_comm_split(comm, 0, zsh_comm_rank(comm), &child) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "zsh_comm_split: %s", zsh_last_error());
        return NULL;
    }
    zsh_comm_set_timeout(child, 30);
    return child;
}

static void zsh_a2a_expect_mismatch(zsh_status_t status, const char *a, const char *b,
                                    const char *what)
{
    if (status != ZSH_ERR_MISMATCH) {
        zsh_test_fail(__FILE__, __LINE__, "%s: expected ZSH_ERR_MISMATCH, got %s: %s", what,
                      zsh_status_string(status), zsh_last_error());
        return;
    }
    if ((strstr(zsh_last_error(), a) == NULL) || (strstr(zsh_last_error(), b) == NULL)) {
        zsh_test_fail(__FILE__, __LINE__, "%s: expected the message to name \"%s\" and \"%s\": "
                      "%s", what, a, b, zsh_last_error());
    }
}

/* The last rank calls an all-gather whose buffers are the same size as the
 * others' all-to-all, so that only the descriptors can tell them apart. */
ZSH_RANK_TEST(alltoall_fault, alltoall_against_allgather_names_both_calls)
{
    int n = zsh_comm_size(comm), last = zsh_comm_rank(comm) == n - 1;
    float *send = zsh_check_alloc(16 * sizeof(float) * (size_t)n);
    float *recv = zsh_check_alloc(16 * sizeof(float) * (size_t)n);
    zsh_comm_t *c = zsh_a2a_fault_comm(comm);
    zsh_status_t status;

    if (c != NULL) {
        memset(send, 0, 16 * sizeof(float) * (size_t)n);
        status = last ? zsh_allgather(send, recv, 16, ZSH_FLOAT32, c)
                      : zsh_alltoall(send, recv, 16, ZSH_FLOAT32, c);
        zsh_a2a_expect_mismatch(status, "alltoall(count=16, fp32)", "allgather(count=16, fp32)",
                                "alltoall vs allgather");
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(c));
    }
    free(send);
    free(recv);
}

/* Different block sizes, by each algorithm that can run here: a block of
 * the wrong length must not land in recvbuf as if it were right. Pairwise
 * and eager get blocks the transport sends eagerly, as the other
 * collectives' mismatch tests do: pairwise sends a rank's own blocks before
 * the descriptors are compared, and a rendezvous send to a receive that
 * failed on its length never completes, so teardown would abandon the UCX
 * worker (docs/DECISIONS.md, "Teardown after a failure"). The direct
 * algorithm compares descriptors before it copies: it gets large blocks. */
ZSH_RANK_TEST(alltoall_fault, different_counts_are_named_by_every_algorithm)
{
    static const zsh_algo_t algos[] = {ZSH_ALGO_PAIRWISE, ZSH_ALGO_DIRECT, ZSH_ALGO_EAGER};
    int n = zsh_comm_size(comm), last = zsh_comm_rank(comm) == n - 1;
    size_t count, i;
    zsh_coll_config_t saved;
    char what[64], mine[48], theirs[48];
    zsh_comm_t *c;
    float *send, *recv;

    for (i = 0; i < sizeof(algos) / sizeof(algos[0]); i++) {
        c = zsh_a2a_fault_comm(comm);
        if (c == NULL) {
            return;
        }
        count = (algos[i] == ZSH_ALGO_DIRECT) ? 4096 : 8; /* 8 and 9 floats a block */
        if (zsh_check_force(c, ZSH_COLL_ALLTOALL, algos[i], &saved) != NULL) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(c));
            continue; /* this algorithm cannot run on these ranks */
        }
        send = zsh_check_alloc((count + 1) * sizeof(float) * (size_t)n);
        recv = zsh_check_alloc((count + 1) * sizeof(float) * (size_t)n);
        memset(send, 0, (count + 1) * sizeof(float) * (size_t)n);
        snprintf(what, sizeof(what), "alltoall %s", zsh_algo_name(algos[i]));
        snprintf(mine, sizeof(mine), "alltoall(count=%zu, fp32)", count);
        snprintf(theirs, sizeof(theirs), "alltoall(count=%zu, fp32)", count + 1);
        zsh_a2a_expect_mismatch(zsh_alltoall(send, recv, last ? count + 1 : count, ZSH_FLOAT32,
                                             c), mine, theirs, what);
        zsh_check_restore(c, &saved);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(c));
        free(send);
        free(recv);
    }
}

/* The last rank posts an all-to-all the others never make: only its own
 * deadline ends it, naming the call and every peer it never heard from. */
ZSH_RANK_TEST(alltoall_fault, ialltoall_past_its_own_deadline_times_out_naming_the_silent_peers)
{
    int n = zsh_comm_size(comm), r;
    float *send = zsh_check_alloc(64 * sizeof(float) * (size_t)n);
    float *recv = zsh_check_alloc(64 * sizeof(float) * (size_t)n);
    char want[256] = "not heard from rank(s): ";
    size_t used = strlen(want);
    zsh_request_t *req;
    zsh_comm_t *c = zsh_a2a_fault_comm(comm);

    if (c == NULL) {
        free(send);
        free(recv);
        return;
    }
    memset(send, 0, 64 * sizeof(float) * (size_t)n);
    if (zsh_comm_rank(comm) == n - 1) {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_ialltoall(send, recv, 64, ZSH_FLOAT32, c, &req));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_set_timeout(req, 0.2));
        ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, zsh_request_wait(req));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "alltoall seq 0");
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "timed out after 0.2 s");
        for (r = 0; r < n - 1; r++) {
            used += (size_t)snprintf(want + used, sizeof(want) - used, "%s%d", (r > 0) ? ", " : "",
                                     r);
        }
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), want);
        zsh_request_free(req);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(c));
    /* No peer ever sent to the receives left posted: nothing writes here. */
    free(send);
    free(recv);
}
