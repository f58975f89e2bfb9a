/*
 * Pairwise all-to-all: at step k = 1 .. n - 1 a rank sends its block for
 * rank + k and receives rank - k's block for it. At every step the
 * messages form a permutation of the ranks, so no rank's link carries two
 * incoming blocks at once while another's is idle, as posting everything
 * at once can; ZSH_PIPELINE_DEPTH steps are in flight, so a slow peer
 * holds up only the window behind it. A block is one message: the
 * transport chooses how to move a large one (UCX's rendezvous reads it
 * where it lies), and receives go straight to their place in recvbuf.
 *
 * Each pair exchanges one message per call in each direction, so every
 * message has tag step 0, told apart by its sender. Only the rank's own
 * input is sent, which may go before the descriptors are compared, as a
 * ring's first step does; a call that mismatches fails before it
 * completes, and a block of the wrong length fails its receive.
 */
#include "alltoall/alltoall.h"

#include "algo/ring.h"

#include <string.h>

typedef struct zsh_pairwise {
    const char *send;     /* the input, or its copy in scratch for a call in place */
    unsigned    depth;    /* steps in flight */
    int         steps;    /* n - 1 */
    int         rhead, rtail, shead, stail;
} zsh_pairwise_t;

_Static_assert(sizeof(zsh_pairwise_t) <= ZSH_TASK_STATE_BYTES, "pairwise state fits its task");

static zsh_pairwise_t *zsh_pairwise(zsh_task_t *task)
{
    return zsh_task_state(task);
}

/* The peer step @k sends to (@to) or receives from. */
static int zsh_pairwise_peer(const zsh_task_t *task, int k, bool to)
{
    int n = task->comm->size, rank = task->comm->rank;

    return to ? (rank + k) % n : (rank - k + n) % n;
}

static zsh_status_t zsh_pairwise_post(zsh_task_t *task)
{
    zsh_pairwise_t *pw = zsh_pairwise(task);
    size_t blk         = zsh_alltoall_block(task);
    char *recv         = task->args.recvbuf;
    zsh_status_t status;
    int peer;

    while ((pw->rhead < pw->steps) && ((unsigned)(pw->rhead - pw->rtail) < pw->depth)) {
        peer   = zsh_pairwise_peer(task, pw->rhead + 1, false);
        status = zsh_task_recv(task, &task->ops[(unsigned)pw->rhead % pw->depth], peer, 0,
                               recv + (size_t)peer * blk, blk);
        if (status != ZSH_OK) {
            return status;
        }
        pw->rhead++;
    }
    while ((pw->shead < pw->steps) && ((unsigned)(pw->shead - pw->stail) < pw->depth)) {
        peer   = zsh_pairwise_peer(task, pw->shead + 1, true);
        status = zsh_task_send(task, &task->ops[pw->depth + (unsigned)pw->shead % pw->depth],
                               peer, 0, pw->send + (size_t)peer * blk, blk);
        if (status != ZSH_OK) {
            return status;
        }
        pw->shead++;
    }
    return ZSH_OK;
}

/* Retire finished transfers of one direction, oldest first. */
static zsh_status_t zsh_pairwise_reap(zsh_task_t *task, unsigned first, int *tail, int head)
{
    zsh_pairwise_t *pw = zsh_pairwise(task);
    zsh_status_t status;

    while (*tail < head) {
        status = zsh_task_op_test(task, &task->ops[first + (unsigned)*tail % pw->depth]);
        if (status != ZSH_OK) {
            return (status == ZSH_INPROGRESS) ? ZSH_OK : status;
        }
        (*tail)++;
    }
    return ZSH_OK;
}

static zsh_status_t zsh_pairwise_progress(zsh_task_t *task)
{
    zsh_pairwise_t *pw = zsh_pairwise(task);
    zsh_status_t status;
    int before;

    /* Transfers may finish as they are posted: go round while anything moves. */
    do {
        before = pw->rhead + pw->rtail + pw->shead + pw->stail;
        status = zsh_pairwise_reap(task, 0, &pw->rtail, pw->rhead);
        if (status == ZSH_OK) {
            status = zsh_pairwise_reap(task, pw->depth, &pw->stail, pw->shead);
        }
        if (status == ZSH_OK) {
            status = zsh_pairwise_post(task);
        }
        if (status != ZSH_OK) {
            return status;
        }
        if ((pw->rtail == pw->steps) && (pw->stail == pw->steps)) {
            return ZSH_OK;
        }
    } while (before != pw->rhead + pw->rtail + pw->shead + pw->stail);
    return ZSH_INPROGRESS;
}

zsh_status_t zsh_alltoall_pairwise_init(zsh_task_t *task)
{
    zsh_pairwise_t *pw       = zsh_pairwise(task);
    const zsh_coll_args_t *a = &task->args;
    size_t blk = zsh_alltoall_block(task), n = (size_t)task->comm->size;
    size_t own = blk * (size_t)task->comm->rank;
    unsigned depth = zsh_ring_depth(task);
    zsh_status_t status;
    void *copy;

    memset(pw, 0, sizeof(*pw));
    pw->steps = task->comm->size - 1;
    pw->depth = ((unsigned)pw->steps < depth) ? (unsigned)pw->steps : depth;
    pw->send  = a->sendbuf;
    if (a->sendbuf == a->recvbuf) {
        status = zsh_task_scratch(task, n * blk, &copy);
        if (status != ZSH_OK) {
            return status;
        }
        memcpy(copy, a->sendbuf, n * blk);
        pw->send = copy;
    } else {
        memcpy((char *)a->recvbuf + own, (const char *)a->sendbuf + own, blk);
    }
    task->run.progress = zsh_pairwise_progress;
    return zsh_task_ops(task, 2 * pw->depth);
}
