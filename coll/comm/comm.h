/*
 * A communicator: an ordered group of the job's ranks, with a sequence of
 * collectives of its own. Its id is the same on every member and part of
 * every tag; its uid is the same on every member and never reused within
 * the job, so a stale message of an earlier communicator with the same id
 * is told apart.
 */
#ifndef ZSH_COLL_COMM_COMM_H_
#define ZSH_COLL_COMM_COMM_H_

#include "base/trace.h"
#include "comm/context.h"
#include "core/list.h"
#include "fault/revoke.h"

#include <zeroshard.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The longest timeout a communicator or call takes: a year. */
#define ZSH_TIMEOUT_MAX (365.0 * 24 * 3600)
/* The shortest a communicator takes, from zsh_comm_set_timeout() or
 * ZSH_TIMEOUT alike: 0 would fail every collective at once, and every wait
 * has a deadline. */
#define ZSH_TIMEOUT_MIN 0.001

/*
 * The node-local shortcuts a communicator may take, from the transport's
 * local group (tl.h), decided at creation the same way on every member.
 * Mailboxes and boards carry the descriptor messages of eager and direct
 * calls (handshake/box.c, handshake/board.c) on line id, tickets in call
 * order.
 */
typedef struct zsh_comm_local {
    bool     direct;   /* all members on one node and able to copy each other's memory */
    bool     box;      /* two members sharing mailboxes */
    bool     board;    /* more members, all sharing mailboxes: each writes its own board */
    uint64_t tickets;  /* the next such call's ticket */
    uint64_t sent;     /* the ticket whose message goes out next */
} zsh_comm_local_t;

/* Why the communicator can no longer be used (comm/health.c). */
typedef struct zsh_comm_health {
    zsh_revoke_t revoke;      /* a mismatch or an abort, seen here or told by a peer */
    unsigned     failed_seen; /* failures counted when failed_rank was last computed */
    int          failed_rank; /* the member that failed first, or -1 */
    bool         dumped;      /* the flight recorder was dumped for the breakage */
    bool         abort_told;  /* the other members heard of our zsh_comm_abort() */
} zsh_comm_health_t;

/*
 * The device path of a communicator (device/): where its buffers are, its
 * stream, and the device transport's communicator, made at its first call
 * on device buffers. Device calls are enqueued in call order: each takes a
 * number when posted and waits for its turn.
 */
typedef struct zsh_comm_dev {
    struct zsh_tl_dev *_Atomic tl; /* NULL until the first device call; read by aborts */
    int           mem_type;        /* zsh_mem_type_t: AUTO asks where buffers are */
    void         *stream;          /* the default stream of device calls */
    unsigned      flags;           /* ZSH_STREAM_WAIT or ZSH_STREAM_ENQUEUE */
    void         *checked_stream;  /* the last stream found to be of device checked_dev */
    int           checked_dev;     /* -1: none yet */
    uint64_t      posted;          /* device calls posted */
    uint64_t      enqueued;        /* device calls enqueued: the next one's number */
    zsh_status_t  failed;          /* a device call failed: later ones fail so */
    char          why[256];
} zsh_comm_dev_t;

/*
 * A communicator across nodes with more than one rank on some node has two
 * children made with it (comm/hier.c), on which the hierarchical
 * algorithms (algo/hier.h) run their steps: its node's members in
 * local-rank order, and its rail, the members of its local rank in node
 * order. On uneven nodes a rail misses the nodes without that local rank;
 * the leaders' rail (local rank 0) always spans every node. The children
 * are one node or one rank per node, so they never have children of their
 * own. Their calls must start in the same
 * order on every member: a hierarchical call starts its steps only on its
 * turn, once the call before it on the parent has started all of its own.
 */
typedef struct zsh_comm_hier {
    struct zsh_comm *node;   /* NULL when the communicator has no hierarchy */
    struct zsh_comm *rail;
    bool             even;    /* every node has as many ranks: every rail spans every node */
    uint64_t         tickets; /* the next hierarchical call's turn */
    uint64_t         turn;    /* the turn now running */
} zsh_comm_hier_t;

/* A live communicator's magic; destroying it writes ZSH_MAGIC_RETIRED. */
#define ZSH_COMM_MAGIC 0x7a73636du /* "zscm" */

struct zsh_comm {
    uint32_t          magic;      /* ZSH_COMM_MAGIC while live: checked by every API entry */
    zsh_list_t        link;       /* ctx->comms */
    zsh_ctx_t        *ctx;
    uint32_t          id;
    uint64_t          uid;
    int               rank, size;
    int              *ctx_ranks;  /* comm rank -> job rank */
    zsh_topo_t       *topo;       /* the members' rank map, in comm ranks (topo/topo.h) */
    uint32_t          seq;        /* sequence number of the next collective */
    unsigned          requests;   /* requests not yet freed */
    double            timeout;    /* seconds a collective may take (zsh_comm_set_timeout) */
    bool              deterministic; /* reductions in rank order (zsh_comm_set_deterministic) */
    zsh_comm_local_t  local;
    zsh_comm_health_t health;
    atomic_int        aborted;    /* zsh_comm_abort() was called here, from any thread */
    zsh_trace_t      *trace;      /* flight recorder, when ZSH_TRACE=1 */
    zsh_comm_dev_t    dev;
    zsh_comm_hier_t   hier;
};

/* Create a communicator on @ctx (taking a reference) with the given members;
 * @uid must be the same on every member and differ from every other
 * communicator's of the job. */
zsh_status_t zsh_comm_create(zsh_ctx_t *ctx, uint32_t id, uint64_t uid, int rank, int size,
                             const int *ctx_ranks, zsh_comm_t **comm_p);

/* Give the transport back the lines of the communicator's mailboxes or
 * boards, before it is destroyed while its context lives on (the
 * context's teardown releases them all). */
void zsh_comm_lines_close(zsh_comm_t *comm);

/* Take @comm off its context and retire it (retire.h); the caller drops
 * the reference. */
void         zsh_comm_free(zsh_comm_t *comm);

/* ZSH_ERR_INVALID_ARG naming @fn and why @comm is not live: NULL, already
 * destroyed, or not a communicator. */
zsh_status_t zsh_comm_refuse(const char *fn, const zsh_comm_t *comm);

/* Whether @comm is a live communicator: one load and compare. A pointer to
 * memory that was never a communicator may still fault here; a destroyed
 * one reads its retired shell (retire.h). */
static inline bool zsh_comm_live(const zsh_comm_t *comm)
{
    return (comm != NULL) && (comm->magic == ZSH_COMM_MAGIC);
}

/* The check every public entry taking a communicator makes first. */
static inline zsh_status_t zsh_comm_check_live(const char *fn, const zsh_comm_t *comm)
{
    return zsh_comm_live(comm) ? ZSH_OK : zsh_comm_refuse(fn, comm);
}

#endif
