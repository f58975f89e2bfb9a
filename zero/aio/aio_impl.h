/*
 * The I/O engine's insides, shared by its files: the engine, its files and
 * requests, and the progress thread that moves the pieces.
 *
 * Locking: everything that both the caller and the progress thread touch
 * (the queue of requests, the counters of each request, the stats, the
 * fault hook) is under aio->lock. The backend state and the free list of
 * pieces belong to the progress thread alone.
 */
#ifndef ZSH_AIO_AIO_IMPL_H_
#define ZSH_AIO_AIO_IMPL_H_

#include "aio/aio.h"
#include "aio/backend.h"
#include "core/config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define ZSH_AIO_MSG_MAX 512

struct zsh_aio_file {
    struct zsh_aio_file *next; /* the engine's files, closed and removed at destroy */
    zsh_aio_t           *aio;
    int                  fd;
    bool                 direct;
    bool                 keep;     /* zsh_aio_open_path(): closed at destroy, not removed */
    char                 path[];
};

struct zsh_aio_req {
    struct zsh_aio_req *next;     /* the queue of requests with pieces not yet carved */
    struct zsh_aio_req *live_prev, *live_next; /* the engine's requests not yet freed */
    zsh_aio_t          *aio;      /* NULL once the engine is destroyed */
    zsh_aio_file_t     *file;
    int                 write;
    uint64_t            offset;
    char               *buf;
    size_t              len;
    /* under aio->lock */
    size_t              carved;   /* bytes handed to pieces so far */
    unsigned            pending;  /* pieces carved and not finished */
    bool                queued;   /* on the queue */
    bool                failed;
    char                msg[ZSH_AIO_MSG_MAX]; /* the first failure */
};

typedef struct zsh_aio_fault_state {
    zsh_aio_fault_t fault;
    int             writes;
    unsigned long   after;        /* pieces of that direction still let through */
} zsh_aio_fault_state_t;

struct zsh_aio {
    const zsh_aio_backend_ops_t *ops;
    void                        *be;
    zsh_aio_kind_t               kind;
    unsigned                     depth;
    size_t                       block;
    int                          efd;

    /* the directory (dir.c) */
    int                          lock_fd;  /* flock()ed while the engine lives */
    char                        *job_dir;
    char                        *dir;
    zsh_aio_file_t              *files;
    bool                         said_buffered;

    pthread_t                    thread;
    pthread_mutex_t              lock;
    pthread_cond_t               done_cv;  /* a request finished */
    zsh_aio_req_t               *head, *tail; /* requests with pieces to carve */
    zsh_aio_req_t               *live;     /* requests not yet freed: orphaned at destroy */
    bool                         stop;
    unsigned                     inflight; /* pieces carved and not finished */
    zsh_aio_fault_state_t        inject;
    zsh_aio_stats_t              stats;
    double                       busy_since; /* when inflight last rose from 0 */

    /* the progress thread's own */
    zsh_aio_piece_t             *pieces;   /* depth of them */
    zsh_aio_piece_t             *free_pieces;
    zsh_aio_piece_t             *retry;    /* taken back by the backend: offered again first */
    zsh_aio_piece_t            **batch;    /* depth of them: pieces being submitted */
    zsh_aio_piece_t            **done;     /* depth of them: pieces reaped */
};

/* dir.c: make, lock and sweep the engine's directory; remove it. */
zsh_status_t zsh_aio_dir_create(zsh_aio_t *aio, const char *dir, const char *job_id, int rank);
void zsh_aio_dir_remove(zsh_aio_t *aio);

/* progress.c: the thread that submits and reaps. */
zsh_status_t zsh_aio_progress_start(zsh_aio_t *aio);
void zsh_aio_progress_stop(zsh_aio_t *aio);
/* Wake the progress thread: work was queued or the engine stops. */
void zsh_aio_progress_wake(zsh_aio_t *aio);

/* request.c: after the progress thread stopped, let the requests not yet
 * freed outlive the engine (their test, wait and free need it no more). */
void zsh_aio_req_orphan_all(zsh_aio_t *aio);

/* config.c: the engine's variables, with @fault parsed from ZSH_AIO_FAULT. */
typedef struct zsh_aio_config {
    int      kind;
    unsigned queue_depth;
    size_t   block_size;
    unsigned threads;
    char     fault[ZSH_CONFIG_STR_MAX];
} zsh_aio_config_t;

zsh_status_t zsh_aio_config_read(zsh_aio_config_t *cfg, zsh_aio_fault_state_t *fault);

#endif
