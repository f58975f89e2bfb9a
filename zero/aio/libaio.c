/*
 * The libaio backend: io_submit() and io_getevents() on a context sized to
 * the queue depth. Each iocb carries the engine's eventfd, so a completion
 * wakes the progress thread. On filesystems without O_DIRECT (tmpfs) the
 * kernel does the I/O inside io_submit(), which still works, only without
 * overlap.
 */
#include <config.h>

#include "aio/backend.h"

#ifdef ZSH_HAVE_LIBAIO

#include <errno.h>
#include <stdlib.h>

typedef struct {
    io_context_t     ctx;
    int              efd;
    zsh_aio_piece_t *failed; /* refused by io_submit(): handed back by reap */
    struct iocb    **iocbs;
    struct io_event *events;
    unsigned         depth;
} zsh_aio_libaio_t;

static int zsh_aio_libaio_init(unsigned depth, unsigned threads, int efd, void **state_p)
{
    zsh_aio_libaio_t *s;
    int ret;

    (void)threads;
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return -ENOMEM;
    }
    s->iocbs  = calloc(depth, sizeof(*s->iocbs));
    s->events = calloc(depth, sizeof(*s->events));
    if ((s->iocbs == NULL) || (s->events == NULL)) {
        ret = -ENOMEM;
        goto err_free;
    }
    ret = io_setup((int)depth, &s->ctx); /* libaio returns -errno */
    if (ret < 0) {
        goto err_free;
    }
    s->efd   = efd;
    s->depth = depth;
    *state_p = s;
    return 0;

err_free:
    free(s->events);
    free(s->iocbs);
    free(s);
    return ret;
}

static void zsh_aio_libaio_fini(void *state)
{
    zsh_aio_libaio_t *s = state;

    io_destroy(s->ctx);
    free(s->events);
    free(s->iocbs);
    free(s);
}

static unsigned zsh_aio_libaio_submit(void *state, zsh_aio_piece_t **pieces, unsigned n)
{
    zsh_aio_libaio_t *s = state;
    unsigned i, taken = 0;
    int ret;

    for (i = 0; i < n; i++) {
        zsh_aio_piece_t *p = pieces[i];

        if (p->write) {
            io_prep_pwrite(&p->iocb, p->fd, p->buf, p->len, (long long)p->offset);
        } else {
            io_prep_pread(&p->iocb, p->fd, p->buf, p->len, (long long)p->offset);
        }
        if (s->efd >= 0) {
            io_set_eventfd(&p->iocb, s->efd);
        }
        p->iocb.data = p;
        s->iocbs[i] = &p->iocb;
    }
    while (taken < n) {
        ret = io_submit(s->ctx, (long)(n - taken), s->iocbs + taken);
        if (ret > 0) {
            taken += (unsigned)ret;
        } else if ((ret == -EAGAIN) || (ret == 0)) {
            break; /* the rest is offered again once pieces finish */
        } else if (ret != -EINTR) {
            /* The first iocb was refused (-EINVAL, -EBADF): it fails alone. */
            pieces[taken]->result = ret;
            pieces[taken]->next   = s->failed;
            s->failed             = pieces[taken];
            taken++;
        }
    }
    return taken;
}

static unsigned zsh_aio_libaio_reap(void *state, zsh_aio_piece_t **done, unsigned max)
{
    zsh_aio_libaio_t *s = state;
    struct timespec zero = {0, 0};
    unsigned n = 0;
    int ret, i;

    while ((n < max) && (s->failed != NULL)) {
        done[n++] = s->failed;
        s->failed = s->failed->next;
    }
    if (n == max) {
        return n;
    }
    do {
        ret = io_getevents(s->ctx, 0, (long)(max - n), s->events, &zero);
    } while (ret == -EINTR);
    for (i = 0; i < ret; i++) {
        zsh_aio_piece_t *p = s->events[i].data;

        p->result = (ssize_t)(long)s->events[i].res;
        done[n++] = p;
    }
    return n;
}

const zsh_aio_backend_ops_t zsh_aio_libaio_ops = {"libaio", zsh_aio_libaio_init,
                                                  zsh_aio_libaio_fini, zsh_aio_libaio_submit,
                                                  zsh_aio_libaio_reap};

#else

const zsh_aio_backend_ops_t zsh_aio_libaio_ops = {"libaio", NULL, NULL, NULL, NULL};

#endif
