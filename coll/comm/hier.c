#include "comm/hier.h"

#include "core/status.h"

#include <stdlib.h>

bool zsh_comm_hier_wants(const zsh_topo_t *topo)
{
    return (topo->nnodes > 1) && (topo->max_local > 1);
}

int zsh_comm_hier_pick(uint8_t used[ZSH_MAX_COMMS / 8], uint32_t from)
{
    const uint32_t first = ZSH_COMM_ID_WORLD + 1, span = ZSH_MAX_COMMS - first;
    uint32_t k, id;

    from = ((from >= first) && (from < ZSH_MAX_COMMS)) ? from : first;
    for (k = 0; k < span; k++) {
        id = first + (from - first + k) % span;
        if (!((used[id / 8] >> (id % 8)) & 1)) {
            used[id / 8] |= (uint8_t)(1u << (id % 8));
            return (int)id;
        }
    }
    return -1;
}

/* A child's uid: the parent's mixed with which child it is (splitmix64's
 * finaliser), alike on its members and unlike any other communicator's. */
static uint64_t zsh_comm_hier_uid(uint64_t parent_uid, uint64_t which)
{
    uint64_t x = parent_uid ^ (which * 0x9e3779b97f4a7c15ull);

    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (x <= ZSH_COMM_ID_WORLD) ? x + 2 : x;
}

/* A child of @comm: its members @ranks (comm ranks), this rank being
 * member @rank of them. */
static zsh_status_t zsh_comm_hier_child(zsh_comm_t *comm, uint32_t id, uint64_t uid, int rank,
                                        int size, const int *ranks, zsh_comm_t **child_p)
{
    zsh_status_t status;
    int *ctx_ranks;
    int i;

    ctx_ranks = malloc((size_t)size * sizeof(int));
    if (ctx_ranks == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the %d ranks of a node or rail",
                         size);
    }
    for (i = 0; i < size; i++) {
        ctx_ranks[i] = comm->ctx_ranks[ranks[i]];
    }
    status = zsh_comm_create(comm->ctx, id, uid, rank, size, ctx_ranks, child_p);
    free(ctx_ranks);
    if (status != ZSH_OK) {
        return status;
    }
    comm->ctx->refs--; /* the child lives as long as its parent, which holds the reference */
    (*child_p)->timeout      = comm->timeout;
    (*child_p)->dev.mem_type = comm->dev.mem_type;
    return ZSH_OK;
}

static void zsh_comm_hier_child_free(zsh_comm_t *child)
{
    zsh_ctx_id_set(child->ctx, child->id, 0);
    zsh_comm_lines_close(child);
    zsh_comm_free(child);
}

/* This rank's place among the @n ranks of its rail @rail_ranks. Not its
 * node where nodes differ in size: a rail holds only the nodes with a rank
 * of its local rank, so a rank among a larger node's extra ranks that comes
 * after a smaller node (1 + 2: rank 2, node 1, alone on its rail) sits
 * before its node number. */
static int zsh_comm_hier_rail_rank(const zsh_topo_t *topo, const int *rail_ranks, int n)
{
    int i;

    for (i = 0; (i < n) && (rail_ranks[i] != topo->rank); i++) {
    }
    return i;
}

zsh_status_t zsh_comm_hier_create(zsh_comm_t *comm, uint32_t node_id, uint32_t rail_id)
{
    const zsh_topo_t *topo = comm->topo;
    zsh_status_t status;
    const int *node_ranks;
    int *rail_ranks;
    int nlocal, nrail;

    if (!zsh_comm_hier_wants(topo)) {
        return ZSH_OK;
    }
    rail_ranks = malloc((size_t)topo->nnodes * sizeof(int));
    if (rail_ranks == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate a rail of %d ranks", topo->nnodes);
    }
    node_ranks = zsh_topo_node_ranks(topo, topo->node, &nlocal);
    nrail      = zsh_topo_rail(topo, topo->local_rank, rail_ranks);
    status = zsh_comm_hier_child(comm, node_id, zsh_comm_hier_uid(comm->uid, 1 + 2 * topo->node),
                                 topo->local_rank, nlocal, node_ranks, &comm->hier.node);
    if (status != ZSH_OK) {
        goto out;
    }
    status = zsh_comm_hier_child(comm, rail_id,
                                 zsh_comm_hier_uid(comm->uid, 2 + 2 * topo->local_rank),
                                 zsh_comm_hier_rail_rank(topo, rail_ranks, nrail), nrail,
                                 rail_ranks, &comm->hier.rail);
    if (status != ZSH_OK) {
        zsh_comm_hier_child_free(comm->hier.node);
        comm->hier.node = NULL;
        goto out;
    }
    comm->hier.even = !zsh_topo_uneven(topo);
out:
    free(rail_ranks);
    return status;
}

void zsh_comm_hier_free(zsh_comm_t *comm)
{
    if (comm->hier.node != NULL) {
        zsh_comm_hier_child_free(comm->hier.rail);
        zsh_comm_hier_child_free(comm->hier.node);
        comm->hier.node = comm->hier.rail = NULL;
    }
}
