/*
 * The CUDA side of the NCCL transport: errors, whether a device exists,
 * where memory lives, the current device and streams.
 */
#include "nccl/nccl.h"

#include "core/status.h"

#include <pthread.h>
#include <stdio.h>

zsh_status_t zsh_nccl_cuda_error(cudaError_t err, const char *what)
{
    zsh_status_t status = ZSH_ERR_TRANSPORT;

    (void)cudaGetLastError(); /* clear it, so the next call does not report it again */
    switch (err) {
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidResourceHandle:
    case cudaErrorInvalidDevice:
        status = ZSH_ERR_INVALID_ARG;
        break;
    case cudaErrorMemoryAllocation:
        status = ZSH_ERR_NO_MEMORY;
        break;
    default:
        break;
    }
    return zsh_error(status, "%s: CUDA error %d (%s): %s", what, (int)err, cudaGetErrorName(err),
                     cudaGetErrorString(err));
}

zsh_status_t zsh_nccl_error(ncclResult_t res, ncclComm_t comm, const char *what)
{
    zsh_status_t status;
    const char *last = ncclGetLastError(comm);

    switch (res) {
    case ncclInvalidArgument:
    case ncclInvalidUsage:
        status = ZSH_ERR_INVALID_ARG;
        break;
    case ncclRemoteError:
        status = ZSH_ERR_PEER_FAILED;
        break;
    case ncclInternalError:
        status = ZSH_ERR_INTERNAL;
        break;
    default:
        status = ZSH_ERR_TRANSPORT;
        break;
    }
    return zsh_error(status, "%s: NCCL error %d (%s)%s%s", what, (int)res,
                     ncclGetErrorString(res), ((last != NULL) && (last[0] != '\0')) ? ": " : "",
                     (last != NULL) ? last : "");
}

/* Whether the process has a device, asked once: a process without one
 * never calls CUDA again, so host-only jobs pay nothing for this build. */
static pthread_once_t zsh_nccl_probe_once = PTHREAD_ONCE_INIT;
static int            zsh_nccl_probe_count;
static cudaError_t    zsh_nccl_probe_err;

static void zsh_nccl_probe_run(void)
{
    zsh_nccl_probe_err = cudaGetDeviceCount(&zsh_nccl_probe_count);
    if (zsh_nccl_probe_err != cudaSuccess) {
        zsh_nccl_probe_count = 0;
        (void)cudaGetLastError();
    }
}

static bool zsh_nccl_has_device(void)
{
    pthread_once(&zsh_nccl_probe_once, zsh_nccl_probe_run);
    return zsh_nccl_probe_count > 0;
}

/* Said, not logged: a machine without a GPU is no error of the caller's. */
zsh_status_t zsh_nccl_probe(void)
{
    char msg[256];

    if (zsh_nccl_has_device()) {
        return ZSH_OK;
    }
    if (zsh_nccl_probe_err != cudaSuccess) {
        snprintf(msg, sizeof(msg), "no CUDA device: cudaGetDeviceCount: %s (%s)",
                 cudaGetErrorName(zsh_nccl_probe_err), cudaGetErrorString(zsh_nccl_probe_err));
    } else {
        snprintf(msg, sizeof(msg), "no CUDA device: cudaGetDeviceCount found none");
    }
    zsh_error_set_quiet(msg);
    return ZSH_ERR_UNSUPPORTED;
}

zsh_status_t zsh_nccl_mem_query(const void *ptr, bool *device_p, int *dev_p)
{
    struct cudaPointerAttributes attr;
    cudaError_t err;

    *device_p = false;
    *dev_p    = -1;
    if ((ptr == NULL) || !zsh_nccl_has_device()) {
        return ZSH_OK;
    }
    err = cudaPointerGetAttributes(&attr, ptr);
    if (err != cudaSuccess) {
        /* Older drivers answer "invalid value" for memory CUDA never saw. */
        (void)cudaGetLastError();
        return ZSH_OK;
    }
    if ((attr.type == cudaMemoryTypeDevice) || (attr.type == cudaMemoryTypeManaged)) {
        *device_p = true;
        *dev_p    = attr.device;
    }
    return ZSH_OK;
}

zsh_status_t zsh_nccl_current(int *dev_p)
{
    cudaError_t err = cudaGetDevice(dev_p);

    return (err == cudaSuccess) ? ZSH_OK : zsh_nccl_cuda_error(err, "cudaGetDevice");
}

zsh_status_t zsh_nccl_stream_check(void *stream, int dev)
{
    cudaError_t err;
    int sdev;

    if (stream == NULL) {
        return ZSH_OK;
    }
    err = cudaStreamGetDevice((cudaStream_t)stream, &sdev);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return zsh_error(ZSH_ERR_INVALID_ARG, "stream %p is not a CUDA stream (%s)", stream,
                         cudaGetErrorString(err));
    }
    if (sdev != dev) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "stream %p belongs to device %d but the buffers are on device %d",
                         stream, sdev, dev);
    }
    return ZSH_OK;
}

zsh_status_t zsh_nccl_device_enter(int dev, int *saved_p)
{
    cudaError_t err = cudaGetDevice(saved_p);

    if (err != cudaSuccess) {
        return zsh_nccl_cuda_error(err, "cudaGetDevice");
    }
    if (*saved_p != dev) {
        err = cudaSetDevice(dev);
        if (err != cudaSuccess) {
            return zsh_nccl_cuda_error(err, "cudaSetDevice");
        }
    }
    return ZSH_OK;
}

void zsh_nccl_device_restore(int dev, int saved)
{
    if (saved != dev) {
        (void)cudaSetDevice(saved);
    }
}
