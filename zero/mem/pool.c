#include "mem/pool.h"

#include "mem/device.h"
#include "mem/huge.h"

#include <stdlib.h>
#include <string.h>

struct zsh_pool_block {
    zsh_pool_block_t *next;
    void             *ptr;
    size_t            bytes;
};

void zsh_pool_init(zsh_pool_t *pool, size_t limit)
{
    pool->limit  = limit;
    pool->held   = 0;
    pool->peak   = 0;
    pool->allocs = 0;
    pool->free   = NULL;
    pool->pinned = false;
    pool->acct   = NULL;
    pool->kind   = ZSH_MEM_BUFFERS;
}

/* @bytes more (@more) or fewer held. */
static void zsh_pool_count(zsh_pool_t *pool, size_t bytes, bool more)
{
    if (more) {
        pool->held += bytes;
        if (pool->held > pool->peak) {
            pool->peak = pool->held;
        }
        zsh_account_hold(pool->acct, pool->kind, bytes);
    } else {
        pool->held -= bytes;
        zsh_account_unhold(pool->acct, pool->kind, bytes);
    }
}

/* A block leaves the pool: unlocked first if the pool locked it. */
static void zsh_pool_release(const zsh_pool_t *pool, void *ptr)
{
    if (pool->pinned) {
        zsh_dev_host_unregister(ptr);
    }
}

static void zsh_pool_drop(zsh_pool_t *pool, zsh_pool_block_t **link)
{
    zsh_pool_block_t *blk = *link;

    *link = blk->next;
    zsh_pool_count(pool, blk->bytes, false);
    zsh_pool_release(pool, blk->ptr);
    zsh_huge_free(blk->ptr);
    free(blk);
}

void zsh_pool_retire(zsh_pool_t *pool, void *ptr, size_t bytes, zsh_comm_t *comm)
{
    if (ptr == NULL) {
        return;
    }
    zsh_pool_count(pool, bytes, false);
    zsh_pool_release(pool, ptr);
    if ((comm == NULL) || (zsh_comm_free_buffer(comm, ptr, zsh_huge_free) != ZSH_OK)) {
        zsh_huge_free(ptr);
    }
}

void zsh_pool_fini(zsh_pool_t *pool)
{
    while (pool->free != NULL) {
        zsh_pool_drop(pool, &pool->free);
    }
}

/* Take the kept block at *@link out of the list. */
static void *zsh_pool_take(zsh_pool_block_t **link, size_t *got_p)
{
    zsh_pool_block_t *blk = *link;
    void *ptr             = blk->ptr;

    *got_p = blk->bytes;
    *link  = blk->next;
    free(blk);
    return ptr;
}

/* A kept block of @bytes to at most @most bytes, the smallest. */
static void *zsh_pool_find(zsh_pool_t *pool, size_t bytes, size_t most, size_t *got_p)
{
    zsh_pool_block_t **link, **best = NULL;

    for (link = &pool->free; *link != NULL; link = &(*link)->next) {
        if (((*link)->bytes >= bytes) && ((*link)->bytes <= most) &&
            ((best == NULL) || ((*link)->bytes < (*best)->bytes))) {
            best = link;
        }
    }
    return (best != NULL) ? zsh_pool_take(best, got_p) : NULL;
}

/* The most bytes a kept block may have to serve a fit of @bytes. */
static size_t zsh_pool_fit_most(size_t bytes)
{
    return bytes + bytes / 2;
}

bool zsh_pool_fits(const zsh_pool_t *pool, size_t bytes)
{
    const zsh_pool_block_t *blk;

    for (blk = pool->free; blk != NULL; blk = blk->next) {
        if ((blk->bytes >= bytes) && (blk->bytes <= zsh_pool_fit_most(bytes))) {
            return true;
        }
    }
    return pool->held + bytes <= pool->limit;
}

/* A new block, kept ones dropped for it where the limit needs. */
static void *zsh_pool_new(zsh_pool_t *pool, size_t bytes)
{
    void *ptr;

    while ((pool->held + bytes > pool->limit) && (pool->free != NULL)) {
        zsh_pool_drop(pool, &pool->free);
    }
    if ((bytes > pool->limit) || (pool->held + bytes > pool->limit)) {
        return NULL;
    }
    /* Zeroed once: a block filled later by the kernel
     * (a read, another rank's cross-memory write) is then never seen as
     * uninitialised by valgrind, and costs only the page faults its first
     * use takes anyway. */
    ptr = zsh_huge_zalloc(bytes, ZSH_POOL_ALIGN);
    if (ptr == NULL) {
        return NULL;
    }
    if (pool->pinned && (zsh_dev_host_register(ptr, (bytes == 0) ? ZSH_POOL_ALIGN : bytes) != ZSH_OK)) {
        zsh_huge_free(ptr);
        return NULL;
    }
    zsh_pool_count(pool, bytes, true);
    pool->allocs++;
    return ptr;
}

void *zsh_pool_get_fit(zsh_pool_t *pool, size_t bytes, size_t *got_p)
{
    void *ptr = zsh_pool_find(pool, bytes, zsh_pool_fit_most(bytes), got_p);

    if (ptr == NULL) {
        ptr    = zsh_pool_new(pool, bytes);
        *got_p = bytes;
    }
    return ptr;
}

void *zsh_pool_get(zsh_pool_t *pool, size_t bytes)
{
    size_t got;
    void *ptr = zsh_pool_find(pool, bytes, bytes, &got);

    return (ptr != NULL) ? ptr : zsh_pool_new(pool, bytes);
}

void zsh_pool_put(zsh_pool_t *pool, void *ptr, size_t bytes)
{
    zsh_pool_block_t *blk;

    if (ptr == NULL) {
        return;
    }
    blk = malloc(sizeof(*blk));
    if (blk == NULL) {
        /* Cannot keep it: give it back to the system instead. */
        zsh_pool_count(pool, bytes, false);
        zsh_pool_release(pool, ptr);
        zsh_huge_free(ptr);
        return;
    }
    blk->ptr    = ptr;
    blk->bytes  = bytes;
    blk->next   = pool->free;
    pool->free  = blk;
}

void *zsh_pool_get_or_alloc(zsh_pool_t *pool, zsh_account_t *acct, size_t bytes,
                            size_t *block_p)
{
    void *ptr = (pool != NULL) ? zsh_pool_get_fit(pool, zsh_pool_round(bytes), block_p) : NULL;

    if (ptr == NULL) {
        *block_p = 0;
        ptr      = zsh_account_alloc(acct, ZSH_MEM_BUFFERS, bytes);
    }
    return ptr;
}

void zsh_pool_put_or_free(zsh_pool_t *pool, zsh_account_t *acct, void *ptr, size_t bytes,
                          size_t block, zsh_comm_t *comm)
{
    if (block == 0) {
        zsh_account_free_buffer(acct, ZSH_MEM_BUFFERS, ptr, bytes, comm);
    } else if (comm == NULL) {
        zsh_pool_put(pool, ptr, block);
    } else {
        zsh_pool_retire(pool, ptr, block, comm);
    }
}
