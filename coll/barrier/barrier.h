/*
 * zsh_barrier(): the eager barrier (the descriptor exchange alone) on 2 to 8
 * ranks, the dissemination barrier on more, or the hierarchical one when
 * asked for (the selection rule, select/select.c, chooses); the job-wide
 * fence before a context's teardown is always the dissemination barrier,
 * on the job's communicator.
 */
#ifndef ZSH_COLL_BARRIER_BARRIER_H_
#define ZSH_COLL_BARRIER_BARRIER_H_

#include "base/call.h"
#include "comm/comm.h"
#include "task/task.h"

/* Barrier (@type ZSH_COLL_BARRIER) or the teardown fence (ZSH_COLL_FENCE)
 * over @comm: nonblocking into *@req_p, or blocking where @req_p is NULL. */
zsh_status_t zsh_barrier_run(zsh_comm_t *comm, zsh_coll_type_t type, zsh_request_t **req_p);

/* The algorithms' set-up. */
zsh_status_t zsh_barrier_dissemination_init(zsh_task_t *task);
zsh_status_t zsh_barrier_eager_init(zsh_task_t *task);
zsh_status_t zsh_barrier_hier_init(zsh_task_t *task);

#endif
