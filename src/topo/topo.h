/*
 * Topology: which ranks share a node, where each sits within its node, and
 * what the node looks like (hwloc).
 *
 * Every rank contributes a zsh_topo_id_t to the bootstrap exchange, so each
 * rank builds the same map of the whole job (map.c); a communicator holds
 * the map of its own members (zsh_topo_sub). Node-aware algorithms, the
 * transport's choice of shared memory and zsh_info read it.
 */
#ifndef ZSH_TOPO_TOPO_H_
#define ZSH_TOPO_TOPO_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZSH_TOPO_HOST_MAX    64
#define ZSH_TOPO_MACHINE_MAX 40 /* a boot id or machine id, with room for its NUL */

/*
 * What one rank tells the others about where it runs. Two ranks share a
 * node when both host and machine are equal: the host name tells apart
 * ranks in separate UTS namespaces of one kernel (a simulated cluster), and
 * the kernel's boot id tells apart two machines that share a host name.
 */
typedef struct zsh_topo_id {
    char    host[ZSH_TOPO_HOST_MAX];       /* host name, or ZSH_NODE_NAME */
    char    machine[ZSH_TOPO_MACHINE_MAX]; /* kernel boot id, else /etc/machine-id, else "" */
    int32_t numa;    /* NUMA node (the kernel's number) holding every PU it may run on, or -1 */
    int32_t package; /* package (hwloc's logical index) likewise, or -1 */
} zsh_topo_id_t;

/* One rank's place in a map. */
typedef struct zsh_topo_rank {
    int node;       /* in [0, nnodes) */
    int local_rank; /* among the map's ranks on its node, in rank order */
    int numa;       /* as in zsh_topo_id_t: -1 unknown or not within one */
    int package;
} zsh_topo_rank_t;

/* How ranks lie across nodes, as zsh_topo_placement() tells it. */
typedef enum {
    ZSH_TOPO_ONE_NODE,     /* every rank on one node */
    ZSH_TOPO_BLOCK,        /* each node's ranks are consecutive */
    ZSH_TOPO_ROUND_ROBIN,  /* rank r on node r % nnodes, not also block */
    ZSH_TOPO_SCATTERED     /* neither */
} zsh_topo_placement_t;

/*
 * The rank map of a job or a communicator. Ranks are the job's ranks in the
 * context's map and the communicator's own ranks in a communicator's map.
 * Nodes are numbered in the order their first rank appears.
 */
typedef struct zsh_topo {
    int  size;           /* ranks in the map */
    int  rank;           /* this process's rank in it */
    int  nnodes;
    int  node;           /* this rank's node, in [0, nnodes) */
    int  local_rank;     /* among the ranks on this node, in rank order */
    int  local_size;
    int  min_local, max_local; /* fewest and most ranks on one node */
    int  node_cpus;      /* processors online on this node */
    int *node_of;        /* rank -> node */
    zsh_topo_rank_t *ranks;    /* [size] */
    int *node_start;     /* [nnodes + 1]: node n's ranks are by_node[node_start[n]..node_start[n+1]) */
    int *by_node;        /* [size]: the ranks, node by node, each node's in local-rank order */
    zsh_topo_id_t *node_id;    /* [nnodes]: the identity of each node's first rank */
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

/* This process's identity for the exchange: host name (or ZSH_NODE_NAME),
 * boot id, and the NUMA node and package of its binding. ZSH_ERR_INVALID_ARG
 * for a malformed ZSH_NODE_NAME. */
zsh_status_t zsh_topo_local_id(zsh_topo_id_t *id);

/*
 * The NUMA node (the kernel's number) and package (hwloc's logical index)
 * that hold every processor of a binding, each -1 where none holds them
 * all. @synthetic describes a fake machine in hwloc's synthetic syntax, or
 * NULL for this one; @cpulist is the binding as a PU list ("0-3,8"), or
 * NULL for this process's own (a synthetic machine's: all of it).
 * ZSH_ERR_INVALID_ARG for a shape or list hwloc rejects.
 */
zsh_status_t zsh_topo_place(const char *synthetic, const char *cpulist, int *numa_p,
                            int *package_p);

/* Times this process loaded this machine's topology: once, whoever asks
 * (zsh_topo_private_cache(), zsh_topo_describe() and zsh_topo_place() with
 * a NULL @synthetic share it), unless a load failed. */
size_t zsh_topo_machine_loads(void);

/* Build the job's rank map from every rank's identity, in job-rank order. */
zsh_status_t zsh_topo_create(int rank, int size, const zsh_topo_id_t *ids, zsh_topo_t **topo_p);

/*
 * The map of a group of @parent's ranks: @members[i] is the parent rank of
 * the group's rank i, and @rank is this process's rank in the group. Nodes
 * and local ranks are counted among the members only.
 */
zsh_status_t zsh_topo_sub(const zsh_topo_t *parent, int rank, int size, const int *members,
                          zsh_topo_t **topo_p);

void         zsh_topo_destroy(zsh_topo_t *topo);

/* ---- Questions node-aware algorithms ask of a map ---- */

/* How many ranks @node holds. */
static inline int zsh_topo_node_size(const zsh_topo_t *topo, int node)
{
    return topo->node_start[node + 1] - topo->node_start[node];
}

/* The ranks on @node in local-rank order; their number into *@n_p. */
static inline const int *zsh_topo_node_ranks(const zsh_topo_t *topo, int node, int *n_p)
{
    *n_p = zsh_topo_node_size(topo, node);
    return &topo->by_node[topo->node_start[node]];
}

/* The rank with local rank @local_rank on @node, or -1 where the node has
 * fewer ranks. Local rank 0 of a node is its leader. */
static inline int zsh_topo_rank_at(const zsh_topo_t *topo, int node, int local_rank)
{
    return ((local_rank >= 0) && (local_rank < zsh_topo_node_size(topo, node)))
               ? topo->by_node[topo->node_start[node] + local_rank]
               : -1;
}

/* The leader of @node: its rank of local rank 0. */
static inline int zsh_topo_leader(const zsh_topo_t *topo, int node)
{
    return zsh_topo_rank_at(topo, node, 0);
}

/* Whether nodes hold different numbers of ranks: then some rails miss nodes. */
static inline bool zsh_topo_uneven(const zsh_topo_t *topo)
{
    return topo->min_local != topo->max_local;
}

/*
 * The rail of @local_rank: the rank with that local rank on each node that
 * has one, in node order, into @ranks (room for nnodes). Returns how many;
 * 0 for a local rank no node has. Ranks of one rail talk across nodes in a
 * hierarchical collective while their nodes' other ranks do the same.
 */
int zsh_topo_rail(const zsh_topo_t *topo, int local_rank, int *ranks);

zsh_topo_placement_t zsh_topo_placement(const zsh_topo_t *topo);
const char          *zsh_topo_placement_name(zsh_topo_placement_t placement);

/*
 * The map on one line: ranks, nodes, ranks per node, placement, each
 * node's name and ranks, each rank's NUMA node and package ("-" unknown).
 * Cut short with "..." where @len is too small.
 */
void zsh_topo_format(const zsh_topo_t *topo, char *buf, size_t len);

/* ---- What hwloc says of this machine ---- */

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
