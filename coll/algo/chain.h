/*
 * The chain: the deterministic mode's algorithm across nodes that hold
 * consecutive ranks (block placement), a hierarchical one (algo/hier.h)
 * that keeps zeroshard.h's order. Node k receives from node k - 1 the
 * running sum of ranks 0 .. first(k) - 1 in the accumulation type, adds
 * its local rank 0's input to it, and reduces that with its other ranks'
 * inputs in rank order within the node (the node's child in the mode);
 * the node passes the sum on to node k + 1. Every element is so folded
 * over ranks 0 .. N-1 in order, never rounded to the element type on the
 * way, and the last node holds the result.
 *
 * The running sum crosses each boundary between nodes once, spread over
 * the rails (local rank l carries its share of the node's reduce-scatter),
 * where the ordered algorithm sends every off-node rank's block to its
 * owner. The nodes take their turns one after another: a latency of the
 * node count, which the bytes saved pay for on large calls.
 *
 * Steps 0 .. ZSH_CHAIN_STEPS - 1 are the chain; each collective adds how
 * its result leaves the last node. The collective sets, before
 * zsh_chain_start(): zsh_hier()->a, the node's reduce-scatter input of
 * @share x local ranks accumulation-type elements (this rank's input,
 * converted and laid out); b, @share elements, where this rank's share
 * of the sum ends; c, as large as a, scratch.
 */
#ifndef ZSH_COLL_ALGO_CHAIN_H_
#define ZSH_COLL_ALGO_CHAIN_H_

#include "algo/hier.h"

#include <stdbool.h>

/* The chain's own steps: receive the share of the sum, all-gather it in
 * the node, reduce the node, send the share on. */
#define ZSH_CHAIN_STEPS 4u

/* Whether the chain runs on @comm: more than one node, as many ranks on
 * each, placed in blocks. Elsewhere the deterministic mode runs ordered. */
bool zsh_chain_runs(const zsh_comm_t *comm);

/* Post chain step @step (< ZSH_CHAIN_STEPS) of a call whose node shares
 * hold @share elements; as zsh_hier_step_t otherwise. */
zsh_status_t zsh_chain_step(zsh_task_t *task, unsigned step, size_t share,
                            zsh_request_t **sub_p);

#endif
