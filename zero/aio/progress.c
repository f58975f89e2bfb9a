/*
 * The progress thread: carves queued requests into pieces of at most the
 * block size, keeps up to the queue depth of them in flight, and reaps them
 * as they finish. It alone talks to the backend, which io_uring wants (one
 * submitter per ring) and which keeps the caller's thread free to compute.
 *
 * It sleeps in poll() on the engine's eventfd, which every completion and
 * every newly queued request adds to. The counter is read before reaping,
 * so a completion that lands after the reap wakes the next poll.
 */
#include "aio/aio_impl.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void zsh_aio_progress_wake(zsh_aio_t *aio)
{
    uint64_t one = 1;

    (void)!write(aio->efd, &one, sizeof(one));
}

/* A request is done once nothing of it is queued or in flight. */
static void zsh_aio_req_maybe_done(zsh_aio_t *aio, zsh_aio_req_t *req)
{
    if (!req->queued && (req->pending == 0)) {
        pthread_cond_broadcast(&aio->done_cv);
    }
}

static void zsh_aio_inflight_add(zsh_aio_t *aio, int delta)
{
    if ((aio->inflight == 0) && (delta > 0)) {
        aio->busy_since = zsh_clock_now();
    }
    aio->inflight = (unsigned)((int)aio->inflight + delta);
    if (aio->inflight == 0) {
        aio->stats.busy_s += zsh_clock_now() - aio->busy_since;
    }
}

static void zsh_aio_queue_pop(zsh_aio_t *aio)
{
    zsh_aio_req_t *req = aio->head;

    aio->head = req->next;
    if (aio->head == NULL) {
        aio->tail = NULL;
    }
    req->next   = NULL;
    req->queued = false;
    zsh_aio_req_maybe_done(aio, req);
}

/* The next piece of the queued requests, or NULL; under the lock. A failed
 * request carves nothing more: what it has in flight still finishes. */
static zsh_aio_piece_t *zsh_aio_carve(zsh_aio_t *aio)
{
    zsh_aio_piece_t *p;
    zsh_aio_req_t *req;
    size_t len;

    while ((req = aio->head) != NULL) {
        if (req->failed || (req->carved == req->len)) {
            zsh_aio_queue_pop(aio);
            continue;
        }
        p                = aio->free_pieces;
        aio->free_pieces = p->next;
        len              = req->len - req->carved;
        if (len > aio->block) {
            len = aio->block;
        }
        *p = (zsh_aio_piece_t){.req    = req,
                               .fd     = req->file->fd,
                               .write  = req->write,
                               .offset = req->offset + req->carved,
                               .buf    = req->buf + req->carved,
                               .len    = len};
        req->carved += len;
        req->pending++;
        zsh_aio_inflight_add(aio, 1);
        if (req->carved == req->len) {
            zsh_aio_queue_pop(aio);
        }
        return p;
    }
    return NULL;
}

static void zsh_aio_fail(zsh_aio_req_t *req, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void zsh_aio_fail(zsh_aio_req_t *req, const char *fmt, ...)
{
    va_list ap;

    if (req->failed) {
        return; /* the first failure is the one reported */
    }
    req->failed = true;
    va_start(ap, fmt);
    vsnprintf(req->msg, sizeof(req->msg), fmt, ap);
    va_end(ap);
}

/* What the fault hook makes of a piece that went well; under the lock. */
static ssize_t zsh_aio_injected(zsh_aio_t *aio, const zsh_aio_piece_t *p, ssize_t res)
{
    zsh_aio_fault_state_t *f = &aio->inject;

    if ((f->fault == ZSH_AIO_FAULT_NONE) || (f->writes != p->write) || (res < 0)) {
        return res;
    }
    if (f->after > 0) {
        f->after--;
        return res;
    }
    switch (f->fault) {
    case ZSH_AIO_FAULT_EIO:    return -EIO;
    case ZSH_AIO_FAULT_ENOSPC: return p->write ? -ENOSPC : res;
    case ZSH_AIO_FAULT_SHORT:  return p->write ? res : res / 2;
    case ZSH_AIO_FAULT_NONE:   break;
    }
    return res;
}

/* Account a finished piece; under the lock. A short write goes again for
 * the rest (the disk says why it stopped on the next try); a short read
 * fails the request. */
static void zsh_aio_finish(zsh_aio_t *aio, zsh_aio_piece_t *p)
{
    zsh_aio_req_t *req = p->req;
    const char *path   = req->file->path;
    const char *what   = p->write ? "write" : "read";
    ssize_t res        = zsh_aio_injected(aio, p, p->result);

    if (res == (ssize_t)p->len) {
        *(p->write ? &aio->stats.write_bytes : &aio->stats.read_bytes) += p->len;
    } else if (res < 0) {
        zsh_aio_fail(req, "%s of %s at offset %llu, length %zu failed: %s", what, path,
                     (unsigned long long)p->offset, p->len, strerror((int)-res));
    } else if (!p->write) {
        zsh_aio_fail(req, "short read of %s at offset %llu: got %zd of %zu bytes", path,
                     (unsigned long long)p->offset, res, p->len);
    } else if ((res > 0) && (!req->file->direct || ((res % ZSH_AIO_ALIGN) == 0))) {
        aio->stats.write_bytes += (uint64_t)res;
        p->offset += (uint64_t)res;
        p->buf += res;
        p->len -= (size_t)res;
        p->next    = aio->retry;
        aio->retry = p;
        return;
    } else {
        zsh_aio_fail(req, "short write of %s at offset %llu: wrote %zd of %zu bytes", path,
                     (unsigned long long)p->offset, res, p->len);
    }
    req->pending--;
    zsh_aio_req_maybe_done(aio, req);
    p->next          = aio->free_pieces;
    aio->free_pieces = p;
    zsh_aio_inflight_add(aio, -1);
}

static void *zsh_aio_progress_main(void *arg)
{
    zsh_aio_t *aio = arg;
    zsh_aio_piece_t **batch = aio->batch, **done = aio->done;
    struct pollfd pfd = {.fd = aio->efd, .events = POLLIN};
    unsigned n, taken, m, i;
    uint64_t count;

    pthread_mutex_lock(&aio->lock);
    for (;;) {
        n = 0;
        while ((aio->retry != NULL) && (n < aio->depth)) {
            batch[n++] = aio->retry;
            aio->retry = aio->retry->next;
        }
        while ((aio->inflight < aio->depth) && (n < aio->depth) &&
               ((batch[n] = zsh_aio_carve(aio)) != NULL)) {
            n++;
        }
        if (aio->stop && (aio->inflight == 0) && (aio->head == NULL)) {
            break;
        }
        pthread_mutex_unlock(&aio->lock);

        taken = (n > 0) ? aio->ops->submit(aio->be, batch, n) : 0;
        pthread_mutex_lock(&aio->lock);
        for (i = n; i > taken; i--) { /* offered again, in order */
            batch[i - 1]->next = aio->retry;
            aio->retry         = batch[i - 1];
        }
        pthread_mutex_unlock(&aio->lock);

        /* Refused pieces are offered again after a moment; otherwise sleep
         * until a completion or a caller adds to the eventfd. */
        if (poll(&pfd, 1, (aio->retry != NULL) ? 1 : -1) > 0) {
            (void)!read(aio->efd, &count, sizeof(count));
        }
        pthread_mutex_lock(&aio->lock);
        while ((m = aio->ops->reap(aio->be, done, aio->depth)) > 0) {
            for (i = 0; i < m; i++) {
                zsh_aio_finish(aio, done[i]);
            }
        }
    }
    pthread_mutex_unlock(&aio->lock);
    return NULL;
}

zsh_status_t zsh_aio_progress_start(zsh_aio_t *aio)
{
    int ret;

    ret = pthread_create(&aio->thread, NULL, zsh_aio_progress_main, aio);
    if (ret != 0) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot start the I/O engine's progress thread: %s",
                         strerror(ret));
    }
    return ZSH_OK;
}

void zsh_aio_progress_stop(zsh_aio_t *aio)
{
    pthread_mutex_lock(&aio->lock);
    aio->stop = true;
    pthread_mutex_unlock(&aio->lock);
    zsh_aio_progress_wake(aio);
    pthread_join(aio->thread, NULL);
}
