#include "comm/comm.h"

#include "comm/health.h"
#include "comm/retire.h"
#include "core/status.h"

#include <stdlib.h>
#include <string.h>

/* Whether every member shares one node and can read every other's memory.
 * Reachability is the same from both sides of a pair and holds within
 * groups (one kernel, one PID namespace), so "this rank reaches every other
 * member" is the same answer on every member. */
static bool zsh_comm_direct(const zsh_ctx_t *ctx, int size, const int *ctx_ranks)
{
    const zsh_tl_local_ops_t *local = ctx->tl->local;
    int i;

    for (i = 0; i < size; i++) {
        if ((local == NULL) ||
            (ctx->topo->node_of[ctx_ranks[i]] != ctx->topo->node_of[ctx_ranks[0]]) ||
            ((ctx_ranks[i] != ctx->rank) && !local->copy_reachable(ctx->tl_ctx, ctx_ranks[i]))) {
            return false;
        }
    }
    return true;
}

/* Whether this rank shares mailboxes with every other member, on a line
 * (@id) the transport has, whose messages hold a descriptor with the most
 * data a call puts there. */
static bool zsh_comm_shares_lines(const zsh_ctx_t *ctx, uint32_t id, int rank, int size,
                                  const int *ctx_ranks, size_t msg_max, size_t need)
{
    int i;

    if ((id >= ctx->tl->local->lines) || (msg_max < need)) {
        return false;
    }
    for (i = 0; i < size; i++) {
        if ((i != rank) && !ctx->tl->local->box_reachable(ctx->tl_ctx, ctx_ranks[i])) {
            return false;
        }
    }
    return true;
}

/* Line i of a process is its communicator with id i: ids of live
 * communicators never collide on a rank, so each line has one writer. */
static zsh_comm_local_t zsh_comm_local(const zsh_ctx_t *ctx, uint32_t id, int rank, int size,
                                       const int *ctx_ranks)
{
    const zsh_tl_local_ops_t *local = ctx->tl->local;
    zsh_comm_local_t l = {0};

    l.direct = zsh_comm_direct(ctx, size, ctx_ranks);
    if (!l.direct) {
        return l;
    }
    l.box   = (size == 2) &&
              zsh_comm_shares_lines(ctx, id, rank, size, ctx_ranks, local->box_msg_max,
                                    sizeof(zsh_desc_msg_t));
    l.board = (size > 2) &&
              zsh_comm_shares_lines(ctx, id, rank, size, ctx_ranks, local->board_msg_max,
                                    sizeof(zsh_desc_t) + ZSH_DESC_BOARD_INLINE_MAX);
    return l;
}

/* Take the lines the communicator's mailboxes or boards use from the
 * transport now, so that one it cannot have (shared memory over its budget)
 * fails the creation with the transport's reason, not a call later. */
static zsh_status_t zsh_comm_lines_open(const zsh_comm_t *comm)
{
    const zsh_tl_local_ops_t *local = comm->ctx->tl->local;

    if ((!comm->local.box && !comm->local.board) || (local->lines_open == NULL)) {
        return ZSH_OK;
    }
    return local->lines_open(comm->ctx->tl_ctx, comm->id, comm->ctx_ranks, comm->size);
}

void zsh_comm_lines_close(zsh_comm_t *comm)
{
    const zsh_tl_local_ops_t *local = comm->ctx->tl->local;

    if ((comm->local.box || comm->local.board) && (local->lines_close != NULL)) {
        local->lines_close(comm->ctx->tl_ctx, comm->id, comm->ctx_ranks, comm->size);
    }
}

zsh_status_t zsh_comm_create(zsh_ctx_t *ctx, uint32_t id, uint64_t uid, int rank, int size,
                             const int *ctx_ranks, zsh_comm_t **comm_p)
{
    zsh_status_t status;
    zsh_comm_t *comm;

    comm = calloc(1, sizeof(*comm));
    if (comm == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate a communicator");
    }
    comm->dev.checked_dev = -1;
    comm->ctx_ranks = malloc((size_t)size * sizeof(int));
    if (comm->ctx_ranks == NULL) {
        status = zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the rank map of %d ranks", size);
        goto err_free_comm;
    }
    if (ctx->cfg.trace) {
        status = zsh_trace_create(ctx->cfg.trace_depth, &comm->trace);
        if (status != ZSH_OK) {
            goto err_free_ranks;
        }
    }
    memcpy(comm->ctx_ranks, ctx_ranks, (size_t)size * sizeof(int));
    status = zsh_topo_sub(ctx->topo, rank, size, ctx_ranks, &comm->topo);
    if (status != ZSH_OK) {
        goto err_destroy_trace;
    }
    comm->magic   = ZSH_COMM_MAGIC;
    comm->ctx     = ctx;
    comm->id      = id;
    comm->uid     = uid;
    comm->rank    = rank;
    comm->size    = size;
    comm->timeout = ctx->cfg.timeout;
    comm->deterministic = (ctx->cfg.deterministic != 0);
    comm->local   = zsh_comm_local(ctx, id, rank, size, ctx_ranks);
    comm->health  = (zsh_comm_health_t){.failed_rank = -1};
    status        = zsh_comm_lines_open(comm);
    if (status != ZSH_OK) {
        goto err_destroy_topo;
    }
    atomic_init(&comm->aborted, 0);
    zsh_list_push_tail(&ctx->comms, &comm->link);
    zsh_ctx_id_set(ctx, id, 1);
    zsh_comm_health_created(comm);
    ctx->refs++;
    *comm_p = comm;
    return ZSH_OK;

err_destroy_topo:
    zsh_topo_destroy(comm->topo);
err_destroy_trace:
    zsh_trace_destroy(comm->trace);
err_free_ranks:
    free(comm->ctx_ranks);
err_free_comm:
    free(comm);
    return status;
}

void zsh_comm_free(zsh_comm_t *comm)
{
    comm->magic = ZSH_MAGIC_RETIRED;
    zsh_list_del(&comm->link);
    zsh_trace_destroy(comm->trace);
    zsh_revoke_clear(&comm->health.revoke);
    zsh_topo_destroy(comm->topo);
    comm->topo = NULL;
    free(comm->ctx_ranks);
    zsh_retire(comm);
}

zsh_status_t zsh_comm_refuse(const char *fn, const zsh_comm_t *comm)
{
    if (comm == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: comm is NULL", fn);
    }
    if (comm->magic == ZSH_MAGIC_RETIRED) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: comm %p was already destroyed", fn,
                         (const void *)comm);
    }
    return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %p is not a communicator", fn,
                     (const void *)comm);
}
