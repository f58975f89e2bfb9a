/*
 * Mailboxes (transports/shm/box.c) on one segment: ticket order, slots given
 * back and reused, keys that tell a box's users apart, messages too long,
 * and a peer's view of the segment through pidfd_getfd.
 */
#include "harness/zsh_test.h"

#include "ucx/shm/box.h"

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* Room for every line: the budget has tests of its own (budget_test.c). */
static zsh_box_budget_t zsh_test_budget = {SIZE_MAX, 0};

static zsh_status_t zsh_box_put_u64(const zsh_box_seg_t *seg, unsigned box, uint64_t key,
                                    uint64_t ticket, uint64_t value)
{
    return zsh_box_put(seg, box, key, ticket, &value, sizeof(value));
}

/* The value of message @ticket, or ~0 if it is not there. */
static uint64_t zsh_box_take_u64(const zsh_box_seg_t *seg, unsigned box, uint64_t key,
                                 uint64_t ticket)
{
    uint64_t value = ~(uint64_t)0;
    size_t len = 0;

    if (zsh_box_take(seg, box, key, ticket, &value, sizeof(value), &len) != ZSH_OK) {
        return ~(uint64_t)0;
    }
    return (len == sizeof(value)) ? value : ~(uint64_t)0;
}

ZSH_TEST(box, messages_come_out_by_ticket_and_a_full_box_makes_the_sender_wait)
{
    zsh_box_seg_t seg;
    uint64_t t;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&seg, &zsh_test_budget, "this process"));
    for (t = 0; t < ZSH_BOX_SLOTS; t++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_put_u64(&seg, 7, 42, t, 100 + t));
    }
    /* Ticket SLOTS needs slot 0, which still holds ticket 0. */
    ZSH_EXPECT_STATUS(ZSH_INPROGRESS, zsh_box_put_u64(&seg, 7, 42, ZSH_BOX_SLOTS, 999));
    ZSH_EXPECT_EQ(102u, zsh_box_take_u64(&seg, 7, 42, 2)); /* any order out */
    ZSH_EXPECT_EQ(100u, zsh_box_take_u64(&seg, 7, 42, 0));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_put_u64(&seg, 7, 42, ZSH_BOX_SLOTS, 100 + ZSH_BOX_SLOTS));
    for (t = 1; t <= ZSH_BOX_SLOTS; t++) {
        if (t != 2) {
            ZSH_EXPECT_EQ(100 + t, zsh_box_take_u64(&seg, 7, 42, t));
        }
    }
    /* Taken once, a message is gone; one not yet sent is not there. */
    ZSH_EXPECT_EQ(~(uint64_t)0, zsh_box_take_u64(&seg, 7, 42, 1));
    ZSH_EXPECT_EQ(~(uint64_t)0, zsh_box_take_u64(&seg, 7, 42, ZSH_BOX_SLOTS + 1));
    /* Other boxes never saw any of it. */
    ZSH_EXPECT_EQ(~(uint64_t)0, zsh_box_take_u64(&seg, 8, 42, 0));
    zsh_box_release(&seg);
}

ZSH_TEST(box, a_reader_takes_only_its_own_key_and_ticket)
{
    zsh_box_seg_t seg;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&seg, &zsh_test_budget, "this process"));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_put_u64(&seg, 3, 42, 0, 5));
    ZSH_EXPECT_EQ(~(uint64_t)0, zsh_box_take_u64(&seg, 3, 43, 0));
    ZSH_EXPECT_EQ(~(uint64_t)0, zsh_box_take_u64(&seg, 3, 42, ZSH_BOX_SLOTS)); /* same slot */
    ZSH_EXPECT_EQ(5u, zsh_box_take_u64(&seg, 3, 42, 0));
    zsh_box_release(&seg);
}

ZSH_TEST(box, a_message_an_earlier_user_left_behind_is_overwritten_by_the_next)
{
    zsh_box_seg_t seg;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&seg, &zsh_test_budget, "this process"));
    /* Key 42's call failed before its message was taken; box 3 now belongs to key 77. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_put_u64(&seg, 3, 42, 0, 5));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_put_u64(&seg, 3, 77, 0, 6));
    ZSH_EXPECT_EQ(~(uint64_t)0, zsh_box_take_u64(&seg, 3, 42, 0));
    ZSH_EXPECT_EQ(6u, zsh_box_take_u64(&seg, 3, 77, 0));
    zsh_box_release(&seg);
}

ZSH_TEST(box, a_message_longer_than_the_receive_is_a_mismatch_and_frees_its_slot)
{
    char big[ZSH_BOX_MSG_MAX], small[16];
    zsh_box_seg_t seg;
    size_t len = 0;

    memset(big, 9, sizeof(big));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&seg, &zsh_test_budget, "this process"));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_put(&seg, 1, 42, 0, big, 100));
    ZSH_EXPECT_STATUS(ZSH_ERR_MISMATCH, zsh_box_take(&seg, 1, 42, 0, small, sizeof(small), &len));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "a 100-byte message is longer than the 16-byte");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_put_u64(&seg, 1, 42, ZSH_BOX_SLOTS, 8));
    /* Too long to send, or no such box: refused, nothing written. */
    ZSH_EXPECT_STATUS(ZSH_ERR_INTERNAL, zsh_box_put(&seg, 1, 42, 1, big, ZSH_BOX_MSG_MAX + 1));
    ZSH_EXPECT_STATUS(ZSH_ERR_INTERNAL, zsh_box_put_u64(&seg, ZSH_BOX_COUNT, 42, 0, 1));
    ZSH_EXPECT_EQ(~(uint64_t)0, zsh_box_take_u64(&seg, 1, 42, 1));
    zsh_box_release(&seg);
}

ZSH_TEST(box, a_peer_that_maps_the_segment_writes_where_its_owner_reads)
{
    zsh_box_seg_t mine, theirs;
    zsh_status_t status;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&mine, &zsh_test_budget, "this process"));
    status = zsh_box_attach((int64_t)getpid(), mine.fd, &theirs, &zsh_test_budget, "this process");
    if (status != ZSH_OK) {
        zsh_box_release(&mine);
        ZSH_SKIP("pidfd_getfd is not permitted here (kernel before 5.6, seccomp or Yama)");
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_put_u64(&theirs, 11, 42, 0, 1234));
    ZSH_EXPECT_EQ(1234u, zsh_box_take_u64(&mine, 11, 42, 0));
    ZSH_EXPECT_TRUE(theirs.lines[11] != mine.lines[11]); /* two mappings of one line */
    zsh_box_release(&theirs);
    zsh_box_release(&mine);
    /* A descriptor that is not there is an error naming it. */
    ZSH_EXPECT_STATUS(ZSH_ERR_TRANSPORT, zsh_box_attach((int64_t)getpid(), 1 << 20, &theirs,
                                                        &zsh_test_budget, "rank 9"));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "rank 9");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_SHM=0");
}
