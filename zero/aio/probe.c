/*
 * Which backends this build has and which ones the kernel lets start: the
 * engine's choice under ZSH_AIO=auto, and what zsh_info -f prints.
 */
#include <config.h>

#include "aio/backend.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

const zsh_aio_backend_ops_t *zsh_aio_backend_ops(zsh_aio_kind_t kind)
{
    switch (kind) {
    case ZSH_AIO_URING:   return &zsh_aio_uring_ops;
    case ZSH_AIO_LIBAIO:  return &zsh_aio_libaio_ops;
    case ZSH_AIO_THREADS: return &zsh_aio_threads_ops;
    case ZSH_AIO_AUTO:    break;
    }
    return NULL;
}

int zsh_aio_probe(zsh_aio_kind_t kind, char *why, size_t len)
{
    const zsh_aio_backend_ops_t *ops = zsh_aio_backend_ops(kind);
    void *state;
    int ret;

    if (ops == NULL) {
        snprintf(why, len, "no such backend");
        return -EINVAL;
    }
    if (ops->init == NULL) {
        snprintf(why, len, "not in this build (configure found no %s)",
                 (kind == ZSH_AIO_URING) ? "liburing" : "libaio");
        return -ENOSYS;
    }
    ret = ops->init(4, 1, -1, &state);
    if (ret < 0) {
        snprintf(why, len, "%s: %s",
                 (kind == ZSH_AIO_URING) ? "io_uring_queue_init" :
                 (kind == ZSH_AIO_LIBAIO) ? "io_setup" : "pthread_create",
                 strerror(-ret));
        return ret;
    }
    ops->fini(state);
    if (len > 0) {
        why[0] = '\0';
    }
    return 0;
}

zsh_aio_kind_t zsh_aio_probe_auto(char *why, size_t len)
{
    static const zsh_aio_kind_t order[] = {ZSH_AIO_URING, ZSH_AIO_LIBAIO};
    char one[160];
    size_t used = 0;
    unsigned i;

    if (len > 0) {
        why[0] = '\0';
    }
    for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        if (zsh_aio_probe(order[i], one, sizeof(one)) == 0) {
            return order[i];
        }
        if (used < len) {
            used += (size_t)snprintf(why + used, len - used, "%s%s: %s", (i > 0) ? "; " : "",
                                     zsh_aio_backend_ops(order[i])->name, one);
        }
    }
    return ZSH_AIO_THREADS;
}
