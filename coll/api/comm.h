/*
 * Creating a communicator with everything spelt out, for tests and tools
 * that force a configuration or a transport without the environment.
 */
#ifndef ZSH_COLL_API_COMM_H_
#define ZSH_COLL_API_COMM_H_

#include "base/config.h"
#include "comm/comm.h"

/* zsh_comm_init_oob() with configuration @cfg and transport @tl (with its
 * @tl_options, or NULL for its ZSH_ variables). */
zsh_status_t zsh_comm_init_with(const zsh_oob_t *oob, const zsh_coll_config_t *cfg,
                                const zsh_tl_ops_t *tl, const void *tl_options,
                                zsh_comm_t **comm_p);

#endif
