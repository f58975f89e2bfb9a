/*
 * The engine: posting a task, advancing every task in flight, and waiting.
 */
#include "task/task.h"

#include "comm/health.h"
#include "core/clock.h"
#include "core/status.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* Longest a waiter sleeps between progress passes, in case the transport
 * completes something without signalling its event descriptor. */
#define ZSH_TASK_SLEEP_MAX_MS 1

void zsh_task_complete(zsh_task_t *task, zsh_status_t status)
{
    zsh_comm_t *comm = task->comm;

    if (status != ZSH_OK) {
        zsh_task_fail(task, status);
    }
    if (task->run.cleanup != NULL) {
        task->run.cleanup(task, status);
        task->run.cleanup = NULL;
    }
    zsh_hs_release(&task->hs);
    free(task->run.data_mismatch);
    task->run.data_mismatch = NULL;
    if ((comm->trace != NULL) && !zsh_coll_is_p2p(task->args.type)) {
        zsh_trace_done(comm->trace, task->seq, status);
        if (status != ZSH_OK) {
            zsh_task_dump_trace(task, status);
        }
    }
    if (status != ZSH_OK) {
        task->run.error = strdup(zsh_last_error()); /* NULL leaves the thread's own */
    }
    task->run.status = status;
    zsh_list_del(&task->link);
    comm->ctx->settled++;
}

/* Run one progress step of @task and settle it if it finished, failed,
 * its communicator broke, or it ran past its deadline. It completes once
 * its algorithm is done and the peers' descriptors matched. */
static void zsh_task_advance(zsh_task_t *task)
{
    zsh_status_t status, algo;

    task->run.busy = false;
    status = zsh_comm_check(task->comm, task->seq);
    if (status == ZSH_OK) {
        status = zsh_hs_progress(&task->hs);
    }
    if (((status == ZSH_OK) || (status == ZSH_INPROGRESS)) &&
        (task->run.data_mismatch != NULL)) {
        status = zsh_task_data_mismatch(task);
    } else if ((status == ZSH_OK) || (status == ZSH_INPROGRESS)) {
        algo = task->run.algo_done ? ZSH_OK : task->run.progress(task);
        task->run.algo_done = (algo == ZSH_OK);
        if (algo == ZSH_ERR_MISMATCH) {
            algo = zsh_task_data_mismatch(task);
        }
        status = (algo == ZSH_OK) ? status : algo;
    }
    if ((status == ZSH_INPROGRESS) && (zsh_clock_coarse() > task->run.deadline)) {
        status = zsh_task_timeout(task);
    }
    if (status != ZSH_INPROGRESS) {
        task->run.busy = false;
        zsh_task_complete(task, status);
    }
}

void zsh_task_post(zsh_task_t *task)
{
    zsh_comm_t *comm = task->comm;
    zsh_ctx_t *ctx   = comm->ctx;
    zsh_status_t status;

    task->run.status    = ZSH_INPROGRESS;
    task->run.posted_at = zsh_clock_now();
    task->run.deadline  = task->run.posted_at + task->run.timeout;
    zsh_list_push_tail(&ctx->in_flight, &task->link);
    if (atomic_load(&ctx->abort_pending)) {
        zsh_ctx_health_progress(ctx); /* tell peers now, even if this call fails at once */
    }
    status = zsh_comm_check(comm, task->seq);
    if (zsh_coll_is_p2p(task->args.type)) {
        task->hs.state = ZSH_HS_VERIFIED; /* two ranks, no descriptor: nothing to compare */
    } else {
        zsh_desc_make(&task->args, task->seq, comm->uid, task->algo, task->deterministic,
                      &task->hs_bufs.out.desc);
        if (comm->trace != NULL) {
            zsh_trace_posted(comm->trace, &task->hs_bufs.out.desc);
        }
        if (status == ZSH_OK) {
            status = zsh_hs_post(&task->hs, task->algo, task->run.posted_at);
        }
    }
    if (status != ZSH_OK) {
        zsh_task_complete(task, status);
        return;
    }
    zsh_task_advance(task);
}

unsigned zsh_ctx_progress(zsh_ctx_t *ctx)
{
    zsh_list_t *elem, *next;
    unsigned busy = 0;

    ctx->tl->progress(ctx->tl_ctx);
    zsh_ctx_health_progress(ctx);
    for (elem = ctx->in_flight.next; elem != &ctx->in_flight; elem = next) {
        zsh_task_t *task = zsh_container_of(elem, zsh_task_t, link);
        uint64_t settled = ctx->settled;

        next = elem->next;
        zsh_task_advance(task);
        busy += task->run.busy;
        /* A task that settled others on its way (a hierarchical call
         * cancelling its step as it fails) may have taken the next one
         * off the list, even given it back to the pool: start again from
         * the head, past which every task left is still in flight. */
        if (ctx->settled - settled > (uint64_t)(task->run.status != ZSH_INPROGRESS)) {
            next = ctx->in_flight.next;
        }
    }
    return busy;
}

zsh_status_t zsh_task_wait(zsh_task_t *task)
{
    zsh_ctx_t *ctx     = task->comm->ctx;
    unsigned spins     = 0;
    double yield_until = 0;

    while (task->run.status == ZSH_INPROGRESS) {
        if (zsh_ctx_progress(ctx) > 0) {
            spins       = 0; /* a task has work of its own left: no reason to wait */
            yield_until = 0;
            continue;
        }
        if (task->run.status != ZSH_INPROGRESS) {
            break;
        }
        /* Spin briefly for latency; then yield the core for a while, so that
         * a rank sharing it runs at once and sends what we wait for; then
         * sleep on the event descriptor, so that a long wait costs nothing. */
        if (++spins <= ctx->spin_count) {
            continue;
        }
        if (yield_until == 0) {
            yield_until = zsh_clock_now() + ctx->cfg.yield_time;
        }
        if (zsh_clock_now() < yield_until) {
            sched_yield();
        } else {
            ctx->tl->wait(ctx->tl_ctx,
                          zsh_clock_ms_left(task->run.deadline, ZSH_TASK_SLEEP_MAX_MS));
        }
    }
    return task->run.status;
}

zsh_status_t zsh_coll_launch(zsh_task_t *task, zsh_request_t **req_p)
{
    zsh_status_t status;

    zsh_task_post(task);
    if (req_p != NULL) {
        *req_p = task;
        return ZSH_OK;
    }
    status = zsh_task_wait(task);
    zsh_task_put(task);
    return status;
}
