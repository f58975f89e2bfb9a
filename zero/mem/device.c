#include <config.h>

#include "mem/device.h"

#include "mem/huge.h"

#include "core/status.h"

#include <stdlib.h>
#include <string.h>

#ifdef ZSH_HAVE_NVCC

#include <cuda_runtime.h>

static zsh_status_t zsh_dev_error(cudaError_t err, const char *what)
{
    (void)cudaGetLastError(); /* clear it: the next call must not report it again */
    return zsh_error((err == cudaErrorMemoryAllocation) ? ZSH_ERR_NO_MEMORY : ZSH_ERR_TRANSPORT,
                     "%s: CUDA error %d (%s): %s", what, (int)err, cudaGetErrorName(err),
                     cudaGetErrorString(err));
}

bool zsh_dev_built(void)
{
    return true;
}

void *zsh_dev_alloc(zsh_place_t place, size_t bytes, void *stream)
{
    cudaError_t err;
    void *ptr = NULL;

    if (place == ZSH_PLACE_PINNED) {
        err = cudaHostAlloc(&ptr, (bytes == 0) ? 1 : bytes, cudaHostAllocPortable);
        if (err != cudaSuccess) {
            zsh_dev_error(err, "cudaHostAlloc");
            return NULL;
        }
        memset(ptr, 0, bytes);
        return ptr;
    }
    err = cudaMallocAsync(&ptr, (bytes == 0) ? 1 : bytes, (cudaStream_t)stream);
    if (err != cudaSuccess) {
        zsh_dev_error(err, "cudaMallocAsync");
        return NULL;
    }
    err = cudaMemsetAsync(ptr, 0, bytes, (cudaStream_t)stream);
    if (err != cudaSuccess) {
        zsh_dev_error(err, "cudaMemsetAsync");
        (void)cudaFreeAsync(ptr, (cudaStream_t)stream);
        return NULL;
    }
    return ptr;
}

void zsh_dev_free(zsh_place_t place, void *ptr, void *stream)
{
    if (ptr == NULL) {
        return;
    }
    if (place == ZSH_PLACE_HOST) {
        zsh_huge_free(ptr); /* free() unless it is a huge page mapping */
    } else if (place == ZSH_PLACE_PINNED) {
        (void)cudaFreeHost(ptr);
    } else if (cudaFreeAsync(ptr, (cudaStream_t)stream) != cudaSuccess) {
        (void)cudaGetLastError();
    }
}

void zsh_dev_free_pinned(void *ptr)
{
    zsh_dev_free(ZSH_PLACE_PINNED, ptr, NULL);
}

zsh_status_t zsh_dev_host_register(void *ptr, size_t bytes)
{
    cudaError_t err = cudaHostRegister(ptr, bytes, cudaHostRegisterPortable);

    return (err == cudaSuccess) ? ZSH_OK : zsh_dev_error(err, "cudaHostRegister");
}

void zsh_dev_host_unregister(void *ptr)
{
    if (cudaHostUnregister(ptr) != cudaSuccess) {
        (void)cudaGetLastError();
    }
}

zsh_status_t zsh_dev_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    cudaError_t err;

    if (bytes == 0) {
        return ZSH_OK;
    }
    err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream);
    return (err == cudaSuccess) ? ZSH_OK : zsh_dev_error(err, "cudaMemcpyAsync");
}

zsh_status_t zsh_dev_sync(void *stream)
{
    cudaError_t err = cudaStreamSynchronize((cudaStream_t)stream);

    return (err == cudaSuccess) ? ZSH_OK : zsh_dev_error(err, "cudaStreamSynchronize");
}

void *zsh_dev_stream_create(void)
{
    cudaStream_t s;
    cudaError_t err = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);

    if (err != cudaSuccess) {
        zsh_dev_error(err, "cudaStreamCreateWithFlags");
        return NULL;
    }
    return s;
}

void zsh_dev_stream_destroy(void *stream)
{
    if (stream != NULL) {
        (void)cudaStreamDestroy((cudaStream_t)stream);
    }
}

void *zsh_dev_event_create(void)
{
    cudaEvent_t e;
    cudaError_t err = cudaEventCreate(&e);

    if (err != cudaSuccess) {
        zsh_dev_error(err, "cudaEventCreate");
        return NULL;
    }
    return e;
}

void zsh_dev_event_destroy(void *event)
{
    if (event != NULL) {
        (void)cudaEventDestroy((cudaEvent_t)event);
    }
}

zsh_status_t zsh_dev_event_record(void *event, void *stream)
{
    cudaError_t err = cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);

    return (err == cudaSuccess) ? ZSH_OK : zsh_dev_error(err, "cudaEventRecord");
}

zsh_status_t zsh_dev_stream_wait(void *stream, void *event)
{
    cudaError_t err = cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0);

    return (err == cudaSuccess) ? ZSH_OK : zsh_dev_error(err, "cudaStreamWaitEvent");
}

zsh_status_t zsh_dev_event_sync(void *event)
{
    cudaError_t err = cudaEventSynchronize((cudaEvent_t)event);

    return (err == cudaSuccess) ? ZSH_OK : zsh_dev_error(err, "cudaEventSynchronize");
}

zsh_status_t zsh_dev_event_query(void *event)
{
    cudaError_t err = cudaEventQuery((cudaEvent_t)event);

    if (err == cudaErrorNotReady) {
        return ZSH_INPROGRESS;
    }
    return (err == cudaSuccess) ? ZSH_OK : zsh_dev_error(err, "cudaEventQuery");
}

double zsh_dev_event_elapsed(void *start, void *end)
{
    float ms = 0.0f;

    if (cudaEventElapsedTime(&ms, (cudaEvent_t)start, (cudaEvent_t)end) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0.0;
    }
    return ms / 1e3;
}

#else /* !ZSH_HAVE_NVCC */

static zsh_status_t zsh_dev_absent(const char *what)
{
    return zsh_error(ZSH_ERR_UNSUPPORTED,
                     "%s: ZeroShard was built without the device kernels (configure found no "
                     "CUDA compiler), so model state cannot live in device memory", what);
}

bool zsh_dev_built(void)
{
    zsh_dev_absent("device memory");
    return false;
}

void *zsh_dev_alloc(zsh_place_t place, size_t bytes, void *stream)
{
    (void)place;
    (void)bytes;
    (void)stream;
    zsh_dev_absent("zsh_dev_alloc");
    return NULL;
}

void zsh_dev_free(zsh_place_t place, void *ptr, void *stream)
{
    (void)stream;
    if (place == ZSH_PLACE_HOST) {
        zsh_huge_free(ptr); /* free() unless it is a huge page mapping */
    }
}

void zsh_dev_free_pinned(void *ptr)
{
    (void)ptr;
}

zsh_status_t zsh_dev_host_register(void *ptr, size_t bytes)
{
    (void)ptr;
    (void)bytes;
    return zsh_dev_absent("zsh_dev_host_register");
}

void zsh_dev_host_unregister(void *ptr)
{
    (void)ptr;
}

zsh_status_t zsh_dev_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    (void)stream;
    memcpy(dst, src, bytes); /* only host memory exists in this build */
    return ZSH_OK;
}

zsh_status_t zsh_dev_sync(void *stream)
{
    (void)stream;
    return ZSH_OK;
}

void *zsh_dev_stream_create(void)
{
    zsh_dev_absent("zsh_dev_stream_create");
    return NULL;
}

void zsh_dev_stream_destroy(void *stream)
{
    (void)stream;
}

void *zsh_dev_event_create(void)
{
    zsh_dev_absent("zsh_dev_event_create");
    return NULL;
}

void zsh_dev_event_destroy(void *event)
{
    (void)event;
}

zsh_status_t zsh_dev_event_record(void *event, void *stream)
{
    (void)event;
    (void)stream;
    return zsh_dev_absent("zsh_dev_event_record");
}

zsh_status_t zsh_dev_stream_wait(void *stream, void *event)
{
    (void)stream;
    (void)event;
    return zsh_dev_absent("zsh_dev_stream_wait");
}

zsh_status_t zsh_dev_event_sync(void *event)
{
    (void)event;
    return zsh_dev_absent("zsh_dev_event_sync");
}

zsh_status_t zsh_dev_event_query(void *event)
{
    (void)event;
    return zsh_dev_absent("zsh_dev_event_query");
}

double zsh_dev_event_elapsed(void *start, void *end)
{
    (void)start;
    (void)end;
    return 0.0;
}

#endif
