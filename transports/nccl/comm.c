/*
 * NCCL communicators, created nonblocking (ncclConfig_t.blocking = 0): no
 * NCCL call then blocks the thread, so the collective layer's deadlines,
 * aborts and peer-failure reports hold on the device path too, and
 * ncclCommAbort() can stop a communicator whose peers are gone.
 */
#include "nccl/nccl.h"

#include "core/clock.h"
#include "core/status.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* Seconds a destroy waits for NCCL to flush before it aborts instead. */
#define ZSH_NCCL_FINALIZE_WAIT 30.0

_Static_assert(sizeof(ncclUniqueId) == NCCL_UNIQUE_ID_BYTES, "the id is its bytes");

zsh_status_t zsh_nccl_id_make(void *id)
{
    ncclUniqueId uid;
    ncclResult_t res = ncclGetUniqueId(&uid);

    if (res != ncclSuccess) {
        return zsh_nccl_error(res, NULL, "ncclGetUniqueId");
    }
    memcpy(id, &uid, sizeof(uid));
    return ZSH_OK;
}

zsh_status_t zsh_nccl_dev_start(const void *id, int nranks, int rank, int dev,
                                zsh_tl_dev_t **dc_p)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    ncclUniqueId uid;
    ncclResult_t res;
    zsh_tl_dev_t *dc;
    zsh_status_t status;
    int saved;

    dc = calloc(1, sizeof(*dc));
    if (dc == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "NCCL communicator: out of memory");
    }
    pthread_mutex_init(&dc->lock, NULL);
    dc->device = dev;
    atomic_init(&dc->aborted, false);
    status = zsh_nccl_device_enter(dev, &saved);
    if (status != ZSH_OK) {
        goto err_free;
    }
    memcpy(&uid, id, sizeof(uid));
    config.blocking = 0;
    res = ncclCommInitRankConfig(&dc->nccl, nranks, uid, rank, &config);
    zsh_nccl_device_restore(dev, saved);
    if ((res != ncclSuccess) && (res != ncclInProgress)) {
        status = zsh_nccl_error(res, dc->nccl, "ncclCommInitRankConfig");
        if (dc->nccl != NULL) {
            (void)ncclCommAbort(dc->nccl);
        }
        goto err_free;
    }
    *dc_p = dc;
    return ZSH_OK;

err_free:
    pthread_mutex_destroy(&dc->lock);
    free(dc);
    return status;
}

zsh_status_t zsh_nccl_dev_test(zsh_tl_dev_t *dc)
{
    ncclResult_t res, state = ncclSuccess;
    zsh_status_t status = ZSH_OK;

    pthread_mutex_lock(&dc->lock);
    if (dc->nccl == NULL) {
        status = zsh_error(ZSH_ERR_ABORTED, "the NCCL communicator was aborted");
    } else if (!dc->ready) {
        res = ncclCommGetAsyncError(dc->nccl, &state);
        if (res != ncclSuccess) {
            status = zsh_nccl_error(res, dc->nccl, "ncclCommGetAsyncError");
        } else if (state == ncclInProgress) {
            status = ZSH_INPROGRESS;
        } else if (state != ncclSuccess) {
            status = zsh_nccl_error(state, dc->nccl, "ncclCommInitRankConfig");
        } else {
            dc->ready = true;
        }
    }
    pthread_mutex_unlock(&dc->lock);
    return status;
}

int zsh_nccl_dev_device(const zsh_tl_dev_t *dc)
{
    return dc->device;
}

void zsh_nccl_dev_abort(zsh_tl_dev_t *dc)
{
    pthread_mutex_lock(&dc->lock);
    if (dc->nccl != NULL) {
        (void)ncclCommAbort(dc->nccl);
        dc->nccl = NULL;
    }
    atomic_store(&dc->aborted, true);
    pthread_mutex_unlock(&dc->lock);
}

zsh_status_t zsh_nccl_dev_destroy(zsh_tl_dev_t *dc)
{
    zsh_status_t status = ZSH_OK;
    ncclResult_t res, state = ncclSuccess;
    zsh_tl_dev_op_t *op;
    int saved;

    if (zsh_nccl_device_enter(dc->device, &saved) != ZSH_OK) {
        saved = dc->device;
    }
    if ((dc->nccl != NULL) && dc->ready && (dc->enqueuing == NULL)) {
        /* Finalize flushes what was enqueued; nonblocking, so wait for it
         * here, where the caller asked to be done with the communicator,
         * but not for ever: a peer that is gone never flushes. */
        double deadline = zsh_clock_now() + ZSH_NCCL_FINALIZE_WAIT;

        res = ncclCommFinalize(dc->nccl);
        while ((res == ncclSuccess) || (res == ncclInProgress)) {
            res = ncclCommGetAsyncError(dc->nccl, &state);
            if ((res != ncclSuccess) || (state != ncclInProgress) ||
                (zsh_clock_now() > deadline)) {
                break;
            }
            sched_yield();
        }
        if ((res == ncclSuccess) && (state == ncclSuccess)) {
            res = ncclCommDestroy(dc->nccl);
            dc->nccl = (res == ncclSuccess) ? NULL : dc->nccl;
        }
        if (dc->nccl != NULL) {
            status = zsh_nccl_error((res != ncclSuccess) ? res : state, dc->nccl,
                                    "ncclCommFinalize");
        }
    }
    if (dc->nccl != NULL) {
        (void)ncclCommAbort(dc->nccl);
        dc->nccl = NULL;
    }
    while ((op = dc->free_ops) != NULL) {
        dc->free_ops = op->next;
        (void)cudaEventDestroy(op->event);
        free(op);
    }
    zsh_nccl_device_restore(dc->device, saved);
    pthread_mutex_destroy(&dc->lock);
    free(dc);
    return status;
}

const zsh_tl_dev_ops_t zsh_tl_nccl_ops = {
    .name         = "nccl",
    .id_len       = NCCL_UNIQUE_ID_BYTES,
    .probe        = zsh_nccl_probe,
    .mem_query    = zsh_nccl_mem_query,
    .current      = zsh_nccl_current,
    .stream_check = zsh_nccl_stream_check,
    .id_make      = zsh_nccl_id_make,
    .dev_start    = zsh_nccl_dev_start,
    .dev_test     = zsh_nccl_dev_test,
    .dev_device   = zsh_nccl_dev_device,
    .dev_abort    = zsh_nccl_dev_abort,
    .dev_destroy  = zsh_nccl_dev_destroy,
    .post         = zsh_nccl_post,
    .op_test      = zsh_nccl_op_test,
    .op_release   = zsh_nccl_op_release,
};
