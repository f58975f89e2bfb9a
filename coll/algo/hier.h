/*
 * Hierarchical algorithms: a call in steps, each a collective on one of
 * the communicator's children (comm/hier.h), its node or its rail, posted
 * as a nonblocking call there once the step before it completed. Within a
 * node the children choose their own algorithms (direct, eager or ring
 * over shared memory); across nodes only the ranks of one local rank talk,
 * so each node's link carries what the node lacks and nothing twice.
 *
 * Reductions run in the accumulation type (kernels.h) across the steps and
 * are stored, divided for AVG, once at the end, as the flat algorithms do.
 */
#ifndef ZSH_COLL_ALGO_HIER_H_
#define ZSH_COLL_ALGO_HIER_H_

#include "task/task.h"

#include <stdbool.h>

/* Post step @step of the call (nonblocking, on a child) into *@sub_p, or
 * leave it NULL where this rank has no part in the step. */
typedef zsh_status_t (*zsh_hier_step_t)(zsh_task_t *task, unsigned step, zsh_request_t **sub_p);
/* What is left once every step completed: copies into place. May be NULL. */
typedef void (*zsh_hier_finish_t)(zsh_task_t *task);

typedef struct zsh_hier {
    zsh_hier_step_t   step;
    zsh_hier_finish_t finish;
    unsigned          nsteps;
    uint64_t          turn;     /* its turn among the parent's hierarchical calls */
    bool              started;  /* its last step was posted: the next call's turn */
    zsh_request_t    *sub;      /* the step in flight */
    /* The collective's own. */
    char             *a, *b, *c;
    zsh_dtype_t       wtype;    /* the steps' type and op */
    zsh_op_t          wop;
    bool              convert;  /* the steps run in another type or op than the call's */
} zsh_hier_t;

_Static_assert(sizeof(zsh_hier_t) <= ZSH_TASK_STATE_BYTES, "zsh_hier_t fits a task's state");

static inline zsh_hier_t *zsh_hier(zsh_task_t *task)
{
    return (zsh_hier_t *)zsh_task_state(task);
}

/* Run @task as @nsteps steps; the collective's fields of zsh_hier() set first. */
zsh_status_t zsh_hier_start(zsh_task_t *task, unsigned nsteps, zsh_hier_step_t step,
                            zsh_hier_finish_t finish);

/* Set the steps' type and op for a reduction: the accumulation type, and
 * SUM for AVG, with convert set where either differs from the call's. */
void         zsh_hier_reduction(zsh_task_t *task);

/* Whether the parent's ranks lie local rank by local rank, each node in
 * node order (round-robin placement): then a child's result in local-rank
 * then node order is already in rank order. */
bool         zsh_hier_rank_order(const zsh_comm_t *comm);

/* Scratch in up to three regions of @na, @nb and @nc bytes (64-byte
 * aligned) into st->a, st->b, st->c; a region of 0 bytes is NULL. */
zsh_status_t zsh_hier_scratch(zsh_task_t *task, size_t na, size_t nb, size_t nc);

#endif
