/*
 * Preparing a call: check its arguments, take a task, choose its algorithm
 * and set it up, for every collective that selects one.
 */
#ifndef ZSH_COLL_SELECT_PREPARE_H_
#define ZSH_COLL_SELECT_PREPARE_H_

#include "task/task.h"

/* What sets a task up for one algorithm of a collective. A collective's
 * algorithms are a table of these indexed by zsh_algo_t, NULL where it
 * lacks one, so a call finds its init without a search. */
typedef zsh_status_t (*zsh_coll_init_t)(zsh_task_t *task);

/*
 * A task for call @args on @comm, on behalf of @fn ("zsh_allgather"), ready
 * to post: @algos holds the collective's ZSH_ALGO_LAST inits; its
 * ZSH_ALGO_AUTO entry runs on one rank, where nothing is chosen. A call of
 * no elements has nothing to set up. Bad arguments fail before anything is
 * taken; a failure after gives the task back.
 */
zsh_status_t zsh_coll_prepare(const char *fn, const zsh_coll_args_t *args, zsh_comm_t *comm,
                              const zsh_coll_init_t *algos, zsh_task_t **task_p);

/* A public entry point's whole body: prepare call @args and run it, blocking
 * when @nonblocking is false, else handing the request to *@req_p. */
zsh_status_t zsh_coll_call(const char *fn, const zsh_coll_args_t *args, zsh_comm_t *comm,
                           const zsh_coll_init_t *algos, bool nonblocking,
                           zsh_request_t **req_p);

#endif
