#include "fault/ctrl.h"

#include "base/tag.h"
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

/* Revocations kept for communicators not created here yet; the oldest go
 * first when more arrive. */
#define ZSH_CTRL_EARLY_MAX 64

typedef struct zsh_ctrl_early {
    uint32_t     comm_id;
    uint32_t     seq;
    uint64_t     comm_uid;
    zsh_status_t status;
    char        *why;
} zsh_ctrl_early_t;

struct zsh_ctrl {
    const zsh_tl_ops_t  *tl;
    zsh_tl_ctx_t        *tl_ctx;
    int                  self, nranks;
    zsh_failures_t      *failures;
    zsh_ctrl_revoke_cb_t on_revoke;
    void                *arg;
    zsh_tl_req_t        *recv_req;
    bool                 listening;
    zsh_ctrl_msg_t       in;
    zsh_ctrl_early_t     early[ZSH_CTRL_EARLY_MAX];
    unsigned             nearly;
    zsh_ctrl_send_t    **sends;      /* in flight, or released and awaiting teardown */
    unsigned             nsends, cap;
};

static uint64_t zsh_ctrl_tag(int self)
{
    return zsh_tag_make(ZSH_COMM_ID_CTRL, 0, 0, (uint32_t)self);
}

zsh_status_t zsh_ctrl_create(const zsh_tl_ops_t *tl, zsh_tl_ctx_t *tl_ctx, int self, int nranks,
                             zsh_failures_t *failures, zsh_ctrl_revoke_cb_t on_revoke,
                             void *arg, zsh_ctrl_t **ctrl_p)
{
    zsh_ctrl_t *ctrl = calloc(1, sizeof(*ctrl));

    if (ctrl == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the control channel");
    }
    ctrl->tl        = tl;
    ctrl->tl_ctx    = tl_ctx;
    ctrl->self      = self;
    ctrl->nranks    = nranks;
    ctrl->failures  = failures;
    ctrl->on_revoke = on_revoke;
    ctrl->arg       = arg;
    *ctrl_p         = ctrl;
    return ZSH_OK;
}

zsh_status_t zsh_ctrl_start(zsh_ctrl_t *ctrl)
{
    zsh_status_t status;

    status = ctrl->tl->irecv_any(ctrl->tl_ctx, zsh_ctrl_tag(0), ZSH_TAG_COMM_MASK, &ctrl->in,
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

/* Drop sends that have finished; the rest stay until they do. */
static void zsh_ctrl_reap(zsh_ctrl_t *ctrl)
{
    unsigned i = 0;

    while (i < ctrl->nsends) {
        zsh_ctrl_send_t *send = ctrl->sends[i];

        if ((send->req != NULL) &&
            (ctrl->tl->test(ctrl->tl_ctx, send->req) == ZSH_INPROGRESS)) {
            i++;
            continue;
        }
        if (send->req != NULL) {
            ctrl->tl->release(ctrl->tl_ctx, send->req);
        }
        free(send);
        ctrl->sends[i] = ctrl->sends[--ctrl->nsends];
    }
}

static void zsh_ctrl_send(zsh_ctrl_t *ctrl, int peer, const zsh_ctrl_msg_t *msg)
{
    zsh_ctrl_send_t *send, **sends;
    zsh_status_t status;

    if ((peer == ctrl->self) || zsh_failures_is_failed(ctrl->failures, peer)) {
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
    status    = ctrl->tl->isend(ctrl->tl_ctx, peer, zsh_ctrl_tag(ctrl->self), &send->msg,
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

static void zsh_ctrl_msg_init(const zsh_ctrl_t *ctrl, zsh_ctrl_msg_t *msg, int kind)
{
    memset(msg, 0, sizeof(*msg));
    msg->magic  = ZSH_CTRL_MAGIC;
    msg->kind   = kind;
    msg->origin = ctrl->self;
}

void zsh_ctrl_tell_revoke(zsh_ctrl_t *ctrl, const int *ranks, int n, uint32_t comm_id,
                          uint64_t comm_uid, zsh_status_t status, uint32_t seq, const char *why)
{
    zsh_ctrl_msg_t msg;
    int i;

    zsh_ctrl_msg_init(ctrl, &msg, ZSH_CTRL_REVOKE);
    msg.status   = status;
    msg.comm_id  = comm_id;
    msg.comm_uid = comm_uid;
    msg.seq      = seq;
    snprintf(msg.text, sizeof(msg.text), "%s", why);
    for (i = 0; i < n; i++) {
        zsh_ctrl_send(ctrl, ranks[i], &msg);
    }
}

/* Tell every other rank of the failures first seen here. */
static void zsh_ctrl_tell_failures(zsh_ctrl_t *ctrl)
{
    zsh_ctrl_msg_t msg;
    int r, peer;

    while ((r = zsh_failures_next_notice(ctrl->failures)) >= 0) {
        zsh_ctrl_msg_init(ctrl, &msg, ZSH_CTRL_FAILED);
        msg.rank = r;
        snprintf(msg.text, sizeof(msg.text), "%s", zsh_failures_why(ctrl->failures, r));
        for (peer = 0; peer < ctrl->nranks; peer++) {
            zsh_ctrl_send(ctrl, peer, &msg);
        }
    }
}

static void zsh_ctrl_keep_early(zsh_ctrl_t *ctrl, const zsh_ctrl_msg_t *msg)
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

bool zsh_ctrl_take_early(zsh_ctrl_t *ctrl, uint32_t comm_id, uint64_t comm_uid,
                         zsh_status_t *status_p, uint32_t *seq_p, char **why_p)
{
    unsigned i;

    for (i = 0; i < ctrl->nearly; i++) {
        if ((ctrl->early[i].comm_id == comm_id) && (ctrl->early[i].comm_uid == comm_uid)) {
            *status_p      = ctrl->early[i].status;
            *seq_p         = ctrl->early[i].seq;
            *why_p         = ctrl->early[i].why;
            ctrl->early[i] = ctrl->early[--ctrl->nearly];
            return true;
        }
    }
    return false;
}

static void zsh_ctrl_handle(zsh_ctrl_t *ctrl, const zsh_ctrl_msg_t *msg)
{
    char why[ZSH_CTRL_TEXT + 64];

    if ((msg->magic != ZSH_CTRL_MAGIC) || (msg->origin < 0) || (msg->origin >= ctrl->nranks) ||
        (memchr(msg->text, '\0', sizeof(msg->text)) == NULL)) {
        zsh_log(ZSH_LOG_WARN, "ignoring a malformed control message");
        return;
    }
    if (msg->kind == ZSH_CTRL_FAILED) {
        snprintf(why, sizeof(why), "rank %d reported it (%s)", msg->origin, msg->text);
        zsh_failures_record(ctrl->failures, msg->rank, why, false);
        return;
    }
    if ((msg->kind != ZSH_CTRL_REVOKE) || (msg->status >= 0)) {
        zsh_log(ZSH_LOG_WARN, "ignoring a control message of unknown kind %d", msg->kind);
        return;
    }
    if (!ctrl->on_revoke(ctrl->arg, msg->comm_id, msg->comm_uid, msg->status, msg->seq,
                         msg->text)) {
        zsh_ctrl_keep_early(ctrl, msg);
    }
}

void zsh_ctrl_progress(zsh_ctrl_t *ctrl)
{
    zsh_status_t status;

    while (ctrl->listening) {
        status = ctrl->tl->test(ctrl->tl_ctx, ctrl->recv_req);
        if (status == ZSH_INPROGRESS) {
            break;
        }
        ctrl->tl->release(ctrl->tl_ctx, ctrl->recv_req);
        ctrl->recv_req  = NULL;
        ctrl->listening = false;
        if (status == ZSH_OK) {
            zsh_ctrl_handle(ctrl, &ctrl->in);
        } else {
            zsh_log(ZSH_LOG_WARN, "control receive failed: %s", zsh_last_error());
        }
        if (zsh_ctrl_start(ctrl) != ZSH_OK) {
            zsh_log(ZSH_LOG_WARN, "cannot listen for control messages: %s", zsh_last_error());
        }
    }
    if (zsh_failures_deferred(ctrl->failures)) {
        zsh_failures_apply(ctrl->failures);
    }
    if (zsh_failures_notices(ctrl->failures)) {
        zsh_ctrl_tell_failures(ctrl);
    }
    if (ctrl->nsends > 0) {
        zsh_ctrl_reap(ctrl);
    }
}

void zsh_ctrl_stop(zsh_ctrl_t *ctrl)
{
    unsigned i;

    if (ctrl->listening) {
        ctrl->tl->release(ctrl->tl_ctx, ctrl->recv_req); /* cancels it */
        ctrl->listening = false;
    }
    /* Unfinished sends finish or are cancelled when the endpoints close;
     * their buffers are freed after that, in zsh_ctrl_destroy(). */
    for (i = 0; i < ctrl->nsends; i++) {
        if (ctrl->sends[i]->req != NULL) {
            ctrl->tl->release(ctrl->tl_ctx, ctrl->sends[i]->req);
            ctrl->sends[i]->req = NULL;
        }
    }
}

void zsh_ctrl_destroy(zsh_ctrl_t *ctrl)
{
    if (ctrl == NULL) {
        return;
    }
    while (ctrl->nearly > 0) {
        free(ctrl->early[--ctrl->nearly].why);
    }
    while (ctrl->nsends > 0) {
        free(ctrl->sends[--ctrl->nsends]);
    }
    free(ctrl->sends);
    free(ctrl);
}
