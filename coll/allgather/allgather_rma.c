/*
 * One-sided all-gather for large blocks. Every rank registers its receive
 * buffer and sends every peer a descriptor (address and remote key); then
 * each rank reads every peer's own block straight out of the peer's receive
 * buffer, one get per peer, and tells the peers when it is done, because a
 * rank may return only once nobody reads its buffer any more.
 *
 * Messages per call: 2 (size - 1) small ones and size - 1 gets, against
 * (size - 1) * chunks rendezvous handshakes in the ring; each byte is still
 * copied once.
 */
#include "allgather/allgather.h"

#include "core/status.h"

#include <string.h>

typedef struct zsh_rma {
    zsh_tl_mem_t   *mem;        /* this rank's registered recvbuf */
    void           *rkey_buf;   /* its packed remote key */
    char           *descs;      /* size descriptors (address + remote key), ours at [rank] */
    zsh_tl_rkey_t **rkeys;      /* by peer, once unpacked */
} zsh_rma_t;

_Static_assert(sizeof(zsh_rma_t) <= ZSH_TASK_STATE_BYTES, "rma state fits in its task");

static zsh_rma_t *zsh_rma(zsh_task_t *task)
{
    return zsh_task_state(task);
}

/* Descriptor: u64 address, u64 remote key length, the packed key. */
#define ZSH_RMA_DESC_SIZE 1024
#define ZSH_RMA_KEY_MAX   (ZSH_RMA_DESC_SIZE - 2 * sizeof(uint64_t))

enum { ZSH_RMA_STEP_DESC, ZSH_RMA_STEP_DONE };

static zsh_tl_ctx_t *zsh_rma_tl(const zsh_task_t *task, const zsh_tl_rma_ops_t **tl_p)
{
    *tl_p = task->comm->ctx->tl->rma;
    return task->comm->ctx->tl_ctx;
}

static void zsh_rma_cleanup(zsh_task_t *task, zsh_status_t status)
{
    (void)status;
    zsh_rma_t *rma = zsh_rma(task);
    const zsh_tl_rma_ops_t *tl;
    zsh_tl_ctx_t *tl_ctx = zsh_rma_tl(task, &tl);
    int p;

    for (p = 0; (rma->rkeys != NULL) && (p < task->comm->size); p++) {
        if (rma->rkeys[p] != NULL) {
            tl->rkey_destroy(tl_ctx, rma->rkeys[p]);
        }
    }
    if (rma->rkey_buf != NULL) {
        tl->rkey_buf_free(tl_ctx, rma->rkey_buf);
    }
    if (rma->mem != NULL) {
        tl->mem_dereg(tl_ctx, rma->mem);
    }
    memset(rma, 0, sizeof(*rma));
}

/* Post the exchange of one message with every peer: ops [0, n) receive,
 * [n, 2n) send; empty messages when @len is 0. */
static zsh_status_t zsh_rma_exchange(zsh_task_t *task, uint32_t step, size_t len)
{
    zsh_rma_t *rma = zsh_rma(task);
    int n = task->comm->size, rank = task->comm->rank, p;
    char *mine     = rma->descs + (size_t)rank * ZSH_RMA_DESC_SIZE;
    zsh_status_t status = ZSH_OK;

    for (p = 0; (p < n) && (status == ZSH_OK); p++) {
        if (p == rank) {
            continue;
        }
        status = zsh_task_recv(task, &task->ops[p], p, step,
                               len ? rma->descs + (size_t)p * ZSH_RMA_DESC_SIZE : NULL, len);
        if (status == ZSH_OK) {
            status = zsh_task_send(task, &task->ops[n + p], p, step, len ? mine : NULL, len);
        }
    }
    return status;
}

/* Unpack every peer's key and read its block into ours. */
static zsh_status_t zsh_rma_read(zsh_task_t *task)
{
    zsh_rma_t *rma = zsh_rma(task);
    int n = task->comm->size, rank = task->comm->rank, p;
    size_t blk = task->args.count * zsh_task_esize(task);
    const zsh_tl_rma_ops_t *tl;
    zsh_tl_ctx_t *tl_ctx = zsh_rma_tl(task, &tl);
    zsh_status_t status;
    uint64_t addr;
    char *desc;

    for (p = 0; p < n; p++) {
        if (p == rank) {
            continue;
        }
        desc = rma->descs + (size_t)p * ZSH_RMA_DESC_SIZE;
        memcpy(&addr, desc, sizeof(addr));
        status = tl->rkey_unpack(tl_ctx, task->comm->ctx_ranks[p], desc + 2 * sizeof(uint64_t),
                                 &rma->rkeys[p]);
        if (status == ZSH_OK) {
            status = zsh_task_rget(task, &task->ops[p], p,
                                   (char *)task->args.recvbuf + (size_t)p * blk, blk,
                                   addr + (uint64_t)p * blk, rma->rkeys[p]);
        }
        if (status != ZSH_OK) {
            return status;
        }
    }
    return ZSH_OK;
}

static zsh_status_t zsh_rma_progress(zsh_task_t *task)
{
    unsigned nops = 2 * (unsigned)task->comm->size;
    zsh_status_t status;

    for (;;) {
        status = zsh_task_ops_test(task, 0, nops);
        if (status != ZSH_OK) {
            return status;
        }
        switch (task->run.phase++) {
        case 0: /* descriptors are in: read */
            status = zsh_rma_read(task);
            break;
        case 1: /* our reads are done: say so, and wait until everybody says so */
            status = zsh_rma_exchange(task, ZSH_RMA_STEP_DONE, 0);
            break;
        default:
            return ZSH_OK;
        }
        if (status != ZSH_OK) {
            return status;
        }
    }
}

/* Register recvbuf and fill this rank's descriptor. */
static zsh_status_t zsh_rma_publish(zsh_task_t *task, size_t total)
{
    zsh_rma_t *rma = zsh_rma(task);
    char *mine     = rma->descs + (size_t)task->comm->rank * ZSH_RMA_DESC_SIZE;
    uint64_t addr  = (uint64_t)(uintptr_t)task->args.recvbuf, key_len;
    const zsh_tl_rma_ops_t *tl;
    zsh_tl_ctx_t *tl_ctx = zsh_rma_tl(task, &tl);
    zsh_status_t status;
    size_t len;

    status = tl->mem_reg(tl_ctx, task->args.recvbuf, total, &rma->mem);
    if (status == ZSH_OK) {
        status = tl->rkey_pack(tl_ctx, rma->mem, &rma->rkey_buf, &len);
    }
    if (status != ZSH_OK) {
        return status;
    }
    if (len > ZSH_RMA_KEY_MAX) {
        return zsh_error(ZSH_ERR_UNSUPPORTED, "remote key of %zu bytes exceeds the %zu-byte "
                         "descriptor; use ZSH_ALLGATHER_ALGO=ring", len, ZSH_RMA_KEY_MAX);
    }
    key_len = len;
    memcpy(mine, &addr, sizeof(addr));
    memcpy(mine + sizeof(addr), &key_len, sizeof(key_len));
    memcpy(mine + 2 * sizeof(uint64_t), rma->rkey_buf, len);
    return ZSH_OK;
}

zsh_status_t zsh_rma_ag_init(zsh_task_t *task)
{
    zsh_rma_t *rma = zsh_rma(task);
    size_t n       = (size_t)task->comm->size;
    size_t blk     = task->args.count * zsh_task_esize(task);
    char *own      = (char *)task->args.recvbuf + blk * (size_t)task->comm->rank;
    zsh_status_t status;
    void *scratch;

    if (own != task->args.sendbuf) {
        memcpy(own, task->args.sendbuf, blk);
    }
    memset(rma, 0, sizeof(*rma));
    task->run.cleanup = zsh_rma_cleanup;
    status = zsh_task_scratch(task, n * (ZSH_RMA_DESC_SIZE + sizeof(zsh_tl_rkey_t *)), &scratch);
    if (status != ZSH_OK) {
        return status;
    }
    rma->descs = scratch;
    rma->rkeys = (zsh_tl_rkey_t **)(rma->descs + n * ZSH_RMA_DESC_SIZE);
    memset(rma->rkeys, 0, n * sizeof(*rma->rkeys));
    status = zsh_task_ops(task, 2 * (unsigned)n);
    if (status == ZSH_OK) {
        status = zsh_rma_publish(task, blk * n);
    }
    if (status == ZSH_OK) {
        status = zsh_rma_exchange(task, ZSH_RMA_STEP_DESC, ZSH_RMA_DESC_SIZE);
    }
    task->run.progress = zsh_rma_progress;
    return status;
}
