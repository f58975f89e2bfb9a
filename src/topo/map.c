/*
 * The rank map: every rank's node, local rank, NUMA node and package, built
 * alike on every rank from the identities they exchanged, and the map of a
 * group of its ranks (a split communicator's members).
 */
#include "topo/topo.h"

#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void zsh_topo_destroy(zsh_topo_t *topo)
{
    if (topo == NULL) {
        return;
    }
    free(topo->node_id);
    free(topo->by_node);
    free(topo->node_start);
    free(topo->ranks);
    free(topo->node_of);
    free(topo);
}

/*
 * The map of @size ranks where rank i is on the node of key @key[i] (in
 * [0, @nkeys), whose identity is @key_id[key]) and sits at @place[i]'s NUMA
 * node and package. Nodes are numbered by first appearance in rank order.
 */
static zsh_status_t zsh_topo_build(int rank, int size, const int *key, int nkeys,
                                   const zsh_topo_id_t *key_id, const zsh_topo_rank_t *place,
                                   zsh_topo_t **topo_p)
{
    zsh_topo_t *topo;
    int *remap, *count, i, n;

    topo  = calloc(1, sizeof(*topo));
    remap = malloc((size_t)nkeys * sizeof(int));
    count = calloc((size_t)size + 1, sizeof(int));
    if ((topo == NULL) || (remap == NULL) || (count == NULL)) {
        goto err_nomem;
    }
    topo->node_of    = malloc((size_t)size * sizeof(int));
    topo->ranks      = malloc((size_t)size * sizeof(*topo->ranks));
    topo->node_start = calloc((size_t)size + 1, sizeof(int));
    topo->by_node    = malloc((size_t)size * sizeof(int));
    topo->node_id    = malloc((size_t)size * sizeof(*topo->node_id));
    if ((topo->node_of == NULL) || (topo->ranks == NULL) || (topo->node_start == NULL) ||
        (topo->by_node == NULL) || (topo->node_id == NULL)) {
        goto err_nomem;
    }
    for (i = 0; i < nkeys; i++) {
        remap[i] = -1;
    }
    for (i = 0; i < size; i++) {
        if (remap[key[i]] < 0) {
            topo->node_id[topo->nnodes] = key_id[key[i]];
            remap[key[i]]               = topo->nnodes++;
        }
        n               = remap[key[i]];
        topo->node_of[i] = n;
        topo->ranks[i]  = (zsh_topo_rank_t){n, count[n]++, place[i].numa, place[i].package};
    }
    topo->min_local = size;
    for (n = 0; n < topo->nnodes; n++) {
        topo->node_start[n + 1] = topo->node_start[n] + count[n];
        topo->min_local = (count[n] < topo->min_local) ? count[n] : topo->min_local;
        topo->max_local = (count[n] > topo->max_local) ? count[n] : topo->max_local;
    }
    for (i = 0; i < size; i++) {
        topo->by_node[topo->node_start[topo->node_of[i]] + topo->ranks[i].local_rank] = i;
    }
    topo->size       = size;
    topo->rank       = rank;
    topo->node       = topo->node_of[rank];
    topo->local_rank = topo->ranks[rank].local_rank;
    topo->local_size = count[topo->node];
    topo->node_cpus  = (int)sysconf(_SC_NPROCESSORS_ONLN);
    topo->node_cpus  = (topo->node_cpus > 0) ? topo->node_cpus : 1;
    free(count);
    free(remap);
    *topo_p = topo;
    return ZSH_OK;

err_nomem:
    free(count);
    free(remap);
    zsh_topo_destroy(topo);
    return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the rank map of %d ranks", size);
}

static bool zsh_topo_same_node(const zsh_topo_id_t *a, const zsh_topo_id_t *b)
{
    return (strncmp(a->host, b->host, ZSH_TOPO_HOST_MAX) == 0) &&
           (strncmp(a->machine, b->machine, ZSH_TOPO_MACHINE_MAX) == 0);
}

zsh_status_t zsh_topo_create(int rank, int size, const zsh_topo_id_t *ids, zsh_topo_t **topo_p)
{
    zsh_topo_rank_t *place;
    zsh_topo_id_t *reps;
    zsh_status_t status;
    int *key, nreps = 0, i, j;

    if ((size < 1) || (rank < 0) || (rank >= size) || (ids == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "rank map: rank %d of %d ranks%s", rank, size,
                         (ids == NULL) ? " without identities" : "");
    }
    key   = malloc((size_t)size * sizeof(int));
    place = malloc((size_t)size * sizeof(*place));
    reps  = malloc((size_t)size * sizeof(*reps));
    if ((key == NULL) || (place == NULL) || (reps == NULL)) {
        status = zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the rank map of %d ranks", size);
        goto out;
    }
    /* Each rank against the nodes found so far: O(size * nodes) compares,
     * once per job. */
    for (i = 0; i < size; i++) {
        for (j = 0; (j < nreps) && !zsh_topo_same_node(&ids[i], &reps[j]); j++) {
        }
        if (j == nreps) {
            reps[nreps++] = ids[i];
        }
        key[i]   = j;
        place[i] = (zsh_topo_rank_t){j, 0, ids[i].numa, ids[i].package};
    }
    status = zsh_topo_build(rank, size, key, nreps, reps, place, topo_p);
out:
    free(reps);
    free(place);
    free(key);
    return status;
}

zsh_status_t zsh_topo_sub(const zsh_topo_t *parent, int rank, int size, const int *members,
                          zsh_topo_t **topo_p)
{
    zsh_topo_rank_t *place;
    zsh_status_t status;
    int *key, i;

    if ((size < 1) || (rank < 0) || (rank >= size) || (members == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "rank map: member %d of %d%s", rank, size,
                         (members == NULL) ? " without members" : "");
    }
    for (i = 0; i < size; i++) {
        if ((members[i] < 0) || (members[i] >= parent->size)) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "rank map: member %d is rank %d, outside a map of %d ranks", i,
                             members[i], parent->size);
        }
    }
    key   = malloc((size_t)size * sizeof(int));
    place = malloc((size_t)size * sizeof(*place));
    if ((key == NULL) || (place == NULL)) {
        status = zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the rank map of %d ranks", size);
        goto out;
    }
    for (i = 0; i < size; i++) {
        key[i]   = parent->node_of[members[i]];
        place[i] = parent->ranks[members[i]];
    }
    status = zsh_topo_build(rank, size, key, parent->nnodes, parent->node_id, place, topo_p);
    if (status == ZSH_OK) {
        (*topo_p)->node_cpus     = parent->node_cpus;
        (*topo_p)->private_cache = parent->private_cache;
    }
out:
    free(place);
    free(key);
    return status;
}

int zsh_topo_rail(const zsh_topo_t *topo, int local_rank, int *ranks)
{
    int node, n = 0, r;

    for (node = 0; node < topo->nnodes; node++) {
        r = zsh_topo_rank_at(topo, node, local_rank);
        if (r >= 0) {
            ranks[n++] = r;
        }
    }
    return n;
}

zsh_topo_placement_t zsh_topo_placement(const zsh_topo_t *topo)
{
    bool block = true, round_robin = true;
    int i;

    if (topo->nnodes == 1) {
        return ZSH_TOPO_ONE_NODE;
    }
    for (i = 1; i < topo->size; i++) {
        /* Block: a node, once left, is never seen again (nodes number by
         * first appearance, so they come in increasing order). */
        block = block && (topo->node_of[i] >= topo->node_of[i - 1]);
    }
    for (i = 0; i < topo->size; i++) {
        round_robin = round_robin && (topo->node_of[i] == i % topo->nnodes);
    }
    return block ? ZSH_TOPO_BLOCK : round_robin ? ZSH_TOPO_ROUND_ROBIN : ZSH_TOPO_SCATTERED;
}

const char *zsh_topo_placement_name(zsh_topo_placement_t placement)
{
    switch (placement) {
    case ZSH_TOPO_ONE_NODE:    return "one node";
    case ZSH_TOPO_BLOCK:       return "block";
    case ZSH_TOPO_ROUND_ROBIN: return "round-robin";
    default:                   return "scattered";
    }
}

/* Appends to a line, which stays NUL-terminated and ends in "..." once
 * something did not fit. */
typedef struct zsh_topo_line {
    char  *buf;
    size_t len, used;
    bool   full;
} zsh_topo_line_t;

__attribute__((format(printf, 2, 3))) static void zsh_topo_put(zsh_topo_line_t *l,
                                                               const char *fmt, ...)
{
    va_list ap;
    int n;

    if (l->full || (l->len == 0)) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(l->buf + l->used, l->len - l->used, fmt, ap);
    va_end(ap);
    if ((n >= 0) && ((size_t)n < l->len - l->used)) {
        l->used += (size_t)n;
        return;
    }
    l->full = true;
    l->buf[l->used] = '\0';
    if (l->len >= 4) {
        snprintf(l->buf + ((l->used + 4 <= l->len) ? l->used : l->len - 4), 4, "...");
    }
}

/* Ranks of one node as runs of consecutive ranks: "0-3,8". */
static void zsh_topo_put_ranks(zsh_topo_line_t *l, const int *ranks, int n)
{
    int i = 0, j;

    while (i < n) {
        for (j = i; (j + 1 < n) && (ranks[j + 1] == ranks[j] + 1); j++) {
        }
        zsh_topo_put(l, (j > i) ? "%s%d-%d" : "%s%d", (i > 0) ? "," : "", ranks[i], ranks[j]);
        i = j + 1;
    }
}

static void zsh_topo_put_index(zsh_topo_line_t *l, int index)
{
    if (index < 0) {
        zsh_topo_put(l, "-");
    } else {
        zsh_topo_put(l, "%d", index);
    }
}

void zsh_topo_format(const zsh_topo_t *topo, char *buf, size_t len)
{
    zsh_topo_line_t l = {buf, len, 0, false};
    const int *ranks;
    bool known = false;
    int n, i;

    if (len > 0) {
        buf[0] = '\0';
    }
    zsh_topo_put(&l, "%d rank%s on %d node%s, ", topo->size, (topo->size == 1) ? "" : "s",
                 topo->nnodes, (topo->nnodes == 1) ? "" : "s");
    if (zsh_topo_uneven(topo)) {
        for (n = 0; n < topo->nnodes; n++) {
            zsh_topo_put(&l, "%s%d", (n > 0) ? "+" : "", zsh_topo_node_size(topo, n));
        }
    } else {
        zsh_topo_put(&l, "%d", topo->max_local);
    }
    zsh_topo_put(&l, " per node, %s;", zsh_topo_placement_name(zsh_topo_placement(topo)));
    for (n = 0; n < topo->nnodes; n++) {
        ranks = zsh_topo_node_ranks(topo, n, &i);
        zsh_topo_put(&l, " %s=", topo->node_id[n].host);
        zsh_topo_put_ranks(&l, ranks, i);
    }
    for (i = 0; i < topo->size; i++) {
        known = known || (topo->ranks[i].numa >= 0) || (topo->ranks[i].package >= 0);
    }
    if (!known) {
        zsh_topo_put(&l, "; numa/package unknown");
        return;
    }
    zsh_topo_put(&l, "; numa/package by rank:");
    for (i = 0; i < topo->size; i++) {
        zsh_topo_put(&l, " ");
        zsh_topo_put_index(&l, topo->ranks[i].numa);
        zsh_topo_put(&l, "/");
        zsh_topo_put_index(&l, topo->ranks[i].package);
    }
}
