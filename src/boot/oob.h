/*
 * Driving a caller-supplied out-of-band allgather to completion.
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

#endif
