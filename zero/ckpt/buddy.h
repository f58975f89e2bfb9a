/*
 * Snapshots across nodes: which ranks share a node's snapshot directory, and
 * the copy of each rank's files into its buddy's, a rank of the next node.
 */
#ifndef ZSH_CKPT_BUDDY_H
#define ZSH_CKPT_BUDDY_H

#include "ckpt/format.h"

#include "optim/state.h"

#include <zeroshard.h>

typedef struct zsh_ckpt_nodes {
    int  nnodes;
    int  leader; /* the first rank of this rank's node: it commits there */
    int  buddy;  /* the rank that keeps a copy of this rank's files; -1: none */
    int *buddy_of; /* per rank, as buddy */
} zsh_ckpt_nodes_t;

/* Group the ranks by node: the ranks whose host name and @dir are the same
 * share a node's directory. Nodes are numbered by their first rank; rank r,
 * the p-th of node j, has for buddy the (p mod count)-th rank of node j+1
 * (cyclically), none on one node. Collective. */
zsh_status_t zsh_ckpt_nodes_find(zsh_optim_t *opt, const char *dir, zsh_ckpt_nodes_t *n);
void         zsh_ckpt_nodes_free(zsh_ckpt_nodes_t *n);

/* Copy this rank's files in @tmp (their sizes in @ck) into its buddy's
 * @tmp, and write the copies of the ranks whose buddy it is into this rank's
 * @tmp. Every rank calls it, after the exchange of checksums. */
zsh_status_t zsh_ckpt_buddy_copy(zsh_optim_t *opt, const zsh_ckpt_t *ck,
                                 const zsh_ckpt_nodes_t *n, const char *tmp);

/* zsh_optim_save() with each node's leader making and committing @dir on its
 * node, and the buddies' copies written before any commit; @nodes NULL: rank
 * 0 does both in a directory every rank shares (zsh_optim_save()). */
zsh_status_t zsh_ckpt_save(zsh_optim_t *opt, const char *dir, const char *fn,
                           const zsh_ckpt_nodes_t *nodes);

/* zsh_optim_load() from @path, the checkpoint directory this rank reads
 * (each node its own); @path NULL: the one rank 0 resolves in @dir. */
zsh_status_t zsh_ckpt_load(zsh_optim_t *opt, const char *dir, const char *path, const char *fn);

#endif
