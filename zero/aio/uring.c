/*
 * The io_uring backend, through liburing. The ring is sized to the queue
 * depth, so a free submission entry is always there for a piece the engine
 * lets into flight; the engine's eventfd is registered with the ring, so
 * every completion wakes the progress thread.
 */
#include <config.h>

#include "aio/backend.h"

#ifdef ZSH_HAVE_LIBURING

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>

static int zsh_aio_uring_init(unsigned depth, unsigned threads, int efd, void **state_p)
{
    struct io_uring *ring;
    int ret;

    (void)threads;
    ring = calloc(1, sizeof(*ring));
    if (ring == NULL) {
        return -ENOMEM;
    }
    ret = io_uring_queue_init(depth, ring, 0);
    if (ret < 0) {
        free(ring);
        return ret;
    }
    if (efd >= 0) {
        ret = io_uring_register_eventfd(ring, efd);
        if (ret < 0) {
            io_uring_queue_exit(ring);
            free(ring);
            return ret;
        }
    }
    *state_p = ring;
    return 0;
}

static void zsh_aio_uring_fini(void *state)
{
    io_uring_queue_exit(state);
    free(state);
}

static unsigned zsh_aio_uring_submit(void *state, zsh_aio_piece_t **pieces, unsigned n)
{
    struct io_uring *ring = state;
    struct io_uring_sqe *sqe;
    unsigned i;
    int ret;

    for (i = 0; i < n; i++) {
        sqe = io_uring_get_sqe(ring);
        if (sqe == NULL) {
            break;
        }
        if (pieces[i]->write) {
            io_uring_prep_write(sqe, pieces[i]->fd, pieces[i]->buf, (unsigned)pieces[i]->len,
                                pieces[i]->offset);
        } else {
            io_uring_prep_read(sqe, pieces[i]->fd, pieces[i]->buf, (unsigned)pieces[i]->len,
                               pieces[i]->offset);
        }
        io_uring_sqe_set_data(sqe, pieces[i]);
    }
    /* Entries the kernel does not take now stay in the ring and go with the
     * next submit, so every prepared piece counts as taken. */
    do {
        ret = io_uring_submit(ring);
    } while (ret == -EINTR);
    return i;
}

static unsigned zsh_aio_uring_reap(void *state, zsh_aio_piece_t **done, unsigned max)
{
    struct io_uring *ring = state;
    struct io_uring_cqe *cqe;
    unsigned n = 0;

    if (io_uring_sq_ready(ring) > 0) {
        (void)io_uring_submit(ring);
    }
    while ((n < max) && (io_uring_peek_cqe(ring, &cqe) == 0)) {
        done[n] = io_uring_cqe_get_data(cqe);
        done[n]->result = cqe->res;
        io_uring_cqe_seen(ring, cqe);
        n++;
    }
    return n;
}

const zsh_aio_backend_ops_t zsh_aio_uring_ops = {"io_uring", zsh_aio_uring_init,
                                                 zsh_aio_uring_fini, zsh_aio_uring_submit,
                                                 zsh_aio_uring_reap};

#else

const zsh_aio_backend_ops_t zsh_aio_uring_ops = {"io_uring", NULL, NULL, NULL, NULL};

#endif
