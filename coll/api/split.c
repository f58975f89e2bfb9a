/*
 * zsh_comm_split. Every rank of the parent publishes its color, key, the
 * communicator ids it uses and where its last split left off; the child
 * takes the first id after the furthest of those that no parent rank uses,
 * so the new id collides with nothing any member could still receive on.
 * Ids go round rather than lowest-first, so a communicator destroyed after
 * a failed call (whose stray messages may still arrive) does not hand its
 * id straight to the next one. Children of different colors may share an
 * id: they have no common member, and tags also carry the sender.
 */
#include "comm/comm.h"
#include "comm/hier.h"

#include "core/status.h"

#include <stdlib.h>
#include <string.h>

typedef struct zsh_split_info {
    int32_t  color, key;
    uint32_t cursor;
    uint8_t ids_used[ZSH_MAX_COMMS / 8];
} zsh_split_info_t;

typedef struct zsh_split_member {
    int key, rank;
} zsh_split_member_t;

static int zsh_split_cmp(const void *a, const void *b)
{
    const zsh_split_member_t *x = a, *y = b;

    if (x->key != y->key) {
        return (x->key < y->key) ? -1 : 1;
    }
    return (x->rank < y->rank) ? -1 : (x->rank > y->rank);
}

static int zsh_split_free_id(const zsh_split_info_t *all, int n)
{
    const unsigned first = ZSH_COMM_ID_WORLD + 1, span = ZSH_MAX_COMMS - first;
    unsigned id, k, start = first;
    int i;
    bool used;

    for (i = 0; i < n; i++) {
        start = ((all[i].cursor > start) && (all[i].cursor < ZSH_MAX_COMMS)) ? all[i].cursor
                                                                               : start;
    }
    for (k = 0; k < span; k++) {
        id   = first + (start - first + k) % span;
        used = false;
        for (i = 0; (i < n) && !used; i++) {
            used = (all[i].ids_used[id / 8] >> (id % 8)) & 1;
        }
        if (!used) {
            return (int)id;
        }
    }
    return -1;
}

/* A uid every member of the child computes alike and no other communicator
 * of the job is likely to share: the parent's uid, the split's sequence
 * number on the parent and the color, mixed (splitmix64's finaliser). */
static uint64_t zsh_split_uid(uint64_t parent_uid, uint32_t seq, int color)
{
    uint64_t x = parent_uid ^ (((uint64_t)seq << 32) | (uint32_t)color);

    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (x <= ZSH_COMM_ID_WORLD) ? x + 2 : x;
}

/* The child's own children (comm/hier.h), on the next two ids after its
 * own that no parent rank uses: every member of the child computes the
 * same from what the parent's ranks published. */
static zsh_status_t zsh_split_hier(zsh_comm_t *comm, const zsh_split_info_t *all, int id,
                                   zsh_comm_t *child)
{
    uint8_t used[ZSH_MAX_COMMS / 8];
    int i, node_id, rail_id;
    size_t b;

    if (!zsh_comm_hier_wants(child->topo)) {
        return ZSH_OK;
    }
    memset(used, 0, sizeof(used));
    for (i = 0; i < comm->size; i++) {
        for (b = 0; b < sizeof(used); b++) {
            used[b] |= all[i].ids_used[b];
        }
    }
    used[id / 8] |= (uint8_t)(1u << (id % 8));
    node_id = zsh_comm_hier_pick(used, (uint32_t)id + 1);
    rail_id = zsh_comm_hier_pick(used, (uint32_t)id + 1);
    if ((node_id < 0) || (rail_id < 0)) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_comm_split: no communicator ids left for the "
                         "new communicator's node and rail");
    }
    return zsh_comm_hier_create(child, (uint32_t)node_id, (uint32_t)rail_id);
}

static zsh_status_t zsh_split_create(zsh_comm_t *comm, const zsh_split_info_t *all, int color,
                                     int id, uint64_t uid, zsh_comm_t **newcomm_p)
{
    zsh_split_member_t *members;
    int n = comm->size, m = 0, i, newrank = -1;
    zsh_status_t status;
    int *ctx_ranks;

    members   = malloc((size_t)n * sizeof(*members));
    ctx_ranks = malloc((size_t)n * sizeof(*ctx_ranks));
    if ((members == NULL) || (ctx_ranks == NULL)) {
        free(members);
        free(ctx_ranks);
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_comm_split: cannot allocate %d members", n);
    }
    for (i = 0; i < n; i++) {
        if (all[i].color == color) {
            members[m++] = (zsh_split_member_t){all[i].key, i};
        }
    }
    qsort(members, (size_t)m, sizeof(*members), zsh_split_cmp);
    for (i = 0; i < m; i++) {
        ctx_ranks[i] = comm->ctx_ranks[members[i].rank];
        newrank      = (members[i].rank == comm->rank) ? i : newrank;
    }
    status = zsh_comm_create(comm->ctx, (uint32_t)id, uid, newrank, m, ctx_ranks, newcomm_p);
    if (status == ZSH_OK) {
        /* A child uses memory and streams as its parent; its NCCL
         * communicator is its own, made at its first device call. */
        (*newcomm_p)->dev.mem_type = comm->dev.mem_type;
        (*newcomm_p)->dev.stream   = comm->dev.stream;
        (*newcomm_p)->dev.flags    = comm->dev.flags;
        (*newcomm_p)->deterministic = comm->deterministic; /* a reduction's order too */
        status = zsh_split_hier(comm, all, id, *newcomm_p);
        if (status != ZSH_OK) {
            zsh_comm_destroy(*newcomm_p);
            *newcomm_p = NULL;
        }
    }
    free(ctx_ranks);
    free(members);
    return status;
}

zsh_status_t zsh_comm_split(zsh_comm_t *comm, int color, int key, zsh_comm_t **newcomm_p)
{
    zsh_split_info_t mine, *all;
    zsh_status_t status;
    uint32_t seq;
    int id;

    status = zsh_comm_check_live("zsh_comm_split", comm);
    if (status != ZSH_OK) {
        return status;
    }
    if (newcomm_p == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_split: newcomm_p is NULL");
    }
    all = malloc((size_t)comm->size * sizeof(*all));
    if (all == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_comm_split: cannot allocate %d entries",
                         comm->size);
    }
    memset(&mine, 0, sizeof(mine));
    mine.color = color;
    mine.key   = key;
    mine.cursor = comm->ctx->id_cursor;
    memcpy(mine.ids_used, comm->ctx->ids_used, sizeof(mine.ids_used));
    seq    = comm->seq;
    status = zsh_allgather(&mine, all, sizeof(mine), ZSH_UINT8, comm);
    if (status != ZSH_OK) {
        goto out;
    }
    id = zsh_split_free_id(all, comm->size);
    if (color < 0) {
        *newcomm_p = NULL;
    } else if (id < 0) {
        status = zsh_error(ZSH_ERR_NO_MEMORY, "zsh_comm_split: all %u communicator ids are in use",
                           ZSH_MAX_COMMS);
    } else {
        status = zsh_split_create(comm, all, color, id, zsh_split_uid(comm->uid, seq, color),
                                  newcomm_p);
    }
    if (id >= 0) {
        comm->ctx->id_cursor = (uint32_t)id + 1; /* even without a child, as every member does */
    }
out:
    free(all);
    return status;
}
