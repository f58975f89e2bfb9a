/*
 * A collective is a task: init validates and takes a task from the job's
 * pool, post starts it, and its progress function is a resumable state
 * machine that returns ZSH_INPROGRESS instead of blocking. Waiting on any
 * request progresses every task of the job, so requests complete in any
 * order and a rank never withholds messages that a peer's other collective
 * needs. The public zsh_request_t is the task.
 *
 * The files of this folder: the pool (pool.c), the engine that posts,
 * advances and waits (engine.c), what happens when a task fails (fail.c),
 * and the argument checks every collective makes first (validate.c). The
 * algorithms live with their collectives and in algo/.
 */
#ifndef ZSH_COLL_TASK_TASK_H_
#define ZSH_COLL_TASK_TASK_H_

#include "base/call.h"
#include "base/config.h"
#include "comm/comm.h"
#include "comm/xfer.h"
#include "core/list.h"
#include "handshake/handshake.h"

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zsh_request zsh_task_t;  /* the public request is the task */
typedef zsh_status_t (*zsh_task_progress_t)(zsh_task_t *task);
/* @status: what the task completes with, ZSH_OK or its failure. */
typedef void (*zsh_task_cleanup_t)(zsh_task_t *task, zsh_status_t status);

/* How the engine drives one call; reset for each use in one statement. */
typedef struct zsh_task_run {
    zsh_task_progress_t progress;  /* the algorithm's step, set by its init */
    zsh_task_cleanup_t  cleanup;   /* releases what the algorithm holds; may be NULL */
    zsh_status_t        status;    /* ZSH_INPROGRESS until complete */
    double              timeout;   /* seconds it may take: the communicator's, or per call */
    double              posted_at;
    double              deadline;
    bool                algo_done; /* progress() has returned ZSH_OK */
    bool                busy;      /* progress() stopped with work left that needs nobody
                                      else: call it again at once, without sleeping */
    int                 phase;     /* the algorithm's, for schedules of several steps */
    char               *data_mismatch;       /* a message that did not fit, while the
                                                descriptors are awaited to say why */
    double              data_mismatch_until;
    char               *error;     /* a failure's message, for whichever thread tests or
                                      waits on the request: the thread whose progress
                                      found the failure may be another */
} zsh_task_run_t;

/*
 * Room for the running algorithm's state. Each algorithm defines its own
 * struct in its own header and reaches it through zsh_task_state(), with a
 * static assertion that it fits, so a new algorithm changes nothing here.
 */
#define ZSH_TASK_STATE_BYTES 256

typedef union zsh_task_state {
    max_align_t   align;
    unsigned char bytes[ZSH_TASK_STATE_BYTES];
} zsh_task_state_t;

/* A request's magic while the caller holds it; back in the pool it reads
 * ZSH_REQUEST_FREED, and ZSH_MAGIC_RETIRED once the pool is gone (retire.h). */
#define ZSH_REQUEST_MAGIC 0x7a737271u /* "zsrq" */
#define ZSH_REQUEST_FREED 0x7a737266u /* "zsrf" */

struct zsh_request {
    uint32_t         magic;     /* checked by every request API entry */
    zsh_list_t       link;      /* ctx->in_flight while posted, else ctx->free_tasks */
    /* The call, set by zsh_task_get(). */
    zsh_comm_t      *comm;
    zsh_coll_args_t  args;
    const char      *name;      /* "allgather", for messages */
    uint32_t         seq;
    zsh_algo_t       algo;      /* what zsh_select() chose; AUTO when nothing moves */
    bool             deterministic; /* its communicator's mode when it was called: a
                                       hierarchical call's node step may set it alone */
    zsh_task_run_t   run;
    zsh_hs_t         hs;        /* its descriptor exchange */
    zsh_task_state_t state;     /* its algorithm's */
    /* Kept across uses of the pooled task. */
    zsh_xfer_t      *ops;       /* the algorithm's transfer slots */
    unsigned         ops_cap;
    void            *scratch;
    size_t           scratch_cap;
    zsh_hs_bufs_t    hs_bufs;
    bool             orphan;    /* receives left to the transport may still write into its
                                   buffers: kept out of the pool until teardown */
};

static inline void *zsh_task_state(zsh_task_t *task)
{
    return task->state.bytes;
}

/* Take a task from the pool for collective @args on @comm; assigns the
 * communicator's next sequence number. */
zsh_status_t zsh_task_get(zsh_comm_t *comm, const zsh_coll_args_t *args, const char *name,
                          zsh_task_t **task_p);

/* Hand back a task that was never posted or has completed. */
void         zsh_task_put(zsh_task_t *task);

/* Free the pooled tasks of @ctx, at its teardown. */
void         zsh_task_pool_free(zsh_ctx_t *ctx);

/* Ensure @n idle transfer slots for the algorithm. */
zsh_status_t zsh_task_ops(zsh_task_t *task, unsigned n);

/* Scratch space of at least @bytes, 64-byte aligned, kept with the pooled task. */
zsh_status_t zsh_task_scratch(zsh_task_t *task, size_t bytes, void **buf_p);

/* Start @task (its progress function set by its algorithm's init): enqueue
 * it and run its first progress step. */
void         zsh_task_post(zsh_task_t *task);

/* Progress the transport and every task of the job once; returns how many
 * tasks asked to be called again at once (run.busy). */
unsigned     zsh_ctx_progress(zsh_ctx_t *ctx);

/* Block until @task completes; returns its status. */
zsh_status_t zsh_task_wait(zsh_task_t *task);

/* Run a prepared task: nonblocking when @req_p is not NULL (the caller owns
 * the request), else post, wait and give the task back. */
zsh_status_t zsh_coll_launch(zsh_task_t *task, zsh_request_t **req_p);

/* Settle @task, done or failed with @status. */
void         zsh_task_complete(zsh_task_t *task, zsh_status_t status);

/* Before a failed task is settled (fail.c): name the call in the error,
 * revoke the communicator where peers cannot see why, and stop every
 * transfer still under way before the caller gets its buffers back. */
void         zsh_task_fail(zsh_task_t *task, zsh_status_t status);

/* Dump the flight recorder for a failure worth explaining: every timeout,
 * and the first failure that breaks the communicator. */
void         zsh_task_dump_trace(zsh_task_t *task, zsh_status_t status);

/* Settle a task still in progress with @status, cancelling its operations,
 * with the thread's last error as its message: ZSH_ERR_ABORTED for a request
 * freed early (the caller says so first); for a step of a call that failed,
 * that call's message, which the step's peers then get as its cause, and
 * its status, which decides how long a receive may drain (comm/xfer.h). */
void         zsh_task_cancel(zsh_task_t *task, zsh_status_t status);

/* A message of the wrong length said the ranks disagree: ZSH_INPROGRESS
 * while the descriptors may yet say how (fail.c), then ZSH_ERR_MISMATCH. */
zsh_status_t zsh_task_data_mismatch(zsh_task_t *task);

/* The error for a task past its deadline, naming the silent peers. */
zsh_status_t zsh_task_timeout(zsh_task_t *task);

/* Whether @task may send data that depends on what it received: only once
 * the peers' descriptors matched ours. A rank's own input may go at once;
 * what it forwards waits, so data from a mismatched call never reaches
 * ranks that cannot see the mismatch, and no rank completes with it. */
static inline bool zsh_task_may_forward(const zsh_task_t *task)
{
    return zsh_hs_matched(&task->hs);
}

/* The algorithm's transfers: a send or receive on slot @op with comm rank
 * @peer for tag step @step, at most @len bytes with _upto, and a one-sided
 * read of @len bytes at @raddr of @peer. */
static inline zsh_status_t zsh_task_send(zsh_task_t *task, zsh_xfer_t *op, int peer,
                                         uint32_t step, const void *buf, size_t len)
{
    return zsh_xfer_send(task->comm, task->seq, op, peer, step, buf, len);
}

static inline zsh_status_t zsh_task_recv(zsh_task_t *task, zsh_xfer_t *op, int peer,
                                         uint32_t step, void *buf, size_t len)
{
    return zsh_xfer_recv(task->comm, task->seq, op, peer, step, buf, len);
}

static inline zsh_status_t zsh_task_recv_upto(zsh_task_t *task, zsh_xfer_t *op, int peer,
                                              uint32_t step, void *buf, size_t len)
{
    return zsh_xfer_recv_upto(task->comm, task->seq, op, peer, step, buf, len);
}

static inline zsh_status_t zsh_task_rget(zsh_task_t *task, zsh_xfer_t *op, int peer, void *buf,
                                         size_t len, uint64_t raddr, zsh_tl_rkey_t *rkey)
{
    return zsh_xfer_get(task->comm, op, peer, buf, len, raddr, rkey);
}

/* ZSH_OK once slot @op is idle, ZSH_INPROGRESS before, or its error. */
static inline zsh_status_t zsh_task_op_test(zsh_task_t *task, zsh_xfer_t *op)
{
    return zsh_xfer_test(task->comm, op);
}

/* The same over slots [first, first + n): ZSH_OK when all are idle. */
static inline zsh_status_t zsh_task_ops_test(zsh_task_t *task, unsigned first, unsigned n)
{
    return zsh_xfer_test_all(task->comm, task->ops + first, n);
}

/* Bytes of one element of the task's dtype, and of its accumulation type. */
size_t zsh_task_esize(const zsh_task_t *task);
size_t zsh_task_acc_esize(const zsh_task_t *task);

#endif
