/*
 * The stage 3 fetch record (optim/prefetch.h), with no ranks: the first step
 * records the order, later steps are told the buckets ahead of them along
 * it, a step that departs from it is told so once and gets no prefetch for
 * the rest of the step, and its own order becomes the record.
 */
#include "harness/zsh_test.h"

#include "optim/prefetch.h"

#include <stddef.h>

/* Note the fetches of @order (@n buckets), each expected to return @want. */
static void zsh_pf_fetch(zsh_prefetch_t *pf, const size_t *order, size_t n, int want)
{
    size_t i;

    for (i = 0; i < n; i++) {
        ZSH_EXPECT_EQ(want, zsh_prefetch_note(pf, order[i]));
    }
}

ZSH_TEST(prefetch_order, the_first_step_records_and_later_steps_see_the_buckets_ahead)
{
    static const size_t order[] = {3, 1, 4, 0, 2};
    zsh_prefetch_t pf = {0};
    size_t b = 99, i;

    ZSH_EXPECT_TRUE(!zsh_prefetch_ahead(&pf, 0, &b)); /* nothing recorded yet */
    zsh_pf_fetch(&pf, order, 5, 0);
    ZSH_EXPECT_TRUE(!zsh_prefetch_ahead(&pf, 0, &b));
    zsh_prefetch_end_step(&pf);
    /* Step 2: before each fetch, the next ones are the record's. */
    for (i = 0; i < 5; i++) {
        ZSH_EXPECT_TRUE(zsh_prefetch_ahead(&pf, 0, &b));
        ZSH_EXPECT_EQ(order[i], b);
        if (i + 1 < 5) {
            ZSH_EXPECT_TRUE(zsh_prefetch_ahead(&pf, 1, &b));
            ZSH_EXPECT_EQ(order[i + 1], b);
        } else {
            ZSH_EXPECT_TRUE(!zsh_prefetch_ahead(&pf, 1, &b)); /* past the record's end */
        }
        ZSH_EXPECT_EQ(0, zsh_prefetch_note(&pf, order[i]));
    }
    ZSH_EXPECT_TRUE(!zsh_prefetch_ahead(&pf, 0, &b));
    zsh_prefetch_free(&pf);
}

ZSH_TEST(prefetch_order, an_immediate_repeat_is_not_a_new_fetch)
{
    static const size_t first[] = {0, 0, 1, 1, 1, 2}, later[] = {0, 1, 1, 2, 2};
    zsh_prefetch_t pf = {0};
    size_t b = 99;

    zsh_pf_fetch(&pf, first, 6, 0);
    zsh_prefetch_end_step(&pf);
    ZSH_EXPECT_EQ(3, pf.ntrace); /* 0 1 2 */
    zsh_pf_fetch(&pf, later, 5, 0);
    ZSH_EXPECT_TRUE(!pf.diverged);
    ZSH_EXPECT_TRUE(!zsh_prefetch_ahead(&pf, 0, &b)); /* the whole record was followed */
    zsh_prefetch_free(&pf);
}

ZSH_TEST(prefetch_order, a_step_that_departs_is_told_once_and_its_order_becomes_the_record)
{
    static const size_t first[] = {0, 1, 2, 3}, second[] = {0, 2, 1, 3}, third[] = {0, 2, 1, 3};
    zsh_prefetch_t pf = {0};
    size_t b = 99;

    zsh_pf_fetch(&pf, first, 4, 0);
    zsh_prefetch_end_step(&pf);
    ZSH_EXPECT_EQ(0, zsh_prefetch_note(&pf, second[0]));
    ZSH_EXPECT_EQ(1, zsh_prefetch_note(&pf, second[1])); /* 2 where 1 was recorded */
    ZSH_EXPECT_TRUE(pf.diverged);
    ZSH_EXPECT_TRUE(!zsh_prefetch_ahead(&pf, 0, &b)); /* no prefetch for the rest of it */
    ZSH_EXPECT_EQ(0, zsh_prefetch_note(&pf, second[2]));
    ZSH_EXPECT_EQ(0, zsh_prefetch_note(&pf, second[3]));
    zsh_prefetch_end_step(&pf);
    /* The next step follows the new order without departing. */
    ZSH_EXPECT_TRUE(zsh_prefetch_ahead(&pf, 1, &b));
    ZSH_EXPECT_EQ(2, b);
    zsh_pf_fetch(&pf, third, 4, 0);
    ZSH_EXPECT_TRUE(!pf.diverged);
    zsh_prefetch_free(&pf);
}

ZSH_TEST(prefetch_order, a_step_longer_than_the_record_departs_at_its_first_extra_fetch)
{
    static const size_t first[] = {0, 1}, second[] = {0, 1, 2};
    zsh_prefetch_t pf = {0};

    zsh_pf_fetch(&pf, first, 2, 0);
    zsh_prefetch_end_step(&pf);
    zsh_pf_fetch(&pf, second, 2, 0);
    ZSH_EXPECT_EQ(1, zsh_prefetch_note(&pf, second[2]));
    zsh_prefetch_end_step(&pf);
    ZSH_EXPECT_EQ(3, pf.ntrace);
    zsh_prefetch_free(&pf);
}
