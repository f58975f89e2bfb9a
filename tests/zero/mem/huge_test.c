/*
 * The layer's large host buffers (accounted allocations and the NVMe
 * tier's pool) are mappings of their own that start on a huge page boundary
 * and carry the kernel's huge page advice, so the copies between ranks pin
 * 2 MiB pages, and the advice goes with them when they are freed; small
 * ones are left to malloc, and so are all with ZSH_HUGE_PAGES=off.
 */
#include "harness/zsh_test.h"

#include "mem/account.h"
#include "mem/huge.h"
#include "mem/pool.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the mapping holding @ptr has the kernel's huge page advice
 * ("hg" among its VmFlags in /proc/self/smaps); -1 where that cannot be read. */
static int zsh_test_advised(const void *ptr)
{
    uintptr_t addr = (uintptr_t)ptr, lo, hi;
    char line[512];
    int inside = 0, found = -1;
    FILE *f = fopen("/proc/self/smaps", "r");

    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            inside = (addr >= lo) && (addr < hi);
        } else if (inside && (strncmp(line, "VmFlags:", 8) == 0)) {
            found = (strstr(line, " hg") != NULL);
            break;
        }
    }
    fclose(f);
    return found;
}

/* Whether any mapping of this process holds @ptr, from /proc/self/maps
 * (a probe such as msync would touch an unmapped address, which valgrind
 * reports). */
static bool zsh_test_mapped(const void *ptr)
{
    uintptr_t addr = (uintptr_t)ptr;
    unsigned long lo, hi;
    char line[512];
    bool found = false;
    FILE *f = fopen("/proc/self/maps", "r");

    if (f == NULL) {
        return true; /* cannot tell: assume the worst */
    }
    while (!found && (fgets(line, sizeof(line), f) != NULL)) {
        found = (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) && (addr >= lo) && (addr < hi);
    }
    fclose(f);
    return found;
}

static bool zsh_test_zero(const unsigned char *p, size_t bytes)
{
    size_t i;

    for (i = 0; i < bytes; i += 4093) {
        if (p[i] != 0) {
            return false;
        }
    }
    return p[bytes - 1] == 0;
}

ZSH_TEST(mem_huge, large_layer_buffers_start_on_a_huge_page_with_huge_page_advice)
{
    size_t page = zsh_huge_align((size_t)64 << 20), bytes = ((size_t)9 << 20) + 4096;
    zsh_account_t acct;
    zsh_pool_t pool;
    unsigned char *a, *p;

    if (page == 0) {
        ZSH_SKIP("the kernel's transparent huge pages are off (or unknown): nothing to advise");
    }
    memset(&acct, 0, sizeof(acct));
    a = zsh_account_alloc(&acct, ZSH_MEM_BUFFERS, bytes);
    ZSH_ASSERT_TRUE(a != NULL);
    ZSH_EXPECT_TRUE(((uintptr_t)a % page) == 0);
    ZSH_EXPECT_TRUE(zsh_test_zero(a, bytes));
    ZSH_EXPECT_TRUE(zsh_test_advised(a) == 1);
    ZSH_EXPECT_TRUE(acct.cur[ZSH_MEM_BUFFERS] == bytes); /* the bytes asked, not the alignment */

    zsh_pool_init(&pool, (size_t)64 << 20);
    p = zsh_pool_get(&pool, bytes);
    ZSH_ASSERT_TRUE(p != NULL);
    ZSH_EXPECT_TRUE(((uintptr_t)p % page) == 0);
    ZSH_EXPECT_TRUE(zsh_test_zero(p, bytes));
    ZSH_EXPECT_TRUE(zsh_test_advised(p) == 1);
    zsh_pool_put(&pool, p, bytes);
    zsh_pool_fini(&pool);
    ZSH_EXPECT_TRUE(!zsh_test_mapped(p)); /* the advice went with it */
    zsh_account_free(&acct, ZSH_MEM_BUFFERS, a, bytes);
    ZSH_EXPECT_TRUE(acct.cur[ZSH_MEM_BUFFERS] == 0);
    ZSH_EXPECT_TRUE(!zsh_test_mapped(a));
}

ZSH_TEST(mem_huge, buffers_below_one_huge_page_are_not_aligned_to_one)
{
    size_t page = zsh_huge_align((size_t)64 << 20);

    if (page == 0) {
        ZSH_SKIP("the kernel's transparent huge pages are off (or unknown)");
    }
    ZSH_EXPECT_TRUE(zsh_huge_align(page - 1) == 0);
    ZSH_EXPECT_TRUE(zsh_huge_align(4096) == 0);
    ZSH_EXPECT_TRUE(zsh_huge_align(page) == page);
}

ZSH_TEST(mem_huge, huge_pages_off_leaves_large_buffers_as_malloc_gives_them)
{
    size_t page = zsh_huge_align((size_t)64 << 20), bytes = (size_t)9 << 20;
    unsigned char *a, *plain;
    bool headed;

    if (page == 0) {
        ZSH_SKIP("the kernel's transparent huge pages are off (or unknown)");
    }
    /* glibc puts a header before a large block, so no block of its starts a
     * page; a sanitizer's allocator may hand out whole pages, some of them
     * huge-page aligned by chance, and then alignment tells nothing. */
    plain  = malloc(bytes);
    headed = (plain != NULL) && (((uintptr_t)plain % 4096) != 0);
    free(plain);
    setenv("ZSH_HUGE_PAGES", "off", 1);
    ZSH_EXPECT_TRUE(zsh_huge_align(bytes) == 0);
    a = zsh_account_alloc(NULL, ZSH_MEM_BUFFERS, bytes);
    unsetenv("ZSH_HUGE_PAGES");
    ZSH_ASSERT_TRUE(a != NULL);
    if (headed) {
        ZSH_EXPECT_TRUE(((uintptr_t)a % page) != 0);
    }
    /* glibc advises its own mmapped blocks under glibc.malloc.hugetlb=1 (zshrun's default). */
    if (strstr(getenv("GLIBC_TUNABLES") ? getenv("GLIBC_TUNABLES") : "", "hugetlb=1") == NULL) {
        ZSH_EXPECT_TRUE(zsh_test_advised(a) == 0);
    }
    ZSH_EXPECT_TRUE(zsh_test_zero(a, bytes));
    zsh_account_free(NULL, ZSH_MEM_BUFFERS, a, bytes);
    ZSH_EXPECT_TRUE(zsh_huge_align(bytes) == page); /* back on */
}

ZSH_TEST(mem_huge, freed_huge_buffers_are_unmapped_in_any_order_and_others_still_freed)
{
    enum { N = 300 };
    size_t page = zsh_huge_align((size_t)64 << 20), i, j;
    void *bufs[N], *small;
    bool all_unmapped = true;

    if (page == 0) {
        ZSH_SKIP("the kernel's transparent huge pages are off (or unknown): nothing to map");
    }
    /* Mapped, never touched: cheap in memory. Freed in a scrambled order,
     * half of them before the second half is made, so the table of live
     * mappings grows, shrinks and grows again. */
    for (i = 0; i < N / 2; i++) {
        bufs[i] = zsh_huge_alloc(page + 4096 * i);
        ZSH_ASSERT_TRUE(bufs[i] != NULL);
    }
    for (i = 0; i < N / 2; i += 2) {
        zsh_huge_free(bufs[i]);
        bufs[i] = NULL;
    }
    for (i = N / 2; i < N; i++) {
        bufs[i] = zsh_huge_alloc(page);
        ZSH_ASSERT_TRUE(bufs[i] != NULL);
        ZSH_EXPECT_TRUE(((uintptr_t)bufs[i] % page) == 0);
    }
    for (i = 0; i < N; i++) {
        j = (i * 7919) % N; /* 7919 is prime: every index once */
        if (bufs[j] != NULL) {
            zsh_huge_free(bufs[j]);
        }
    }
    for (i = 0; i < N; i++) {
        if ((bufs[i] != NULL) && zsh_test_mapped(bufs[i])) {
            all_unmapped = false;
        }
    }
    ZSH_EXPECT_TRUE(all_unmapped);
    small = malloc(100); /* not a mapping of ours: free()d */
    ZSH_ASSERT_TRUE(small != NULL);
    zsh_huge_free(small);
    zsh_huge_free(NULL);
}
