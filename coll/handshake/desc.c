/*
 * Exchanging and comparing collective descriptors between ring neighbours.
 */
#include "handshake/desc.h"

#include "task/task.h"
#include "comm/comm.h"
#include "fault/fault.h"
#include "core/clock.h"
#include "core/dtype.h"
#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_DESC_MAGIC 0x7a736864u /* "zshd" */

/* Indexes match zsh_coll_type_t. */
static const char *const zsh_desc_type_names[] = {"allgather", "reduce_scatter", "allreduce",
                                                  "broadcast", "barrier", "fence"};

const char *zsh_desc_type_name(unsigned type)
{
    return (type < sizeof(zsh_desc_type_names) / sizeof(zsh_desc_type_names[0]))
               ? zsh_desc_type_names[type] : "unknown";
}

void zsh_desc_make(const zsh_task_t *task, zsh_desc_t *desc)
{
    const zsh_coll_args_t *args = &task->args;

    memset(desc, 0, sizeof(*desc));
    desc->magic = ZSH_DESC_MAGIC;
    desc->seq   = task->seq;
    desc->uid   = task->comm->uid;
    desc->type  = (uint8_t)args->type;
    desc->algo  = (uint8_t)task->algo;
    if ((args->type == ZSH_COLL_BARRIER) || (args->type == ZSH_COLL_FENCE)) {
        return;
    }
    desc->count = args->count;
    desc->dtype = (uint8_t)args->dtype;
    if ((args->type == ZSH_COLL_REDUCE_SCATTER) || (args->type == ZSH_COLL_ALLREDUCE)) {
        desc->op = (uint8_t)args->op;
    }
    if (args->type == ZSH_COLL_BROADCAST) {
        desc->root = args->root;
    }
}

void zsh_desc_format(const zsh_desc_t *desc, char *buf, size_t len)
{
    const char *name = zsh_desc_type_name(desc->type);

    switch (desc->type) {
    case ZSH_COLL_BARRIER:
    case ZSH_COLL_FENCE:
        snprintf(buf, len, "%s()", name);
        return;
    case ZSH_COLL_REDUCE_SCATTER:
    case ZSH_COLL_ALLREDUCE:
        snprintf(buf, len, "%s(count=%llu, %s, %s)", name, (unsigned long long)desc->count,
                 zsh_dtype_name((zsh_dtype_t)desc->dtype), zsh_op_name((zsh_op_t)desc->op));
        return;
    case ZSH_COLL_BROADCAST:
        snprintf(buf, len, "%s(count=%llu, %s, root=%d)", name, (unsigned long long)desc->count,
                 zsh_dtype_name((zsh_dtype_t)desc->dtype), desc->root);
        return;
    default:
        snprintf(buf, len, "%s(count=%llu, %s)", name, (unsigned long long)desc->count,
                 zsh_dtype_name((zsh_dtype_t)desc->dtype));
        return;
    }
}

static int zsh_desc_left(const zsh_task_t *task)
{
    return (task->comm->rank + task->comm->size - 1) % task->comm->size;
}

static zsh_status_t zsh_desc_compare(zsh_task_t *task, int peer, const zsh_desc_t *theirs);

_Static_assert(sizeof(zsh_desc_msg_t) <= ZSH_TL_BOX_MSG_MAX,
               "a descriptor with all its data fits in a mailbox");

/* Mailboxes and boards: write message @ticket of the communicator's box
 * (to the peer) or board (ours, for every peer) once every earlier one has
 * gone, since peers take them in ticket order and a box or board holds only
 * so many; *@sent says it went. A mailbox message is @parts' head alone. */
static zsh_status_t zsh_desc_box_put(zsh_task_t *task, uint64_t ticket,
                                     const zsh_box_parts_t *parts, bool *sent)
{
    zsh_comm_t *comm = task->comm;
    zsh_ctx_t *ctx   = comm->ctx;
    zsh_status_t status;

    if (*sent) {
        return ZSH_OK;
    }
    if (comm->box_sent != ticket) {
        return ZSH_INPROGRESS;
    }
    status = comm->board
                 ? ctx->tl->board_put(ctx->tl_ctx, comm->id, comm->uid, ticket,
                                      (uint32_t)comm->size - 1, parts)
                 : ctx->tl->box_send(ctx->tl_ctx, comm->ctx_ranks[1 - comm->rank], comm->id,
                                     comm->uid, ticket, parts->head, parts->head_len);
    if (status == ZSH_OK) {
        *sent = true;
        comm->box_sent++;
    }
    return status;
}

/* Our descriptor message, through the mailbox or onto the board: on a board
 * the data follows from where it lies (task->desc_body). */
static zsh_status_t zsh_desc_box_send(zsh_task_t *task)
{
    zsh_box_parts_t parts = {&task->desc_out, sizeof(task->desc_out.desc) + task->desc_inline,
                             NULL, 0};

    if (task->desc_body != NULL) {
        parts.head_len = sizeof(task->desc_out.desc);
        parts.body     = task->desc_body;
        parts.body_len = task->desc_inline;
    }
    return zsh_desc_box_put(task, task->box_ticket, &parts, &task->box_sent);
}

/* What @peer sent through UCX while we waited on its mailbox or board: it
 * chose another algorithm for this call, or sends eager calls through UCX. */
static zsh_status_t zsh_desc_box_probed(zsh_task_t *task, int peer, const zsh_desc_t *theirs)
{
    zsh_status_t status;

    status = zsh_desc_compare(task, peer, theirs);
    if (status != ZSH_OK) {
        return status;
    }
    return zsh_error(ZSH_ERR_MISMATCH, "seq %u on comm %u: rank %d sent its %s descriptor "
                     "through UCX, rank %d through shared memory; is ZSH_SHM set alike on "
                     "every rank?", task->seq, task->comm->id, peer, task->name,
                     task->comm->rank);
}

/*
 * Our message, out of the mailbox. A peer whose call went another way (a
 * mismatched call, or different ZSH_ variables) sends its descriptor
 * through UCX instead; after ZSH_DESC_BOX_PROBE seconds, listen there too,
 * so that the mismatch is reported instead of waited out.
 */
#define ZSH_DESC_BOX_PROBE 0.01

static zsh_status_t zsh_desc_box_recv(zsh_task_t *task)
{
    zsh_comm_t *comm = task->comm;
    zsh_ctx_t *ctx   = comm->ctx;
    zsh_task_op_t *probe = &task->desc_ops[0];
    zsh_status_t status;
    size_t len;

    status = ctx->tl->box_recv(ctx->tl_ctx, comm->ctx_ranks[1 - comm->rank], comm->id, comm->uid,
                               task->box_ticket, &task->desc_in, sizeof(task->desc_in), &len);
    if ((status == ZSH_OK) && (probe->req != NULL)) {
        ctx->tl->release(ctx->tl_ctx, probe->req); /* cancels it */
        probe->req = NULL;
    }
    if (status != ZSH_INPROGRESS) {
        return status;
    }
    if (probe->req != NULL) {
        status = zsh_task_op_test(task, probe);
        return (status == ZSH_OK) ? zsh_desc_box_probed(task, 1 - comm->rank,
                                                        &task->box_probe->desc)
                                  : status;
    }
    if (task->box_probing || (zsh_clock_coarse() - task->posted_at < ZSH_DESC_BOX_PROBE)) {
        return ZSH_INPROGRESS;
    }
    if (task->box_probe == NULL) {
        task->box_probe = malloc(sizeof(*task->box_probe));
        if (task->box_probe == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate a descriptor buffer");
        }
    }
    task->box_probing = true; /* posted once */
    status = zsh_task_recv_upto(task, probe, 1 - comm->rank, ZSH_TAG_STEP_DESC, task->box_probe,
                                sizeof(*task->box_probe));
    return (status == ZSH_OK) ? ZSH_INPROGRESS : status;
}

/* The peer whose board message a task takes @k-th: rank + 1, rank + 2, ... */
static int zsh_desc_board_peer(const zsh_task_t *task, unsigned k)
{
    return (task->comm->rank + (int)k + 1) % task->comm->size;
}

/*
 * Boards: look at message @ticket on every peer's board, in order;
 * *@taken counts the peers done. With @check it is a descriptor: it is
 * compared with ours and held where it lies, for the call to use its data
 * from there, until zsh_desc_release(). After ZSH_DESC_BOX_PROBE seconds on
 * one peer, listen for that peer's descriptor through UCX too (ops[peer]),
 * as zsh_desc_box_recv() does. Without @check it is a "done" message, which
 * says nothing more than that it came.
 */
static zsh_status_t zsh_desc_board_take(zsh_task_t *task, uint64_t ticket, unsigned *taken,
                                        bool check)
{
    zsh_comm_t *comm = task->comm;
    zsh_ctx_t *ctx   = comm->ctx;
    zsh_task_op_t *probe;
    zsh_status_t status;
    const void *msg;
    size_t len;
    int peer;

    for (; *taken < (unsigned)comm->size - 1; (*taken)++) {
        peer   = zsh_desc_board_peer(task, *taken);
        probe  = &task->ops[peer];
        status = ctx->tl->board_peek(ctx->tl_ctx, comm->ctx_ranks[peer], comm->id, comm->uid,
                                     ticket, &msg, &len);
        if (status == ZSH_INPROGRESS) {
            break;
        }
        if (probe->req != NULL) {
            ctx->tl->release(ctx->tl_ctx, probe->req); /* cancels it */
            probe->req = NULL;
        }
        if (status != ZSH_OK) {
            return status;
        }
        if (!check) {
            ctx->tl->board_release(ctx->tl_ctx, comm->ctx_ranks[peer], comm->id, ticket);
            continue;
        }
        task->board_in[peer] = msg;
        /* Ours to compare, however short: a message that is no descriptor
         * leaves zeros, which fail as a malformed one. */
        memset(&task->all_in[peer].desc, 0, sizeof(task->all_in[peer].desc));
        memcpy(&task->all_in[peer].desc, msg,
               (len < sizeof(zsh_desc_t)) ? len : sizeof(zsh_desc_t));
        status = zsh_desc_compare(task, peer, &task->all_in[peer].desc);
        if (status != ZSH_OK) {
            return status;
        }
    }
    if (*taken == (unsigned)comm->size - 1) {
        return ZSH_OK;
    }
    if (!check) {
        return ZSH_INPROGRESS;
    }
    peer  = zsh_desc_board_peer(task, *taken); /* the one we wait for */
    probe = &task->ops[peer];
    if (probe->req != NULL) {
        status = zsh_task_op_test(task, probe);
        return (status == ZSH_OK) ? zsh_desc_box_probed(task, peer, &task->all_in[peer].desc)
                                  : status;
    }
    if (zsh_clock_coarse() - task->posted_at < ZSH_DESC_BOX_PROBE) {
        return ZSH_INPROGRESS;
    }
    /* The peer's message, if it comes this way, is the only thing that
     * lands in its slot: it never puts this call on its board as well. */
    memset(&task->all_in[peer].desc, 0, sizeof(task->all_in[peer].desc));
    status = zsh_task_recv_upto(task, probe, peer, ZSH_TAG_STEP_DESC, &task->all_in[peer],
                                sizeof(task->all_in[peer]));
    return (status == ZSH_OK) ? ZSH_INPROGRESS : status;
}

void zsh_desc_release(zsh_task_t *task)
{
    zsh_comm_t *comm = task->comm;
    int peer;

    if (!task->desc_box || !comm->board || (task->board_in_cap < (unsigned)comm->size)) {
        return; /* nothing held, or no room was had to hold anything */
    }
    for (peer = 0; peer < comm->size; peer++) {
        if (task->board_in[peer] != NULL) {
            comm->ctx->tl->board_release(comm->ctx->tl_ctx, comm->ctx_ranks[peer], comm->id,
                                         task->box_ticket);
            task->board_in[peer] = NULL;
        }
    }
}

/* Eager and direct calls on more than two ranks that share mailboxes: our
 * descriptor goes on our board, once, and every peer's comes off its. */
static zsh_status_t zsh_desc_board_progress(zsh_task_t *task)
{
    zsh_status_t status;

    status = zsh_desc_box_send(task);
    if ((status != ZSH_OK) && (status != ZSH_INPROGRESS)) {
        return status;
    }
    if (task->desc_state == ZSH_DESC_POSTED) {
        status = zsh_desc_board_take(task, task->box_ticket, &task->box_taken, true);
        if (status != ZSH_OK) {
            return status;
        }
        task->desc_state = ZSH_DESC_MATCHED;
    }
    if (!task->box_sent) {
        return ZSH_INPROGRESS; /* our descriptor lives in the task, its data maybe in the
                                  caller's buffer */
    }
    task->desc_state = ZSH_DESC_VERIFIED;
    return ZSH_OK;
}

/*
 * Eager and direct calls on more than two ranks without boards (through
 * UCX): the descriptor, with the data (eager) or the addresses (direct) the
 * peer needs, goes to every
 * peer, and every peer's is compared with ours before any of it is used. A
 * small call then costs one round of messages that all travel at once,
 * where the ring check followed by a log-latency algorithm costs several
 * rounds, each waiting for a peer to be scheduled; a direct call needs
 * every peer's addresses anyway.
 */
static zsh_status_t zsh_desc_all_post(zsh_task_t *task)
{
    zsh_comm_t *comm = task->comm;
    size_t len       = sizeof(task->desc_out.desc) + task->desc_inline;
    zsh_desc_msg_t *msg;
    zsh_status_t status;
    int n = comm->size, i, peer;

    for (peer = 0; peer < n; peer++) {
        if (peer == comm->rank) {
            continue;
        }
        memset(&task->all_in[peer].desc, 0, sizeof(task->all_in[peer].desc));
        status = zsh_task_recv_upto(task, &task->ops[peer], peer, ZSH_TAG_STEP_DESC,
                                    &task->all_in[peer], sizeof(task->all_in[peer]));
        if (status != ZSH_OK) {
            return status;
        }
    }
    /* Each rank starts with its right neighbour, so that no rank takes
     * everyone's first message. */
    for (i = 1; i < n; i++) {
        peer = (comm->rank + i) % n;
        msg  = &task->desc_out;
        if (task->all_out != NULL) {
            msg       = (zsh_desc_msg_t *)(task->all_out + (size_t)peer * task->all_stride);
            msg->desc = task->desc_out.desc;
        }
        status = zsh_task_send(task, &task->ops[n + peer], peer, ZSH_TAG_STEP_DESC, msg, len);
        if (status != ZSH_OK) {
            return status;
        }
    }
    return ZSH_OK;
}

static zsh_status_t zsh_desc_all_progress(zsh_task_t *task)
{
    zsh_comm_t *comm = task->comm;
    bool waiting     = false;
    zsh_status_t status;
    int n = comm->size, peer;

    if (task->desc_state == ZSH_DESC_POSTED) {
        for (peer = 0; peer < n; peer++) {
            if (peer == comm->rank) {
                continue;
            }
            status = zsh_task_op_test(task, &task->ops[peer]);
            if (status == ZSH_INPROGRESS) {
                waiting = true;
                continue;
            }
            if (status == ZSH_OK) {
                status = zsh_desc_compare(task, peer, &task->all_in[peer].desc);
            }
            if (status != ZSH_OK) {
                return status;
            }
        }
        if (waiting) {
            return ZSH_INPROGRESS;
        }
        task->desc_state = ZSH_DESC_MATCHED;
    }
    if (task->desc_state == ZSH_DESC_MATCHED) {
        status = zsh_task_ops_test(task, (unsigned)n, (unsigned)n);
        if (status != ZSH_OK) {
            return status;
        }
        task->desc_state = ZSH_DESC_VERIFIED;
    }
    return ZSH_OK;
}

void zsh_desc_abandon(zsh_task_t *task, zsh_status_t status)
{
    char why[ZSH_ERROR_MSG_MAX + 64], where[48];

    if (!task->desc_box || (task->box_sent && (!task->box_done || task->done_sent)) ||
        (status == ZSH_ERR_PEER_FAILED)) {
        return; /* nobody waits for it, or nobody is left to */
    }
    /* The peer waits for this message, and every later one would queue
     * behind it: say so to both sides rather than let them wait. */
    if (task->comm->board) {
        snprintf(where, sizeof(where), "went on rank %d's board", task->comm->rank);
    } else {
        snprintf(where, sizeof(where), "reached rank %d's mailbox", 1 - task->comm->rank);
    }
    snprintf(why, sizeof(why), "%s seq %u failed before its %s %s: %s", task->name, task->seq,
             task->box_sent ? "\"done\" message" : "descriptor", where, zsh_last_error());
    zsh_fault_revoke(task->comm, ZSH_ERR_ABORTED, task->seq, why);
}

/* One held board message per peer, none held yet; kept across uses of the
 * pooled task. */
static zsh_status_t zsh_desc_board_in(zsh_task_t *task)
{
    void *in = task->board_in;
    zsh_status_t status;

    status = zsh_task_array(task, &in, &task->board_in_cap, (unsigned)task->comm->size,
                            sizeof(*task->board_in), "board pointers");
    task->board_in = in;
    return status;
}

zsh_status_t zsh_desc_post(zsh_task_t *task)
{
    zsh_comm_t *comm = task->comm;
    zsh_status_t status;

    memset(task->desc_ops, 0, sizeof(task->desc_ops));
    if (comm->size < 2) {
        task->desc_state = ZSH_DESC_VERIFIED;
        return ZSH_OK;
    }
    task->desc_state = ZSH_DESC_POSTED;
    if (task->desc_all && !comm->board) {
        return zsh_desc_all_post(task);
    }
    /* A message shorter than a descriptor must not leave an earlier call's behind. */
    memset(&task->desc_in.desc, 0, sizeof(task->desc_in.desc));
    if ((comm->box || comm->board) &&
        ((task->algo == ZSH_ALGO_EAGER) || (task->algo == ZSH_ALGO_DIRECT))) {
        task->desc_box   = true;
        task->box_ticket = comm->box_tickets;
        comm->box_tickets += task->box_done ? 2 : 1;
        /* After taking the tickets: a failure here revokes the communicator
         * (zsh_desc_abandon), as the peers expect this call's message. */
        status = comm->board ? zsh_desc_board_in(task) : ZSH_OK;
        if (status != ZSH_OK) {
            return status;
        }
        status = zsh_desc_box_send(task);
        return (status == ZSH_INPROGRESS) ? ZSH_OK : status;
    }
    status = zsh_task_recv_upto(task, &task->desc_ops[0], zsh_desc_left(task), ZSH_TAG_STEP_DESC,
                                &task->desc_in, sizeof(task->desc_in));
    if (status != ZSH_OK) {
        return status;
    }
    return zsh_task_send(task, &task->desc_ops[1], (comm->rank + 1) % comm->size,
                         ZSH_TAG_STEP_DESC, &task->desc_out,
                         sizeof(task->desc_out.desc) + task->desc_inline);
}

/* Whether @peer's descriptor @theirs describes the same call as ours. */
static zsh_status_t zsh_desc_compare(zsh_task_t *task, int peer, const zsh_desc_t *theirs)
{
    const zsh_desc_t *mine = &task->desc_out.desc;
    char mine_s[128], theirs_s[128];

    if (theirs->magic != ZSH_DESC_MAGIC) {
        return zsh_error(ZSH_ERR_MISMATCH, "seq %u on comm %u: rank %d sent a malformed "
                         "collective descriptor", task->seq, task->comm->id, peer);
    }
    if (theirs->uid != mine->uid) {
        return zsh_error(ZSH_ERR_MISMATCH, "seq %u on comm %u: rank %d's call belongs to "
                         "another communicator that had the same id", task->seq,
                         task->comm->id, peer);
    }
    if (memcmp(theirs, mine, sizeof(*mine)) == 0) {
        return ZSH_OK;
    }
    zsh_desc_format(theirs, theirs_s, sizeof(theirs_s));
    zsh_desc_format(mine, mine_s, sizeof(mine_s));
    if ((theirs->seq == mine->seq) && (strcmp(theirs_s, mine_s) == 0) &&
        (theirs->algo != mine->algo)) {
        return zsh_error(ZSH_ERR_MISMATCH, "seq %u on comm %u: rank %d ran %s as %s but rank %d "
                         "as %s; are the ZSH_ variables set alike on every rank?", task->seq,
                         task->comm->id, peer, theirs_s,
                         zsh_algo_name((zsh_algo_t)theirs->algo), task->comm->rank,
                         zsh_algo_name((zsh_algo_t)mine->algo));
    }
    if (theirs->seq != mine->seq) {
        return zsh_error(ZSH_ERR_MISMATCH, "comm %u: rank %d called %s as its collective "
                         "seq %u but rank %d called %s as seq %u", task->comm->id, peer,
                         theirs_s, theirs->seq, task->comm->rank, mine_s, mine->seq);
    }
    return zsh_error(ZSH_ERR_MISMATCH, "seq %u on comm %u: rank %d called %s but rank %d "
                     "called %s", task->seq, task->comm->id, peer, theirs_s, task->comm->rank,
                     mine_s);
}

zsh_status_t zsh_desc_done_send(zsh_task_t *task)
{
    static const char none = 0; /* the message is empty; memcpy wants a pointer all the same */
    zsh_box_parts_t parts  = {&none, 0, NULL, 0};

    return zsh_desc_box_put(task, task->box_ticket + 1, &parts, &task->done_sent);
}

zsh_status_t zsh_desc_done_recv(zsh_task_t *task)
{
    zsh_comm_t *comm = task->comm;
    zsh_ctx_t *ctx   = comm->ctx;
    char none;
    size_t len;

    if (comm->board) {
        return zsh_desc_board_take(task, task->box_ticket + 1, &task->done_taken, false);
    }
    return ctx->tl->box_recv(ctx->tl_ctx, comm->ctx_ranks[1 - comm->rank], comm->id, comm->uid,
                             task->box_ticket + 1, &none, 0, &len);
}

bool zsh_desc_box_waits_for(const zsh_task_t *task, int peer)
{
    unsigned k, taken;

    if (!task->desc_box || (peer == task->comm->rank)) {
        return false;
    }
    if (task->desc_state == ZSH_DESC_POSTED) {
        taken = task->box_taken; /* stays 0 through a mailbox: one peer */
    } else if (task->box_done && task->done_sent) {
        taken = task->done_taken;
    } else {
        return false;
    }
    for (k = taken; k < (unsigned)task->comm->size - 1; k++) {
        if (zsh_desc_board_peer(task, k) == peer) {
            return true;
        }
    }
    return false;
}

const void *zsh_desc_data(const zsh_task_t *task, int peer)
{
    if (task->desc_all && task->desc_box) {
        return (const uint8_t *)task->board_in[peer] + sizeof(zsh_desc_t); /* on its board */
    }
    return task->desc_all ? task->all_in[peer].data : task->desc_in.data;
}

zsh_status_t zsh_desc_progress(zsh_task_t *task)
{
    zsh_status_t status;

    if (task->desc_all) {
        return task->desc_box ? zsh_desc_board_progress(task) : zsh_desc_all_progress(task);
    }
    if (task->desc_box && !task->box_sent) {
        status = zsh_desc_box_send(task);
        if ((status != ZSH_OK) && (status != ZSH_INPROGRESS)) {
            return status;
        }
    }
    if (task->desc_state == ZSH_DESC_POSTED) {
        status = task->desc_box ? zsh_desc_box_recv(task)
                                : zsh_task_op_test(task, &task->desc_ops[0]);
        if (status != ZSH_OK) {
            return status;
        }
        status = zsh_desc_compare(task, zsh_desc_left(task), &task->desc_in.desc);
        if (status != ZSH_OK) {
            return status;
        }
        task->desc_state = ZSH_DESC_MATCHED;
    }
    if (task->desc_state == ZSH_DESC_MATCHED) {
        /* Our descriptor lives in the task: it must be sent before the task is reused. */
        status = task->desc_box ? (task->box_sent ? ZSH_OK : ZSH_INPROGRESS)
                                : zsh_task_op_test(task, &task->desc_ops[1]);
        if (status != ZSH_OK) {
            return status;
        }
        task->desc_state = ZSH_DESC_VERIFIED;
    }
    return ZSH_OK;
}
