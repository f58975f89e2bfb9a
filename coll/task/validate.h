/*
 * Argument checks for every collective. They run before anything touches
 * the network, so a rejected call leaves the communicator as it was (it does
 * not even consume a sequence number).
 */
#ifndef ZSH_COLL_VALIDATE_H_
#define ZSH_COLL_VALIDATE_H_

#include "task/task.h"

/* ZSH_OK, or ZSH_ERR_INVALID_ARG with a message naming @fn, the argument and its value. */
zsh_status_t zsh_validate(const char *fn, const zsh_comm_t *comm, const zsh_coll_args_t *args);

#endif
