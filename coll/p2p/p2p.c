/*
 * zsh_isend, zsh_irecv and zsh_request_source: point-to-point messages, each
 * a task of one transfer. Only two ranks make the call, so it takes no
 * sequence number and exchanges no descriptor (base/call.h); its tag holds
 * the caller's tag where a collective's holds its sequence number, on a
 * step no collective uses (base/tag.h). Waiting on it progresses every
 * call of the job, as waiting on a collective does.
 */
#include "core/dtype.h"
#include "core/status.h"
#include "base/tag.h"
#include "device/device.h"
#include "task/task.h"

#include <stdint.h>

/* The task's state: whom a receive got its message from, once done. */
typedef struct zsh_p2p_state {
    bool posted;
    int  source;
} zsh_p2p_state_t;

_Static_assert(sizeof(zsh_p2p_state_t) <= ZSH_TASK_STATE_BYTES, "p2p state fits a task");

static zsh_status_t zsh_p2p_post(zsh_task_t *task, zsh_xfer_t *op)
{
    const zsh_coll_args_t *args = &task->args;
    size_t len                  = args->count * zsh_task_esize(task);
    uint32_t tag                = (uint32_t)args->tag;

    if (args->type == ZSH_COLL_SEND) {
        return zsh_xfer_send(task->comm, tag, op, args->peer, ZSH_TAG_STEP_P2P, args->sendbuf,
                             len);
    }
    if (args->peer == ZSH_ANY_SOURCE) {
        return zsh_xfer_recv_any(task->comm, tag, op, ZSH_TAG_STEP_P2P, args->recvbuf, len);
    }
    return zsh_xfer_recv(task->comm, tag, op, args->peer, ZSH_TAG_STEP_P2P, args->recvbuf, len);
}

static zsh_status_t zsh_p2p_progress(zsh_task_t *task)
{
    zsh_p2p_state_t *state = zsh_task_state(task);
    zsh_xfer_t *op         = &task->ops[0];
    zsh_status_t status;

    if (!state->posted) {
        status = zsh_p2p_post(task, op);
        if (status != ZSH_OK) {
            return status;
        }
        state->posted = true;
    }
    status = zsh_task_op_test(task, op);
    if (status == ZSH_OK) {
        state->source = op->peer;
    }
    return status;
}

/* Everything a call may be refused for, before it takes a task. */
static zsh_status_t zsh_p2p_check(const char *fn, const zsh_coll_args_t *args, zsh_comm_t *comm,
                                  zsh_request_t **req_p)
{
    int peer = args->peer, tag = args->tag;
    void *buf = (args->type == ZSH_COLL_SEND) ? (void *)args->sendbuf : args->recvbuf;
    zsh_status_t status;
    bool device;
    int dev;

    status = zsh_comm_check_live(fn, comm);
    if (status != ZSH_OK) {
        return status;
    }
    if (req_p == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: req_p is NULL", fn);
    }
    if (!zsh_dtype_valid(args->dtype)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: dtype=%d is not a valid zsh_dtype_t", fn,
                         (int)args->dtype);
    }
    if ((peer == ZSH_ANY_SOURCE) && (args->type == ZSH_COLL_RECV)) {
        /* any member but this one */
    } else if ((peer < 0) || (peer >= comm->size) || (peer == comm->rank)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: peer=%d is not another rank of this "
                         "communicator (rank %d of %d)%s", fn, peer, comm->rank, comm->size,
                         (args->type == ZSH_COLL_RECV) ? " nor ZSH_ANY_SOURCE" : "");
    }
    if ((tag < 0) || (tag > ZSH_TAG_MAX)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: tag=%d is out of range [0, %d]", fn, tag,
                         ZSH_TAG_MAX);
    }
    if (args->count > SIZE_MAX / zsh_dtype_size(args->dtype)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: count=%zu of dtype=%s overflows size_t", fn,
                         args->count, zsh_dtype_name(args->dtype));
    }
    if ((args->count > 0) && (buf == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: buf is NULL with count=%zu", fn, args->count);
    }
    status = zsh_dev_classify(fn, comm, args, &device, &dev);
    if ((status == ZSH_OK) && device) {
        return zsh_error(ZSH_ERR_UNSUPPORTED, "%s: buf=%p is in CUDA memory of device %d; "
                         "point-to-point messages take host buffers", fn, buf, dev);
    }
    return status;
}

static zsh_status_t zsh_p2p_start(const char *fn, zsh_coll_type_t type, void *buf, size_t count,
                                  zsh_dtype_t dtype, int peer, int tag, zsh_comm_t *comm,
                                  zsh_request_t **req_p)
{
    zsh_coll_args_t args = ZSH_COLL_ARGS(type, buf, buf, count, dtype, ZSH_SUM, 0);
    zsh_status_t status;
    zsh_task_t *task;

    args.peer = peer;
    args.tag  = tag;
    status    = zsh_p2p_check(fn, &args, comm, req_p);
    if (status == ZSH_OK) {
        status = zsh_task_get(comm, &args, zsh_desc_type_name(type), &task);
    }
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_task_ops(task, 1);
    if (status != ZSH_OK) {
        zsh_task_put(task);
        return status;
    }
    task->ops[0]      = (zsh_xfer_t){.req = NULL, .peer = peer, .is_recv = (type == ZSH_COLL_RECV)};
    task->run.progress = zsh_p2p_progress;
    return zsh_coll_launch(task, req_p);
}

zsh_status_t zsh_isend(const void *buf, size_t count, zsh_dtype_t dtype, int peer, int tag,
                       zsh_comm_t *comm, zsh_request_t **req_p)
{
    return zsh_p2p_start("zsh_isend", ZSH_COLL_SEND, (void *)buf, count, dtype, peer, tag, comm,
                         req_p);
}

zsh_status_t zsh_irecv(void *buf, size_t count, zsh_dtype_t dtype, int peer, int tag,
                       zsh_comm_t *comm, zsh_request_t **req_p)
{
    return zsh_p2p_start("zsh_irecv", ZSH_COLL_RECV, buf, count, dtype, peer, tag, comm, req_p);
}

zsh_status_t zsh_request_source(const zsh_request_t *req, int *source_p)
{
    if ((req == NULL) || (req->magic != ZSH_REQUEST_MAGIC)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_request_source: %p is not a live request",
                         (const void *)req);
    }
    if (source_p == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_request_source: source_p is NULL");
    }
    if (req->args.type != ZSH_COLL_RECV) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_request_source: req %p is a %s, not a "
                         "receive", (const void *)req, req->name);
    }
    if (req->run.status != ZSH_OK) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_request_source: receive %p has %s",
                         (const void *)req, (req->run.status == ZSH_INPROGRESS)
                                                ? "not completed yet" : "failed");
    }
    *source_p = ((const zsh_p2p_state_t *)req->state.bytes)->source;
    return ZSH_OK;
}
