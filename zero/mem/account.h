/*
 * Byte accounting for the sharding and optimizer layers.
 *
 * Every buffer those layers own is allocated and freed here, under a kind,
 * so the bytes they report are the bytes they hold: the memory formulas of
 * the ZeRO paper are asserted against these counters, not against arithmetic
 * done beside the allocations. Framework-owned memory that the layer keeps
 * using (parameter buffers at stages 0-2) is added with zsh_account_hold().
 */
#ifndef ZSH_CORE_ACCOUNT_H_
#define ZSH_CORE_ACCOUNT_H_

#include "mem/device.h"

#include <zeroshard.h>

#include <stddef.h>

typedef enum {
    ZSH_MEM_PARAMS,  /* parameters (full or sharded) */
    ZSH_MEM_GRADS,   /* reduced gradients (full or sharded) */
    ZSH_MEM_STATES,  /* optimizer states, and fp32 master weights under mixed precision */
    ZSH_MEM_BUFFERS, /* gather, reduction and staging buffers, bounded by configuration */
    ZSH_MEM_KINDS
} zsh_mem_kind_t;

/* An account allocates at its place (zero-initialised: host memory);
 * device memory in order on its stream. */
typedef struct zsh_account {
    size_t      cur[ZSH_MEM_KINDS];
    size_t      peak[ZSH_MEM_KINDS];
    size_t      all, all_peak; /* every kind together, now and at most */
    zsh_place_t place;
    void       *stream;
} zsh_account_t;

/* @bytes zeroed bytes at the account's place, 64-byte aligned on the host
 * so kernels get whole cache lines, or NULL. @acct may be NULL (nothing is counted). Zero bytes still give a
 * pointer that zsh_account_free() takes. */
void *zsh_account_alloc(zsh_account_t *acct, zsh_mem_kind_t kind, size_t bytes);

/* Free what zsh_account_alloc() returned for the same @kind and @bytes; NULL is ignored. */
void  zsh_account_free(zsh_account_t *acct, zsh_mem_kind_t kind, void *ptr, size_t bytes);

/* zsh_account_free() for a buffer a failed collective on @comm's job used:
 * it stops counting at once, and is freed once no transfer that collective
 * left under way can write it (zsh_comm_free_buffer()); at once where @comm
 * is NULL (no collective failed on it) or the memory is the device's (a
 * failed device call aborted its NCCL communicator, whose kernels are done
 * by the time the stream reaches the free). */
void  zsh_account_free_buffer(zsh_account_t *acct, zsh_mem_kind_t kind, void *ptr, size_t bytes,
                              zsh_comm_t *comm);

/* Count (or stop counting) @bytes held elsewhere but used by the layer. */
void  zsh_account_hold(zsh_account_t *acct, zsh_mem_kind_t kind, size_t bytes);
void  zsh_account_unhold(zsh_account_t *acct, zsh_mem_kind_t kind, size_t bytes);

#endif
