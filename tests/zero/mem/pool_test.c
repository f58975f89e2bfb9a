/*
 * The bounded pool of host buffers (zero/mem/pool.c): a block given back is
 * handed out again for its size; zsh_pool_get_fit() also takes the smallest
 * kept block up to half as large again, never a larger one; the limit
 * counts kept blocks; an account given to the pool counts every block it
 * holds, kept ones too, until they are freed.
 */
#include "harness/zsh_test.h"
#include "mem/pool.h"

#include <string.h>

#define ZSH_PT_PAGE ((size_t)ZSH_POOL_ALIGN)

ZSH_TEST(mem_pool, a_block_given_back_is_handed_out_again_for_its_size)
{
    zsh_pool_t pool;
    void *a, *b;

    zsh_pool_init(&pool, 16 * ZSH_PT_PAGE);
    a = zsh_pool_get(&pool, 4 * ZSH_PT_PAGE);
    ZSH_ASSERT_TRUE(a != NULL);
    zsh_pool_put(&pool, a, 4 * ZSH_PT_PAGE);
    b = zsh_pool_get(&pool, 4 * ZSH_PT_PAGE);
    ZSH_EXPECT_TRUE(b == a);
    ZSH_EXPECT_EQ(1, pool.allocs);
    ZSH_EXPECT_EQ(4 * ZSH_PT_PAGE, pool.held);
    zsh_pool_put(&pool, b, 4 * ZSH_PT_PAGE);
    zsh_pool_fini(&pool);
    ZSH_EXPECT_EQ(0, pool.held);
}

ZSH_TEST(mem_pool, a_fit_takes_the_smallest_kept_block_up_to_half_as_large_again)
{
    void *big, *mid, *got;
    zsh_pool_t pool;
    size_t bytes;

    zsh_pool_init(&pool, 64 * ZSH_PT_PAGE);
    big = zsh_pool_get(&pool, 8 * ZSH_PT_PAGE);
    mid = zsh_pool_get(&pool, 6 * ZSH_PT_PAGE);
    ZSH_ASSERT_TRUE((big != NULL) && (mid != NULL));
    zsh_pool_put(&pool, big, 8 * ZSH_PT_PAGE);
    zsh_pool_put(&pool, mid, 6 * ZSH_PT_PAGE);
    /* 5 pages: 6 and 8 fit within 7.5; the smaller is taken. */
    got = zsh_pool_get_fit(&pool, 5 * ZSH_PT_PAGE, &bytes);
    ZSH_EXPECT_TRUE(got == mid);
    ZSH_EXPECT_EQ(6 * ZSH_PT_PAGE, bytes);
    zsh_pool_put(&pool, got, bytes);
    /* 4 pages: 6 is half as large again, 8 is twice; zsh_pool_get() takes neither. */
    got = zsh_pool_get_fit(&pool, 4 * ZSH_PT_PAGE, &bytes);
    ZSH_EXPECT_TRUE(got == mid);
    zsh_pool_put(&pool, got, bytes);
    got = zsh_pool_get(&pool, 4 * ZSH_PT_PAGE);
    ZSH_EXPECT_TRUE((got != mid) && (got != big));
    zsh_pool_put(&pool, got, 4 * ZSH_PT_PAGE);
    /* 2 pages: nothing kept is small enough; a block of its own. */
    got = zsh_pool_get_fit(&pool, 2 * ZSH_PT_PAGE, &bytes);
    ZSH_EXPECT_TRUE((got != NULL) && (got != mid) && (got != big));
    ZSH_EXPECT_EQ(2 * ZSH_PT_PAGE, bytes);
    ZSH_EXPECT_EQ(4, pool.allocs);
    zsh_pool_put(&pool, got, bytes);
    zsh_pool_fini(&pool);
}

ZSH_TEST(mem_pool, fits_says_whether_a_request_would_drop_a_kept_block)
{
    zsh_pool_t pool;
    void *a;

    zsh_pool_init(&pool, 10 * ZSH_PT_PAGE);
    ZSH_EXPECT_TRUE(zsh_pool_fits(&pool, 10 * ZSH_PT_PAGE));
    ZSH_EXPECT_TRUE(!zsh_pool_fits(&pool, 11 * ZSH_PT_PAGE));
    a = zsh_pool_get(&pool, 8 * ZSH_PT_PAGE);
    ZSH_ASSERT_TRUE(a != NULL);
    ZSH_EXPECT_TRUE(!zsh_pool_fits(&pool, 3 * ZSH_PT_PAGE)); /* in use: 8 + 3 > 10 */
    zsh_pool_put(&pool, a, 8 * ZSH_PT_PAGE);
    ZSH_EXPECT_TRUE(zsh_pool_fits(&pool, 6 * ZSH_PT_PAGE));  /* the kept 8 fits 6 */
    ZSH_EXPECT_TRUE(!zsh_pool_fits(&pool, 3 * ZSH_PT_PAGE)); /* 8 kept: 3 would drop it */
    ZSH_EXPECT_TRUE(zsh_pool_fits(&pool, 2 * ZSH_PT_PAGE));
    zsh_pool_fini(&pool);
}

ZSH_TEST(mem_pool, an_account_counts_kept_blocks_until_they_are_freed)
{
    zsh_account_t acct;
    zsh_pool_t pool;
    void *a, *b;

    memset(&acct, 0, sizeof(acct));
    zsh_pool_init(&pool, 8 * ZSH_PT_PAGE);
    pool.acct = &acct;
    pool.kind = ZSH_MEM_BUFFERS;
    a = zsh_pool_get(&pool, 4 * ZSH_PT_PAGE);
    ZSH_ASSERT_TRUE(a != NULL);
    ZSH_EXPECT_EQ(4 * ZSH_PT_PAGE, acct.cur[ZSH_MEM_BUFFERS]);
    zsh_pool_put(&pool, a, 4 * ZSH_PT_PAGE);
    ZSH_EXPECT_EQ(4 * ZSH_PT_PAGE, acct.cur[ZSH_MEM_BUFFERS]); /* kept, still held */
    /* 6 pages do not fit beside the kept 4: it is dropped, then counted out. */
    b = zsh_pool_get(&pool, 6 * ZSH_PT_PAGE);
    ZSH_ASSERT_TRUE(b != NULL);
    ZSH_EXPECT_EQ(6 * ZSH_PT_PAGE, acct.cur[ZSH_MEM_BUFFERS]);
    ZSH_EXPECT_EQ(6 * ZSH_PT_PAGE, acct.peak[ZSH_MEM_BUFFERS]);
    zsh_pool_retire(&pool, b, 6 * ZSH_PT_PAGE, NULL);
    ZSH_EXPECT_EQ(0, acct.cur[ZSH_MEM_BUFFERS]);
    zsh_pool_fini(&pool);
}
