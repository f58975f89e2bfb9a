/*
 * Recursive-doubling all-reduce, for small messages: log2(size) rounds in
 * which partners swap their partial results. For a size that is not a power
 * of two, the first 2 * rem ranks pair up first (the even one hands its data
 * to the odd one and waits for the answer), as in MPICH.
 *
 * Partners combine the same two operands (a op b on one side, b op a on the
 * other), and IEEE addition, multiplication, min and max commute, so every
 * rank ends with bitwise-identical results. Everything runs in the
 * accumulation type; the result is rounded once, at the store.
 */
#include "algo/rd.h"

#include "algo/rounds.h"
#include "core/dtype.h"
#include "reduce/kernels.h"

/* Round -1 pairs off the extra ranks, rounds [0, nrounds) exchange, round
 * nrounds returns results to the extra ranks. */
#define ZSH_RD_PRE -1

static int zsh_rd_real_rank(const zsh_rounds_t *st, int newrank)
{
    return (newrank < st->rem) ? newrank * 2 + 1 : newrank + st->rem;
}

/* Post this rank's operations of the current round, and note whether the
 * round reduces what it receives into acc. */
static zsh_status_t zsh_rd_post(zsh_task_t *task)
{
    zsh_rounds_t *st = zsh_rounds(task);
    int rank         = task->comm->rank;
    bool extra       = rank < 2 * st->rem;
    uint32_t step    = (uint32_t)(st->round + 1);
    size_t bytes     = st->count * zsh_task_acc_esize(task);
    int peer;

    st->reduces = false;
    if (st->round == ZSH_RD_PRE) {
        if (extra && (rank % 2 == 0)) {
            return zsh_task_send(task, &task->ops[1], rank + 1, step, st->acc, bytes);
        }
        st->reduces = extra;
        return extra ? zsh_task_recv(task, &task->ops[0], rank - 1, step, st->tmp, bytes)
                     : ZSH_OK;
    }
    if (st->round < st->nrounds) {
        if (st->newrank < 0) {
            return ZSH_OK;
        }
        peer        = zsh_rd_real_rank(st, st->newrank ^ (1 << st->round));
        st->reduces = true;
        return zsh_task_sendrecv(task, step, peer, st->tmp, bytes, peer, st->acc, bytes);
    }
    if (extra && (rank % 2 == 0)) {
        return zsh_task_recv(task, &task->ops[0], rank + 1, step, st->acc, bytes);
    }
    return extra ? zsh_task_send(task, &task->ops[1], rank - 1, step, st->acc, bytes) : ZSH_OK;
}

static void zsh_rd_finish(zsh_task_t *task)
{
    zsh_rounds_t *st = zsh_rounds(task);

    if (st->reduces) {
        zsh_reduce_acc_acc(st->acc, st->tmp, st->count, task->args.dtype, task->args.op);
    }
}

/* Store the result (or, for reduce-scatter, this rank's block of it). */
static void zsh_rd_store(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    zsh_rounds_t *st         = zsh_rounds(task);
    size_t acc_esize         = zsh_task_acc_esize(task);
    size_t skip = (a->type == ZSH_COLL_REDUCE_SCATTER) ? (size_t)task->comm->rank * a->count : 0;

    zsh_reduce_store(a->recvbuf, st->acc + skip * acc_esize, a->count, a->dtype, a->op,
                     task->comm->size);
}

static zsh_status_t zsh_rd_progress(zsh_task_t *task)
{
    zsh_status_t status;

    status = zsh_rounds_run(task, zsh_rounds(task)->nrounds + 1, zsh_rd_post, zsh_rd_finish);
    if (status == ZSH_OK) {
        zsh_rd_store(task);
    }
    return status;
}

zsh_status_t zsh_rd_init(zsh_task_t *task, size_t count)
{
    zsh_rounds_t *st = zsh_rounds(task);
    int n = task->comm->size, rank = task->comm->rank;
    size_t bytes = count * zsh_task_acc_esize(task);
    zsh_status_t status;
    void *scratch;

    status = zsh_task_scratch(task, 2 * bytes, &scratch);
    if (status != ZSH_OK) {
        return status;
    }
    st->acc   = scratch;
    st->tmp   = st->acc + bytes;
    st->count = count;
    st->pof2  = 1;
    st->nrounds = 0;
    while (st->pof2 * 2 <= n) {
        st->pof2 *= 2;
        st->nrounds++;
    }
    st->rem = n - st->pof2;
    if (rank < 2 * st->rem) {
        st->newrank = (rank % 2 != 0) ? rank / 2 : -1;
    } else {
        st->newrank = rank - st->rem;
    }
    st->round  = ZSH_RD_PRE;
    st->posted = false;
    zsh_reduce_load(st->acc, task->args.sendbuf, count, task->args.dtype);
    task->run.progress = zsh_rd_progress;
    return zsh_task_ops(task, 2);
}
