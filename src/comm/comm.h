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

#include "coll/tag.h"
#include "core/config.h"
#include "core/list.h"
#include "topo/topo.h"
#include "transports/tl.h"

#include <zeroshard.h>

#include <stdatomic.h>
#include <stdint.h>

typedef struct zsh_ctx {
    unsigned            refs;          /* communicators using this context */
    int                 rank, size;    /* in the job */
    zsh_config_t        cfg;
    const zsh_tl_ops_t *tl;
    zsh_tl_ctx_t       *tl_ctx;
    zsh_topo_t         *topo;
    zsh_list_t          in_flight;     /* tasks posted and not yet complete */
    zsh_list_t          free_tasks;    /* the "zsh_task" pool */
    unsigned            tasks_out;     /* taken from the pool and not returned */
    struct zsh_comm    *job;           /* every rank of the job, id 0: the teardown fence */
    uint8_t             ids_used[ZSH_MAX_COMMS / 8];
} zsh_ctx_t;

struct zsh_comm {
    zsh_ctx_t  *ctx;
    uint32_t    id;         /* same on every member; part of every tag */
    int         rank, size;
    int        *ctx_ranks;  /* comm rank -> job rank */
    uint32_t    seq;        /* sequence number of the next collective */
    unsigned    requests;   /* requests not yet freed */
    atomic_int  aborted;
};

/* Create the job context over @oob with configuration @cfg. */
zsh_status_t zsh_ctx_create(const zsh_oob_t *oob, const zsh_config_t *cfg, zsh_ctx_t **ctx_p);

/* Drop a reference; the last one fences with every rank and tears down. */
void zsh_ctx_release(zsh_ctx_t *ctx);

/* Create a communicator on @ctx (taking a reference) with the given members. */
zsh_status_t zsh_comm_create(zsh_ctx_t *ctx, uint32_t id, int rank, int size,
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
