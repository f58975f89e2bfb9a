#include "comm/xfer.h"

#include "base/tag.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"

#include <stdio.h>

/* Seconds a failed collective gives its sends under way to finish. */
#define ZSH_XFER_DRAIN_SEND 0.25

static zsh_status_t zsh_xfer_posted(zsh_xfer_t *x, zsh_status_t status, zsh_tl_req_t *req,
                                    int peer, bool is_recv)
{
    x->peer    = peer;
    x->is_recv = is_recv;
    x->req     = (status == ZSH_INPROGRESS) ? req : NULL;
    return (status == ZSH_INPROGRESS) ? ZSH_OK : status;
}

zsh_status_t zsh_xfer_send(zsh_comm_t *comm, uint32_t seq, zsh_xfer_t *x, int peer,
                           uint32_t step, const void *buf, size_t len)
{
    zsh_ctx_t *ctx    = comm->ctx;
    uint64_t tag      = zsh_tag_make(comm->id, seq, step, (uint32_t)ctx->rank);
    zsh_tl_req_t *req = NULL;
    zsh_status_t status;

    status = ctx->tl->isend(ctx->tl_ctx, comm->ctx_ranks[peer], tag, buf, len, &req);
    return zsh_xfer_posted(x, status, req, peer, false);
}

static zsh_status_t zsh_xfer_post_recv(zsh_comm_t *comm, uint32_t seq, zsh_xfer_t *x, int peer,
                                       uint32_t step, void *buf, size_t len, bool upto)
{
    zsh_ctx_t *ctx    = comm->ctx;
    int src           = comm->ctx_ranks[peer];
    uint64_t tag      = zsh_tag_make(comm->id, seq, step, (uint32_t)src);
    zsh_tl_req_t *req = NULL;
    zsh_status_t status;

    status = upto ? ctx->tl->irecv_upto(ctx->tl_ctx, src, tag, buf, len, &req)
                  : ctx->tl->irecv(ctx->tl_ctx, src, tag, buf, len, &req);
    return zsh_xfer_posted(x, status, req, peer, true);
}

zsh_status_t zsh_xfer_recv(zsh_comm_t *comm, uint32_t seq, zsh_xfer_t *x, int peer,
                           uint32_t step, void *buf, size_t len)
{
    return zsh_xfer_post_recv(comm, seq, x, peer, step, buf, len, false);
}

zsh_status_t zsh_xfer_recv_upto(zsh_comm_t *comm, uint32_t seq, zsh_xfer_t *x, int peer,
                                uint32_t step, void *buf, size_t len)
{
    return zsh_xfer_post_recv(comm, seq, x, peer, step, buf, len, true);
}

zsh_status_t zsh_xfer_recv_any(zsh_comm_t *comm, uint32_t seq, zsh_xfer_t *x, uint32_t step,
                               void *buf, size_t len)
{
    zsh_ctx_t *ctx    = comm->ctx;
    uint64_t tag      = zsh_tag_make(comm->id, seq, step, 0);
    zsh_tl_req_t *req = NULL;
    zsh_status_t status;

    status = ctx->tl->irecv_any(ctx->tl_ctx, tag, ZSH_TAG_ANY_SRC_MASK, buf, len, &req);
    return zsh_xfer_posted(x, status, req, -1, true);
}

/* The comm rank of job rank @src, which the tag of a message on @comm
 * names; -1 if none (the tag's comm id rules out any other sender). */
static int zsh_xfer_comm_rank(const zsh_comm_t *comm, uint32_t src)
{
    int r;

    for (r = 0; r < comm->size; r++) {
        if ((uint32_t)comm->ctx_ranks[r] == src) {
            return r;
        }
    }
    return -1;
}

zsh_status_t zsh_xfer_get(zsh_comm_t *comm, zsh_xfer_t *x, int peer, void *buf, size_t len,
                          uint64_t raddr, zsh_tl_rkey_t *rkey)
{
    zsh_ctx_t *ctx    = comm->ctx;
    zsh_tl_req_t *req = NULL;
    zsh_status_t status;

    status = ctx->tl->rma->get(ctx->tl_ctx, comm->ctx_ranks[peer], buf, len, raddr, rkey, &req);
    return zsh_xfer_posted(x, status, req, peer, true);
}

zsh_status_t zsh_xfer_test(zsh_comm_t *comm, zsh_xfer_t *x)
{
    zsh_ctx_t *ctx = comm->ctx;
    zsh_status_t status;

    if (x->req == NULL) {
        return ZSH_OK;
    }
    status = ctx->tl->test(ctx->tl_ctx, x->req);
    if (status == ZSH_INPROGRESS) {
        return status;
    }
    if ((status == ZSH_OK) && x->is_recv && (x->peer < 0)) {
        x->peer = zsh_xfer_comm_rank(
            comm, (uint32_t)(ctx->tl->recv_tag(ctx->tl_ctx, x->req) & (ZSH_MAX_RANKS - 1)));
    }
    ctx->tl->release(ctx->tl_ctx, x->req);
    x->req = NULL;
    return status;
}

zsh_status_t zsh_xfer_test_all(zsh_comm_t *comm, zsh_xfer_t *xfers, unsigned n)
{
    zsh_status_t status, ret = ZSH_OK;
    unsigned i;

    for (i = 0; i < n; i++) {
        status = zsh_xfer_test(comm, &xfers[i]);
        if (status < 0) {
            return status;
        }
        ret = (status == ZSH_INPROGRESS) ? status : ret;
    }
    return ret;
}

void zsh_xfer_drop(zsh_comm_t *comm, zsh_xfer_t *x)
{
    if (x->req != NULL) {
        comm->ctx->tl->release(comm->ctx->tl_ctx, x->req); /* cancels a pending receive */
        x->req = NULL;
    }
}

/* Slot @i of @spans taken one after the other; NULL past the last. */
static zsh_xfer_t *zsh_xfer_at(const zsh_xfer_span_t *spans, unsigned nspans, unsigned i)
{
    unsigned s;

    for (s = 0; s < nspans; s++) {
        if (i < spans[s].n) {
            return &spans[s].xfers[i];
        }
        i -= spans[s].n;
    }
    return NULL;
}

/*
 * Receives that have not matched are cancelled; the rest (sends, and
 * receives already landing) are given time to finish, since the transport
 * cannot cancel them and would otherwise go on using the caller's memory.
 * Receives write memory, so they get longest: one from a dead peer ends
 * when the transport notices the death itself, within a liveness period or
 * two, and letting go of it earlier lets a transfer under way land where it
 * no longer belongs. Sends only read: those to a dead peer are not waited
 * for, and one whose receiver gave up never ends, so the rest get a moment
 * for a transfer under way to finish. A call that timed out knows of no
 * dead peer whose end the transport would report: its peers are silent,
 * as across a cut link, where the transport notices nothing for as long as
 * the kernel retransmits. Its receives get the sends' moment, so that the
 * call fails at its deadline, as ZSH_TIMEOUT promises, and not a few
 * liveness periods later. What is left then is handed to the transport to
 * keep; the caller keeps the memory a receive left behind may still write
 * out of every later call's way (zsh_ctx_orphan()).
 */
unsigned zsh_xfer_drain(zsh_comm_t *comm, const zsh_xfer_span_t *spans, unsigned nspans,
                        const char *name, uint32_t seq, zsh_status_t why)
{
    zsh_ctx_t *ctx       = comm->ctx;
    double now           = zsh_clock_now();
    double send_deadline = now + ZSH_XFER_DRAIN_SEND;
    double recv_deadline = (why == ZSH_ERR_TIMEOUT)
                               ? send_deadline
                               : now + 3 * ctx->tl->liveness_period(ctx->tl_ctx) + 1;
    char error[ZSH_ERROR_MSG_MAX];
    unsigned i, pending, recvs, left = 0;
    zsh_xfer_t *x;

    snprintf(error, sizeof(error), "%s", zsh_last_error()); /* what the caller will read */
    for (i = 0; (x = zsh_xfer_at(spans, nspans, i)) != NULL; i++) {
        if (x->req != NULL) {
            ctx->tl->cancel(ctx->tl_ctx, x->req);
        }
    }
    do {
        pending = recvs = 0;
        for (i = 0; (x = zsh_xfer_at(spans, nspans, i)) != NULL; i++) {
            if ((x->req != NULL) && (ctx->tl->test(ctx->tl_ctx, x->req) != ZSH_INPROGRESS)) {
                ctx->tl->release(ctx->tl_ctx, x->req);
                x->req = NULL;
            }
            if ((x->req == NULL) ||
                (!x->is_recv &&
                 zsh_failures_is_failed(ctx->failures, comm->ctx_ranks[x->peer]))) {
                continue;
            }
            pending++;
            recvs += x->is_recv;
        }
        if (pending > 0) {
            ctx->tl->progress(ctx->tl_ctx);
            ctx->tl->wait(ctx->tl_ctx, 1);
        }
        now = zsh_clock_now();
    } while ((recvs > 0) ? (now < recv_deadline) : ((pending > 0) && (now < send_deadline)));

    for (i = 0; (x = zsh_xfer_at(spans, nspans, i)) != NULL; i++) {
        if (x->req != NULL) {
            zsh_log(ZSH_LOG_DEBUG, "%s seq %u: %s rank %d still in flight; left to the "
                    "transport", name, seq, x->is_recv ? "receive from" : "send to", x->peer);
            ctx->tl->release(ctx->tl_ctx, x->req);
            x->req = NULL;
            left += x->is_recv;
            /* It may still read or write the caller's buffers: they are
             * freed after the transport (zsh_comm_free_buffer()). */
            ctx->transfers_left = true;
        }
    }
    zsh_error_set_quiet(error);
    return left;
}
