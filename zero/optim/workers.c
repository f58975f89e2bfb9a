#include "optim/workers.h"

#include "core/status.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct zsh_workers {
    int              nthreads;   /* the caller's included */
    pthread_t       *tids;       /* nthreads - 1 */
    int              started;
    pthread_mutex_t  lock;
    pthread_cond_t   go, done;
    unsigned long    gen;        /* bumped by each run, under lock */
    int              nparts;
    int              pending;    /* parts of this run not yet returned */
    zsh_workers_fn_t fn;
    void            *arg;
    int              stop;
};

typedef struct {
    zsh_workers_t *w;
    int            part;
} zsh_worker_arg_t;

static void *zsh_worker_main(void *p)
{
    zsh_workers_t *w = ((zsh_worker_arg_t *)p)->w;
    int part         = ((zsh_worker_arg_t *)p)->part;
    unsigned long seen = 0;

    free(p);
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->stop && (w->gen == seen)) {
            pthread_cond_wait(&w->go, &w->lock);
        }
        if (w->stop) {
            break;
        }
        seen = w->gen;
        if (part >= w->nparts) {
            continue; /* this run has fewer parts than threads */
        }
        pthread_mutex_unlock(&w->lock);
        w->fn(w->arg, part, w->nparts);
        pthread_mutex_lock(&w->lock);
        if (--w->pending == 0) {
            pthread_cond_signal(&w->done);
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

zsh_status_t zsh_workers_create(int nthreads, zsh_workers_t **w_p)
{
    zsh_worker_arg_t *a;
    zsh_workers_t *w;
    int i, rc;

    if (nthreads < 1) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "update threads: %d, expected at least 1",
                         nthreads);
    }
    w = calloc(1, sizeof(*w));
    if ((w == NULL) ||
        ((nthreads > 1) && ((w->tids = calloc((size_t)nthreads - 1, sizeof(pthread_t))) == NULL))) {
        free(w);
        return zsh_error(ZSH_ERR_NO_MEMORY, "update threads: out of memory");
    }
    w->nthreads = nthreads;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->go, NULL);
    pthread_cond_init(&w->done, NULL);
    for (i = 1; i < nthreads; i++) {
        a  = malloc(sizeof(*a));
        rc = (a == NULL) ? ENOMEM : 0;
        if (a != NULL) {
            a->w    = w;
            a->part = i;
            rc      = pthread_create(&w->tids[i - 1], NULL, zsh_worker_main, a);
        }
        if (rc != 0) {
            free(a);
            zsh_workers_destroy(w);
            return zsh_error(ZSH_ERR_NO_MEMORY, "update threads: cannot start thread %d of %d: %s",
                             i + 1, nthreads, strerror(rc));
        }
        w->started++;
    }
    *w_p = w;
    return ZSH_OK;
}

void zsh_workers_destroy(zsh_workers_t *w)
{
    int i;

    if (w == NULL) {
        return;
    }
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_broadcast(&w->go);
    pthread_mutex_unlock(&w->lock);
    for (i = 0; i < w->started; i++) {
        pthread_join(w->tids[i], NULL);
    }
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->go);
    pthread_mutex_destroy(&w->lock);
    free(w->tids);
    free(w);
}

int zsh_workers_count(const zsh_workers_t *w)
{
    return (w == NULL) ? 1 : w->nthreads;
}

void zsh_workers_run(zsh_workers_t *w, int nparts, zsh_workers_fn_t fn, void *arg)
{
    if ((w == NULL) || (nparts <= 1)) {
        fn(arg, 0, 1);
        return;
    }
    if (nparts > w->nthreads) {
        nparts = w->nthreads;
    }
    pthread_mutex_lock(&w->lock);
    w->fn      = fn;
    w->arg     = arg;
    w->nparts  = nparts;
    w->pending = nparts - 1;
    w->gen++;
    pthread_cond_broadcast(&w->go);
    pthread_mutex_unlock(&w->lock);
    fn(arg, 0, nparts);
    pthread_mutex_lock(&w->lock);
    while (w->pending > 0) {
        pthread_cond_wait(&w->done, &w->lock);
    }
    pthread_mutex_unlock(&w->lock);
}
