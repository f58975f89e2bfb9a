/*
 * Snapshots across nodes: which ranks share a node's snapshot directory, the
 * copy of each rank's files into its buddy's, a rank of the next node, and
 * the fetch of the files a node lacks before a restore.
 */
#ifndef ZSH_CKPT_BUDDY_H
#define ZSH_CKPT_BUDDY_H

#include "ckpt/format.h"

#include "optim/state.h"

#include <zeroshard.h>

#include <stdbool.h>
#include <stdint.h>

/* A copy between nodes moves a rank's files in chunks of this size, one per
 * stream a round: each stream holds one such buffer on each side. */
#define ZSH_BUDDY_CHUNK ((size_t)4 << 20)
/* A point-to-point tag of its own: nothing else on the optimizer's
 * communicator sends point to point during a save or a restore. */
#define ZSH_BUDDY_TAG (ZSH_TAG_MAX - 7)

typedef struct zsh_ckpt_nodes {
    int  nnodes;
    int  leader; /* the first rank of this rank's node: it commits there */
    int  buddy;  /* the rank that keeps a copy of this rank's files; -1: none */
    int *buddy_of; /* per rank, as buddy */
    int *node_of;  /* per rank, its node's number */
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

/* Shard @s's stream: its files in kind order, in ZSH_BUDDY_CHUNK pieces.
 * Chunk @i's file in *@k_p, its offset and length; false past the end. */
bool zsh_ckpt_buddy_chunk(const zsh_ckpt_t *ck, uint32_t s, size_t i, int *k_p, uint64_t *off_p,
                          size_t *len_p);

/* Read (@out false) or write @len bytes of file @fd at @off, for a copy. */
zsh_status_t zsh_ckpt_buddy_io(int fd, bool out, void *buf, size_t len, uint64_t off);

/* Before a restore reads @path, this node's copy of a snapshot (whose
 * manifest it holds): every shard file the ranks of this node will read and
 * the directory lacks is sent by a rank of a node that holds it, and
 * written under its own name only once every transfer succeeded.
 * Collective over the new communicator, @n its nodes. A shard no node holds (a node and its buddy
 * node both lost) fails on every rank alike, naming it, before anything is
 * sent. The bytes this rank wrote in *@bytes_p. */
zsh_status_t zsh_ckpt_fetch(zsh_optim_t *opt, const zsh_ckpt_nodes_t *n, const char *path,
                            uint64_t *bytes_p);

/* zsh_optim_save() with each node's leader making and committing @dir on its
 * node, and the buddies' copies written before any commit; @nodes NULL: rank
 * 0 does both in a directory every rank shares (zsh_optim_save()). */
zsh_status_t zsh_ckpt_save(zsh_optim_t *opt, const char *dir, const char *fn,
                           const zsh_ckpt_nodes_t *nodes);

/* zsh_optim_load() from @path, the checkpoint directory this rank reads
 * (each node its own); @path NULL: the one rank 0 resolves in @dir. */
zsh_status_t zsh_ckpt_load(zsh_optim_t *opt, const char *dir, const char *path, const char *fn);

#endif
