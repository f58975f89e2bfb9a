#include "harness/inproc.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * Rounds alternate between two slots. A rank reaches round k + 2 only after
 * every rank arrived at round k + 1, and a rank arrives there only after it
 * read round k, so slot k % 2 is never reused while still being read.
 */
typedef struct zsh_inproc_slot {
    char  *buf;
    size_t len;
    int    arrived, departed;
} zsh_inproc_slot_t;

typedef struct zsh_inproc_member {
    zsh_inproc_job_t *job;
    int               rank;
    unsigned          round;
} zsh_inproc_member_t;

struct zsh_inproc_job {
    pthread_mutex_t      lock;
    int                  size;
    zsh_inproc_slot_t    slots[2];
    zsh_inproc_member_t *members;
};

typedef struct zsh_inproc_req {
    zsh_inproc_member_t *member;
    zsh_inproc_slot_t   *slot;
    void                *recv;
} zsh_inproc_req_t;

static zsh_status_t zsh_inproc_allgather(const void *send, void *recv, size_t len, void *ctx,
                                         void **req_p)
{
    zsh_inproc_member_t *member = ctx;
    zsh_inproc_job_t *job       = member->job;
    zsh_inproc_slot_t *slot     = &job->slots[member->round++ % 2];
    zsh_inproc_req_t *req;

    req = malloc(sizeof(*req));
    if (req == NULL) {
        return ZSH_ERR_NO_MEMORY;
    }
    pthread_mutex_lock(&job->lock);
    if (slot->arrived == 0) {
        free(slot->buf);
        slot->buf = calloc((size_t)job->size, len ? len : 1);
        slot->len = len;
    }
    memcpy(slot->buf + (size_t)member->rank * len, send, len);
    slot->arrived++;
    pthread_mutex_unlock(&job->lock);
    req->member = member;
    req->slot   = slot;
    req->recv   = recv;
    *req_p      = req;
    return ZSH_OK;
}

static zsh_status_t zsh_inproc_test(void *ptr)
{
    zsh_inproc_req_t *req = ptr;
    zsh_inproc_job_t *job = req->member->job;
    zsh_status_t status   = ZSH_INPROGRESS;

    pthread_mutex_lock(&job->lock);
    if (req->slot->arrived == job->size) {
        memcpy(req->recv, req->slot->buf, req->slot->len * (size_t)job->size);
        if (++req->slot->departed == job->size) {
            req->slot->arrived = req->slot->departed = 0;
        }
        status = ZSH_OK;
    }
    pthread_mutex_unlock(&job->lock);
    return status;
}

static void zsh_inproc_free(void *req)
{
    free(req);
}

zsh_inproc_job_t *zsh_inproc_job_create(int nranks)
{
    zsh_inproc_job_t *job = calloc(1, sizeof(*job));
    int i;

    job->size    = nranks;
    job->members = calloc((size_t)nranks, sizeof(*job->members));
    pthread_mutex_init(&job->lock, NULL);
    for (i = 0; i < nranks; i++) {
        job->members[i].job  = job;
        job->members[i].rank = i;
    }
    return job;
}

void zsh_inproc_job_destroy(zsh_inproc_job_t *job)
{
    free(job->slots[0].buf);
    free(job->slots[1].buf);
    free(job->members);
    pthread_mutex_destroy(&job->lock);
    free(job);
}

zsh_oob_t zsh_inproc_oob(zsh_inproc_job_t *job, int rank)
{
    zsh_oob_t oob = {rank, job->size, &job->members[rank], zsh_inproc_allgather,
                     zsh_inproc_test, zsh_inproc_free};
    return oob;
}

typedef struct zsh_inproc_thread {
    zsh_inproc_job_t *job;
    int               rank;
    zsh_inproc_init_t init;
    void             *init_arg;
    void            (*fn)(zsh_comm_t *comm, void *arg);
    void             *arg;
} zsh_inproc_thread_t;

static zsh_status_t zsh_inproc_init_oob(const zsh_oob_t *oob, void *arg, zsh_comm_t **comm_p)
{
    (void)arg;
    return zsh_comm_init_oob(oob, comm_p);
}

static void *zsh_inproc_main(void *ptr)
{
    zsh_inproc_thread_t *t = ptr;
    zsh_oob_t oob          = zsh_inproc_oob(t->job, t->rank);
    zsh_comm_t *comm;
    zsh_status_t status;

    zsh_test_set_rank(t->rank);
    status = t->init(&oob, t->init_arg, &comm);
    if (status != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "communicator creation: %s: %s",
                      zsh_status_string(status), zsh_last_error());
        return NULL;
    }
    t->fn(comm, t->arg);
    status = zsh_comm_destroy(comm);
    if (status != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "zsh_comm_destroy: %s: %s", zsh_status_string(status),
                      zsh_last_error());
    }
    return NULL;
}

void zsh_inproc_run(int nranks, void (*fn)(zsh_comm_t *comm, void *arg), void *arg)
{
    zsh_inproc_run_with(nranks, zsh_inproc_init_oob, NULL, fn, arg);
}

void zsh_inproc_run_with(int nranks, zsh_inproc_init_t init, void *init_arg,
                         void (*fn)(zsh_comm_t *comm, void *arg), void *arg)
{
    zsh_inproc_job_t *job     = zsh_inproc_job_create(nranks);
    zsh_inproc_thread_t *args = calloc((size_t)nranks, sizeof(*args));
    pthread_t *threads        = calloc((size_t)nranks, sizeof(*threads));
    int i;

    for (i = 0; i < nranks; i++) {
        args[i] = (zsh_inproc_thread_t){job, i, init, init_arg, fn, arg};
        pthread_create(&threads[i], NULL, zsh_inproc_main, &args[i]);
    }
    for (i = 0; i < nranks; i++) {
        pthread_join(threads[i], NULL);
    }
    free(threads);
    free(args);
    zsh_inproc_job_destroy(job);
}
