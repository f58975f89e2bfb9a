/*
 * When a task fails: what it says, whom it tells, and how it lets go.
 */
#include "task/task.h"

#include "comm/health.h"
#include "core/clock.h"
#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A message of the wrong length says the ranks disagree, but not how. The
 * descriptors say how: wait a little for ours to be compared, or for the
 * rank that compared the mismatching pair to revoke the communicator, so
 * that every rank reports the same two calls. Without either in time, the
 * length is what is reported.
 */
#define ZSH_TASK_MISMATCH_WAIT 2.0

zsh_status_t zsh_task_data_mismatch(zsh_task_t *task)
{
    zsh_task_run_t *run = &task->run;

    if (zsh_coll_is_p2p(task->args.type)) {
        return ZSH_ERR_MISMATCH; /* no descriptors to wait for: the length says it all */
    }
    if (run->data_mismatch == NULL) {
        run->data_mismatch       = strdup(zsh_last_error());
        run->data_mismatch_until = zsh_clock_now() + ZSH_TASK_MISMATCH_WAIT;
        if (run->data_mismatch == NULL) {
            return ZSH_ERR_MISMATCH;
        }
    }
    if (zsh_clock_now() < run->data_mismatch_until) {
        return ZSH_INPROGRESS; /* the descriptors or a revocation may yet explain it */
    }
    return zsh_error(ZSH_ERR_MISMATCH, "%s", run->data_mismatch);
}

/* The task's transfers and its handshake's, for draining and naming peers. */
static unsigned zsh_task_spans(zsh_task_t *task, zsh_xfer_span_t spans[2])
{
    spans[0] = (zsh_xfer_span_t){task->ops, task->ops_cap};
    spans[1] = (zsh_xfer_span_t){task->hs_bufs.xfers, task->hs.nxfers};
    return 2;
}

/* Whether a transfer of @spans before flat index @end, of one direction,
 * is with @peer. */
static bool zsh_task_xfer_with(const zsh_xfer_span_t *spans, unsigned nspans, bool is_recv,
                               unsigned end, int peer)
{
    unsigned s, i, seen = 0;

    for (s = 0; s < nspans; s++) {
        for (i = 0; (i < spans[s].n) && (seen < end); i++, seen++) {
            const zsh_xfer_t *x = &spans[s].xfers[i];

            if ((x->req != NULL) && (x->is_recv == is_recv) && (x->peer == peer)) {
                return true;
            }
        }
    }
    return false;
}

/* Append ", @peer" (or "@peer" first) to @buf; "any" for a receive from
 * any sender. */
static void zsh_task_name_peer(char *buf, size_t len, size_t *used, int *n, int peer)
{
    if ((*used < len) && (peer < 0)) {
        *used += (size_t)snprintf(buf + *used, len - *used, "%sany", *n ? ", " : "");
        (*n)++;
    } else if (*used < len) {
        *used += (size_t)snprintf(buf + *used, len - *used, "%s%d", *n ? ", " : "", peer);
        (*n)++;
    }
}

/* "1, 3" for the peers of pending transfers of one direction; receiving
 * also counts the peers whose mailbox or board message the task still
 * waits for. */
static int zsh_task_pending_peers(zsh_task_t *task, bool is_recv, char *buf, size_t len)
{
    zsh_xfer_span_t spans[2];
    unsigned nspans = zsh_task_spans(task, spans), s, i, flat = 0;
    size_t used = 0;
    int n = 0, peer;

    buf[0] = '\0';
    for (s = 0; s < nspans; s++) {
        for (i = 0; i < spans[s].n; i++, flat++) {
            const zsh_xfer_t *x = &spans[s].xfers[i];

            if ((x->req != NULL) && (x->is_recv == is_recv) &&
                !zsh_task_xfer_with(spans, nspans, is_recv, flat, x->peer)) {
                zsh_task_name_peer(buf, len, &used, &n, x->peer);
            }
        }
    }
    for (peer = 0; is_recv && (peer < task->comm->size); peer++) {
        if (zsh_hs_waits_for(&task->hs, peer) &&
            !zsh_task_xfer_with(spans, nspans, true, flat, peer)) {
            zsh_task_name_peer(buf, len, &used, &n, peer);
        }
    }
    return n;
}

zsh_status_t zsh_task_timeout(zsh_task_t *task)
{
    const zsh_comm_t *comm = task->comm;
    char recv_peers[256], send_peers[256];
    int nrecv, nsend;

    nrecv = zsh_task_pending_peers(task, true, recv_peers, sizeof(recv_peers));
    nsend = zsh_task_pending_peers(task, false, send_peers, sizeof(send_peers));
    return zsh_error(ZSH_ERR_TIMEOUT,
                     "%s seq %u on comm %u (rank %d of %d) timed out after %g s; "
                     "not heard from rank(s): %s; not yet received by rank(s): %s%s",
                     task->name, task->seq, comm->id, comm->rank, comm->size,
                     task->run.timeout, nrecv ? recv_peers : "none",
                     nsend ? send_peers : "none",
                     (task->algo == ZSH_ALGO_NCCL)
                         ? "; its NCCL call had not completed, so the communicator's NCCL "
                           "communicator is aborted"
                         : "");
}

void zsh_task_dump_trace(zsh_task_t *task, zsh_status_t status)
{
    zsh_comm_t *comm = task->comm;
    char header[96];
    FILE *out;

    if ((status != ZSH_ERR_TIMEOUT) && (status != ZSH_ERR_ABORTED) &&
        (status != ZSH_ERR_PEER_FAILED) && (status != ZSH_ERR_MISMATCH)) {
        return;
    }
    if (status != ZSH_ERR_TIMEOUT) {
        if (comm->health.dumped) {
            return;
        }
        comm->health.dumped = true;
    }
    snprintf(header, sizeof(header), "comm %u (rank %d of %d)", comm->id, comm->rank,
             comm->size);
    out = zsh_trace_open(comm->ctx->cfg.trace_file, comm->ctx->rank);
    zsh_trace_write(comm->trace, out, header, zsh_last_error());
    zsh_trace_close(out);
}

void zsh_task_fail(zsh_task_t *task, zsh_status_t status)
{
    zsh_comm_t *comm = task->comm;
    char why[ZSH_ERROR_MSG_MAX + 32];
    zsh_xfer_span_t spans[2];

    if ((status == ZSH_ERR_MISMATCH) && !zsh_coll_is_p2p(task->args.type)) {
        /* The other members may not see it themselves: tell them. A
         * point-to-point message of the wrong length was taken whole, by
         * the one receive that names it: the communicator stays usable. */
        snprintf(why, sizeof(why), "%s (seen by rank %d)", zsh_last_error(), comm->rank);
        zsh_comm_revoke(comm, status, task->seq, why);
    }
    if (status != ZSH_ERR_TIMEOUT) {
        /* Say which call failed, in front of what the lower layer said. */
        zsh_error_prefix("%s seq %u on comm %u (rank %d of %d): ", task->name, task->seq,
                         comm->id, comm->rank, comm->size);
    }
    if (zsh_xfer_drain(comm, spans, zsh_task_spans(task, spans), task->name, task->seq,
                       status) > 0) {
        /* A receive left to the transport may still land in the task's
         * buffers (a peer that was only slow, a link that comes back): the
         * pooled task must not hand them to its next call. */
        task->orphan = true;
    }
    zsh_hs_abandon(&task->hs, status);
}

void zsh_task_cancel(zsh_task_t *task, zsh_status_t status)
{
    if (task->run.status == ZSH_INPROGRESS) {
        zsh_task_complete(task, status);
    }
}
