/*
 * The engine: create and destroy, the backend it takes, and where its
 * files live. The directory is in dir.c, files in file.c, requests in
 * request.c and the thread that moves them in progress.c.
 */
#include "aio/aio_impl.h"
#include "core/log.h"
#include "core/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Start the backend of @kind, or under AUTO the first that starts. */
static zsh_status_t zsh_aio_backend_start(zsh_aio_t *aio, zsh_aio_kind_t kind, unsigned threads)
{
    static const zsh_aio_kind_t order[] = {ZSH_AIO_URING, ZSH_AIO_LIBAIO, ZSH_AIO_THREADS};
    char why[256] = "";
    size_t used = 0;
    unsigned i;
    int ret;

    for (i = 0; i < 3; i++) {
        const zsh_aio_backend_ops_t *ops = zsh_aio_backend_ops(order[i]);

        if ((kind != ZSH_AIO_AUTO) && (kind != order[i])) {
            continue;
        }
        ret = (ops->init == NULL) ? -ENOSYS : ops->init(aio->depth, threads, aio->efd, &aio->be);
        if (ret == 0) {
            aio->ops  = ops;
            aio->kind = order[i];
            if (why[0] != '\0') {
                zsh_log(ZSH_LOG_INFO, "NVMe I/O engine: %s (passed over %s)", ops->name, why);
            }
            return ZSH_OK;
        }
        if (ops->init == NULL) {
            snprintf(why + used, sizeof(why) - used, "%s%s: not in this build (configure found "
                     "no %s)", (used > 0) ? "; " : "", ops->name,
                     (order[i] == ZSH_AIO_URING) ? "liburing" : "libaio");
        } else {
            snprintf(why + used, sizeof(why) - used, "%s%s: %s: %s", (used > 0) ? "; " : "",
                     ops->name,
                     (order[i] == ZSH_AIO_URING) ? "io_uring_queue_init" :
                     (order[i] == ZSH_AIO_LIBAIO) ? "io_setup" : "pthread_create",
                     strerror(-ret));
        }
        used = strlen(why);
    }
    return zsh_error(ZSH_ERR_INVALID_ARG, "ZSH_AIO=%s cannot be used: %s",
                     zsh_aio_kind_name(kind), why);
}

zsh_status_t zsh_aio_create(const zsh_aio_params_t *params, zsh_aio_t **aio_p)
{
    zsh_aio_fault_state_t fault;
    zsh_aio_config_t cfg;
    zsh_status_t status;
    zsh_aio_t *aio;
    unsigned i;

    if ((params == NULL) || (aio_p == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_aio_create: NULL parameters or engine");
    }
    if ((unsigned)params->kind > ZSH_AIO_THREADS) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_aio_create: unknown backend %d",
                         (int)params->kind);
    }
    status = zsh_aio_config_read(&cfg, &fault);
    if (status != ZSH_OK) {
        return status;
    }
    if (params->queue_depth > 1024) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_aio_create: queue depth %u is above 1024",
                         params->queue_depth);
    }
    if ((params->block_size % ZSH_AIO_ALIGN) != 0) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_aio_create: block size %zu is not a multiple of %d bytes",
                         params->block_size, ZSH_AIO_ALIGN);
    }
    aio = calloc(1, sizeof(*aio));
    if (aio == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_aio_create: no memory");
    }
    aio->depth   = (params->queue_depth > 0) ? params->queue_depth : cfg.queue_depth;
    aio->block   = (params->block_size > 0) ? params->block_size : cfg.block_size;
    aio->inject  = fault;
    aio->lock_fd = -1;
    aio->pieces  = calloc(aio->depth, sizeof(*aio->pieces));
    aio->batch   = calloc(aio->depth, sizeof(*aio->batch));
    aio->done    = calloc(aio->depth, sizeof(*aio->done));
    if ((aio->pieces == NULL) || (aio->batch == NULL) || (aio->done == NULL)) {
        status = zsh_error(ZSH_ERR_NO_MEMORY, "zsh_aio_create: no memory for %u pieces",
                           aio->depth);
        goto err_free;
    }
    for (i = 0; i < aio->depth; i++) {
        aio->pieces[i].next = aio->free_pieces;
        aio->free_pieces    = &aio->pieces[i];
    }
    status = (params->dir == NULL) ? ZSH_OK
                                   : zsh_aio_dir_create(aio, params->dir, params->job_id,
                                                        params->rank);
    if (status != ZSH_OK) {
        goto err_free;
    }
    aio->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (aio->efd < 0) {
        status = zsh_error(ZSH_ERR_IO, "zsh_aio_create: eventfd: %s", strerror(errno));
        goto err_dir;
    }
    status = zsh_aio_backend_start(aio, (params->kind != ZSH_AIO_AUTO) ?
                                            params->kind : (zsh_aio_kind_t)cfg.kind,
                                   cfg.threads);
    if (status != ZSH_OK) {
        goto err_efd;
    }
    pthread_mutex_init(&aio->lock, NULL);
    pthread_cond_init(&aio->done_cv, NULL);
    status = zsh_aio_progress_start(aio);
    if (status != ZSH_OK) {
        goto err_backend;
    }
    zsh_log(ZSH_LOG_DEBUG, "NVMe I/O engine: %s in %s, %u pieces of %zu bytes in flight",
            aio->ops->name, (aio->dir != NULL) ? aio->dir : "files by path", aio->depth,
            aio->block);
    *aio_p = aio;
    return ZSH_OK;

err_backend:
    pthread_cond_destroy(&aio->done_cv);
    pthread_mutex_destroy(&aio->lock);
    aio->ops->fini(aio->be);
err_efd:
    close(aio->efd);
err_dir:
    zsh_aio_dir_remove(aio);
err_free:
    free(aio->done);
    free(aio->batch);
    free(aio->pieces);
    free(aio);
    return status;
}

void zsh_aio_destroy(zsh_aio_t *aio)
{
    zsh_aio_file_t *file;

    if (aio == NULL) {
        return;
    }
    zsh_aio_progress_stop(aio);
    zsh_aio_req_orphan_all(aio);
    aio->ops->fini(aio->be);
    while ((file = aio->files) != NULL) {
        aio->files = file->next;
        close(file->fd);
        if (!file->keep && (unlink(file->path) != 0) && (errno != ENOENT)) {
            zsh_log(ZSH_LOG_WARN, "cannot remove %s: %s", file->path, strerror(errno));
        }
        free(file);
    }
    zsh_aio_dir_remove(aio);
    close(aio->efd);
    pthread_cond_destroy(&aio->done_cv);
    pthread_mutex_destroy(&aio->lock);
    free(aio->done);
    free(aio->batch);
    free(aio->pieces);
    free(aio);
}

const char *zsh_aio_backend(const zsh_aio_t *aio)
{
    return aio->ops->name;
}

const char *zsh_aio_dir(const zsh_aio_t *aio)
{
    return aio->dir;
}
