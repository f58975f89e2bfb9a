/*
 * The thread-pool backend: a few threads doing pread()/pwrite(), for where
 * the kernel refuses io_uring and libaio (or the build has neither). A
 * finished piece goes on the done list and adds to the engine's eventfd.
 */
#include "aio/backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct {
    pthread_mutex_t  lock;
    pthread_cond_t   cv;
    zsh_aio_piece_t *todo, *todo_tail;
    zsh_aio_piece_t *done;
    bool             stop;
    int              efd;
    unsigned         nthreads;
    pthread_t        threads[];
} zsh_aio_threads_t;

static void zsh_aio_threads_io(zsh_aio_piece_t *p)
{
    ssize_t ret;

    do {
        ret = p->write ? pwrite(p->fd, p->buf, p->len, (off_t)p->offset)
                       : pread(p->fd, p->buf, p->len, (off_t)p->offset);
    } while ((ret < 0) && (errno == EINTR));
    p->result = (ret < 0) ? -errno : ret;
}

static void *zsh_aio_threads_main(void *arg)
{
    zsh_aio_threads_t *s = arg;
    zsh_aio_piece_t *p;
    uint64_t one = 1;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        while ((s->todo == NULL) && !s->stop) {
            pthread_cond_wait(&s->cv, &s->lock);
        }
        if (s->todo == NULL) {
            break;
        }
        p       = s->todo;
        s->todo = p->next;
        pthread_mutex_unlock(&s->lock);

        zsh_aio_threads_io(p);

        pthread_mutex_lock(&s->lock);
        p->next = s->done;
        s->done = p;
        if (s->efd >= 0) {
            (void)!write(s->efd, &one, sizeof(one));
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void zsh_aio_threads_fini(void *state)
{
    zsh_aio_threads_t *s = state;
    unsigned i;

    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->lock);
    for (i = 0; i < s->nthreads; i++) {
        pthread_join(s->threads[i], NULL);
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static int zsh_aio_threads_init(unsigned depth, unsigned threads, int efd, void **state_p)
{
    zsh_aio_threads_t *s;
    int ret;

    (void)depth;
    s = calloc(1, sizeof(*s) + threads * sizeof(pthread_t));
    if (s == NULL) {
        return -ENOMEM;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->efd = efd;
    for (s->nthreads = 0; s->nthreads < threads; s->nthreads++) {
        ret = pthread_create(&s->threads[s->nthreads], NULL, zsh_aio_threads_main, s);
        if (ret != 0) {
            zsh_aio_threads_fini(s);
            return -ret;
        }
    }
    *state_p = s;
    return 0;
}

static unsigned zsh_aio_threads_submit(void *state, zsh_aio_piece_t **pieces, unsigned n)
{
    zsh_aio_threads_t *s = state;
    unsigned i;

    pthread_mutex_lock(&s->lock);
    for (i = 0; i < n; i++) {
        pieces[i]->next = NULL;
        if (s->todo == NULL) {
            s->todo = pieces[i];
        } else {
            s->todo_tail->next = pieces[i];
        }
        s->todo_tail = pieces[i];
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->lock);
    return n;
}

static unsigned zsh_aio_threads_reap(void *state, zsh_aio_piece_t **done, unsigned max)
{
    zsh_aio_threads_t *s = state;
    unsigned n = 0;

    pthread_mutex_lock(&s->lock);
    while ((n < max) && (s->done != NULL)) {
        done[n++] = s->done;
        s->done   = s->done->next;
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

const zsh_aio_backend_ops_t zsh_aio_threads_ops = {"threads", zsh_aio_threads_init,
                                                   zsh_aio_threads_fini, zsh_aio_threads_submit,
                                                   zsh_aio_threads_reap};
