/*
 * Algorithm selection by collective, message size, rank count and what the
 * communicator can reach, with the ZSH_<COLL>_ALGO variables as overrides.
 * Every rank must choose the same algorithm for the same call, so the
 * choice depends only on arguments every rank shares, the configuration,
 * and what the communicator decided alike on every member.
 *
 * The rule is written once, in select.c; zsh_info -s prints it from there,
 * the manual's configuration page quotes that, and the *_ALGO variables' help names each
 * collective's algorithms from the same table.
 */
#ifndef ZSH_COLL_SELECT_SELECT_H_
#define ZSH_COLL_SELECT_SELECT_H_

#include "base/call.h"
#include "base/config.h"
#include "comm/comm.h"

#include <stdio.h>

/* Fail with ZSH_ERR_INVALID_ARG naming the variable if an *_ALGO setting
 * names an algorithm its collective does not have. */
zsh_status_t zsh_select_check_config(const zsh_coll_config_t *cfg);

/* The algorithm for @type moving @total_bytes in all (the whole vector);
 * fails with ZSH_ERR_UNSUPPORTED if the override names one that cannot run
 * on @comm. */
zsh_status_t zsh_select(const zsh_comm_t *comm, zsh_coll_type_t type, size_t total_bytes,
                        zsh_algo_t *algo_p);

/* "auto, ring, bruck, rma, direct or eager": the values ZSH_<@type>_ALGO
 * takes, into @buf. */
void         zsh_select_choices(zsh_coll_type_t type, char *buf, size_t len);

/* The names ZSH_<@type>_ALGO takes, indexed by zsh_algo_t like
 * zsh_algo_names: an algorithm the collective lacks is "", which the
 * registry reserves, so a value it names is refused as it is parsed, and
 * the error lists only this collective's names. */
void         zsh_select_names(zsh_coll_type_t type, const char *names[ZSH_ALGO_LAST + 1]);

/* Write the rule to @out: each collective's algorithms, what each does, and
 * the automatic choice, one line each. */
void         zsh_select_describe(FILE *out);

#endif
