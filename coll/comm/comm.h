/*
 * Communicators and the job context they share.
 *
 * zsh_comm_init*() creates a job context (transport, endpoints to every
 * process, task pool) and a first communicator over it. zsh_comm_split()
 * creates communicators that share the parent's context and differ in id and
 * rank map. The context goes away with the last communicator that uses it.
 */
#ifndef ZSH_COMM_COMM_H_
#define ZSH_COMM_COMM_H_

#include "base/tag.h"
#include "core/config.h"
#include "core/list.h"
#include "topo/topo.h"
#include "tl.h"

#include <zeroshard.h>

#include <stdatomic.h>
#include <stdint.h>

/* The longest timeout a communicator or call takes: a year. */
#define ZSH_TIMEOUT_MAX (365.0 * 24 * 3600)

struct zsh_trace;
struct zsh_ctrl;

typedef struct zsh_ctx {
    unsigned            refs;          /* communicators using this context */
    int                 rank, size;    /* in the job */
    zsh_config_t        cfg;
    unsigned            spin_count;    /* cfg.spin_count, or 0 when ranks outnumber cores */
    size_t              stream_min;    /* cfg.stream_min_size, auto resolved: SIZE_MAX never */
    const zsh_tl_ops_t *tl;
    zsh_tl_ctx_t       *tl_ctx;
    zsh_topo_t         *topo;
    zsh_list_t          in_flight;     /* tasks posted and not yet complete */
    zsh_list_t          free_tasks;    /* the "zsh_task" pool */
    unsigned            tasks_out;     /* taken from the pool and not returned */
    struct zsh_comm    *job;           /* every rank of the job, id 0: the teardown fence */
    uint8_t             ids_used[ZSH_MAX_COMMS / 8];
    uint32_t            id_cursor;     /* after the last id a split handed out */
    zsh_list_t          comms;         /* every communicator on this context, job included */

    /* Failures that outlive a call (fault.c). */
    uint8_t            *failed;        /* by job rank: known to have failed */
    char              **failed_why;    /* by job rank: what said so */
    unsigned            nfailed;
    unsigned           *failed_order;  /* by job rank: 1 for the first to fail, 2 next, ... */
    char              **transport_why; /* by job rank: reported by the transport, not yet applied */
    uint8_t            *notify;        /* by job rank: a failure still to tell the others */
    atomic_int          abort_pending; /* a communicator was aborted and peers not yet told */
    struct zsh_ctrl    *ctrl;          /* control messages to and from peers */
} zsh_ctx_t;

struct zsh_comm {
    zsh_list_t  link;       /* ctx->comms */
    zsh_ctx_t  *ctx;
    uint32_t    id;         /* same on every member; part of every tag */
    uint64_t    uid;        /* same on every member, never reused within the job */
    int         rank, size;
    int        *ctx_ranks;  /* comm rank -> job rank */
    uint32_t    seq;        /* sequence number of the next collective */
    unsigned    requests;   /* requests not yet freed */
    double      timeout;    /* seconds a collective may take (zsh_comm_set_timeout) */
    bool        direct;     /* all members on one node and able to read each other's
                               memory: the direct algorithms may run */
    bool        box;        /* two members with mailboxes (ZSH_SHM): the descriptors of
                               eager and direct calls use box id, tickets in call order */
    bool        board;      /* more members, all sharing mailboxes: those descriptors go
                               on each member's board id instead, tickets alike */
    uint64_t    box_tickets; /* the next such call's ticket */
    uint64_t    box_sent;    /* the ticket whose message goes out next */
    atomic_int  aborted;    /* zsh_comm_abort() was called here, from any thread */
    bool        abort_told; /* ... and the other members were told */

    /* Why the communicator can no longer be used (fault.c). */
    zsh_status_t revoked;   /* ZSH_OK, or ZSH_ERR_ABORTED / ZSH_ERR_MISMATCH from a peer */
    uint32_t     revoke_seq; /* ... for collectives from this sequence number on */
    char        *revoke_why;
    unsigned     failed_seen; /* ctx->nfailed when failed_rank was last computed */
    int          failed_rank; /* a member known to have failed, or -1 */
    bool         dumped;      /* the flight recorder was dumped for the revocation */

    struct zsh_trace *trace;  /* flight recorder, when ZSH_TRACE=1 */
};

/* Create the job context over @oob with configuration @cfg. */
zsh_status_t zsh_ctx_create(const zsh_oob_t *oob, const zsh_config_t *cfg, zsh_ctx_t **ctx_p);

/* Drop a reference; the last one fences with every rank and tears down. */
void zsh_ctx_release(zsh_ctx_t *ctx);

/* Create a communicator on @ctx (taking a reference) with the given members;
 * @uid must be the same on every member and differ from every other
 * communicator's of the job. */
zsh_status_t zsh_comm_create(zsh_ctx_t *ctx, uint32_t id, uint64_t uid, int rank, int size,
                             const int *ctx_ranks, zsh_comm_t **comm_p);

/* Like zsh_comm_init_oob(), with an explicit configuration (tests force
 * algorithms and chunk sizes this way without touching the environment). */
zsh_status_t zsh_comm_init_oob_cfg(const zsh_oob_t *oob, const zsh_config_t *cfg,
                                   zsh_comm_t **comm_p);

static inline void zsh_ctx_id_set(zsh_ctx_t *ctx, uint32_t id, int used)
{
    if (used) {
        ctx->ids_used[id / 8] |= (uint8_t)(1u << (id % 8));
    } else {
        ctx->ids_used[id / 8] &= (uint8_t)~(1u << (id % 8));
    }
}

#endif
