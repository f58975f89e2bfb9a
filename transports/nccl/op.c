/*
 * Posting calls to NCCL and watching them. An op's completion is an event
 * recorded on its stream right after the collective: nothing blocks, and
 * the op is polled like any transfer. On a nonblocking communicator NCCL
 * may still be enqueuing a call when it returns (ncclInProgress); the
 * event is recorded only once it has, and the next call waits till then.
 */
#include "nccl/nccl.h"

#include "core/dtype.h"
#include "core/status.h"

#include <stdlib.h>

static zsh_status_t zsh_nccl_dtype(zsh_dtype_t dtype, ncclDataType_t *out)
{
    switch (dtype) {
    case ZSH_INT8:     *out = ncclInt8;     return ZSH_OK;
    case ZSH_UINT8:    *out = ncclUint8;    return ZSH_OK;
    case ZSH_INT32:    *out = ncclInt32;    return ZSH_OK;
    case ZSH_UINT32:   *out = ncclUint32;   return ZSH_OK;
    case ZSH_INT64:    *out = ncclInt64;    return ZSH_OK;
    case ZSH_UINT64:   *out = ncclUint64;   return ZSH_OK;
    case ZSH_FLOAT16:  *out = ncclFloat16;  return ZSH_OK;
    case ZSH_BFLOAT16: *out = ncclBfloat16; return ZSH_OK;
    case ZSH_FLOAT32:  *out = ncclFloat32;  return ZSH_OK;
    case ZSH_FLOAT64:  *out = ncclFloat64;  return ZSH_OK;
    }
    return zsh_error(ZSH_ERR_INVALID_ARG, "NCCL has no dtype %d", (int)dtype);
}

static zsh_status_t zsh_nccl_op(zsh_op_t op, ncclRedOp_t *out)
{
    switch (op) {
    case ZSH_SUM:  *out = ncclSum;  return ZSH_OK;
    case ZSH_PROD: *out = ncclProd; return ZSH_OK;
    case ZSH_MIN:  *out = ncclMin;  return ZSH_OK;
    case ZSH_MAX:  *out = ncclMax;  return ZSH_OK;
    case ZSH_AVG:  *out = ncclAvg;  return ZSH_OK;
    }
    return zsh_error(ZSH_ERR_INVALID_ARG, "NCCL has no op %d", (int)op);
}

/* An op with its event, from the free list or new; on @dc's device. */
static zsh_status_t zsh_nccl_op_get(zsh_tl_dev_t *dc, zsh_tl_dev_op_t **op_p)
{
    zsh_tl_dev_op_t *op = dc->free_ops;
    cudaError_t err;

    if (op != NULL) {
        dc->free_ops = op->next;
    } else {
        op = calloc(1, sizeof(*op));
        if (op == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "NCCL op: out of memory");
        }
        err = cudaEventCreateWithFlags(&op->event, cudaEventDisableTiming);
        if (err != cudaSuccess) {
            free(op);
            return zsh_nccl_cuda_error(err, "cudaEventCreateWithFlags");
        }
    }
    op->recorded = false;
    op->next     = NULL;
    *op_p        = op;
    return ZSH_OK;
}

static zsh_status_t zsh_nccl_record(zsh_tl_dev_op_t *op)
{
    cudaError_t err = op->track ? cudaEventRecord(op->event, (cudaStream_t)op->stream)
                                : cudaSuccess;

    if (err != cudaSuccess) {
        return zsh_nccl_cuda_error(err, "cudaEventRecord");
    }
    op->recorded = true;
    return ZSH_OK;
}

/* With the lock held: finish recording the call NCCL was enqueuing, if it
 * has finished; ZSH_INPROGRESS while it has not. */
static zsh_status_t zsh_nccl_settle(zsh_tl_dev_t *dc)
{
    ncclResult_t res, state = ncclSuccess;
    zsh_tl_dev_op_t *op = dc->enqueuing;

    if (op == NULL) {
        return ZSH_OK;
    }
    res = ncclCommGetAsyncError(dc->nccl, &state);
    if (res != ncclSuccess) {
        return zsh_nccl_error(res, dc->nccl, "ncclCommGetAsyncError");
    }
    if (state == ncclInProgress) {
        return ZSH_INPROGRESS;
    }
    if (state != ncclSuccess) {
        return zsh_nccl_error(state, dc->nccl, "NCCL collective");
    }
    dc->enqueuing = NULL;
    return zsh_nccl_record(op);
}

/* NCCL has no all-to-all of its own: a send and a receive per rank, in one
 * group, which NCCL schedules together (its own tests build it so). */
static ncclResult_t zsh_nccl_alltoall(zsh_tl_dev_t *dc, const zsh_tl_dev_call_t *c,
                                      ncclDataType_t dt, cudaStream_t s)
{
    size_t blk = c->count * zsh_dtype_size(c->dtype);
    ncclResult_t res, end;
    int n = 0, peer;

    res = ncclCommCount(dc->nccl, &n);
    if (res != ncclSuccess) {
        return res;
    }
    res = ncclGroupStart();
    for (peer = 0; (peer < n) && (res == ncclSuccess); peer++) {
        res = ncclSend((const char *)c->sendbuf + (size_t)peer * blk, c->count, dt, peer,
                       dc->nccl, s);
        if (res == ncclSuccess) {
            res = ncclRecv((char *)c->recvbuf + (size_t)peer * blk, c->count, dt, peer,
                           dc->nccl, s);
        }
    }
    end = ncclGroupEnd();
    return (res != ncclSuccess) ? res : end;
}

static ncclResult_t zsh_nccl_launch(zsh_tl_dev_t *dc, const zsh_tl_dev_call_t *c,
                                    ncclDataType_t dt, ncclRedOp_t rop)
{
    cudaStream_t s = (cudaStream_t)c->stream;

    switch (c->coll) {
    case ZSH_TL_DEV_ALLGATHER:
        return ncclAllGather(c->sendbuf, c->recvbuf, c->count, dt, dc->nccl, s);
    case ZSH_TL_DEV_REDUCE_SCATTER:
        return ncclReduceScatter(c->sendbuf, c->recvbuf, c->count, dt, rop, dc->nccl, s);
    case ZSH_TL_DEV_ALLREDUCE:
        return ncclAllReduce(c->sendbuf, c->recvbuf, c->count, dt, rop, dc->nccl, s);
    case ZSH_TL_DEV_BROADCAST:
        return ncclBroadcast(c->recvbuf, c->recvbuf, c->count, dt, c->root, dc->nccl, s);
    case ZSH_TL_DEV_ALLTOALL:
        return zsh_nccl_alltoall(dc, c, dt, s);
    }
    return ncclInvalidArgument;
}

static const char *const zsh_nccl_call_names[] = {
    [ZSH_TL_DEV_ALLGATHER]      = "ncclAllGather",
    [ZSH_TL_DEV_REDUCE_SCATTER] = "ncclReduceScatter",
    [ZSH_TL_DEV_ALLREDUCE]      = "ncclAllReduce",
    [ZSH_TL_DEV_BROADCAST]      = "ncclBroadcast",
    [ZSH_TL_DEV_ALLTOALL]       = "ncclSend/ncclRecv",
};

zsh_status_t zsh_nccl_post(zsh_tl_dev_t *dc, const zsh_tl_dev_call_t *call,
                           zsh_tl_dev_op_t **op_p)
{
    ncclRedOp_t rop   = ncclSum;
    zsh_tl_dev_op_t *op = NULL;
    ncclDataType_t dt = ncclUint8;
    zsh_status_t status;
    ncclResult_t res;
    int saved;

    status = zsh_nccl_dtype(call->dtype, &dt);
    if ((status == ZSH_OK) && ((call->coll == ZSH_TL_DEV_REDUCE_SCATTER) ||
                               (call->coll == ZSH_TL_DEV_ALLREDUCE))) {
        status = zsh_nccl_op(call->op, &rop);
    }
    if (status != ZSH_OK) {
        return status;
    }
    pthread_mutex_lock(&dc->lock);
    if (dc->nccl == NULL) {
        status = zsh_error(ZSH_ERR_ABORTED, "the NCCL communicator was aborted");
        goto out;
    }
    status = zsh_nccl_settle(dc);
    if (status != ZSH_OK) {
        goto out;
    }
    status = zsh_nccl_device_enter(dc->device, &saved);
    if (status != ZSH_OK) {
        goto out;
    }
    status = zsh_nccl_op_get(dc, &op);
    if (status == ZSH_OK) {
        op->stream = call->stream;
        op->track  = call->track;
        res = zsh_nccl_launch(dc, call, dt, rop);
        if (res == ncclSuccess) {
            status = zsh_nccl_record(op);
        } else if (res == ncclInProgress) {
            dc->enqueuing = op;
        } else {
            status = zsh_nccl_error(res, dc->nccl, zsh_nccl_call_names[call->coll]);
        }
    }
    zsh_nccl_device_restore(dc->device, saved);
    if ((status != ZSH_OK) && (op != NULL)) {
        op->next     = dc->free_ops;
        dc->free_ops = op;
        op           = NULL;
    }
out:
    pthread_mutex_unlock(&dc->lock);
    if (status == ZSH_OK) {
        *op_p = op;
    }
    return status;
}

zsh_status_t zsh_nccl_op_test(zsh_tl_dev_t *dc, zsh_tl_dev_op_t *op, bool done)
{
    ncclResult_t res, state = ncclSuccess;
    zsh_status_t status = ZSH_OK;
    cudaError_t err;

    if (!op->recorded) {
        pthread_mutex_lock(&dc->lock);
        status = (dc->nccl == NULL)
                     ? zsh_error(ZSH_ERR_ABORTED, "the NCCL communicator was aborted")
                     : zsh_nccl_settle(dc);
        pthread_mutex_unlock(&dc->lock);
        if ((status != ZSH_OK) || !op->recorded) {
            return (status != ZSH_OK) ? status : ZSH_INPROGRESS;
        }
    }
    if (!done) {
        return ZSH_OK;
    }
    err = cudaEventQuery(op->event);
    if (err == cudaSuccess) {
        return atomic_load(&dc->aborted)
                   ? zsh_error(ZSH_ERR_ABORTED, "the NCCL communicator was aborted")
                   : ZSH_OK;
    }
    if (err != cudaErrorNotReady) {
        return zsh_nccl_cuda_error(err, "cudaEventQuery");
    }
    /* Still running: an error NCCL found in the background ends the wait. */
    pthread_mutex_lock(&dc->lock);
    if (dc->nccl == NULL) {
        status = zsh_error(ZSH_ERR_ABORTED, "the NCCL communicator was aborted");
    } else {
        res = ncclCommGetAsyncError(dc->nccl, &state);
        if (res != ncclSuccess) {
            status = zsh_nccl_error(res, dc->nccl, "ncclCommGetAsyncError");
        } else if ((state != ncclSuccess) && (state != ncclInProgress)) {
            status = zsh_nccl_error(state, dc->nccl, "NCCL collective");
        } else {
            status = ZSH_INPROGRESS;
        }
    }
    pthread_mutex_unlock(&dc->lock);
    return status;
}

void zsh_nccl_op_release(zsh_tl_dev_t *dc, zsh_tl_dev_op_t *op)
{
    pthread_mutex_lock(&dc->lock);
    if (dc->enqueuing == op) {
        dc->enqueuing = NULL; /* only after a failure: the communicator is done for */
    }
    op->next     = dc->free_ops;
    dc->free_ops = op;
    pthread_mutex_unlock(&dc->lock);
}
