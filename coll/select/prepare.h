/*
 * Preparing a call: check its arguments, take a task, choose its algorithm
 * and set it up, for every collective that selects one.
 */
#ifndef ZSH_COLL_SELECT_PREPARE_H_
#define ZSH_COLL_SELECT_PREPARE_H_

#include "task/task.h"

/* One algorithm of a collective, and the init that sets a task up for it. */
typedef struct zsh_coll_algo {
    zsh_algo_t algo;
    zsh_status_t (*init)(zsh_task_t *task);
} zsh_coll_algo_t;

/*
 * A task for call @args on @comm, on behalf of @fn ("zsh_allgather"), ready
 * to post: @algos lists the collective's algorithms, ending with
 * {ZSH_ALGO_LAST, NULL}; its ZSH_ALGO_AUTO entry runs on one rank, where
 * nothing is chosen. A call of no elements has nothing to set up. Bad
 * arguments fail before anything is taken; a failure after gives the task
 * back.
 */
zsh_status_t zsh_coll_prepare(const char *fn, const zsh_coll_args_t *args, zsh_comm_t *comm,
                              const zsh_coll_algo_t *algos, zsh_task_t **task_p);

/* A public entry point's whole body: prepare call @args and run it, blocking
 * when @nonblocking is false, else handing the request to *@req_p. */
zsh_status_t zsh_coll_call(const char *fn, const zsh_coll_args_t *args, zsh_comm_t *comm,
                           const zsh_coll_algo_t *algos, bool nonblocking,
                           zsh_request_t **req_p);

#endif
