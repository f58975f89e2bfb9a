/*
 * Transparent huge pages for the layer's large host buffers.
 *
 * Ranks on one node move the layer's buckets and shards by cross-memory
 * attach, whose kernel copy pins every page of the buffers on both sides, a
 * 4 KiB page at a time. Backed by 2 MiB pages the same copy pins 512 times
 * fewer, and zsh_train's stage 3 communication on two ranks took about half
 * the time (docs/DECISIONS.md, "Huge pages"). Where the kernel's
 * transparent huge pages are off ("never") nothing changes; under "always"
 * the kernel backs them so by itself, and only the alignment is ours.
 * ZSH_HUGE_PAGES=off leaves the buffers as malloc gives them.
 */
#ifndef ZSH_MEM_HUGE_H_
#define ZSH_MEM_HUGE_H_

#include <zeroshard.h>

#include <stddef.h>

/* Read ZSH_HUGE_PAGES (this folder's variable): ZSH_OK, or
 * ZSH_ERR_INVALID_ARG naming a malformed value. */
zsh_status_t zsh_huge_config_check(void);

/* The huge page size to align a host buffer of @bytes to: the kernel's PMD
 * page size for buffers of at least one such page, 0 for smaller ones,
 * where transparent huge pages are off, or with ZSH_HUGE_PAGES=off. */
size_t zsh_huge_align(size_t bytes);

/* Ask for huge pages over the whole pages of [@ptr, @ptr + @bytes), before
 * the buffer is first touched; @ptr aligned as zsh_huge_align() said. Only
 * advice: memory the kernel cannot back with huge pages stays small. */
void zsh_huge_advise(void *ptr, size_t bytes);

#endif
