/*
 * A bounded pool of host buffers: the NVMe tier's swap buffers and the
 * gradient shards on their way to disk. The pool never holds more than its
 * limit, counting the blocks it keeps for reuse, so the limit a user gives
 * is the most host memory these buffers ever take; the peak is reported.
 * Blocks are aligned for O_DIRECT and freed ones are kept for a request of
 * the same size, since the step asks for the same sizes again and again.
 * A pinned pool page-locks its blocks for the device (zsh_dev_host_register)
 * once, when it allocates them, so that reuse keeps them locked. A pool
 * given an account counts its blocks there, kept ones too, from their
 * allocation to their release: the memory they hold is reported as held.
 */
#ifndef ZSH_MEM_POOL_H_
#define ZSH_MEM_POOL_H_

#include "mem/account.h"

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>

#define ZSH_POOL_ALIGN 4096

typedef struct zsh_pool_block zsh_pool_block_t;

typedef struct zsh_pool {
    size_t            limit;  /* the most bytes held, in use or kept */
    size_t            held;   /* bytes held now */
    size_t            peak;   /* the most held at once */
    unsigned long     allocs; /* blocks allocated so far (not reuses) */
    zsh_pool_block_t *free;   /* kept blocks */
    bool              pinned; /* blocks are page-locked for device copies */
    zsh_account_t    *acct;   /* where the held bytes are counted; NULL: nowhere */
    zsh_mem_kind_t    kind;   /* under which kind */
} zsh_pool_t;

void zsh_pool_init(zsh_pool_t *pool, size_t limit);

/* Free every kept block; blocks in use must have been put back. */
void zsh_pool_fini(zsh_pool_t *pool);

/* @bytes (a multiple of ZSH_POOL_ALIGN) aligned to ZSH_POOL_ALIGN, or NULL
 * when they do not fit in the limit even after dropping the kept blocks, or
 * the system has no memory (or a pinned pool could not lock them). */
void *zsh_pool_get(zsh_pool_t *pool, size_t bytes);

/* zsh_pool_get(), or a kept block of at most half as much again, the
 * smallest (a request of a size seen before finds one more often, and
 * allocates less); *@got_p: its bytes, which zsh_pool_put() is given. */
void *zsh_pool_get_fit(zsh_pool_t *pool, size_t bytes, size_t *got_p);

/* Whether zsh_pool_get_fit(@bytes) would allocate nothing beyond the
 * limit, so drop no kept block: one fits, or the limit has room. */
bool zsh_pool_fits(const zsh_pool_t *pool, size_t bytes);

/* A buffer of @bytes or more (zeroed when new): a block of @pool where one
 * fits (*@block_p: its bytes; @pool NULL: never), else @bytes of its own
 * from @acct as ZSH_MEM_BUFFERS (*@block_p: 0); NULL: no memory. */
void *zsh_pool_get_or_alloc(zsh_pool_t *pool, zsh_account_t *acct, size_t bytes,
                            size_t *block_p);

/* Give back what zsh_pool_get_or_alloc() returned for @bytes as @block: to
 * the pool, or to the system; @comm: a failed collective on it may still
 * write it (zsh_pool_retire(), zsh_account_free_buffer()). */
void zsh_pool_put_or_free(zsh_pool_t *pool, zsh_account_t *acct, void *ptr, size_t bytes,
                          size_t block, zsh_comm_t *comm);

/* Give back a block zsh_pool_get() returned for @bytes; NULL is ignored. */
void zsh_pool_put(zsh_pool_t *pool, void *ptr, size_t bytes);

/* Take a block out of the pool for good instead: a failed collective on
 * @comm's job used it and may still write it, so it is freed only once
 * nothing can (zsh_comm_free_buffer()) and never handed out again. */
void zsh_pool_retire(zsh_pool_t *pool, void *ptr, size_t bytes, zsh_comm_t *comm);

/* Round @bytes up to ZSH_POOL_ALIGN. */
static inline size_t zsh_pool_round(size_t bytes)
{
    return (bytes + ZSH_POOL_ALIGN - 1) / ZSH_POOL_ALIGN * ZSH_POOL_ALIGN;
}

#endif
