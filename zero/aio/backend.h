/*
 * The I/O engine's backends: io_uring, libaio and a thread pool behind one
 * table of operations, and the probe zsh_info uses to say which one AUTO
 * takes on this machine.
 *
 * A backend is driven by the engine's progress thread alone: it submits
 * pieces and reaps the finished ones, never blocking in either. Each
 * finished piece adds to the engine's eventfd (io_uring registers it with
 * the ring, libaio sets it on every iocb, the thread pool writes it), so the
 * progress thread sleeps in poll() on that one descriptor, which callers
 * also write to when they queue work.
 */
#ifndef ZSH_AIO_BACKEND_H_
#define ZSH_AIO_BACKEND_H_

/* Every file that sees zsh_aio_piece_t sees the same ZSH_HAVE_LIBAIO. */
#include <config.h>

#include "aio/aio.h"

#include <stddef.h>
#include <sys/types.h>

#ifdef ZSH_HAVE_LIBAIO
#include <libaio.h>
#endif

/* One block-sized piece of a request, in flight or being submitted. */
typedef struct zsh_aio_piece {
    struct zsh_aio_piece *next;   /* the list it is on (free, retry, a backend's queue) */
    zsh_aio_req_t        *req;
    int                   fd;
    int                   write;
    uint64_t              offset;
    char                 *buf;
    size_t                len;
    ssize_t               result; /* bytes moved, or -errno */
#ifdef ZSH_HAVE_LIBAIO
    struct iocb           iocb;
#endif
} zsh_aio_piece_t;

typedef struct zsh_aio_backend_ops {
    const char *name;
    /* Set *@state_p up for @depth pieces in flight signalling @efd; 0 or -errno. */
    int  (*init)(unsigned depth, unsigned threads, int efd, void **state_p);
    void (*fini)(void *state);
    /* Start @n pieces; returns how many it took (the rest are offered again
     * later). A piece refused outright gets its -errno in result and comes
     * back through reap. */
    unsigned (*submit)(void *state, zsh_aio_piece_t **pieces, unsigned n);
    /* Up to @max finished pieces into @done, without blocking. */
    unsigned (*reap)(void *state, zsh_aio_piece_t **done, unsigned max);
} zsh_aio_backend_ops_t;

extern const zsh_aio_backend_ops_t zsh_aio_uring_ops;   /* NULL init where not built */
extern const zsh_aio_backend_ops_t zsh_aio_libaio_ops;
extern const zsh_aio_backend_ops_t zsh_aio_threads_ops;

/* The backend of @kind (not AUTO) and whether this build has it. */
const zsh_aio_backend_ops_t *zsh_aio_backend_ops(zsh_aio_kind_t kind);

/* Whether the backend of @kind is built and the kernel lets it start: 0, or
 * -errno with @why saying what refused it ("not in this build (configure
 * found no liburing)", "io_uring_queue_init: Operation not permitted"). */
int zsh_aio_probe(zsh_aio_kind_t kind, char *why, size_t len);

/* The backend ZSH_AIO=auto takes here; @why lists the ones passed over and
 * why (empty when the first was taken). */
zsh_aio_kind_t zsh_aio_probe_auto(char *why, size_t len);

/* "uring", "aio", "threads": the values ZSH_AIO takes. */
const char *zsh_aio_kind_name(zsh_aio_kind_t kind);

#endif
