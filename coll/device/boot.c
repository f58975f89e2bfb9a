/*
 * A communicator's device communicator. It is made at the communicator's
 * first device call, not at its creation: a host-only job never touches a
 * GPU, and a communicator from zsh_comm_split() gets one of exactly its own
 * members. Rank 0 makes the id and sends it to the others in a task of
 * the call being made (so its descriptor is exchanged, and a rank that made
 * another call, or the same call on host buffers, is told by name before
 * anything reaches the device).
 */
#include "device/device.h"

#include "core/clock.h"
#include "core/status.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

/* The id message: a flag (rank 0 could make the id) and the id. */
#define ZSH_DEV_ID_MAX 256

typedef struct zsh_dev_boot {
    uint8_t *msg;       /* ZSH_DEV_ID_MAX + 1 bytes of the caller's */
    size_t   len;       /* of the message */
    bool     posted;
} zsh_dev_boot_t;

_Static_assert(sizeof(zsh_dev_boot_t) <= ZSH_TASK_STATE_BYTES, "the boot state fits a task");

static zsh_status_t zsh_dev_boot_progress(zsh_task_t *task)
{
    zsh_dev_boot_t *st = zsh_task_state(task);
    zsh_comm_t *comm   = task->comm;
    zsh_status_t status;
    int peer;

    if (!st->posted) {
        if (comm->rank == 0) {
            for (peer = 1; peer < comm->size; peer++) {
                status = zsh_task_send(task, &task->ops[peer - 1], peer, 0, st->msg, st->len);
                if (status != ZSH_OK) {
                    return status;
                }
            }
        } else {
            status = zsh_task_recv(task, &task->ops[0], 0, 0, st->msg, st->len);
            if (status != ZSH_OK) {
                return status;
            }
        }
        st->posted = true;
    }
    return zsh_task_ops_test(task, 0, (comm->rank == 0) ? (unsigned)comm->size - 1 : 1);
}

/* Rank 0's id reaches every member of @comm in @msg, as a task of call @args. */
static zsh_status_t zsh_dev_boot_send(const char *fn, zsh_comm_t *comm,
                                      const zsh_coll_args_t *args, uint8_t *msg, size_t len)
{
    zsh_dev_boot_t *st;
    zsh_status_t status;
    zsh_task_t *task;

    if (comm->size == 1) {
        return ZSH_OK; /* the id is already where it is needed */
    }
    status = zsh_task_get(comm, args, zsh_desc_type_name(args->type), &task);
    if (status != ZSH_OK) {
        return status;
    }
    task->algo = ZSH_ALGO_NCCL;
    status     = zsh_task_ops(task, (comm->rank == 0) ? (unsigned)comm->size - 1 : 1);
    if (status != ZSH_OK) {
        zsh_task_put(task);
        return status;
    }
    st                 = zsh_task_state(task);
    st->msg            = msg;
    st->len            = len;
    st->posted         = false;
    task->run.progress = zsh_dev_boot_progress;
    status = zsh_coll_launch(task, NULL);
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: making the NCCL communicator: ", fn);
    }
    return status;
}

/* Wait for a device communicator in the making, within @comm's timeout. */
static zsh_status_t zsh_dev_boot_wait(const zsh_tl_dev_ops_t *tl, zsh_comm_t *comm,
                                      zsh_tl_dev_t *dc)
{
    double deadline = zsh_clock_now() + comm->timeout;
    zsh_status_t status;

    while ((status = tl->dev_test(dc)) == ZSH_INPROGRESS) {
        if (zsh_clock_now() > deadline) {
            return zsh_error(ZSH_ERR_TIMEOUT, "the NCCL communicator of comm %u (rank %d of "
                             "%d) was not ready after %g s", comm->id, comm->rank, comm->size,
                             comm->timeout);
        }
        sched_yield();
    }
    return status;
}

zsh_status_t zsh_dev_comm_ready(const char *fn, zsh_comm_t *comm, const zsh_coll_args_t *args,
                                int dev)
{
    const zsh_tl_dev_ops_t *tl = zsh_tl_device();
    zsh_tl_dev_t *dc = atomic_load(&comm->dev.tl);
    uint8_t msg[ZSH_DEV_ID_MAX + 1];
    size_t len = tl->id_len + 1;
    zsh_status_t status;

    if (comm->dev.failed != ZSH_OK) {
        return zsh_error(comm->dev.failed, "%s: an earlier device call on comm %u failed, so "
                         "its device calls fail: %s", fn, comm->id, comm->dev.why);
    }
    if (dc != NULL) {
        if (tl->dev_device(dc) != dev) {
            return zsh_error(ZSH_ERR_INVALID_ARG, "%s: the buffers are on device %d but comm "
                             "%u's NCCL communicator is on device %d", fn, dev, comm->id,
                             tl->dev_device(dc));
        }
        return ZSH_OK;
    }
    if (len > sizeof(msg)) {
        return zsh_error(ZSH_ERR_INTERNAL, "a %s id of %zu bytes is longer than %d", tl->name,
                         tl->id_len, ZSH_DEV_ID_MAX);
    }
    status = tl->probe();
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: ", fn);
        return status;
    }
    memset(msg, 0, sizeof(msg));
    if (comm->rank == 0) {
        /* A failure here still goes to the others, so that none waits. */
        msg[0] = (tl->id_make(msg + 1) == ZSH_OK);
    }
    status = zsh_dev_boot_send(fn, comm, args, msg, len);
    if (status != ZSH_OK) {
        return status;
    }
    if (msg[0] != 1) {
        status = (comm->rank == 0) ? ZSH_ERR_TRANSPORT
                                   : zsh_error(ZSH_ERR_TRANSPORT, "rank 0 could not make a "
                                               "NCCL id for comm %u", comm->id);
    } else {
        status = tl->dev_start(msg + 1, comm->size, comm->rank, dev, &dc);
        if (status == ZSH_OK) {
            status = zsh_dev_boot_wait(tl, comm, dc);
            if (status != ZSH_OK) {
                tl->dev_abort(dc);
                (void)tl->dev_destroy(dc);
            }
        }
    }
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: ", fn);
        zsh_dev_comm_fail(comm, status);
        return status;
    }
    atomic_store(&comm->dev.tl, dc);
    return ZSH_OK;
}

void zsh_dev_comm_fail(zsh_comm_t *comm, zsh_status_t status)
{
    zsh_tl_dev_t *dc = atomic_load(&comm->dev.tl);

    if (comm->dev.failed == ZSH_OK) {
        comm->dev.failed = status;
        snprintf(comm->dev.why, sizeof(comm->dev.why), "%s", zsh_last_error());
    }
    if (dc != NULL) {
        zsh_tl_device()->dev_abort(dc);
    }
}

void zsh_dev_comm_abort(zsh_comm_t *comm)
{
    zsh_tl_dev_t *dc = atomic_load(&comm->dev.tl);

    if (dc != NULL) {
        zsh_tl_device()->dev_abort(dc);
    }
}

void zsh_dev_comm_release(zsh_comm_t *comm)
{
    zsh_tl_dev_t *dc = atomic_exchange(&comm->dev.tl, NULL);

    if (dc != NULL) {
        (void)zsh_tl_device()->dev_destroy(dc);
    }
}
