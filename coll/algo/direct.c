/*
 * Direct algorithms for a communicator whose ranks share one node and may
 * access each other's memory (the transport's peer_copy: cross-memory
 * attach).
 *
 * Through UCX's shared-memory transports every byte is copied twice, into a
 * shared segment and out of it. Here ranks read and write each other's
 * buffers themselves, so every byte is copied once, and no rank waits for
 * another to forward anything. Work goes a chunk at a time, so that what a
 * rank has just produced is still in its cache when it passes it on:
 *
 *   all-gather      copy a chunk of the input into this rank's block of
 *                   recvbuf, then write it into every peer's recvbuf;
 *   reduce-scatter  read this rank's block of each peer's input, a chunk at
 *                   a time into a buffer that stays in cache, and reduce it
 *                   into recvbuf;
 *   all-reduce      reduce this rank's block the same way into recvbuf,
 *                   and write each reduced chunk into every peer's recvbuf.
 *                   Each block is reduced once, by its owner, so every rank
 *                   ends with identical bits.
 *
 * Block b of any rank's buffers is touched only by rank b, so in-place
 * calls are safe. Messages are small and few: each rank's addresses ride in
 * its descriptor message, which goes to every peer (coll/desc.h), then each
 * rank says when it has finished with its peers' buffers ("done"); a rank
 * returns only once every peer has said so. Where the ranks share
 * mailboxes (two ranks) or boards (more), both go there, the descriptor as
 * one ticket and "done" as the next. No rank touches a peer's memory before it has compared every
 * peer's descriptor with its own, so a mismatched count fails before any
 * byte past a peer's buffer is read or written.
 */
#include "algo/algs.h"

#include "algo/copy.h"
#include "handshake/desc.h"
#include "reduce/kernels.h"
#include "fault/fault.h"
#include "core/dtype.h"
#include "core/status.h"

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

/* Phases, in task->phase. */
enum {
    ZSH_DIRECT_ADDRS,      /* waiting for every peer's descriptor and addresses */
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
    return ctx->tl->peer_copy(ctx->tl_ctx, task->comm->ctx_ranks[peer], local, remote, len,
                              write);
}

/* Write @len bytes of @chunk, at byte @off of recvbuf, into every peer's recvbuf. */
static zsh_status_t zsh_direct_spread(zsh_task_t *task, const char *chunk, size_t off,
                                      size_t len)
{
    const zsh_direct_t *d = &task->u.direct;
    int n = task->comm->size, rank = task->comm->rank, k, p;
    zsh_status_t status;

    for (k = 1; k < n; k++) {
        p      = (rank + k) % n;
        status = zsh_direct_copy(task, p, (void *)chunk, d->peers[p].dst + off, len, true);
        if (status != ZSH_OK) {
            return status;
        }
    }
    return ZSH_OK;
}

/* Tell every peer that this rank is done with its buffers, and listen for
 * the same from each: receives in ops [2n, 3n), sends in [3n, 4n), since
 * [0, 2n) may still hold the descriptor exchange's (coll/desc.c). Where the
 * descriptors went through a mailbox or board, the "done" messages follow
 * them there (zsh_direct_finished() sends ours). */
static zsh_status_t zsh_direct_finish(zsh_task_t *task)
{
    int n = task->comm->size, rank = task->comm->rank, k, p;
    zsh_status_t status = ZSH_OK;

    if (task->desc_box) {
        return ZSH_OK;
    }
    for (k = 1; (k < n) && (status == ZSH_OK); k++) {
        p      = (rank + k) % n;
        status = zsh_task_recv(task, &task->ops[2 * n + p], p, ZSH_DIRECT_STEP_DONE, NULL, 0);
        if (status == ZSH_OK) {
            status = zsh_task_send(task, &task->ops[3 * n + p], p, ZSH_DIRECT_STEP_DONE, NULL,
                                   0);
        }
    }
    return status;
}

/* ZSH_OK once this rank's "done" messages have gone and every peer's has come. */
static zsh_status_t zsh_direct_finished(zsh_task_t *task)
{
    unsigned n = (unsigned)task->comm->size;
    zsh_status_t status;

    if (!task->desc_box) {
        return zsh_task_ops_test(task, 2 * n, 2 * n);
    }
    status = zsh_desc_done_send(task);
    return (status == ZSH_OK) ? zsh_desc_done_recv(task) : status;
}

/* Every peer's addresses, out of its descriptor message. */
static void zsh_direct_peers(zsh_task_t *task)
{
    zsh_direct_t *d = &task->u.direct;
    int n = task->comm->size, p;

    for (p = 0; p < n; p++) {
        if (p != task->comm->rank) {
            memcpy(&d->peers[p], zsh_desc_data(task, p), sizeof(d->peers[p]));
        }
    }
}

/*
 * All-gather: this rank's input into its block of recvbuf and every peer's.
 * The peers' copies read the input chunk, which the copy into recvbuf has
 * just brought into cache; when that copy streams (d->stream), recvbuf's
 * block is not in cache, and the input is the only copy that is.
 */
static zsh_status_t zsh_direct_allgather(zsh_task_t *task)
{
    const zsh_direct_t *d = &task->u.direct;
    size_t esize = zsh_task_esize(task), blk = task->args.count * esize;
    size_t chunk = task->comm->ctx->cfg.chunk_size, base = blk * (size_t)task->comm->rank;
    const char *in = task->args.sendbuf;
    char *own = (char *)task->args.recvbuf + base;
    size_t off, len;
    zsh_status_t status;

    for (off = 0; off < blk; off += len) {
        len = ((chunk == 0) || (blk - off < chunk)) ? blk - off : chunk;
        if (own == in) {
            /* in place: the block is already there */
        } else if (d->stream) {
            zsh_copy_stream(own + off, in + off, len);
        } else {
            memcpy(own + off, in + off, len);
        }
        status = zsh_direct_spread(task, in + off, base + off, len);
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
 * dst itself accumulates: the first peer's chunk is read straight into it,
 * and this rank's own input is added there while dst is in cache, so every
 * store hits a line the copy just brought in. Otherwise (half precision,
 * and AVG, which divides at the store) a chunk of acc accumulates, and dst
 * is stored once.
 */
static zsh_status_t zsh_direct_reduce_chunk(zsh_task_t *task, size_t first, size_t cnt,
                                            char *dst)
{
    const zsh_direct_t *d    = &task->u.direct;
    const zsh_coll_args_t *a = &task->args;
    int n = task->comm->size, rank = task->comm->rank, k, p;
    size_t esize = zsh_task_esize(task);
    const char *own = (const char *)a->sendbuf + first * esize;
    bool in_dst = (zsh_dtype_acc(a->dtype) == a->dtype) && (a->op != ZSH_AVG) && (dst != own);
    zsh_status_t status;

    if (!in_dst) {
        zsh_reduce_load(d->acc, own, cnt, a->dtype);
    }
    for (k = 1; k < n; k++) {
        p      = (rank + k) % n;
        status = zsh_direct_copy(task, p, (in_dst && (k == 1)) ? dst : d->tmp,
                                 d->peers[p].src + first * esize, cnt * esize, false);
        if (status != ZSH_OK) {
            return status;
        }
        if (in_dst && (k == 1)) {
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

/* Reduce this rank's block (of d->part) into @dst, a chunk at a time; for
 * all-reduce, @dst is the block in recvbuf, and every chunk goes on to the
 * peers' recvbufs. */
static zsh_status_t zsh_direct_reduce_block(zsh_task_t *task, char *dst)
{
    bool spread = task->args.type == ZSH_COLL_ALLREDUCE;
    const zsh_direct_t *d = &task->u.direct;
    size_t block = (size_t)task->comm->rank, esize = zsh_task_esize(task);
    size_t first = zsh_part_offset(&d->part, block), count = zsh_part_count(&d->part, block);
    size_t done, cnt;
    zsh_status_t status;

    for (done = 0; done < count; done += cnt) {
        cnt    = (count - done < d->chunk) ? count - done : d->chunk;
        status = zsh_direct_reduce_chunk(task, first + done, cnt, dst + done * esize);
        if ((status == ZSH_OK) && spread) {
            status = zsh_direct_spread(task, dst + done * esize, (first + done) * esize,
                                       cnt * esize);
        }
        if (status != ZSH_OK) {
            return status;
        }
    }
    return ZSH_OK;
}

/* This rank's own share of the work, once every peer's addresses are in. */
static zsh_status_t zsh_direct_work(zsh_task_t *task)
{
    const zsh_direct_t *d = &task->u.direct;
    size_t esize = zsh_task_esize(task);

    switch (task->args.type) {
    case ZSH_COLL_ALLGATHER:
        return zsh_direct_allgather(task);
    case ZSH_COLL_REDUCE_SCATTER:
        return zsh_direct_reduce_block(task, task->args.recvbuf);
    default:
        return zsh_direct_reduce_block(task, (char *)task->args.recvbuf +
                                                 zsh_part_offset(&d->part,
                                                                 (size_t)task->comm->rank) * esize);
    }
}

/*
 * A read that fails for any reason but a dead peer leaves the peers waiting
 * for a message this rank will never send: revoke the communicator, so they
 * fail with the same explanation instead of timing out.
 */
static zsh_status_t zsh_direct_failed(zsh_task_t *task, zsh_status_t status)
{
    char why[ZSH_ERROR_MSG_MAX + 32];

    if ((status != ZSH_ERR_PEER_FAILED) && (status != ZSH_ERR_MISMATCH)) {
        snprintf(why, sizeof(why), "%s (seen by rank %d)", zsh_last_error(), task->comm->rank);
        zsh_fault_revoke(task->comm, ZSH_ERR_ABORTED, task->seq, why);
    }
    return status;
}

/* Every peer has said it is done: what they wrote into recvbuf is ours. */
static void zsh_direct_received(zsh_task_t *task)
{
    const zsh_direct_t *d = &task->u.direct;
    size_t esize = zsh_task_esize(task), first, count, total;

    if (task->args.type == ZSH_COLL_REDUCE_SCATTER) {
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

    if (task->phase == ZSH_DIRECT_FINISHING) {
        status = zsh_direct_finished(task);
        if (status == ZSH_OK) {
            zsh_direct_received(task);
        }
        return status;
    }
    if (task->desc_state < ZSH_DESC_MATCHED) {
        return ZSH_INPROGRESS; /* no peer's memory is touched before the calls match */
    }
    zsh_direct_peers(task);
    status = zsh_direct_work(task);
    if (status != ZSH_OK) {
        return zsh_direct_failed(task, status);
    }
    task->phase = ZSH_DIRECT_FINISHING;
    status      = zsh_direct_finish(task);
    if (status == ZSH_OK) {
        status = zsh_direct_finished(task);
    }
    if (status == ZSH_OK) {
        zsh_direct_received(task);
    }
    return status;
}

/*
 * Scratch: the peers' addresses, a chunk in the accumulation type and one in
 * the element type, then on more than two ranks a descriptor slot per rank
 * (each takes any descriptor message, so that a mismatched peer's is
 * compared rather than truncated).
 */
zsh_status_t zsh_direct_init(zsh_task_t *task)
{
    zsh_direct_t *d          = &task->u.direct;
    const zsh_coll_args_t *a = &task->args;
    size_t n = (size_t)task->comm->size, esize = zsh_task_esize(task);
    size_t acc_esize = zsh_task_acc_esize(task);
    size_t total     = (a->type == ZSH_COLL_ALLREDUCE) ? a->count : a->count * n;
    size_t chunk_bytes = task->comm->ctx->cfg.chunk_size;
    size_t peers_bytes = (n * sizeof(*d->peers) + 63) & ~(size_t)63;
    size_t chunks_bytes, in_bytes;
    size_t bytes     = ((a->type == ZSH_COLL_ALLGATHER) ? a->count : total) * esize;
    const char *own  = (const char *)a->recvbuf + bytes * (size_t)task->comm->rank;
    zsh_direct_addr_t mine;
    zsh_status_t status;
    char *scratch;

    memset(d, 0, sizeof(*d));
    d->part        = zsh_part_make(total, n);
    d->chunk       = (chunk_bytes / acc_esize > 0) ? chunk_bytes / acc_esize : 1;
    chunks_bytes   = (d->chunk * (acc_esize + esize) + 63) & ~(size_t)63;
    task->desc_all = (n > 2);
    in_bytes       = task->desc_all ? n * sizeof(zsh_desc_msg_t) : 0;
    status = zsh_task_scratch(task, peers_bytes + chunks_bytes + in_bytes, (void **)&scratch);
    if (status == ZSH_OK) {
        status = zsh_task_ops(task, 4 * (unsigned)n);
    }
    if (status != ZSH_OK) {
        return status;
    }
    d->peers     = (zsh_direct_addr_t *)(void *)scratch;
    d->acc       = scratch + peers_bytes;
    d->tmp       = d->acc + d->chunk * acc_esize;
    task->all_in = task->desc_all ? (zsh_desc_msg_t *)(void *)(scratch + peers_bytes +
                                                               chunks_bytes)
                                  : NULL;

    /* Where this rank's buffers are, for the peers: with the descriptor. */
    mine.src = (uint64_t)(uintptr_t)a->sendbuf;
    mine.dst = (uint64_t)(uintptr_t)a->recvbuf;
    memcpy(task->desc_out.data, &mine, sizeof(mine));
    task->desc_inline = (uint32_t)sizeof(mine);
    /* Through a mailbox or board, the descriptor takes one ticket and "done" the next. */
    task->box_done = task->comm->box || task->comm->board;
    /* An all-gather (not in place) whose send and receive buffers together
     * outgrow what stays in cache copies its own block by streaming. */
    d->stream = (a->type == ZSH_COLL_ALLGATHER) && (a->sendbuf != own) &&
                ((n + 1) * bytes > task->comm->ctx->stream_min);
    task->phase    = ZSH_DIRECT_ADDRS;
    task->progress = zsh_direct_progress;
    return ZSH_OK;
}
