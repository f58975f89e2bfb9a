/*
 * Why a communicator can no longer be used: a mismatch or an abort, seen
 * here or told by a peer, from a given collective on. Earlier collectives,
 * which every member called alike, may still finish.
 */
#ifndef ZSH_COLL_FAULT_REVOKE_H_
#define ZSH_COLL_FAULT_REVOKE_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stdint.h>

typedef struct zsh_revoke {
    zsh_status_t status;   /* ZSH_OK, or ZSH_ERR_MISMATCH / ZSH_ERR_ABORTED */
    uint32_t     seq;      /* the first collective it fails */
    char        *why;      /* what every call fails with */
} zsh_revoke_t;

/* Revoke from collective @seq on with @status and @why, unless already
 * revoked (the first cause stays); whether it was revoked now. */
bool         zsh_revoke_set(zsh_revoke_t *revoke, zsh_status_t status, uint32_t seq,
                            const char *why);

/* The error of a revocation in force: its status, with why as the thread's
 * last error. */
zsh_status_t zsh_revoke_error(const zsh_revoke_t *revoke);

/* ZSH_OK while collective @seq may go on; else zsh_revoke_error(). */
static inline zsh_status_t zsh_revoke_check(const zsh_revoke_t *revoke, uint32_t seq)
{
    return ((revoke->status == ZSH_OK) || (seq < revoke->seq)) ? ZSH_OK
                                                               : zsh_revoke_error(revoke);
}

void         zsh_revoke_clear(zsh_revoke_t *revoke);

#endif
