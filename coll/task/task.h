/*
 * A collective is a task: init validates and takes a task from the job's
 * pool, post starts it, and its progress function is a resumable state
 * machine that returns ZSH_INPROGRESS instead of blocking. Waiting on any
 * request progresses every task of the job, so requests complete in any
 * order and a rank never withholds messages that a peer's other collective
 * needs. The public zsh_request_t is the task.
 */
#ifndef ZSH_COLL_TASK_H_
#define ZSH_COLL_TASK_H_

#include "handshake/desc.h"
#include "base/partition.h"
#include "comm/comm.h"
#include "core/config.h"
#include "core/list.h"

#include <zeroshard.h>

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    ZSH_COLL_ALLGATHER,
    ZSH_COLL_REDUCE_SCATTER,
    ZSH_COLL_ALLREDUCE,
    ZSH_COLL_BROADCAST,
    ZSH_COLL_BARRIER,
    ZSH_COLL_FENCE          /* the job-wide barrier before teardown */
} zsh_coll_type_t;

typedef struct zsh_coll_args {
    zsh_coll_type_t type;
    const void     *sendbuf;
    void           *recvbuf;   /* broadcast: the buffer */
    size_t          count;     /* per rank for allgather/reduce-scatter, else total */
    zsh_dtype_t     dtype;
    zsh_op_t        op;
    int             root;
} zsh_coll_args_t;

/* One point-to-point operation slot of a task. */
typedef struct zsh_task_op {
    zsh_tl_req_t *req;     /* NULL when idle or finished */
    int           peer;    /* comm rank */
    bool          is_recv;
} zsh_task_op_t;

/* Pipelined ring over a partitioned vector (allgather, reduce-scatter, and
 * the two phases of allreduce). Units are (step, chunk) pairs in order. */
typedef struct zsh_ring {
    zsh_part_t  part;
    size_t      chunk;       /* elements per message */
    size_t      nchunks;     /* chunks per block */
    size_t      units;       /* (size - 1) * nchunks */
    size_t      rhead, rtail, shead, stail;  /* posted / completed receives and sends */
    unsigned    depth;       /* units in flight per direction */
    uint32_t    step_base;   /* tag steps of this phase */
    char       *buf;         /* allgather: the whole vector, in place */
    const char *src;         /* reduce-scatter: the whole input vector */
    char       *dst;         /* reduce-scatter: this rank's block of the result */
    char       *slots;       /* reduce-scatter: @depth receive slots (accumulation type) */
    char       *stage;       /* reduce-scatter: @depth converted first-step sends */
    bool        own_first;   /* step-0 sends carry this rank's own input */
} zsh_ring_t;

/* Round-based algorithms (Bruck, recursive doubling, dissemination). */
typedef struct zsh_rounds {
    int    round;            /* current round; -1 before the first */
    int    nrounds;
    int    newrank;          /* recursive doubling: rank among the power of two, or -1 */
    int    pof2, rem;
    bool   posted;           /* ops of the current round are posted */
    bool   started;          /* the first round was posted */
    bool   reduces;          /* the current round reduces tmp into acc */
    size_t count;            /* recursive doubling: elements of the vector */
    char  *acc, *tmp;        /* scratch */
} zsh_rounds_t;

/* One-sided all-gather: every rank reads each peer's block from the peer's
 * registered receive buffer. */
typedef struct zsh_rma {
    zsh_tl_mem_t   *mem;        /* this rank's registered recvbuf */
    void           *rkey_buf;   /* its packed remote key */
    char           *descs;      /* size descriptors (address + remote key), ours at [rank] */
    zsh_tl_rkey_t **rkeys;      /* by peer, once unpacked */
} zsh_rma_t;

/* What a rank tells its peers, with its descriptor, before the direct algorithms copy to
 * or from its memory. */
typedef struct zsh_direct_addr {
    uint64_t src;      /* its input (sendbuf) */
    uint64_t dst;      /* its output (recvbuf) */
} zsh_direct_addr_t;

/* Node-local algorithms that copy straight between ranks' buffers (cross-memory attach). */
typedef struct zsh_direct {
    zsh_direct_addr_t *peers;   /* by comm rank; peers[rank] unused */
    zsh_part_t         part;    /* the blocks of the vector */
    size_t             chunk;   /* elements per read of a reduction */
    char              *acc;     /* a chunk in the accumulation type */
    char              *tmp;     /* a chunk read from a peer */
    bool               stream;  /* all-gather: the own block is copied with non-temporal
                                   stores (ZSH_STREAM_MIN_SIZE) */
} zsh_direct_t;

/* Eager calls (coll/eager.c). */
typedef struct zsh_eager {
    void           *acc;         /* a reduction's accumulation buffer */
} zsh_eager_t;

/* Pipelined binomial broadcast. */
typedef struct zsh_bcast {
    size_t nchunks, chunk;   /* in bytes */
    size_t rhead, rtail, shead, stail;
    int    parent;           /* comm rank, or -1 at the root */
    int    nchildren;
    int    children[32];     /* a binomial tree has at most log2(2^31) children */
    unsigned depth;
} zsh_bcast_t;

/* Where a task's descriptor exchange stands (coll/desc.h). */
enum {
    ZSH_DESC_NONE,       /* not started */
    ZSH_DESC_POSTED,     /* sent to the right, waiting for the left's */
    ZSH_DESC_MATCHED,    /* the left's matched; our send may still be in flight */
    ZSH_DESC_VERIFIED    /* done, or nothing to exchange */
};

typedef struct zsh_request zsh_task_t;  /* the public request is the task */
typedef zsh_status_t (*zsh_task_progress_t)(zsh_task_t *task);
typedef void (*zsh_task_cleanup_t)(zsh_task_t *task);

struct zsh_request {
    zsh_list_t          link;        /* ctx->in_flight while posted, else ctx->free_tasks */
    zsh_comm_t         *comm;
    zsh_coll_args_t     args;
    const char         *name;        /* "allgather", for messages */
    uint32_t            seq;
    zsh_algo_t          algo;        /* what zsh_select() chose; AUTO when nothing moves */
    zsh_task_progress_t progress;
    zsh_task_cleanup_t  cleanup;     /* releases what the algorithm holds; may be NULL */
    zsh_status_t        status;      /* ZSH_INPROGRESS until complete */
    double              timeout;     /* seconds it may take: the communicator's, or per call */
    double              posted_at;
    double              deadline;
    bool                algo_done;   /* progress() has returned ZSH_OK */
    char               *data_mismatch; /* a message that did not fit, while the descriptors
                                          are awaited to say why (else NULL) */
    double              data_mismatch_until;
    uint8_t             desc_state;
    zsh_task_op_t       desc_ops[2]; /* receive from the left, send to the right */
    bool                desc_all;     /* ... or to and from every peer (> 2 ranks: eager and
                                         direct), receives in ops[peer], sends in
                                         ops[size + peer]: */
    zsh_desc_msg_t     *all_in;       /* ... by comm rank, what each peer sent; [rank] unused */
    char               *all_out;      /* ... the message for each peer, @all_stride bytes
                                         apart; NULL: desc_out goes to all */
    size_t              all_stride;
    zsh_desc_msg_t      desc_out, desc_in; /* descriptors, and the data they may carry */
    uint32_t            desc_inline;  /* bytes of data in desc_out after the descriptor */
    const void         *desc_body;    /* ... or where those bytes lie instead (boards;
                                         NULL: in desc_out) */
    bool                desc_box;     /* the descriptors go through mailboxes (comm->box)
                                         or boards (comm->board) */
    bool                box_sent;     /* ... and ours has gone */
    bool                box_probing;  /* ... and we listen on UCX as well (two ranks) */
    uint64_t            box_ticket;   /* ... as this message of the communicator's box */
    bool                box_done;     /* ... and a "done" message follows as the next one
                                         (direct) */
    bool                done_sent;    /* ... which has gone */
    zsh_desc_msg_t     *box_probe;    /* ... and what may come through UCX instead (two
                                         ranks; on boards, into all_in through ops[peer]) */
    unsigned            box_taken;    /* boards: peers whose descriptor we took, in the
                                         order rank + 1, rank + 2, ... */
    unsigned            done_taken;   /* ... and whose "done" message */
    const void        **board_in;     /* boards: by comm rank, each peer's descriptor
                                         message where it lies, held until the task is done
                                         (NULL: not held); kept across uses */
    unsigned            board_in_cap;
    int                 phase;       /* allreduce: 0 reduce-scatter, 1 all-gather */
    union {
        zsh_ring_t   ring;
        zsh_rounds_t rounds;
        zsh_bcast_t  bcast;
        zsh_rma_t    rma;
        zsh_direct_t direct;
        zsh_eager_t  eager;
    } u;
    zsh_task_op_t      *ops;         /* kept across uses of the pooled task */
    unsigned            ops_cap;
    void               *scratch;     /* kept across uses of the pooled task */
    size_t              scratch_cap;
};

/* Take a task from the pool for collective @args on @comm; assigns the
 * communicator's next sequence number. */
zsh_status_t zsh_task_get(zsh_comm_t *comm, const zsh_coll_args_t *args, const char *name,
                          zsh_task_t **task_p);

/* Hand back a task that was never posted or has completed. */
void         zsh_task_put(zsh_task_t *task);

/* Start @task (its progress function set by its algorithm's init): enqueue
 * it and run its first progress step. */
void         zsh_task_post(zsh_task_t *task);

/* Progress the transport and every task of the job once. */
void         zsh_ctx_progress(zsh_ctx_t *ctx);

/* Settle a task still in progress as aborted, cancelling its operations. */
void         zsh_task_cancel(zsh_task_t *task);

/* Block until @task completes; returns its status. */
zsh_status_t zsh_task_wait(zsh_task_t *task);

/* Grow the array *@arr_p of *@cap_p elements of @esize bytes, kept across
 * uses of the pooled task, to at least @n (@what names them in the error),
 * and zero it. */
zsh_status_t zsh_task_array(zsh_task_t *task, void **arr_p, unsigned *cap_p, unsigned n,
                            size_t esize, const char *what);

/* Ensure @n zeroed op slots (all idle). */
zsh_status_t zsh_task_ops(zsh_task_t *task, unsigned n);

/* Scratch space of at least @bytes, kept with the pooled task. */
zsh_status_t zsh_task_scratch(zsh_task_t *task, size_t bytes, void **buf_p);

/* Post a one-sided read of @len bytes at @raddr of comm rank @peer into @buf. */
zsh_status_t zsh_task_rget(zsh_task_t *task, zsh_task_op_t *op, int peer, void *buf, size_t len,
                           uint64_t raddr, zsh_tl_rkey_t *rkey);

/* Post a receive of at most @len bytes (zsh_tl_ops_t.irecv_upto). */
zsh_status_t zsh_task_recv_upto(zsh_task_t *task, zsh_task_op_t *op, int peer, uint32_t step,
                                void *buf, size_t len);

/* Post a send/receive on slot @op to comm rank @peer for tag step @step. */
zsh_status_t zsh_task_send(zsh_task_t *task, zsh_task_op_t *op, int peer, uint32_t step,
                           const void *buf, size_t len);
zsh_status_t zsh_task_recv(zsh_task_t *task, zsh_task_op_t *op, int peer, uint32_t step,
                           void *buf, size_t len);

/* ZSH_OK once the slot is idle (its operation done and released),
 * ZSH_INPROGRESS before, or the operation's error. */
zsh_status_t zsh_task_op_test(zsh_task_t *task, zsh_task_op_t *op);

/* zsh_task_op_test() over slots [first, first + n): ZSH_OK when all are
 * idle, the first error seen, else ZSH_INPROGRESS. */
zsh_status_t zsh_task_ops_test(zsh_task_t *task, unsigned first, unsigned n);

/* Bytes of one element of the task's dtype, and of its accumulation type. */
size_t zsh_task_esize(const zsh_task_t *task);
size_t zsh_task_acc_esize(const zsh_task_t *task);

#endif
