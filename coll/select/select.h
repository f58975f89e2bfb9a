/*
 * Algorithm selection by collective, message size and rank count, with the
 * ZSH_<COLL>_ALGO variables as overrides. Every rank must choose the same
 * algorithm for the same call; selection depends only on arguments every rank
 * shares and on the configuration.
 */
#ifndef ZSH_COLL_SELECT_H_
#define ZSH_COLL_SELECT_H_

#include "task/task.h"
#include "core/config.h"

/* Fail with ZSH_ERR_INVALID_ARG naming the variable if an *_ALGO setting
 * names an algorithm its collective does not have. */
zsh_status_t zsh_select_check_config(const zsh_config_t *cfg);

/* The algorithm for @type moving @total_bytes in all (the whole vector);
 * fails with ZSH_ERR_UNSUPPORTED if the override names one that cannot run
 * on @comm. */
zsh_status_t zsh_select(const zsh_comm_t *comm, zsh_coll_type_t type, size_t total_bytes,
                        zsh_algo_t *algo_p);

#endif
