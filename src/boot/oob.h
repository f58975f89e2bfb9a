/*
 * Driving a caller-supplied out-of-band allgather to completion, and the
 * agreement on a step of creation that every rank runs over it.
 */
#ifndef ZSH_BOOT_OOB_H_
#define ZSH_BOOT_OOB_H_

#include <zeroshard.h>

/* Check that @oob is usable: callbacks set, 1 <= size <= @max_size (the
 * most ranks the caller can address), 0 <= rank < size. */
zsh_status_t zsh_oob_check(const zsh_oob_t *oob, unsigned max_size);

/* Run @oob's allgather of @len bytes per rank and wait for it, up to
 * @timeout seconds, sleeping between tests. */
zsh_status_t zsh_oob_allgather(const zsh_oob_t *oob, const void *send, void *recv, size_t len,
                               double timeout);

/* Collective over @oob, with every rank's outcome @mine of the same step:
 * ZSH_OK when every rank's is. Otherwise every rank fails, with its own
 * error, or where it had none the lowest failing rank's, naming it (the
 * messages travel only on a failure). A rank that failed calls it before
 * tearing anything down, so that the others, which may still be reaching
 * it (connecting to its transport), fail for the cause, not for its
 * absence. */
zsh_status_t zsh_oob_agree(const zsh_oob_t *oob, double timeout, zsh_status_t mine);

#endif
