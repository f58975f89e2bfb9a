/*
 * Where the ZeRO layer's memory lives (host, pinned host or CUDA device),
 * and the CUDA runtime calls the layer makes on it: stream-ordered
 * allocation, copies, streams and events.
 *
 * Device memory is allocated and freed in stream order (cudaMallocAsync,
 * cudaFreeAsync) on the stream that uses it, so a buffer freed behind the
 * collectives and kernels enqueued before it costs no synchronisation, and
 * buckets allocated every step come from CUDA's pool. Streams and events
 * are `void *` here (cudaStream_t, cudaEvent_t; a NULL stream is the legacy
 * default stream), so the optimizer's files need no CUDA header.
 *
 * Built with the device kernels only (ZSH_HAVE_NVCC): without them every
 * call refuses with ZSH_ERR_UNSUPPORTED, saying why. A CUDA failure is
 * ZSH_ERR_TRANSPORT (ZSH_ERR_NO_MEMORY for an allocation) with CUDA's text.
 */
#ifndef ZSH_MEM_DEVICE_H_
#define ZSH_MEM_DEVICE_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    ZSH_PLACE_HOST = 0, /* pageable host memory */
    ZSH_PLACE_PINNED,   /* page-locked host memory the device copies at full speed */
    ZSH_PLACE_DEVICE    /* CUDA device memory of the current device */
} zsh_place_t;

/* Whether this build can keep model state on a device; if not, why not in
 * zsh_last_error(). */
bool zsh_dev_built(void);

/* @bytes zeroed bytes at @place, pinned or device (device: allocated and
 * zeroed in order on @stream), or NULL with the reason in zsh_last_error().
 * Host memory is zsh_account_alloc()'s own. */
void *zsh_dev_alloc(zsh_place_t place, size_t bytes, void *stream);

/* Free what zsh_dev_alloc() returned for @place (device: in order on
 * @stream); NULL is ignored. */
void zsh_dev_free(zsh_place_t place, void *ptr, void *stream);

/* Free pinned host memory: a release function of one argument. */
void zsh_dev_free_pinned(void *ptr);

/* Page-lock host memory from malloc (and give it back) so that copies
 * between it and the device run at full speed without blocking the host. */
zsh_status_t zsh_dev_host_register(void *ptr, size_t bytes);
void         zsh_dev_host_unregister(void *ptr);

/* Copy @bytes between any two places, enqueued on @stream. */
zsh_status_t zsh_dev_copy(void *dst, const void *src, size_t bytes, void *stream);

/* Wait for the work enqueued on @stream. */
zsh_status_t zsh_dev_sync(void *stream);

/* A stream that does not synchronise with the legacy default stream, or
 * NULL after an error. */
void *zsh_dev_stream_create(void);
void  zsh_dev_stream_destroy(void *stream);

/* Events that time (zsh_dev_event_elapsed()) the work between two records. */
void        *zsh_dev_event_create(void);
void         zsh_dev_event_destroy(void *event);
zsh_status_t zsh_dev_event_record(void *event, void *stream);
/* Make @stream's later work wait for @event. */
zsh_status_t zsh_dev_stream_wait(void *stream, void *event);
/* Wait for @event on the host. */
zsh_status_t zsh_dev_event_sync(void *event);
/* ZSH_OK once @event is done, ZSH_INPROGRESS before. */
zsh_status_t zsh_dev_event_query(void *event);
/* Seconds between two completed events. */
double       zsh_dev_event_elapsed(void *start, void *end);

#endif
