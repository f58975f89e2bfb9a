#include "task/task.h"

#include "base/tag.h"
#include "base/trace.h"
#include "fault/fault.h"
#include "core/clock.h"
#include "core/dtype.h"
#include "core/log.h"
#include "core/status.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seconds a failed collective gives its sends under way to finish. */
#define ZSH_TASK_DRAIN_SEND 0.25

/* Longest a waiter sleeps between progress passes, in case the transport
 * completes something without signalling its event descriptor. */
#define ZSH_TASK_SLEEP_MAX_MS 1

/* Until an algorithm says otherwise, a task has nothing to do. */
static zsh_status_t zsh_task_done_progress(zsh_task_t *task)
{
    (void)task;
    return ZSH_OK;
}

zsh_status_t zsh_task_get(zsh_comm_t *comm, const zsh_coll_args_t *args, const char *name,
                          zsh_task_t **task_p)
{
    zsh_ctx_t *ctx = comm->ctx;
    zsh_task_t *task;

    if (!zsh_list_empty(&ctx->free_tasks)) {
        task = zsh_container_of(ctx->free_tasks.next, zsh_task_t, link);
        zsh_list_del(&task->link);
    } else {
        task = calloc(1, sizeof(*task));
        if (task == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_%s: cannot allocate a task", name);
        }
        zsh_list_init(&task->link);
    }
    task->comm   = comm;
    task->args   = *args;
    task->name   = name;
    task->seq    = comm->seq++;
    task->status = ZSH_INPROGRESS;
    task->timeout = comm->timeout;
    task->algo_done  = false;
    task->data_mismatch = NULL;
    task->desc_state = ZSH_DESC_NONE;
    task->desc_inline = 0;
    task->desc_body   = NULL;
    task->desc_all    = false;
    task->all_in      = NULL;
    task->all_out     = NULL;
    task->all_stride  = 0;
    task->desc_box    = false;
    task->box_sent    = false;
    task->box_probing = false;
    task->box_done    = false;
    task->done_sent   = false;
    task->box_taken   = 0;
    task->done_taken  = 0;
    memset(task->desc_ops, 0, sizeof(task->desc_ops));
    task->phase  = 0;
    task->algo   = ZSH_ALGO_AUTO;
    task->progress = zsh_task_done_progress;
    task->cleanup  = NULL;
    memset(&task->u, 0, sizeof(task->u));
    ctx->tasks_out++;
    comm->requests++;
    *task_p = task;
    return ZSH_OK;
}

void zsh_task_put(zsh_task_t *task)
{
    zsh_ctx_t *ctx = task->comm->ctx;

    task->comm->requests--;
    ctx->tasks_out--;
    task->comm = NULL;
    zsh_list_push_tail(&ctx->free_tasks, &task->link);
}

zsh_status_t zsh_task_array(zsh_task_t *task, void **arr_p, unsigned *cap_p, unsigned n,
                            size_t esize, const char *what)
{
    void *arr;

    if (n > *cap_p) {
        arr = realloc(*arr_p, n * esize);
        if (arr == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_%s: cannot allocate %u %s", task->name, n,
                             what);
        }
        *arr_p = arr;
        *cap_p = n;
    }
    memset(*arr_p, 0, (size_t)*cap_p * esize);
    return ZSH_OK;
}

zsh_status_t zsh_task_ops(zsh_task_t *task, unsigned n)
{
    void *ops = task->ops;
    zsh_status_t status;

    status    = zsh_task_array(task, &ops, &task->ops_cap, n, sizeof(*task->ops),
                               "operation slots");
    task->ops = ops;
    return status;
}

zsh_status_t zsh_task_scratch(zsh_task_t *task, size_t bytes, void **buf_p)
{
    void *buf;

    if (bytes > task->scratch_cap) {
        /* 64-byte alignment lets the reduction kernels use aligned vectors. */
        if (posix_memalign(&buf, 64, bytes) != 0) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_%s: cannot allocate %zu bytes of scratch",
                             task->name, bytes);
        }
        free(task->scratch);
        task->scratch     = buf;
        task->scratch_cap = bytes;
    }
    *buf_p = task->scratch;
    return ZSH_OK;
}

size_t zsh_task_esize(const zsh_task_t *task)
{
    return zsh_dtype_size(task->args.dtype);
}

size_t zsh_task_acc_esize(const zsh_task_t *task)
{
    return zsh_dtype_size(zsh_dtype_acc(task->args.dtype));
}

static zsh_status_t zsh_task_posted(zsh_task_op_t *op, zsh_status_t status, zsh_tl_req_t *req,
                                    int peer, bool is_recv)
{
    op->peer    = peer;
    op->is_recv = is_recv;
    op->req     = (status == ZSH_INPROGRESS) ? req : NULL;
    return (status == ZSH_INPROGRESS) ? ZSH_OK : status;
}

zsh_status_t zsh_task_send(zsh_task_t *task, zsh_task_op_t *op, int peer, uint32_t step,
                           const void *buf, size_t len)
{
    zsh_comm_t *comm = task->comm;
    zsh_ctx_t *ctx   = comm->ctx;
    uint64_t tag     = zsh_tag_make(comm->id, task->seq, step, (uint32_t)ctx->rank);
    zsh_tl_req_t *req = NULL;
    zsh_status_t status;

    status = ctx->tl->isend(ctx->tl_ctx, comm->ctx_ranks[peer], tag, buf, len, &req);
    return zsh_task_posted(op, status, req, peer, false);
}

static zsh_status_t zsh_task_post_recv(zsh_task_t *task, zsh_task_op_t *op, int peer,
                                       uint32_t step, void *buf, size_t len, bool upto)
{
    zsh_comm_t *comm = task->comm;
    zsh_ctx_t *ctx   = comm->ctx;
    int src          = comm->ctx_ranks[peer];
    uint64_t tag     = zsh_tag_make(comm->id, task->seq, step, (uint32_t)src);
    zsh_tl_req_t *req = NULL;
    zsh_status_t status;

    status = upto ? ctx->tl->irecv_upto(ctx->tl_ctx, src, tag, buf, len, &req)
                  : ctx->tl->irecv(ctx->tl_ctx, src, tag, buf, len, &req);
    return zsh_task_posted(op, status, req, peer, true);
}

zsh_status_t zsh_task_recv(zsh_task_t *task, zsh_task_op_t *op, int peer, uint32_t step,
                           void *buf, size_t len)
{
    return zsh_task_post_recv(task, op, peer, step, buf, len, false);
}

zsh_status_t zsh_task_recv_upto(zsh_task_t *task, zsh_task_op_t *op, int peer, uint32_t step,
                                void *buf, size_t len)
{
    return zsh_task_post_recv(task, op, peer, step, buf, len, true);
}

zsh_status_t zsh_task_rget(zsh_task_t *task, zsh_task_op_t *op, int peer, void *buf, size_t len,
                           uint64_t raddr, zsh_tl_rkey_t *rkey)
{
    zsh_ctx_t *ctx    = task->comm->ctx;
    zsh_tl_req_t *req = NULL;
    zsh_status_t status;

    status = ctx->tl->get(ctx->tl_ctx, task->comm->ctx_ranks[peer], buf, len, raddr, rkey, &req);
    return zsh_task_posted(op, status, req, peer, true);
}

zsh_status_t zsh_task_op_test(zsh_task_t *task, zsh_task_op_t *op)
{
    zsh_ctx_t *ctx = task->comm->ctx;
    zsh_status_t status;

    if (op->req == NULL) {
        return ZSH_OK;
    }
    status = ctx->tl->test(ctx->tl_ctx, op->req);
    if (status == ZSH_INPROGRESS) {
        return status;
    }
    ctx->tl->release(ctx->tl_ctx, op->req);
    op->req = NULL;
    return status;
}

zsh_status_t zsh_task_ops_test(zsh_task_t *task, unsigned first, unsigned n)
{
    zsh_status_t status, ret = ZSH_OK;
    unsigned i;

    for (i = first; i < first + n; i++) {
        status = zsh_task_op_test(task, &task->ops[i]);
        if (status < 0) {
            return status;
        }
        ret = (status == ZSH_INPROGRESS) ? status : ret;
    }
    return ret;
}

/* The algorithm's slots, then the descriptor exchange's: 0 .. ops_cap + 1. */
static zsh_task_op_t *zsh_task_any_op(zsh_task_t *task, unsigned i)
{
    return (i < task->ops_cap) ? &task->ops[i] : &task->desc_ops[i - task->ops_cap];
}

/*
 * Stop every operation still pending before the caller gets its buffers
 * back: receives that have not matched are cancelled, and the rest (sends,
 * and receives already landing) are given time to finish, since UCX cannot
 * cancel them and would otherwise go on using the caller's memory.
 * Receives write memory, so they get longest: one from a dead peer ends
 * when the transport notices the death itself, within a keepalive period or
 * two, and letting go of it earlier lets a transfer under way land where it
 * no longer belongs. Sends only read: those to a dead peer are not waited
 * for, and one whose receiver gave up never ends, so the rest get a moment
 * for a transfer under way to finish. What is left then is handed to the
 * transport to keep.
 */
static void zsh_task_cancel_ops(zsh_task_t *task)
{
    zsh_ctx_t *ctx       = task->comm->ctx;
    double now           = zsh_clock_now();
    double send_deadline = now + ZSH_TASK_DRAIN_SEND;
    double recv_deadline = now + 3 * ctx->cfg.keepalive + 1;
    char error[ZSH_ERROR_MSG_MAX];
    unsigned i, pending, recvs;

    snprintf(error, sizeof(error), "%s", zsh_last_error()); /* what the caller will read */
    for (i = 0; i < task->ops_cap + 2; i++) {
        zsh_task_op_t *op = zsh_task_any_op(task, i);

        if (op->req != NULL) {
            ctx->tl->cancel(ctx->tl_ctx, op->req);
        }
    }
    do {
        pending = recvs = 0;
        for (i = 0; i < task->ops_cap + 2; i++) {
            zsh_task_op_t *op = zsh_task_any_op(task, i);

            if ((op->req != NULL) && (ctx->tl->test(ctx->tl_ctx, op->req) != ZSH_INPROGRESS)) {
                ctx->tl->release(ctx->tl_ctx, op->req);
                op->req = NULL;
            }
            if ((op->req == NULL) ||
                (!op->is_recv && ctx->failed[task->comm->ctx_ranks[op->peer]])) {
                continue;
            }
            pending++;
            recvs += op->is_recv;
        }
        if (pending > 0) {
            ctx->tl->progress(ctx->tl_ctx);
            ctx->tl->wait(ctx->tl_ctx, 1);
        }
        now = zsh_clock_now();
    } while ((recvs > 0) ? (now < recv_deadline) : ((pending > 0) && (now < send_deadline)));

    for (i = 0; i < task->ops_cap + 2; i++) {
        zsh_task_op_t *op = zsh_task_any_op(task, i);

        if (op->req != NULL) {
            zsh_log(ZSH_LOG_DEBUG, "%s seq %u: %s rank %d still in flight; left to the "
                    "transport", task->name, task->seq, op->is_recv ? "receive from" : "send to",
                    op->peer);
            ctx->tl->release(ctx->tl_ctx, op->req);
            op->req = NULL;
        }
    }
    zsh_error_set_quiet(error);
}

/* Whether an operation of @task before index @end, of one direction, is with @peer. */
static bool zsh_task_op_with(zsh_task_t *task, bool is_recv, unsigned end, int peer)
{
    unsigned j;

    for (j = 0; j < end; j++) {
        const zsh_task_op_t *other = zsh_task_any_op(task, j);

        if ((other->req != NULL) && (other->is_recv == is_recv) && (other->peer == peer)) {
            return true;
        }
    }
    return false;
}

/* "rank(s) 1, 3" for the peers of pending operations of one direction;
 * receiving also counts the peers whose mailbox or board message the task
 * still waits for. */
static int zsh_task_pending_peers(zsh_task_t *task, bool is_recv, char *buf, size_t len)
{
    unsigned nops = task->ops_cap + 2, i;
    size_t used = 0;
    int n = 0, peer;

    buf[0] = '\0';
    for (i = 0; i < nops; i++) {
        const zsh_task_op_t *op = zsh_task_any_op(task, i);

        if ((op->req == NULL) || (op->is_recv != is_recv) ||
            zsh_task_op_with(task, is_recv, i, op->peer)) {
            continue;
        }
        if (used < len) {
            used += (size_t)snprintf(buf + used, len - used, "%s%d", n ? ", " : "", op->peer);
            n++;
        }
    }
    for (peer = 0; is_recv && (peer < task->comm->size); peer++) {
        if (zsh_desc_box_waits_for(task, peer) && !zsh_task_op_with(task, true, nops, peer) &&
            (used < len)) {
            used += (size_t)snprintf(buf + used, len - used, "%s%d", n ? ", " : "", peer);
            n++;
        }
    }
    return n;
}

static zsh_status_t zsh_task_timeout(zsh_task_t *task)
{
    const zsh_comm_t *comm = task->comm;
    char recv_peers[256], send_peers[256];
    int nrecv, nsend;

    nrecv = zsh_task_pending_peers(task, true, recv_peers, sizeof(recv_peers));
    nsend = zsh_task_pending_peers(task, false, send_peers, sizeof(send_peers));
    return zsh_error(ZSH_ERR_TIMEOUT,
                     "%s seq %u on comm %u (rank %d of %d) timed out after %g s; "
                     "not heard from rank(s): %s; not yet received by rank(s): %s",
                     task->name, task->seq, comm->id, comm->rank, comm->size,
                     task->timeout, nrecv ? recv_peers : "none",
                     nsend ? send_peers : "none");
}

/* Dump the flight recorder for a failure worth explaining: every timeout,
 * and the first failure that breaks the communicator. */
static void zsh_task_dump_trace(zsh_task_t *task, zsh_status_t status)
{
    zsh_comm_t *comm = task->comm;
    char header[96];
    FILE *out;

    if ((status != ZSH_ERR_TIMEOUT) && (status != ZSH_ERR_ABORTED) &&
        (status != ZSH_ERR_PEER_FAILED) && (status != ZSH_ERR_MISMATCH)) {
        return;
    }
    if (status != ZSH_ERR_TIMEOUT) {
        if (comm->dumped) {
            return;
        }
        comm->dumped = true;
    }
    snprintf(header, sizeof(header), "comm %u (rank %d of %d)", comm->id, comm->rank,
             comm->size);
    out = zsh_trace_open(comm->ctx->cfg.trace_file, comm->ctx->rank);
    zsh_trace_write(comm->trace, out, header, zsh_last_error());
    zsh_trace_close(out);
}

static void zsh_task_complete(zsh_task_t *task, zsh_status_t status)
{
    zsh_comm_t *comm = task->comm;
    char why[ZSH_ERROR_MSG_MAX + 32];

    if (status != ZSH_OK) {
        if (status == ZSH_ERR_MISMATCH) {
            /* The other members may not see it themselves: tell them. */
            snprintf(why, sizeof(why), "%s (seen by rank %d)", zsh_last_error(), comm->rank);
            zsh_fault_revoke(comm, status, task->seq, why);
        }
        if (status != ZSH_ERR_TIMEOUT) {
            /* Say which call failed, in front of what the lower layer said. */
            zsh_error_prefix("%s seq %u on comm %u (rank %d of %d): ", task->name, task->seq,
                             comm->id, comm->rank, comm->size);
        }
        zsh_task_cancel_ops(task);
        zsh_desc_abandon(task, status);
    }
    if (task->cleanup != NULL) {
        task->cleanup(task);
        task->cleanup = NULL;
    }
    zsh_desc_release(task);
    free(task->data_mismatch);
    task->data_mismatch = NULL;
    if (comm->trace != NULL) {
        zsh_trace_done(comm->trace, task->seq, status);
        if (status != ZSH_OK) {
            zsh_task_dump_trace(task, status);
        }
    }
    task->status = status;
    zsh_list_del(&task->link);
}

/*
 * A message of the wrong length says the ranks disagree, but not how. The
 * descriptors say how: wait a little for ours to be compared, or for the
 * rank that compared the mismatching pair to revoke the communicator, so
 * that every rank reports the same two calls. Without either in time, the
 * length is what is reported.
 */
#define ZSH_TASK_MISMATCH_WAIT 2.0

static zsh_status_t zsh_task_data_mismatch(zsh_task_t *task)
{
    if (task->data_mismatch == NULL) {
        task->data_mismatch       = strdup(zsh_last_error());
        task->data_mismatch_until = zsh_clock_now() + ZSH_TASK_MISMATCH_WAIT;
        if (task->data_mismatch == NULL) {
            return ZSH_ERR_MISMATCH;
        }
    }
    if (zsh_clock_now() < task->data_mismatch_until) {
        return ZSH_INPROGRESS; /* the descriptors or a revocation may yet explain it */
    }
    return zsh_error(ZSH_ERR_MISMATCH, "%s", task->data_mismatch);
}

/* Run one progress step of @task and settle it if it finished, failed,
 * its communicator broke, or it ran past its deadline. It completes once
 * its algorithm is done and its left neighbour's descriptor matched. */
static void zsh_task_advance(zsh_task_t *task)
{
    zsh_status_t status, algo;

    status = zsh_fault_check(task->comm, task->seq);
    if (status == ZSH_OK) {
        status = zsh_desc_progress(task);
    }
    if (((status == ZSH_OK) || (status == ZSH_INPROGRESS)) && (task->data_mismatch != NULL)) {
        status = zsh_task_data_mismatch(task);
    } else if ((status == ZSH_OK) || (status == ZSH_INPROGRESS)) {
        algo = task->algo_done ? ZSH_OK : task->progress(task);
        task->algo_done = (algo == ZSH_OK);
        if (algo == ZSH_ERR_MISMATCH) {
            algo = zsh_task_data_mismatch(task);
        }
        status = (algo == ZSH_OK) ? status : algo;
    }
    if ((status == ZSH_INPROGRESS) && (zsh_clock_coarse() > task->deadline)) {
        status = zsh_task_timeout(task);
    }
    if (status != ZSH_INPROGRESS) {
        zsh_task_complete(task, status);
    }
}

void zsh_task_post(zsh_task_t *task)
{
    zsh_comm_t *comm = task->comm;
    zsh_ctx_t *ctx   = comm->ctx;
    zsh_status_t status;

    task->status    = ZSH_INPROGRESS;
    task->posted_at = zsh_clock_now();
    task->deadline  = task->posted_at + task->timeout;
    zsh_list_push_tail(&ctx->in_flight, &task->link);
    if (atomic_load(&ctx->abort_pending)) {
        zsh_fault_progress(ctx); /* tell peers now, even if this call fails at once */
    }
    zsh_desc_make(task, &task->desc_out.desc);
    if (comm->trace != NULL) {
        zsh_trace_posted(comm->trace, &task->desc_out.desc);
    }
    status = zsh_fault_check(comm, task->seq);
    if (status == ZSH_OK) {
        status = zsh_desc_post(task);
    }
    if (status != ZSH_OK) {
        zsh_task_complete(task, status);
        return;
    }
    zsh_task_advance(task);
}

void zsh_ctx_progress(zsh_ctx_t *ctx)
{
    zsh_list_t *elem, *next;

    ctx->tl->progress(ctx->tl_ctx);
    zsh_fault_progress(ctx);
    for (elem = ctx->in_flight.next; elem != &ctx->in_flight; elem = next) {
        next = elem->next;
        zsh_task_advance(zsh_container_of(elem, zsh_task_t, link));
    }
}

zsh_status_t zsh_task_wait(zsh_task_t *task)
{
    zsh_ctx_t *ctx  = task->comm->ctx;
    unsigned spins  = 0;
    double yield_until = 0;

    while (task->status == ZSH_INPROGRESS) {
        zsh_ctx_progress(ctx);
        if (task->status != ZSH_INPROGRESS) {
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
            ctx->tl->wait(ctx->tl_ctx, zsh_clock_ms_left(task->deadline, ZSH_TASK_SLEEP_MAX_MS));
        }
    }
    return task->status;
}

void zsh_task_cancel(zsh_task_t *task)
{
    if (task->status == ZSH_INPROGRESS) {
        zsh_error(ZSH_ERR_ABORTED, "request freed before it completed");
        zsh_task_complete(task, ZSH_ERR_ABORTED);
    }
}
