/*
 * Peer failures, revoked communicators, and the control messages that tell
 * other ranks about them.
 *
 * Control messages travel on the reserved communicator id ZSH_COMM_ID_CTRL,
 * so they never match a collective's receive. Each rank keeps one receive
 * for them posted at all times and handles them in every progress pass.
 */
#include "fault/fault.h"

#include "base/trace.h"
#include "core/log.h"
#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_CTRL_MAGIC 0x7a736863u /* "zshc" */
#define ZSH_CTRL_TEXT  640

enum {
    ZSH_CTRL_FAILED = 1,  /* job rank `rank` has failed */
    ZSH_CTRL_REVOKE = 2   /* communicator (comm_id, comm_uid) fails every call with `status` */
};

typedef struct zsh_ctrl_msg {
    uint32_t magic;
    int32_t  kind;
    int32_t  origin;      /* job rank of the sender */
    int32_t  rank;        /* ZSH_CTRL_FAILED: the job rank that failed */
    int32_t  status;      /* ZSH_CTRL_REVOKE */
    uint32_t comm_id;
    uint32_t seq;         /* ZSH_CTRL_REVOKE: the first collective it fails */
    uint64_t comm_uid;
    char     text[ZSH_CTRL_TEXT];
} zsh_ctrl_msg_t;

/* A control message in flight: its buffer must live until the send is done. */
typedef struct zsh_ctrl_send {
    zsh_tl_req_t  *req;
    zsh_ctrl_msg_t msg;
} zsh_ctrl_send_t;

/* A revocation for a communicator this rank has not created yet: a fast
 * rank may detect a mismatch on a new communicator before a slow one has
 * returned from zsh_comm_split(). Kept until the communicator appears. */
#define ZSH_CTRL_EARLY_MAX 64

typedef struct zsh_ctrl_early {
    uint32_t     comm_id;
    uint32_t     seq;
    uint64_t     comm_uid;
    zsh_status_t status;
    char        *why;
} zsh_ctrl_early_t;

struct zsh_ctrl {
    zsh_tl_req_t     *recv_req;
    zsh_ctrl_early_t  early[ZSH_CTRL_EARLY_MAX];
    unsigned          nearly;
    zsh_ctrl_msg_t    in;
    zsh_ctrl_send_t **sends;     /* in flight, or released and awaiting teardown */
    unsigned          nsends, cap;
    bool              listening;
    bool              notify_due; /* some ctx->notify[] is set */
    bool              transport_due; /* some ctx->transport_why[] is set */
};

static uint64_t zsh_ctrl_tag(int self)
{
    return zsh_tag_make(ZSH_COMM_ID_CTRL, 0, 0, (uint32_t)self);
}

static void zsh_fault_failed(zsh_ctx_t *ctx, int rank, const char *why, bool tell)
{
    if ((rank < 0) || (rank >= ctx->size) || (rank == ctx->rank) || ctx->failed[rank]) {
        return;
    }
    ctx->failed[rank]     = 1;
    ctx->failed_why[rank] = strdup(why);
    ctx->failed_order[rank] = ++ctx->nfailed;
    ctx->tl->mark_failed(ctx->tl_ctx, rank);
    zsh_log(ZSH_LOG_ERROR, "rank %d of the job failed: %s", rank, why);
    if (tell && (ctx->ctrl != NULL)) {
        ctx->notify[rank]      = 1;
        ctx->ctrl->notify_due = true;
    }
}

void zsh_fault_peer_failed(zsh_ctx_t *ctx, int rank, const char *why)
{
    zsh_fault_failed(ctx, rank, why, true);
}

/*
 * The transport's failure report, from inside its progress. It is recorded
 * after the control messages of the same pass: a survivor that exits after
 * a failure also looks like a failure, and the notice of the first death,
 * sent before it left, must keep its place as the cause.
 */
static void zsh_fault_on_transport_failure(void *arg, int peer, const char *reason)
{
    zsh_ctx_t *ctx = arg;

    if ((peer >= 0) && (peer < ctx->size) && (ctx->transport_why[peer] == NULL)) {
        ctx->transport_why[peer] = strdup(reason);
        ctx->ctrl->transport_due = true;
    }
}

static void zsh_fault_apply_transport(zsh_ctx_t *ctx)
{
    int r;

    ctx->ctrl->transport_due = false;
    for (r = 0; r < ctx->size; r++) {
        if (ctx->transport_why[r] != NULL) {
            zsh_fault_peer_failed(ctx, r, ctx->transport_why[r]);
            free(ctx->transport_why[r]);
            ctx->transport_why[r] = NULL;
        }
    }
}

zsh_status_t zsh_fault_init(zsh_ctx_t *ctx)
{
    ctx->failed     = calloc((size_t)ctx->size, 1);
    ctx->notify     = calloc((size_t)ctx->size, 1);
    ctx->failed_why = calloc((size_t)ctx->size, sizeof(char *));
    ctx->failed_order = calloc((size_t)ctx->size, sizeof(unsigned));
    ctx->transport_why = calloc((size_t)ctx->size, sizeof(char *));
    ctx->ctrl       = calloc(1, sizeof(*ctx->ctrl));
    if ((ctx->failed == NULL) || (ctx->notify == NULL) || (ctx->failed_why == NULL) ||
        (ctx->failed_order == NULL) || (ctx->transport_why == NULL) || (ctx->ctrl == NULL)) {
        zsh_fault_cleanup(ctx);
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate failure tracking for %d ranks",
                         ctx->size);
    }
    atomic_init(&ctx->abort_pending, 0);
    zsh_ctx_id_set(ctx, ZSH_COMM_ID_CTRL, 1); /* never handed to a communicator */
    ctx->tl->on_failure(ctx->tl_ctx, zsh_fault_on_transport_failure, ctx);
    return ZSH_OK;
}

static zsh_status_t zsh_fault_listen(zsh_ctx_t *ctx)
{
    zsh_ctrl_t *ctrl = ctx->ctrl;
    zsh_status_t status;

    status = ctx->tl->irecv_any(ctx->tl_ctx, zsh_ctrl_tag(0), ZSH_TAG_COMM_MASK, &ctrl->in,
                                sizeof(ctrl->in), &ctrl->recv_req);
    if (status == ZSH_INPROGRESS) {
        ctrl->listening = true;
        return ZSH_OK;
    }
    ctrl->recv_req  = NULL;
    ctrl->listening = false;
    return (status == ZSH_OK) ? zsh_error(ZSH_ERR_INTERNAL, "control receive completed at once")
                              : status;
}

zsh_status_t zsh_fault_start(zsh_ctx_t *ctx)
{
    return zsh_fault_listen(ctx);
}

/* Drop sends that have finished; the rest stay until they do. */
static void zsh_fault_reap_sends(zsh_ctx_t *ctx)
{
    zsh_ctrl_t *ctrl = ctx->ctrl;
    unsigned i = 0;

    while (i < ctrl->nsends) {
        zsh_ctrl_send_t *send = ctrl->sends[i];

        if ((send->req != NULL) &&
            (ctx->tl->test(ctx->tl_ctx, send->req) == ZSH_INPROGRESS)) {
            i++;
            continue;
        }
        if (send->req != NULL) {
            ctx->tl->release(ctx->tl_ctx, send->req);
        }
        free(send);
        ctrl->sends[i] = ctrl->sends[--ctrl->nsends];
    }
}

static void zsh_fault_send(zsh_ctx_t *ctx, int peer, const zsh_ctrl_msg_t *msg)
{
    zsh_ctrl_t *ctrl = ctx->ctrl;
    zsh_ctrl_send_t *send, **sends;
    zsh_status_t status;

    if (ctx->failed[peer] || (peer == ctx->rank)) {
        return;
    }
    if (ctrl->nsends == ctrl->cap) {
        sends = realloc(ctrl->sends, (ctrl->cap * 2 + 8) * sizeof(*sends));
        if (sends == NULL) {
            zsh_log(ZSH_LOG_WARN, "cannot allocate a control message to rank %d", peer);
            return;
        }
        ctrl->sends = sends;
        ctrl->cap   = ctrl->cap * 2 + 8;
    }
    send = malloc(sizeof(*send));
    if (send == NULL) {
        zsh_log(ZSH_LOG_WARN, "cannot allocate a control message to rank %d", peer);
        return;
    }
    send->msg = *msg;
    send->req = NULL;
    status    = ctx->tl->isend(ctx->tl_ctx, peer, zsh_ctrl_tag(ctx->rank), &send->msg,
                               sizeof(send->msg), &send->req);
    if (status == ZSH_INPROGRESS) {
        ctrl->sends[ctrl->nsends++] = send;
        return;
    }
    if (status != ZSH_OK) {
        zsh_log(ZSH_LOG_DEBUG, "control message to rank %d not sent: %s", peer,
                zsh_last_error());
    }
    free(send);
}

static void zsh_fault_msg_init(zsh_ctx_t *ctx, zsh_ctrl_msg_t *msg, int kind)
{
    memset(msg, 0, sizeof(*msg));
    msg->magic  = ZSH_CTRL_MAGIC;
    msg->kind   = kind;
    msg->origin = ctx->rank;
}

/* Tell every other member of @comm that it is revoked. */
static void zsh_fault_tell_comm(zsh_comm_t *comm, zsh_status_t status, uint32_t seq,
                                const char *why)
{
    zsh_ctrl_msg_t msg;
    int i;

    zsh_fault_msg_init(comm->ctx, &msg, ZSH_CTRL_REVOKE);
    msg.status   = status;
    msg.comm_id  = comm->id;
    msg.comm_uid = comm->uid;
    msg.seq      = seq;
    snprintf(msg.text, sizeof(msg.text), "%s", why);
    for (i = 0; i < comm->size; i++) {
        zsh_fault_send(comm->ctx, comm->ctx_ranks[i], &msg);
    }
}

static void zsh_fault_tell_failures(zsh_ctx_t *ctx)
{
    zsh_ctrl_msg_t msg;
    int r, peer;

    ctx->ctrl->notify_due = false;
    for (r = 0; r < ctx->size; r++) {
        if (!ctx->notify[r]) {
            continue;
        }
        ctx->notify[r] = 0;
        zsh_fault_msg_init(ctx, &msg, ZSH_CTRL_FAILED);
        msg.rank = r;
        snprintf(msg.text, sizeof(msg.text), "%s", ctx->failed_why[r]);
        for (peer = 0; peer < ctx->size; peer++) {
            zsh_fault_send(ctx, peer, &msg);
        }
    }
}

static void zsh_fault_tell_aborts(zsh_ctx_t *ctx)
{
    char why[160];
    zsh_list_t *elem;

    for (elem = ctx->comms.next; elem != &ctx->comms; elem = elem->next) {
        zsh_comm_t *comm = zsh_container_of(elem, zsh_comm_t, link);

        if (atomic_load(&comm->aborted) && !comm->abort_told) {
            comm->abort_told = true;
            snprintf(why, sizeof(why), "rank %d of comm %u called zsh_comm_abort()", comm->rank,
                     comm->id);
            zsh_fault_tell_comm(comm, ZSH_ERR_ABORTED, 0, why);
        }
    }
}


static void zsh_fault_set_revoked(zsh_comm_t *comm, zsh_status_t status, uint32_t seq,
                                  const char *why)
{
    comm->revoked    = status;
    comm->revoke_seq = seq;
    comm->revoke_why = strdup(why);
}

static void zsh_fault_keep_early(zsh_ctrl_t *ctrl, const zsh_ctrl_msg_t *msg)
{
    zsh_ctrl_early_t *early;

    if (ctrl->nearly == ZSH_CTRL_EARLY_MAX) { /* forget the oldest */
        free(ctrl->early[0].why);
        memmove(&ctrl->early[0], &ctrl->early[1], sizeof(ctrl->early[0]) * --ctrl->nearly);
    }
    early           = &ctrl->early[ctrl->nearly];
    early->comm_id  = msg->comm_id;
    early->comm_uid = msg->comm_uid;
    early->status   = msg->status;
    early->seq      = msg->seq;
    early->why      = strdup(msg->text);
    ctrl->nearly   += (early->why != NULL);
}

void zsh_fault_comm_created(zsh_comm_t *comm)
{
    zsh_ctrl_t *ctrl = comm->ctx->ctrl;
    unsigned i;

    for (i = 0; (ctrl != NULL) && (i < ctrl->nearly); i++) {
        if ((ctrl->early[i].comm_id == comm->id) && (ctrl->early[i].comm_uid == comm->uid)) {
            zsh_fault_set_revoked(comm, ctrl->early[i].status, ctrl->early[i].seq,
                                  ctrl->early[i].why);
            free(ctrl->early[i].why);
            ctrl->early[i] = ctrl->early[--ctrl->nearly];
            return;
        }
    }
}

static void zsh_fault_handle(zsh_ctx_t *ctx, const zsh_ctrl_msg_t *msg)
{
    char why[ZSH_CTRL_TEXT + 64];
    zsh_list_t *elem;

    if ((msg->magic != ZSH_CTRL_MAGIC) || (msg->origin < 0) || (msg->origin >= ctx->size) ||
        (memchr(msg->text, '\0', sizeof(msg->text)) == NULL)) {
        zsh_log(ZSH_LOG_WARN, "ignoring a malformed control message");
        return;
    }
    if (msg->kind == ZSH_CTRL_FAILED) {
        snprintf(why, sizeof(why), "rank %d reported it (%s)", msg->origin, msg->text);
        zsh_fault_failed(ctx, msg->rank, why, false);
        return;
    }
    if ((msg->kind != ZSH_CTRL_REVOKE) || (msg->status >= 0)) {
        zsh_log(ZSH_LOG_WARN, "ignoring a control message of unknown kind %d", msg->kind);
        return;
    }
    for (elem = ctx->comms.next; elem != &ctx->comms; elem = elem->next) {
        zsh_comm_t *comm = zsh_container_of(elem, zsh_comm_t, link);

        if ((comm->id == msg->comm_id) && (comm->uid == msg->comm_uid)) {
            if (comm->revoked == ZSH_OK) {
                zsh_fault_set_revoked(comm, msg->status, msg->seq, msg->text);
            }
            return;
        }
    }
    zsh_fault_keep_early(ctx->ctrl, msg);
}

void zsh_fault_progress(zsh_ctx_t *ctx)
{
    zsh_ctrl_t *ctrl = ctx->ctrl;
    zsh_status_t status;

    while (ctrl->listening) {
        status = ctx->tl->test(ctx->tl_ctx, ctrl->recv_req);
        if (status == ZSH_INPROGRESS) {
            break;
        }
        ctx->tl->release(ctx->tl_ctx, ctrl->recv_req);
        ctrl->recv_req  = NULL;
        ctrl->listening = false;
        if (status == ZSH_OK) {
            zsh_fault_handle(ctx, &ctrl->in);
        } else {
            zsh_log(ZSH_LOG_WARN, "control receive failed: %s", zsh_last_error());
        }
        if (zsh_fault_listen(ctx) != ZSH_OK) {
            zsh_log(ZSH_LOG_WARN, "cannot listen for control messages: %s", zsh_last_error());
        }
    }
    if (ctrl->transport_due) {
        zsh_fault_apply_transport(ctx);
    }
    if (ctrl->notify_due) {
        zsh_fault_tell_failures(ctx);
    }
    if (atomic_load_explicit(&ctx->abort_pending, memory_order_relaxed) &&
        atomic_exchange(&ctx->abort_pending, 0)) {
        zsh_fault_tell_aborts(ctx);
    }
    if (ctrl->nsends > 0) {
        zsh_fault_reap_sends(ctx);
    }
}

void zsh_fault_revoke(zsh_comm_t *comm, zsh_status_t status, uint32_t seq, const char *why)
{
    if (comm->revoked != ZSH_OK) {
        return;
    }
    zsh_fault_set_revoked(comm, status, seq, why);
    zsh_fault_tell_comm(comm, status, seq, why);
}

/* "; then rank 2 failed: <why>" for up to three members of @comm that
 * failed besides @first, in the order they did, and how many more. A rank
 * that left after a death can be noticed before the death itself, so every
 * failed member is named with its reason. */
static void zsh_fault_others(const zsh_comm_t *comm, int first, char *buf, size_t len)
{
    const zsh_ctx_t *ctx = comm->ctx;
    unsigned order, last = ctx->failed_order[comm->ctx_ranks[first]];
    size_t used = 0;
    int i, next, shown = 0, more = 0;

    buf[0] = '\0';
    for (;;) { /* the member that failed next after @last */
        next = -1;
        for (i = 0; i < comm->size; i++) {
            order = ctx->failed_order[comm->ctx_ranks[i]];
            if (ctx->failed[comm->ctx_ranks[i]] && (order > last) &&
                ((next < 0) || (order < ctx->failed_order[comm->ctx_ranks[next]]))) {
                next = i;
            }
        }
        if (next < 0) {
            break;
        }
        last = ctx->failed_order[comm->ctx_ranks[next]];
        if ((shown < 3) && (used < len)) {
            used += (size_t)snprintf(buf + used, len - used, "; then rank %d failed: %s", next,
                                     ctx->failed_why[comm->ctx_ranks[next]]);
            shown++;
        } else {
            more++;
        }
    }
    if ((more > 0) && (used < len)) {
        snprintf(buf + used, len - used, "; and %d more", more);
    }
}

zsh_status_t zsh_fault_check(zsh_comm_t *comm, uint32_t seq)
{
    zsh_ctx_t *ctx = comm->ctx;
    char others[768];
    int i, job_rank;

    /* A failure the transport found outside its progress (a call that
     * failed on it) counts before the next call is posted. */
    if ((ctx->ctrl != NULL) && ctx->ctrl->transport_due) {
        zsh_fault_apply_transport(ctx);
    }
    if (atomic_load(&comm->aborted)) {
        return zsh_error(ZSH_ERR_ABORTED, "comm %u was aborted on this rank (zsh_comm_abort)",
                         comm->id);
    }
    if ((comm->revoked != ZSH_OK) && (seq >= comm->revoke_seq)) {
        return zsh_error(comm->revoked, "%s", comm->revoke_why ? comm->revoke_why : "revoked");
    }
    if (comm->failed_seen != ctx->nfailed) {
        comm->failed_seen = ctx->nfailed;
        comm->failed_rank = -1;
        for (i = 0; i < comm->size; i++) { /* the first to fail is the likely cause */
            job_rank = comm->ctx_ranks[i];
            if (ctx->failed[job_rank] &&
                ((comm->failed_rank < 0) ||
                 (ctx->failed_order[job_rank] <
                  ctx->failed_order[comm->ctx_ranks[comm->failed_rank]]))) {
                comm->failed_rank = i;
            }
        }
    }
    if (comm->failed_rank < 0) {
        return ZSH_OK;
    }
    job_rank = comm->ctx_ranks[comm->failed_rank];
    zsh_fault_others(comm, comm->failed_rank, others, sizeof(others));
    if (job_rank == comm->failed_rank) {
        return zsh_error(ZSH_ERR_PEER_FAILED, "rank %d failed: %s%s", job_rank,
                         ctx->failed_why[job_rank], others);
    }
    return zsh_error(ZSH_ERR_PEER_FAILED, "rank %d of comm %u (job rank %d) failed: %s%s",
                     comm->failed_rank, comm->id, job_rank, ctx->failed_why[job_rank], others);
}

void zsh_fault_stop(zsh_ctx_t *ctx)
{
    zsh_ctrl_t *ctrl = ctx->ctrl;
    unsigned i;

    if (ctrl == NULL) {
        return;
    }
    if (ctrl->listening) {
        ctx->tl->release(ctx->tl_ctx, ctrl->recv_req); /* cancels it */
        ctrl->listening = false;
    }
    /* Unfinished sends finish or are cancelled when the endpoints close;
     * their buffers are freed after that, in zsh_fault_cleanup(). */
    for (i = 0; i < ctrl->nsends; i++) {
        if (ctrl->sends[i]->req != NULL) {
            ctx->tl->release(ctx->tl_ctx, ctrl->sends[i]->req);
            ctrl->sends[i]->req = NULL;
        }
    }
}

void zsh_fault_cleanup(zsh_ctx_t *ctx)
{
    int r;

    if (ctx->ctrl != NULL) {
        while (ctx->ctrl->nearly > 0) {
            free(ctx->ctrl->early[--ctx->ctrl->nearly].why);
        }
        while (ctx->ctrl->nsends > 0) {
            free(ctx->ctrl->sends[--ctx->ctrl->nsends]);
        }
        free(ctx->ctrl->sends);
        free(ctx->ctrl);
        ctx->ctrl = NULL;
    }
    for (r = 0; (ctx->failed_why != NULL) && (r < ctx->size); r++) {
        free(ctx->failed_why[r]);
    }
    for (r = 0; (ctx->transport_why != NULL) && (r < ctx->size); r++) {
        free(ctx->transport_why[r]);
    }
    free(ctx->transport_why);
    ctx->transport_why = NULL;
    free(ctx->failed_why);
    free(ctx->failed_order);
    ctx->failed_order = NULL;
    free(ctx->notify);
    free(ctx->failed);
    ctx->failed_why = NULL;
    ctx->notify     = NULL;
    ctx->failed     = NULL;
}
