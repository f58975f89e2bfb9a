/*
 * The dissemination barrier, for zsh_barrier() and the job-wide fence
 * before a context's teardown.
 */
#ifndef ZSH_COLL_BARRIER_BARRIER_H_
#define ZSH_COLL_BARRIER_BARRIER_H_

#include "base/call.h"
#include "comm/comm.h"

/* Barrier (@type ZSH_COLL_BARRIER) or the teardown fence (ZSH_COLL_FENCE)
 * over @comm, blocking. */
zsh_status_t zsh_barrier_run(zsh_comm_t *comm, zsh_coll_type_t type);

#endif
