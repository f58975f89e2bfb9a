/*
 * Transparent huge pages for the layer's large host buffers.
 *
 * Ranks on one node move the layer's buckets and shards by cross-memory
 * attach, whose kernel copy pins every page of the buffers on both sides, a
 * 4 KiB page at a time. Backed by 2 MiB pages the same copy pins 512 times
 * fewer (measured in docs/DECISIONS.md, "Huge pages").
 *
 * Such a buffer is a mapping of its own, aligned to a huge page and advised
 * for huge pages before anything touches it, and unmapped when freed, so the
 * advice ends with the buffer: advice given to a part of malloc's heap
 * would outlive the buffer, pass to whatever malloc put there next, and cut
 * the heap's mapping into pieces. Where the kernel's transparent huge pages
 * are off ("never") nothing changes; ZSH_HUGE_PAGES=off leaves every buffer
 * to malloc.
 */
#ifndef ZSH_MEM_HUGE_H_
#define ZSH_MEM_HUGE_H_

#include <zeroshard.h>

#include <stddef.h>

/* Read ZSH_HUGE_PAGES (this folder's variable): ZSH_OK, or
 * ZSH_ERR_INVALID_ARG naming a malformed value. */
zsh_status_t zsh_huge_config_check(void);

/* The huge page size a host buffer of @bytes would be aligned to: the
 * kernel's PMD page size for buffers of at least one such page, 0 for
 * smaller ones, where transparent huge pages are off, or with
 * ZSH_HUGE_PAGES=off. */
size_t zsh_huge_align(size_t bytes);

/* @bytes of zeroed memory on huge pages (the whole pages of it; a partial
 * last one stays small, so nothing beyond @bytes becomes resident), or NULL
 * where zsh_huge_align() says 0 or the mapping fails: the caller then
 * allocates as usual. Free it with zsh_huge_free(). */
void *zsh_huge_alloc(size_t bytes);

/* @bytes of zeroed host memory: zsh_huge_alloc()'s where it gives one, else
 * aligned to @align from malloc (a power of two, at least a pointer's
 * size); NULL where neither can. Free it with zsh_huge_free(). */
void *zsh_huge_zalloc(size_t bytes, size_t align);

/* Free a host buffer: unmap one zsh_huge_alloc() returned, free() any
 * other (so every host free of the layer may go through here); NULL is
 * ignored. */
void zsh_huge_free(void *ptr);

#endif
