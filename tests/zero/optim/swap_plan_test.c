/*
 * The NVMe tier's swap schedule (optim/offload/swap_plan.h), with no ranks or
 * files: every sub-group is read once and then updated once, in order; a
 * slot is read into only after its previous sub-group was updated (its
 * write then waits in the slot); and with S >= 3 slots the reads run S - 2
 * sub-groups ahead of the update, never more.
 */
#include "harness/zsh_test.h"

#include "optim/offload/swap_plan.h"

#include <stdlib.h>

/* Walk a plan of @nsg sub-groups through @nslots slots, checking each
 * action against the ones before it. */
static void zsh_swap_plan_check(size_t nsg, size_t nslots)
{
    size_t *read_at = calloc(nsg + 1, sizeof(size_t)), *updated_at = calloc(nsg + 1, sizeof(size_t));
    size_t *slot_holds = calloc(nslots, sizeof(size_t)), t = 0, i, reads = 0, updates = 0;
    size_t ahead = (nslots >= 3) ? nslots - 2 : 0;
    zsh_swap_plan_t plan;
    zsh_swap_action_t a;

    ZSH_ASSERT_TRUE((read_at != NULL) && (updated_at != NULL) && (slot_holds != NULL));
    for (i = 0; i < nslots; i++) {
        slot_holds[i] = SIZE_MAX; /* empty */
    }
    zsh_swap_plan_init(&plan, nsg, nslots);
    while (zsh_swap_plan_next(&plan, &a)) {
        t++;
        ZSH_ASSERT_TRUE(a.sg < nsg);
        ZSH_EXPECT_EQ(a.sg % nslots, a.slot);
        if (a.op == ZSH_SWAP_READ) {
            ZSH_EXPECT_EQ(reads, a.sg); /* in order, once each */
            ZSH_EXPECT_EQ(0, read_at[a.sg]);
            read_at[a.sg] = t;
            /* The slot's previous sub-group was updated before it is reused. */
            if (slot_holds[a.slot] != SIZE_MAX) {
                ZSH_EXPECT_TRUE(updated_at[slot_holds[a.slot]] != 0);
            }
            slot_holds[a.slot] = a.sg;
            /* Never further ahead of the update than the free slots allow. */
            ZSH_EXPECT_TRUE(a.sg <= updates + ahead);
            reads++;
        } else {
            ZSH_EXPECT_EQ(updates, a.sg);
            ZSH_EXPECT_TRUE(read_at[a.sg] != 0); /* read before its update */
            ZSH_EXPECT_EQ(a.sg, slot_holds[a.slot]);
            /* As far ahead as the slots allow: every sub-group up to sg + S - 2 is read. */
            ZSH_EXPECT_EQ((a.sg + ahead < nsg) ? a.sg + ahead + 1 : nsg, reads);
            updated_at[a.sg] = t;
            updates++;
        }
    }
    ZSH_EXPECT_EQ(nsg, reads);
    ZSH_EXPECT_EQ(nsg, updates);
    ZSH_EXPECT_EQ(2 * nsg, t);
    ZSH_EXPECT_TRUE(!zsh_swap_plan_next(&plan, &a)); /* stays finished */
    free(read_at);
    free(updated_at);
    free(slot_holds);
}

ZSH_TEST(swap_plan, every_sub_group_is_read_then_updated_once_in_order_at_any_slot_count)
{
    size_t nsg, nslots;

    for (nslots = 1; nslots <= 8; nslots++) {
        for (nsg = 0; nsg <= 20; nsg++) {
            zsh_swap_plan_check(nsg, nslots);
        }
    }
}

ZSH_TEST(swap_plan, three_slots_read_one_ahead_of_the_update)
{
    /* R0 R1 U0 R2 U1 R3 U2 U3: sub-group k + 1 is read while k is updated. */
    static const zsh_swap_action_t want[] = {
        {ZSH_SWAP_READ, 0, 0},   {ZSH_SWAP_READ, 1, 1},   {ZSH_SWAP_UPDATE, 0, 0},
        {ZSH_SWAP_READ, 2, 2},   {ZSH_SWAP_UPDATE, 1, 1}, {ZSH_SWAP_READ, 3, 0},
        {ZSH_SWAP_UPDATE, 2, 2}, {ZSH_SWAP_UPDATE, 3, 0},
    };
    zsh_swap_plan_t plan;
    zsh_swap_action_t a;
    size_t i = 0;

    zsh_swap_plan_init(&plan, 4, 3);
    while (zsh_swap_plan_next(&plan, &a)) {
        ZSH_ASSERT_TRUE(i < sizeof(want) / sizeof(want[0]));
        ZSH_EXPECT_EQ(want[i].op, a.op);
        ZSH_EXPECT_EQ(want[i].sg, a.sg);
        ZSH_EXPECT_EQ(want[i].slot, a.slot);
        i++;
    }
    ZSH_EXPECT_EQ(sizeof(want) / sizeof(want[0]), i);
}

ZSH_TEST(swap_plan, one_or_two_slots_read_each_sub_group_just_before_its_update)
{
    zsh_swap_plan_t plan;
    zsh_swap_action_t a;
    size_t nslots, i;

    for (nslots = 1; nslots <= 2; nslots++) {
        zsh_swap_plan_init(&plan, 5, nslots);
        for (i = 0; zsh_swap_plan_next(&plan, &a); i++) {
            ZSH_EXPECT_EQ((i % 2 == 0) ? ZSH_SWAP_READ : ZSH_SWAP_UPDATE, a.op);
            ZSH_EXPECT_EQ(i / 2, a.sg);
        }
        ZSH_EXPECT_EQ(10, i);
    }
}
