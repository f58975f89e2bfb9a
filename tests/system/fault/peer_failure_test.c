/*
 * A rank killed with SIGKILL in the middle of a collective: every survivor's
 * pending and later calls on the communicator fail with ZSH_ERR_PEER_FAILED
 * naming the dead rank, within a few seconds, and every survivor then
 * destroys its communicator and exits cleanly. Trials vary the collective,
 * the victim, the message size and the moment of death.
 */
#include "harness/zsh_test.h"
#include "procs.h"

#include "core/clock.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_KILL_RANKS  4
#define ZSH_KILL_TRIALS 4
/* What "within a few seconds" means here: ZSH_KEEPALIVE is 1 s by default. */
#define ZSH_KILL_DETECT_MAX 5.0
/* A survivor that has not finished by then has hung. */
#define ZSH_KILL_BOUND 40.0

enum { ZSH_KILL_AG, ZSH_KILL_RS, ZSH_KILL_AR, ZSH_KILL_BC, ZSH_KILL_BAR, ZSH_KILL_A2A };

static const char *const zsh_kill_names[] = {"allgather", "reduce_scatter", "allreduce",
                                             "broadcast", "barrier", "alltoall"};

typedef struct zsh_kill_plan {
    int    coll;
    int    ranks;
    int    victim;
    size_t count;       /* per-rank elements */
    int    kill_iter;   /* the collective the victim dies in */
    int    kill_polls;  /* after this many progress calls in it */
} zsh_kill_plan_t;

static zsh_status_t zsh_kill_post(const zsh_kill_plan_t *plan, const float *send, float *recv,
                                  zsh_comm_t *comm, zsh_request_t **req)
{
    switch (plan->coll) {
    case ZSH_KILL_AG:
        return zsh_iallgather(send, recv, plan->count, ZSH_FLOAT32, comm, req);
    case ZSH_KILL_RS:
        return zsh_ireduce_scatter(send, recv, plan->count, ZSH_FLOAT32, ZSH_SUM, comm, req);
    case ZSH_KILL_BC: /* from the rank after the victim, or from the victim itself */
        return zsh_ibroadcast(recv, plan->count * (size_t)zsh_comm_size(comm), ZSH_FLOAT32,
                              (plan->victim + plan->kill_polls % 2) % zsh_comm_size(comm), comm,
                              req);
    case ZSH_KILL_BAR:
        return zsh_ibarrier(comm, req);
    case ZSH_KILL_A2A:
        return zsh_ialltoall(send, recv, plan->count, ZSH_FLOAT32, comm, req);
    default:
        return zsh_iallreduce(send, recv, plan->count * (size_t)zsh_comm_size(comm),
                              ZSH_FLOAT32, ZSH_SUM, comm, req);
    }
}

static void zsh_kill_rank(zsh_comm_t *comm, void *arg, int report)
{
    const zsh_kill_plan_t *plan = arg;
    size_t total = plan->count * (size_t)zsh_comm_size(comm);
    bool victim  = zsh_comm_rank(comm) == plan->victim;
    float *send  = calloc(total, sizeof(float));
    float *recv  = calloc(total, sizeof(float));
    zsh_status_t status = ZSH_OK;
    zsh_request_t *req;
    int iter, polls;

    /* Deaths during zsh_comm_init() are another story: start together. The
     * victim may leave this barrier, and die, before the others have: the
     * barrier is then the collective they fail in. */
    status = zsh_barrier(comm);
    for (iter = 0; (iter < 1000) && (status == ZSH_OK); iter++) {
        status = zsh_kill_post(plan, send, recv, comm, &req);
        if (status != ZSH_OK) {
            break;
        }
        if (victim && (iter == plan->kill_iter)) {
            for (polls = 0; (polls < plan->kill_polls) && (zsh_request_test(req) ==
                                                            ZSH_INPROGRESS); polls++) {
            }
            zsh_proc_say(report, "killed %.6f\n", zsh_clock_now());
            raise(SIGKILL);
        }
        status = zsh_request_wait(req);
        zsh_request_free(req);
    }
    zsh_proc_say(report, "failed %.6f\n", zsh_clock_now());
    zsh_proc_say(report, "status %d\n", status);
    zsh_proc_say(report, "message %s\n", zsh_last_error());
    /* Later calls fail at once, for the same reason. */
    status = zsh_allreduce(send, recv, 1, ZSH_FLOAT32, ZSH_SUM, comm);
    zsh_proc_say(report, "later %d\n", status);
    zsh_proc_say(report, "later-message %s\n", zsh_last_error());
    /* The buffers of a failed collective stay allocated until the job's
     * communicators are destroyed (see zeroshard.h): the process exits
     * right after that, so they are never freed here. */
}

/* Trials at @ranks ranks. On two ranks every call goes through mailboxes
 * (a small one's data, a large one's descriptor and "done" message), where
 * nothing but the transport's failure detection tells a waiter its peer is
 * gone. */
static void zsh_kill_trials(int coll, int ranks)
{
    static const char *const env[] = {"ZSH_TIMEOUT=30", NULL};
    static const size_t counts[]   = {16, 1 << 20};
    zsh_proc_t procs[ZSH_KILL_RANKS];
    double killed, worst = 0;
    char msg[ZSH_PROCS_REPORT_MAX], want[32];
    zsh_kill_plan_t plan;
    int trial, r;

    srand(1000 + coll);
    for (trial = 0; trial < ZSH_KILL_TRIALS; trial++) {
        plan.coll       = coll;
        plan.ranks      = ranks;
        plan.victim     = rand() % ranks;
        plan.count      = counts[trial % 2];
        plan.kill_iter  = rand() % 4;
        plan.kill_polls = rand() % 30;
        zsh_procs_run(ranks, ZSH_KILL_BOUND, env, zsh_kill_rank, &plan, procs);

        ZSH_EXPECT_TRUE(zsh_proc_killed_by(&procs[plan.victim], SIGKILL));
        killed = zsh_proc_value(&procs[plan.victim], "killed", 0);
        snprintf(want, sizeof(want), "rank %d", plan.victim);
        for (r = 0; r < ranks; r++) {
            double detect;

            if (r == plan.victim) {
                continue;
            }
            if (!zsh_proc_exited(&procs[r], 0)) {
                zsh_test_fail(__FILE__, __LINE__,
                              "trial %d (victim %d, %zu elements, iteration %d, %d polls): "
                              "survivor %d %s; its report:\n%s", trial, plan.victim, plan.count,
                              plan.kill_iter, plan.kill_polls, r,
                              procs[r].reaped ? "did not exit cleanly" : "hung and was killed",
                              procs[r].report);
                continue;
            }
            if (zsh_proc_value(&procs[r], "status", 0) != ZSH_ERR_PEER_FAILED) {
                zsh_test_fail(__FILE__, __LINE__, "trial %d (victim %d): survivor %d (pid %d) reported:\n%s",
                              trial, plan.victim, r, (int)procs[r].pid, procs[r].report);
            }
            ZSH_EXPECT_STR_CONTAINS(zsh_proc_line(&procs[r], "message", msg, sizeof(msg)), want);
            ZSH_EXPECT_EQ(ZSH_ERR_PEER_FAILED, zsh_proc_value(&procs[r], "later", 0));
            ZSH_EXPECT_STR_CONTAINS(zsh_proc_line(&procs[r], "later-message", msg, sizeof(msg)),
                                    want);
            detect = zsh_proc_value(&procs[r], "failed", 0) - killed;
            if (detect >= ZSH_KILL_DETECT_MAX) {
                zsh_test_fail(__FILE__, __LINE__, "trial %d (victim %d): survivor %d failed "
                              "%.2f s after the kill; its report:\n%s", trial, plan.victim, r,
                              detect, procs[r].report);
            }
            if (getenv("ZSH_FAULT_VERBOSE") != NULL) {
                printf("trial %d victim %d survivor %d: %.2f s: %s\n", trial, plan.victim, r,
                       detect, zsh_proc_line(&procs[r], "message", msg, sizeof(msg)));
            }
            worst = (detect > worst) ? detect : worst;
        }
    }
    printf("[ zsh      ] %s: %d trials at %d ranks, slowest survivor failed %.2f s after the "
           "kill\n", zsh_kill_names[coll], ZSH_KILL_TRIALS, ranks, worst);
}

ZSH_TEST(peer_failure, rank_killed_in_allgather_fails_survivors_naming_it)
{
    zsh_kill_trials(ZSH_KILL_AG, ZSH_KILL_RANKS);
}

ZSH_TEST(peer_failure, rank_killed_in_reduce_scatter_fails_survivors_naming_it)
{
    zsh_kill_trials(ZSH_KILL_RS, ZSH_KILL_RANKS);
}

ZSH_TEST(peer_failure, rank_killed_in_allreduce_fails_survivors_naming_it)
{
    zsh_kill_trials(ZSH_KILL_AR, ZSH_KILL_RANKS);
}

ZSH_TEST(peer_failure, rank_killed_in_ibroadcast_fails_survivors_naming_it)
{
    zsh_kill_trials(ZSH_KILL_BC, ZSH_KILL_RANKS);
}

ZSH_TEST(peer_failure, rank_killed_in_ibarrier_fails_survivors_naming_it)
{
    zsh_kill_trials(ZSH_KILL_BAR, ZSH_KILL_RANKS);
}

ZSH_TEST(peer_failure, rank_killed_in_ialltoall_fails_survivors_naming_it)
{
    zsh_kill_trials(ZSH_KILL_A2A, ZSH_KILL_RANKS);
}

ZSH_TEST(peer_failure, rank_killed_in_a_two_rank_call_through_mailboxes_fails_its_peer_naming_it)
{
    zsh_kill_trials(ZSH_KILL_AR, 2);
}
