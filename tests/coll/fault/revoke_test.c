/*
 * What a rank learns from its peers and its own deadlines: an abort on one
 * member fails the others' calls, a per-call timeout fails only that call,
 * and the flight recorder writes the history of a communicator that failed.
 * Each case splits off a communicator of its own.
 */
#include "coll/check.h"

#include "task/task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static zsh_comm_t *zsh_revoke_comm(zsh_comm_t *comm)
{
    zsh_comm_t *child = NULL;

    if (zsh_comm_split(comm, 0, zsh_comm_rank(comm), &child) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "zsh_comm_split: %s", zsh_last_error());
        return NULL;
    }
    zsh_comm_set_timeout(child, 30);
    return child;
}

ZSH_RANK_TEST(revoke, abort_on_one_rank_fails_the_others_naming_it)
{
    float send[4] = {0}, recv[4];
    zsh_comm_t *c;

    if (zsh_comm_size(comm) < 2) {
        ZSH_SKIP("telling peers needs two ranks");
    }
    c = zsh_revoke_comm(comm);
    ZSH_ASSERT_TRUE(c != NULL);
    if (zsh_comm_rank(comm) == 0) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_abort(c));
        ZSH_EXPECT_STATUS(ZSH_ERR_ABORTED, zsh_barrier(c));
    } else {
        ZSH_EXPECT_STATUS(ZSH_ERR_ABORTED, zsh_allreduce(send, recv, 4, ZSH_FLOAT32, ZSH_SUM, c));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "rank 0 of comm");
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "zsh_comm_abort");
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(c));
}

ZSH_RANK_TEST(revoke, per_call_timeout_fails_only_that_call)
{
    float send[4] = {0}, recv[4];
    char want[96] = "not heard from rank(s): ";
    size_t used = strlen(want);
    zsh_request_t *req;
    zsh_comm_t *c;
    int r;

    if (zsh_comm_size(comm) < 2) {
        ZSH_SKIP("a silent peer needs two ranks");
    }
    c = zsh_revoke_comm(comm);
    ZSH_ASSERT_TRUE(c != NULL);
    ZSH_EXPECT_TRUE(zsh_comm_get_timeout(c) == 30);
    if (zsh_comm_rank(comm) == 0) {
        /* The others never make this call: only its own deadline ends it. */
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(send, recv, 4, ZSH_FLOAT32, ZSH_SUM, c, &req));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_set_timeout(req, 0.2));
        ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, zsh_request_wait(req));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "allreduce seq 0");
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "timed out after 0.2 s");
        /* Every silent peer is named, whichever way its message was due
         * (UCX, a mailbox, or its board). */
        for (r = 1; r < zsh_comm_size(comm); r++) {
            used += (size_t)snprintf(want + used, sizeof(want) - used, "%s%d", (r > 1) ? ", " : "",
                                     r);
        }
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), want);
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_request_set_timeout(req, 1));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "already completed");
        zsh_request_free(req);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(c));
}

/* The same deadline on the nonblocking barrier and broadcast: a rank that
 * posts one the others never make times out at its own deadline, naming
 * the call and the peers it never heard from. */
static void zsh_revoke_lone_call(zsh_comm_t *comm, bool barrier)
{
    float buf[4] = {0};
    int last = zsh_comm_size(comm) - 1;
    zsh_request_t *req;
    zsh_comm_t *c;

    c = zsh_revoke_comm(comm);
    ZSH_ASSERT_TRUE(c != NULL);
    if (zsh_comm_rank(comm) == last) {
        if (barrier) {
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_ibarrier(c, &req));
        } else {
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_ibroadcast(buf, 4, ZSH_FLOAT32, 0, c, &req));
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_set_timeout(req, 0.2));
        ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, zsh_request_wait(req));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), barrier ? "barrier seq 0" : "broadcast seq 0");
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "timed out after 0.2 s");
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "not heard from rank(s): 0");
        zsh_request_free(req);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(c));
}

ZSH_RANK_TEST(revoke, ibarrier_past_its_own_deadline_times_out_naming_the_silent_peers)
{
    if (zsh_comm_size(comm) < 2) {
        ZSH_SKIP("a silent peer needs two ranks");
    }
    zsh_revoke_lone_call(comm, true);
}

ZSH_RANK_TEST(revoke, ibroadcast_past_its_own_deadline_times_out_naming_the_silent_root)
{
    if (zsh_comm_size(comm) < 2) {
        ZSH_SKIP("a silent peer needs two ranks");
    }
    zsh_revoke_lone_call(comm, false);
}

/* A direct call on two ranks takes two mailbox messages, its descriptor
 * and then "done"; one that times out between them would leave every later
 * call of the communicator queued behind the message that never went, so
 * the communicator is revoked, saying why, on both ranks. */
ZSH_RANK_TEST(revoke, direct_call_timing_out_before_its_done_message_revokes_the_communicator)
{
    size_t count = 1 << 16;
    float *send = zsh_check_alloc(count * sizeof(float));
    float *recv = zsh_check_alloc(count * sizeof(float));
    zsh_request_t *req;
    zsh_comm_t *c;

    memset(send, 0, count * sizeof(float));
    c = (zsh_comm_size(comm) == 2) ? zsh_revoke_comm(comm) : NULL;
    if ((c == NULL) || !c->local.box || !c->local.direct) {
        if (c != NULL) {
            zsh_comm_destroy(c);
        }
        free(send);
        free(recv);
        ZSH_SKIP("needs two ranks of one node with mailboxes and cross-memory attach");
    }
    if (zsh_comm_rank(comm) == 0) {
        /* The peer never makes this call. */
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(send, recv, count, ZSH_FLOAT32, ZSH_SUM, c,
                                                 &req));
        ZSH_EXPECT_EQ(ZSH_ALGO_DIRECT, req->algo);
        ZSH_EXPECT_TRUE(req->hs.done);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_set_timeout(req, 0.2));
        ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, zsh_request_wait(req));
        zsh_request_free(req);
    }
    /* Rank 1 keeps off the communicator until rank 0 has timed out. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
    ZSH_EXPECT_STATUS(ZSH_ERR_ABORTED, zsh_barrier(c));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "allreduce seq 0 failed before its \"done\" "
                                              "message reached rank 1's mailbox");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(c));
    free(send);
    free(recv);
}

ZSH_RANK_TEST(revoke, bad_timeouts_are_rejected_and_change_nothing)
{
    double before = zsh_comm_get_timeout(comm);

    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_set_timeout(comm, 0));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_set_timeout(comm, -1));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_set_timeout(comm, NAN));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "zsh_comm_set_timeout");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_set_timeout(NULL, 1));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_request_set_timeout(NULL, 1));
    ZSH_EXPECT_TRUE(zsh_comm_get_timeout(comm) == before);
    ZSH_EXPECT_TRUE(zsh_comm_get_timeout(NULL) < 0);
}

/* Whether the file at @path contains @needle. */
static bool zsh_file_contains(const char *path, const char *needle)
{
    char buf[16384];
    size_t got;
    FILE *f = fopen(path, "r");

    if (f == NULL) {
        return false;
    }
    got = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[got] = '\0';
    return strstr(buf, needle) != NULL;
}

ZSH_RANK_TEST(revoke, flight_recorder_dumps_the_history_on_a_mismatch)
{
    float send[8] = {0}, recv[8];
    zsh_coll_config_t *cfg = zsh_check_cfg(comm);
    int rank = zsh_comm_rank(comm);
    char path[256];
    zsh_comm_t *c;
    zsh_status_t status;

    if (zsh_comm_size(comm) < 2) {
        ZSH_SKIP("a mismatch needs two ranks");
    }
    snprintf(path, sizeof(path), "/tmp/zsh-trace-test-%ld-%d.log", (long)getpid(), rank);
    remove(path);
    /* Every rank turns the recorder on for communicators created from now on. */
    cfg->trace       = 1;
    cfg->trace_depth = 8;
    snprintf(cfg->trace_file, sizeof(cfg->trace_file), "/tmp/zsh-trace-test-%%p-%%r.log");
    c         = zsh_revoke_comm(comm);
    cfg->trace = 0;
    ZSH_ASSERT_TRUE(c != NULL);

    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(send, recv, 4, ZSH_FLOAT32, ZSH_SUM, c));
    status = (rank == 0) ? zsh_barrier(c)
                         : zsh_allreduce(send, recv, 8, ZSH_FLOAT32, ZSH_SUM, c);
    ZSH_EXPECT_STATUS(ZSH_ERR_MISMATCH, status);
    ZSH_EXPECT_TRUE(zsh_file_contains(path, "zsh flight recorder: comm"));
    ZSH_EXPECT_TRUE(zsh_file_contains(path, "seq 0      allreduce(count=4, fp32, sum)"));
    ZSH_EXPECT_TRUE(zsh_file_contains(path, rank == 0 ? "seq 1      barrier()"
                                                      : "seq 1      allreduce(count=8, fp32, sum)"));
    ZSH_EXPECT_TRUE(zsh_file_contains(path, zsh_status_string(ZSH_ERR_MISMATCH)));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(c));
    remove(path);
}
