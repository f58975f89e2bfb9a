/*
 * Topology: which ranks share a node, and what the node looks like (hwloc).
 *
 * Every rank contributes a zsh_topo_id_t to the bootstrap exchange; ranks
 * with the same host name share a node. Node-aware algorithms and zsh_info
 * read the result.
 */
#ifndef ZSH_TOPO_TOPO_H_
#define ZSH_TOPO_TOPO_H_

#include <zeroshard.h>

#include <stddef.h>

#define ZSH_TOPO_HOST_MAX 64

typedef struct zsh_topo_id {
    char host[ZSH_TOPO_HOST_MAX];
} zsh_topo_id_t;

typedef struct zsh_topo {
    int  nnodes;
    int  node;           /* this rank's node, in [0, nnodes) */
    int  local_rank;     /* among the ranks on this node, in job-rank order */
    int  local_size;
    int  node_cpus;      /* processors online on this node */
    int *node_of;        /* job rank -> node */
    size_t private_cache;/* bytes of the largest cache this rank's core has to itself,
                            0 if hwloc could not tell or was not asked (ZSH_STREAM_MIN_SIZE
                            set) */
} zsh_topo_t;

/* Whether more ranks share this node than it has processors: a waiter
 * must then give its core away at once, or the rank it waits for cannot run. */
static inline int zsh_topo_oversubscribed(const zsh_topo_t *topo)
{
    return topo->local_size > topo->node_cpus;
}

/* This process's identity for the exchange. */
zsh_status_t zsh_topo_local_id(zsh_topo_id_t *id);

/* Build the rank map from every rank's identity, in job-rank order. */
zsh_status_t zsh_topo_create(int rank, int size, const zsh_topo_id_t *ids, zsh_topo_t **topo_p);
void         zsh_topo_destroy(zsh_topo_t *topo);

/*
 * Bytes of the largest data cache that the core running this process has to
 * itself (hwloc; usually the L2), into *@bytes_p: 0 where no cache is
 * private to one core, or none is known. A copy whose buffers outgrow it no
 * longer finds what it wrote in cache, which is when non-temporal stores
 * pay (coll/copy.h). @synthetic as for zsh_topo_describe(), for tests.
 */
zsh_status_t zsh_topo_private_cache(const char *synthetic, size_t *bytes_p);

/*
 * One line describing a machine through hwloc: packages, NUMA nodes, cores,
 * PUs and this process's binding. @synthetic describes a fake machine in
 * hwloc's synthetic syntax ("package:2 core:4 pu:2"), or NULL for this one.
 */
zsh_status_t zsh_topo_describe(const char *synthetic, char *buf, size_t len);

#endif
