/*
 * Requests: the caller queues one and wakes the progress thread, then tests
 * or waits on the engine's condition variable. Errors found by the progress
 * thread are kept in the request and raised in the caller's thread, whose
 * zsh_last_error() they belong to.
 */
#include "aio/aio_impl.h"
#include "core/clock.h"
#include "core/status.h"

#include <stdint.h>
#include <stdlib.h>

static zsh_status_t zsh_aio_submit(zsh_aio_t *aio, zsh_aio_file_t *file, uint64_t offset,
                                   const void *buf, size_t len, int write, zsh_aio_req_t **req_p)
{
    const char *what = write ? "zsh_aio_write" : "zsh_aio_read";
    zsh_aio_req_t *req;

    if ((aio == NULL) || (file == NULL) || (req_p == NULL) || ((buf == NULL) && (len > 0))) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: NULL engine, file, buffer or request", what);
    }
    if (file->aio != aio) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s belongs to another engine", what,
                         file->path);
    }
    if ((((uintptr_t)buf % ZSH_AIO_ALIGN) != 0) || ((offset % ZSH_AIO_ALIGN) != 0) ||
        ((len % ZSH_AIO_ALIGN) != 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s of %s: buffer %p, offset %llu and length %zu must all be "
                         "multiples of %d bytes",
                         what, file->path, buf, (unsigned long long)offset, len, ZSH_AIO_ALIGN);
    }
    req = calloc(1, sizeof(*req));
    if (req == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "%s: no memory for a request", what);
    }
    req->aio    = aio;
    req->file   = file;
    req->write  = write;
    req->offset = offset;
    req->buf    = (char *)buf;
    req->len    = len;
    pthread_mutex_lock(&aio->lock);
    req->live_next = aio->live;
    if (aio->live != NULL) {
        aio->live->live_prev = req;
    }
    aio->live = req;
    if (len > 0) {
        req->queued = true;
        if (aio->tail == NULL) {
            aio->head = req;
        } else {
            aio->tail->next = req;
        }
        aio->tail = req;
    }
    pthread_mutex_unlock(&aio->lock);
    if (len > 0) {
        zsh_aio_progress_wake(aio);
    }
    *req_p = req;
    return ZSH_OK;
}

zsh_status_t zsh_aio_read(zsh_aio_t *aio, zsh_aio_file_t *file, uint64_t offset, void *buf,
                          size_t len, zsh_aio_req_t **req_p)
{
    return zsh_aio_submit(aio, file, offset, buf, len, 0, req_p);
}

zsh_status_t zsh_aio_write(zsh_aio_t *aio, zsh_aio_file_t *file, uint64_t offset,
                           const void *buf, size_t len, zsh_aio_req_t **req_p)
{
    return zsh_aio_submit(aio, file, offset, buf, len, 1, req_p);
}

static bool zsh_aio_req_done(const zsh_aio_req_t *req)
{
    return !req->queued && (req->pending == 0);
}

/* The finished request's status, raised in this thread. */
static zsh_status_t zsh_aio_req_status(const zsh_aio_req_t *req, bool failed)
{
    return failed ? zsh_error(ZSH_ERR_IO, "%s", req->msg) : ZSH_OK;
}

zsh_status_t zsh_aio_test(zsh_aio_req_t *req)
{
    bool done, failed;

    if (req == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_aio_test: NULL request");
    }
    if (req->aio == NULL) { /* finished before its engine was destroyed */
        return zsh_aio_req_status(req, req->failed);
    }
    pthread_mutex_lock(&req->aio->lock);
    done   = zsh_aio_req_done(req);
    failed = req->failed;
    pthread_mutex_unlock(&req->aio->lock);
    return done ? zsh_aio_req_status(req, failed) : ZSH_INPROGRESS;
}

/* Block until @req is done; whether it failed. */
static bool zsh_aio_req_block(zsh_aio_req_t *req)
{
    zsh_aio_t *aio = req->aio;
    double start   = zsh_clock_now();
    bool failed;

    if (aio == NULL) {
        return req->failed;
    }
    pthread_mutex_lock(&aio->lock);
    while (!zsh_aio_req_done(req)) {
        pthread_cond_wait(&aio->done_cv, &aio->lock);
    }
    failed = req->failed;
    aio->stats.wait_s += zsh_clock_now() - start;
    pthread_mutex_unlock(&aio->lock);
    return failed;
}

zsh_status_t zsh_aio_wait(zsh_aio_req_t *req)
{
    if (req == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_aio_wait: NULL request");
    }
    return zsh_aio_req_status(req, zsh_aio_req_block(req));
}

void zsh_aio_req_free(zsh_aio_req_t *req)
{
    if (req == NULL) {
        return;
    }
    (void)zsh_aio_req_block(req);
    if (req->aio != NULL) {
        pthread_mutex_lock(&req->aio->lock);
        if (req->live_prev != NULL) {
            req->live_prev->live_next = req->live_next;
        } else {
            req->aio->live = req->live_next;
        }
        if (req->live_next != NULL) {
            req->live_next->live_prev = req->live_prev;
        }
        pthread_mutex_unlock(&req->aio->lock);
    }
    free(req);
}

void zsh_aio_req_orphan_all(zsh_aio_t *aio)
{
    zsh_aio_req_t *req;

    pthread_mutex_lock(&aio->lock);
    for (req = aio->live; req != NULL; req = req->live_next) {
        req->aio = NULL;
    }
    aio->live = NULL;
    pthread_mutex_unlock(&aio->lock);
}

void zsh_aio_inject(zsh_aio_t *aio, zsh_aio_fault_t fault, int writes, unsigned long after)
{
    pthread_mutex_lock(&aio->lock);
    aio->inject = (zsh_aio_fault_state_t){fault, writes != 0, after};
    pthread_mutex_unlock(&aio->lock);
}

void zsh_aio_get_stats(const zsh_aio_t *aio, zsh_aio_stats_t *stats)
{
    zsh_aio_t *a = (zsh_aio_t *)aio; /* the lock, not the counters, changes */

    pthread_mutex_lock(&a->lock);
    *stats = a->stats;
    if (a->inflight > 0) {
        stats->busy_s += zsh_clock_now() - a->busy_since;
    }
    pthread_mutex_unlock(&a->lock);
}
