/*
 * Handles given back by the caller (communicators, requests) are retired
 * here rather than freed. Their magic is cleared first, so a stale handle
 * passed back to the API reads a cleared magic in memory that is still
 * ours, and is refused, where a freed struct could already belong to
 * another allocation. The shells are freed oldest first once more than
 * ZSH_RETIRE_MAX are kept, and all at exit: detection covers the most
 * recent ZSH_RETIRE_MAX handles given back, as zeroshard.h documents.
 */
#ifndef ZSH_COLL_COMM_RETIRE_H_
#define ZSH_COLL_COMM_RETIRE_H_

#define ZSH_RETIRE_MAX 256

/* What a handle's magic reads once it is retired; no live handle has it. */
#define ZSH_MAGIC_RETIRED 0xdeadc0deu

/* Keep @shell (from malloc, magic already cleared); may free the oldest. */
void zsh_retire(void *shell);

#endif
