/*
 * The job context: what every communicator of one job shares. One per
 * zsh_comm_init*(): the transport and its endpoints to every process, the
 * topology, the failure table and the control channel, the task pool and
 * the collectives in flight, and the communicator ids in use. Communicators
 * made by zsh_comm_split() share their parent's; it goes away with the
 * last communicator that uses it (api/comm.c).
 */
#ifndef ZSH_COLL_COMM_CONTEXT_H_
#define ZSH_COLL_COMM_CONTEXT_H_

#include "base/config.h"
#include "base/tag.h"
#include "core/list.h"
#include "fault/ctrl.h"
#include "fault/failure.h"
#include "tl.h"
#include "topo/topo.h"

#include <zeroshard.h>

#include <stdatomic.h>
#include <stdint.h>

struct zsh_comm;

/* Memory kept until the transport is gone, and how to free it then. */
typedef struct zsh_ctx_orphan {
    void  *obj;
    void (*release)(void *obj);
} zsh_ctx_orphan_t;

typedef struct zsh_ctx {
    unsigned            refs;          /* communicators using this context */
    int                 rank, size;    /* in the job */
    zsh_coll_config_t   cfg;
    unsigned            spin_count;    /* cfg.spin_count, or 0 when ranks outnumber cores */
    size_t              stream_min;    /* cfg.stream_min_size, auto resolved: SIZE_MAX never */
    const zsh_tl_ops_t *tl;
    zsh_tl_ctx_t       *tl_ctx;
    zsh_topo_t         *topo;
    zsh_failures_t     *failures;
    zsh_ctrl_t         *ctrl;
    atomic_int          abort_pending; /* a communicator was aborted and peers not yet told */
    zsh_list_t          in_flight;     /* tasks posted and not yet complete */
    uint64_t            settled;       /* tasks taken off in_flight so far */
    zsh_list_t          free_tasks;    /* the "zsh_task" pool */
    unsigned            tasks_out;     /* taken from the pool and not returned */
    struct zsh_comm    *job;           /* every rank of the job, id 0: the teardown fence */
    zsh_list_t          comms;         /* every communicator on this context, job included */
    uint8_t             ids_used[ZSH_MAX_COMMS / 8];
    uint32_t            id_cursor;     /* after the last id a split handed out */
    zsh_ctx_orphan_t   *orphans;       /* what a failed call's receives may still write */
    bool                transfers_left; /* a failed call left a transfer to the transport */
    size_t              norphans, orphans_cap;
} zsh_ctx_t;

/* Create the job context over @oob with configuration @cfg and transport
 * @tl (its @tl_options, or NULL for its ZSH_ variables), with its job
 * communicator. */
zsh_status_t zsh_ctx_create(const zsh_oob_t *oob, const zsh_coll_config_t *cfg,
                            const zsh_tl_ops_t *tl, const void *tl_options, zsh_ctx_t **ctx_p);

/* Free the context once the fence with every rank has run, its job
 * communicator is gone and its pooled tasks are freed. */
void         zsh_ctx_teardown(zsh_ctx_t *ctx);

/* Keep @obj until the transport is gone: receives a failed call left to the
 * transport may still write into it, so no later call may get it.
 * zsh_ctx_teardown() calls @release(@obj) after destroying the transport. */
void         zsh_ctx_orphan(zsh_ctx_t *ctx, void *obj, void (*release)(void *obj));

static inline void zsh_ctx_id_set(zsh_ctx_t *ctx, uint32_t id, int used)
{
    if (used) {
        ctx->ids_used[id / 8] |= (uint8_t)(1u << (id % 8));
    } else {
        ctx->ids_used[id / 8] &= (uint8_t)~(1u << (id % 8));
    }
}

#endif
