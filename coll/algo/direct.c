#include "algo/direct.h"

#include "comm/health.h"
#include "core/dtype.h"
#include "core/status.h"
#include "reduce/kernels.h"

#include <stdio.h>
#include <string.h>

/* Memory that peers wrote with process_vm_writev is invisible to valgrind's
 * memcheck, which would call it uninitialised; the receiver marks it. */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#endif
#endif
#ifndef VALGRIND_MAKE_MEM_DEFINED
#define VALGRIND_MAKE_MEM_DEFINED(_addr, _len) ((void)(_addr), (void)(_len))
#endif

enum { ZSH_DIRECT_STEP_DONE };

/* Phases, in task->run.phase. */
enum {
    ZSH_DIRECT_ADDRS,      /* waiting for every peer's descriptor and addresses */
    ZSH_DIRECT_WORK,       /* this rank's share of the copying, a step per progress call */
    ZSH_DIRECT_FINISHING   /* waiting for every peer to finish with our buffers */
};

/* Copy @len bytes between @local and address @remote of comm rank @peer:
 * into @local, or with @write out of it. */
static zsh_status_t zsh_direct_copy(zsh_task_t *task, int peer, void *local, uint64_t remote,
                                    size_t len, bool write)
{
    zsh_ctx_t *ctx = task->comm->ctx;

    if (len == 0) {
        return ZSH_OK;
    }
    return ctx->tl->local->copy(ctx->tl_ctx, task->comm->ctx_ranks[peer], local, remote, len,
                                write);
}

zsh_status_t zsh_direct_fetch(zsh_task_t *task, int peer, void *local, size_t off, size_t len)
{
    return zsh_direct_copy(task, peer, local, zsh_direct(task)->peers[peer].dst + off, len, false);
}

zsh_status_t zsh_direct_put(zsh_task_t *task, int peer, const void *local, size_t off,
                            size_t len)
{
    return zsh_direct_copy(task, peer, (void *)local, zsh_direct(task)->peers[peer].dst + off, len,
                           true);
}

zsh_status_t zsh_direct_spread(zsh_task_t *task, const char *chunk, size_t off, size_t len)
{
    return zsh_direct_spread_but(task, chunk, off, len, -1);
}

zsh_status_t zsh_direct_spread_but(zsh_task_t *task, const char *chunk, size_t off, size_t len,
                                   int skip)
{
    const zsh_direct_t *d = zsh_direct(task);
    int n = task->comm->size, rank = task->comm->rank, k, p;
    zsh_status_t status;

    for (k = 1; k < n; k++) {
        p      = (rank + k) % n;
        if (p == skip) {
            continue;
        }
        status = zsh_direct_copy(task, p, (void *)chunk, d->peers[p].dst + off, len, true);
        if (status != ZSH_OK) {
            return status;
        }
    }
    return ZSH_OK;
}

/*
 * Reduce elements [first, first + cnt) of every rank's input into @dst.
 * Peers are read in the order rank + 1, rank + 2, ... so that ranks read
 * different peers at once. Where the accumulation type is the element type,
 * dst itself accumulates. Out of place, the first peer's chunk is read
 * straight into it, and this rank's own input is added there while dst is
 * in cache, so every store hits a line the copy just brought in. In place,
 * dst already holds this rank's input, and each peer's chunk is added to it
 * from tmp: no copy of the input into acc and back. Otherwise (half
 * precision, and AVG, which divides at the store) a chunk of acc
 * accumulates, and dst is stored once.
 */
static zsh_status_t zsh_direct_reduce_chunk(zsh_task_t *task, size_t first, size_t cnt,
                                            char *dst)
{
    const zsh_direct_t *d    = zsh_direct(task);
    const zsh_coll_args_t *a = &task->args;
    int n = task->comm->size, rank = task->comm->rank, k, p;
    size_t esize = zsh_task_esize(task);
    const char *own = (const char *)a->sendbuf + first * esize;
    bool in_dst = (zsh_dtype_acc(a->dtype) == a->dtype) && (a->op != ZSH_AVG);
    bool first_into_dst = in_dst && (dst != own);
    zsh_status_t status;

    if (!in_dst) {
        zsh_reduce_load(d->acc, own, cnt, a->dtype);
    }
    for (k = 1; k < n; k++) {
        p      = (rank + k) % n;
        status = zsh_direct_copy(task, p, (first_into_dst && (k == 1)) ? dst : d->tmp,
                                 d->peers[p].src + first * esize, cnt * esize, false);
        if (status != ZSH_OK) {
            return status;
        }
        if (first_into_dst && (k == 1)) {
            zsh_reduce_acc(dst, own, cnt, a->dtype, a->op);
        } else if (in_dst) {
            zsh_reduce_acc(dst, d->tmp, cnt, a->dtype, a->op);
        } else if (k < n - 1) {
            zsh_reduce_acc(d->acc, d->tmp, cnt, a->dtype, a->op);
        } else {
            zsh_reduce_acc_store(dst, d->acc, d->tmp, cnt, a->dtype, a->op, n);
        }
    }
    return ZSH_OK;
}

/*
 * The deterministic mode's order (zeroshard.h): ranks 0 .. n-1, each added
 * to what came before. Every rank then reads rank 0 first; the reads of
 * one peer by several ranks at once cost less than the order's guarantee
 * is worth to the caller who asked for it. Where the accumulation type is
 * the element type and dst is not this rank's input, dst accumulates, rank
 * 0's chunk read straight into it (rank 0 adds rank 1's to its own input
 * into dst), as the default order does; otherwise a
 * chunk of acc does, and dst is stored once, after this rank's own input
 * was read.
 */
static zsh_status_t zsh_direct_reduce_chunk_ordered(zsh_task_t *task, size_t first, size_t cnt,
                                                    char *dst)
{
    const zsh_direct_t *d    = zsh_direct(task);
    const zsh_coll_args_t *a = &task->args;
    int n = task->comm->size, rank = task->comm->rank, p;
    size_t esize = zsh_task_esize(task);
    const char *own = (const char *)a->sendbuf + first * esize, *in;
    bool in_dst = (zsh_dtype_acc(a->dtype) == a->dtype) && (a->op != ZSH_AVG) && (dst != own);
    char *acc   = in_dst ? dst : d->acc;
    zsh_status_t status;

    for (p = 0; p < n; p++) {
        in = own;
        if (p != rank) {
            in     = ((p == 0) && in_dst) ? dst : d->tmp;
            status = zsh_direct_copy(task, p, (char *)in, d->peers[p].src + first * esize,
                                     cnt * esize, false);
            if (status != ZSH_OK) {
                return status;
            }
        }
        if ((p == 0) && in_dst) {
            continue; /* in dst already, or this rank's own input, added at p = 1 */
        }
        if ((p == 1) && in_dst && (rank == 0)) {
            zsh_reduce_acc_store(dst, own, in, cnt, a->dtype, a->op, n);
        } else if (p == 0) {
            zsh_reduce_load(acc, in, cnt, a->dtype);
        } else if ((p < n - 1) || in_dst) {
            zsh_reduce_acc(acc, in, cnt, a->dtype, a->op);
        } else {
            zsh_reduce_acc_store(dst, acc, in, cnt, a->dtype, a->op, n);
        }
    }
    return ZSH_OK;
}

zsh_status_t zsh_direct_reduce_step(zsh_task_t *task, char *dst, bool spread)
{
    zsh_direct_t *d = zsh_direct(task);
    size_t block = (size_t)task->comm->rank, esize = zsh_task_esize(task);
    size_t first = zsh_part_offset(&d->part, block), count = zsh_part_count(&d->part, block);
    size_t cnt, moved = 0;
    zsh_status_t status;

    while (d->done < count) {
        if (moved >= ZSH_DIRECT_STEP_MIN) {
            return ZSH_INPROGRESS;
        }
        cnt    = (count - d->done < d->chunk) ? count - d->done : d->chunk;
        status = (task->deterministic ? zsh_direct_reduce_chunk_ordered
                               : zsh_direct_reduce_chunk)(
            task, first + d->done, cnt, dst + d->done * esize);
        if ((status == ZSH_OK) && spread) {
            status = zsh_direct_spread(task, dst + d->done * esize, (first + d->done) * esize,
                                       cnt * esize);
        }
        if (status != ZSH_OK) {
            return status;
        }
        d->done += cnt;
        moved += cnt * esize;
    }
    return ZSH_OK;
}

/* Tell every peer that this rank is done with its buffers, and listen for
 * the same from each, through the transport: receives in ops [0, n), sends
 * in [n, 2n). Through a mailbox or board, "done" follows the descriptor
 * there instead (zsh_direct_finished()). */
static zsh_status_t zsh_direct_finish(zsh_task_t *task)
{
    int n = task->comm->size, rank = task->comm->rank, k, p;
    zsh_status_t status = ZSH_OK;

    if (zsh_hs_shared(&task->hs)) {
        return ZSH_OK;
    }
    for (k = 1; (k < n) && (status == ZSH_OK); k++) {
        p      = (rank + k) % n;
        status = zsh_task_recv(task, &task->ops[p], p, ZSH_DIRECT_STEP_DONE, NULL, 0);
        if (status == ZSH_OK) {
            status = zsh_task_send(task, &task->ops[n + p], p, ZSH_DIRECT_STEP_DONE, NULL, 0);
        }
    }
    return status;
}

/* ZSH_OK once this rank's "done" messages have gone and every peer's has come. */
static zsh_status_t zsh_direct_finished(zsh_task_t *task)
{
    zsh_status_t status;

    if (!zsh_hs_shared(&task->hs)) {
        return zsh_task_ops_test(task, 0, 2 * (unsigned)task->comm->size);
    }
    status = zsh_hs_done_send(&task->hs);
    return (status == ZSH_OK) ? zsh_hs_done_recv(&task->hs) : status;
}

/* Every peer's addresses, out of its descriptor message. */
static void zsh_direct_peers(zsh_task_t *task)
{
    zsh_direct_t *d = zsh_direct(task);
    int n = task->comm->size, p;

    for (p = 0; p < n; p++) {
        if (p != task->comm->rank) {
            memcpy(&d->peers[p], zsh_hs_data(&task->hs, p), sizeof(d->peers[p]));
        }
    }
}

/*
 * A copy that fails for any reason but a dead peer leaves the peers waiting
 * for a message this rank will never send: revoke the communicator, so they
 * fail with the same explanation instead of timing out.
 */
static zsh_status_t zsh_direct_failed(zsh_task_t *task, zsh_status_t status)
{
    char why[ZSH_ERROR_MSG_MAX + 32];

    if ((status != ZSH_ERR_PEER_FAILED) && (status != ZSH_ERR_MISMATCH)) {
        snprintf(why, sizeof(why), "%s (seen by rank %d)", zsh_last_error(), task->comm->rank);
        zsh_comm_revoke(task->comm, ZSH_ERR_ABORTED, task->seq, why);
    }
    return status;
}

/* Every peer has said it is done: what they wrote into recvbuf is ours. */
static void zsh_direct_received(zsh_task_t *task)
{
    const zsh_direct_t *d = zsh_direct(task);
    size_t esize = zsh_task_esize(task), first, count, total;

    if ((task->args.type == ZSH_COLL_REDUCE_SCATTER) ||
        ((task->args.type == ZSH_COLL_BROADCAST) && (task->comm->rank == task->args.root))) {
        return; /* nothing was written into it */
    }
    /* Blocks before and after this rank's own. */
    first = zsh_part_offset(&d->part, (size_t)task->comm->rank);
    count = zsh_part_count(&d->part, (size_t)task->comm->rank);
    total = zsh_part_offset(&d->part, d->part.nblocks);
    VALGRIND_MAKE_MEM_DEFINED(task->args.recvbuf, first * esize);
    VALGRIND_MAKE_MEM_DEFINED((char *)task->args.recvbuf + (first + count) * esize,
                              (total - first - count) * esize);
}

static zsh_status_t zsh_direct_progress(zsh_task_t *task)
{
    zsh_status_t status;

    if (task->run.phase == ZSH_DIRECT_ADDRS) {
        if (!zsh_hs_matched(&task->hs)) {
            return ZSH_INPROGRESS; /* no peer's memory is touched before the calls match */
        }
        zsh_direct_peers(task);
        task->run.phase = ZSH_DIRECT_WORK;
    }
    if (task->run.phase == ZSH_DIRECT_WORK) {
        status = zsh_direct(task)->step(task);
        if (status == ZSH_INPROGRESS) {
            task->run.busy = true;
            return status;
        }
        if (status != ZSH_OK) {
            return zsh_direct_failed(task, status);
        }
        task->run.phase = ZSH_DIRECT_FINISHING;
        status = zsh_direct_finish(task);
        if (status != ZSH_OK) {
            return status;
        }
    }
    status = zsh_direct_finished(task);
    if (status == ZSH_OK) {
        zsh_direct_received(task);
    }
    return status;
}

zsh_status_t zsh_direct_init(zsh_task_t *task, zsh_direct_step_t step)
{
    return zsh_direct_init_extra(task, step, 0);
}

/*
 * Scratch: the peers' addresses, then for a reduction a chunk in the
 * accumulation type and one in the element type, then the caller's extra.
 * On more than two ranks the descriptor goes to and comes from every peer
 * (zsh_hs_want_all()).
 */
zsh_status_t zsh_direct_init_extra(zsh_task_t *task, zsh_direct_step_t step, size_t extra)
{
    zsh_direct_t *d          = zsh_direct(task);
    const zsh_coll_args_t *a = &task->args;
    size_t n = (size_t)task->comm->size, esize = zsh_task_esize(task);
    size_t acc_esize   = zsh_task_acc_esize(task);
    size_t total       = zsh_coll_count_per_rank(a->type) ? a->count * n : a->count;
    size_t chunk_bytes = task->comm->ctx->cfg.chunk_size;
    size_t peers_bytes = (n * sizeof(*d->peers) + 63) & ~(size_t)63;
    zsh_direct_addr_t mine;
    zsh_status_t status;
    size_t chunks_bytes;
    char *scratch;

    memset(d, 0, sizeof(*d));
    d->part      = zsh_part_make(total, n);
    d->chunk     = (chunk_bytes / acc_esize > 0) ? chunk_bytes / acc_esize : 1;
    d->step      = step;
    /* Only the reductions need chunk buffers. */
    chunks_bytes = ((a->type == ZSH_COLL_BROADCAST) || (a->type == ZSH_COLL_ALLTOALL))
                       ? 0 : (d->chunk * (acc_esize + esize) + 63) & ~(size_t)63;
    status = (n > 2) ? zsh_hs_want_all(&task->hs) : ZSH_OK;
    if (status == ZSH_OK) {
        status = zsh_task_scratch(task, peers_bytes + chunks_bytes + extra, (void **)&scratch);
    }
    if (status == ZSH_OK) {
        status = zsh_task_ops(task, 2 * (unsigned)n);
    }
    if (status != ZSH_OK) {
        return status;
    }
    d->peers = (zsh_direct_addr_t *)(void *)scratch;
    d->acc   = (chunks_bytes > 0) ? scratch + peers_bytes : NULL;
    d->tmp   = (chunks_bytes > 0) ? d->acc + d->chunk * acc_esize : NULL;
    d->extra = (extra > 0) ? scratch + peers_bytes + chunks_bytes : NULL;

    /* Where this rank's buffers are, for the peers: with the descriptor. */
    mine.src = (uint64_t)(uintptr_t)a->sendbuf;
    mine.dst = (uint64_t)(uintptr_t)a->recvbuf;
    memcpy(task->hs_bufs.out.data, &mine, sizeof(mine));
    task->hs.inline_len = (uint32_t)sizeof(mine);
    /* Through a mailbox or board, the descriptor takes one ticket and "done" the next. */
    task->hs.done      = task->comm->local.box || task->comm->local.board;
    task->run.phase    = ZSH_DIRECT_ADDRS;
    task->run.progress = zsh_direct_progress;
    return ZSH_OK;
}
