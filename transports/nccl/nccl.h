/*
 * The NCCL transport: collectives on CUDA device memory (tl.h's device
 * table). Its files: the CUDA side shared by all of it, where memory lives
 * and whether a device exists (cuda.c); the communicator, built
 * nonblocking so that creation, errors and aborts never block a thread
 * (comm.c); and posting calls and watching them on their streams (op.c).
 */
#ifndef ZSH_TRANSPORTS_NCCL_NCCL_H_
#define ZSH_TRANSPORTS_NCCL_NCCL_H_

#include "tl.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct zsh_tl_dev_op {
    cudaEvent_t      event;     /* recorded on the call's stream once it is enqueued */
    void            *stream;
    bool             track;     /* its completion is watched: an event is recorded */
    bool             recorded;  /* enqueued (and its event recorded, if tracked) */
    zsh_tl_dev_op_t *next;      /* the communicator's free list */
};

struct zsh_tl_dev {
    /* Every NCCL call on the communicator holds it: abort() may come from
     * another thread, and frees what those calls use. */
    pthread_mutex_t  lock;
    ncclComm_t       nccl;      /* NULL once aborted */
    int              device;
    bool             ready;     /* creation finished */
    zsh_tl_dev_op_t *enqueuing; /* a call NCCL is still enqueuing in the background */
    zsh_tl_dev_op_t *free_ops;
    atomic_bool      aborted;
};

/* ZSH_ERR_TRANSPORT (or what fits the error better) for a failed CUDA call
 * @what, with CUDA's text; clears CUDA's sticky last error. */
zsh_status_t zsh_nccl_cuda_error(cudaError_t err, const char *what);

/* The same for NCCL, with its last error's text when @comm is known. */
zsh_status_t zsh_nccl_error(ncclResult_t res, ncclComm_t comm, const char *what);

/* Make @dev current for the calling thread, remembering the one it had;
 * zsh_nccl_device_restore() puts that back. */
zsh_status_t zsh_nccl_device_enter(int dev, int *saved_p);
void         zsh_nccl_device_restore(int dev, int saved);

zsh_status_t zsh_nccl_probe(void);
zsh_status_t zsh_nccl_mem_query(const void *ptr, bool *device_p, int *dev_p);
zsh_status_t zsh_nccl_current(int *dev_p);
zsh_status_t zsh_nccl_stream_check(void *stream, int dev);

zsh_status_t zsh_nccl_id_make(void *id);
zsh_status_t zsh_nccl_dev_start(const void *id, int nranks, int rank, int dev,
                                zsh_tl_dev_t **dc_p);
zsh_status_t zsh_nccl_dev_test(zsh_tl_dev_t *dc);
int          zsh_nccl_dev_device(const zsh_tl_dev_t *dc);
void         zsh_nccl_dev_abort(zsh_tl_dev_t *dc);
zsh_status_t zsh_nccl_dev_destroy(zsh_tl_dev_t *dc);

zsh_status_t zsh_nccl_post(zsh_tl_dev_t *dc, const zsh_tl_dev_call_t *call,
                           zsh_tl_dev_op_t **op_p);
zsh_status_t zsh_nccl_op_test(zsh_tl_dev_t *dc, zsh_tl_dev_op_t *op, bool done);
void         zsh_nccl_op_release(zsh_tl_dev_t *dc, zsh_tl_dev_op_t *op);

#endif
