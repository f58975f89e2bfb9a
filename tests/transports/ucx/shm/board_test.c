/*
 * Boards (transports/shm/board.c): one message per ticket that every reader
 * reads once where it lies, a slot written again only after the last reader
 * released it, keys that tell a board's communicators apart, messages in
 * two parts and too long, and readers in another mapping of the segment.
 */
#include "harness/zsh_test.h"

#include "ucx/shm/board.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* Room for every line: the budget has tests of its own (budget_test.c). */
static zsh_box_budget_t zsh_test_budget = {SIZE_MAX, 0};

static zsh_status_t zsh_board_put_u64(const zsh_box_seg_t *seg, unsigned board, uint64_t key,
                                      uint64_t ticket, uint32_t readers, uint64_t value)
{
    zsh_box_parts_t parts = {&value, sizeof(value), NULL, 0};

    return zsh_board_put(seg, board, key, ticket, readers, &parts);
}

/* The value of message @ticket, read and released by one reader, or ~0 if
 * it is not there. */
static uint64_t zsh_board_take_u64(const zsh_box_seg_t *seg, unsigned board, uint64_t key,
                                   uint64_t ticket)
{
    uint64_t value = ~(uint64_t)0;
    const void *msg;
    size_t len = 0;

    if (zsh_board_peek(seg, board, key, ticket, &msg, &len) != ZSH_OK) {
        return ~(uint64_t)0;
    }
    if (len == sizeof(value)) {
        memcpy(&value, msg, sizeof(value));
    }
    zsh_board_release(seg, board, ticket);
    return value;
}

ZSH_TEST(board, every_reader_takes_the_message_and_the_slot_waits_for_the_last)
{
    zsh_box_seg_t seg;
    uint64_t t;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&seg, &zsh_test_budget, "this process"));
    for (t = 0; t < ZSH_BOARD_SLOTS; t++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_board_put_u64(&seg, 9, 42, t, 3, 100 + t));
    }
    /* Ticket SLOTS needs slot 0, which three readers have yet to take. */
    ZSH_EXPECT_STATUS(ZSH_INPROGRESS, zsh_board_put_u64(&seg, 9, 42, ZSH_BOARD_SLOTS, 3, 999));
    ZSH_EXPECT_EQ(100u, zsh_board_take_u64(&seg, 9, 42, 0));
    ZSH_EXPECT_EQ(100u, zsh_board_take_u64(&seg, 9, 42, 0));
    ZSH_EXPECT_STATUS(ZSH_INPROGRESS, zsh_board_put_u64(&seg, 9, 42, ZSH_BOARD_SLOTS, 3, 999));
    ZSH_EXPECT_EQ(100u, zsh_board_take_u64(&seg, 9, 42, 0));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_board_put_u64(&seg, 9, 42, ZSH_BOARD_SLOTS, 3, 104));
    /* The next message replaced it; the others are still there, in any order. */
    ZSH_EXPECT_EQ(~(uint64_t)0, zsh_board_take_u64(&seg, 9, 42, 0));
    ZSH_EXPECT_EQ(104u, zsh_board_take_u64(&seg, 9, 42, ZSH_BOARD_SLOTS));
    ZSH_EXPECT_EQ(102u, zsh_board_take_u64(&seg, 9, 42, 2));
    ZSH_EXPECT_EQ(101u, zsh_board_take_u64(&seg, 9, 42, 1));
    /* Neighbouring boards never saw any of it. */
    ZSH_EXPECT_EQ(~(uint64_t)0, zsh_board_take_u64(&seg, 8, 42, 1));
    ZSH_EXPECT_EQ(~(uint64_t)0, zsh_board_take_u64(&seg, 10, 42, 1));
    zsh_box_release(&seg);
}

ZSH_TEST(board, boards_and_mailboxes_of_one_segment_keep_apart)
{
    zsh_box_seg_t seg;
    uint64_t value = 0;
    size_t len = 0;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&seg, &zsh_test_budget, "this process"));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_board_put_u64(&seg, 3, 42, 0, 1, 5));
    ZSH_EXPECT_STATUS(ZSH_INPROGRESS, zsh_box_take(&seg, 3, 42, 0, &value, sizeof(value), &len));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_put(&seg, 3, 42, 0, &value, sizeof(value)));
    ZSH_EXPECT_EQ(5u, zsh_board_take_u64(&seg, 3, 42, 0));
    /* The last board and the last box, at the segment's end. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_board_put_u64(&seg, ZSH_BOARD_COUNT - 1, 42, 3, 1, 6));
    ZSH_EXPECT_EQ(6u, zsh_board_take_u64(&seg, ZSH_BOARD_COUNT - 1, 42, 3));
    ZSH_EXPECT_STATUS(ZSH_ERR_INTERNAL, zsh_board_put_u64(&seg, ZSH_BOARD_COUNT, 42, 0, 1, 7));
    ZSH_EXPECT_STATUS(ZSH_ERR_INTERNAL, zsh_board_put_u64(&seg, 4, 42, 0, 0, 7));
    zsh_box_release(&seg);
}

ZSH_TEST(board, a_reader_takes_only_its_own_key_and_ticket)
{
    zsh_box_seg_t seg;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&seg, &zsh_test_budget, "this process"));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_board_put_u64(&seg, 3, 42, 0, 1, 5));
    ZSH_EXPECT_EQ(~(uint64_t)0, zsh_board_take_u64(&seg, 3, 43, 0));
    ZSH_EXPECT_EQ(~(uint64_t)0, zsh_board_take_u64(&seg, 3, 42, ZSH_BOARD_SLOTS)); /* same slot */
    ZSH_EXPECT_EQ(5u, zsh_board_take_u64(&seg, 3, 42, 0));
    zsh_box_release(&seg);
}

ZSH_TEST(board, a_message_an_earlier_communicator_left_behind_is_overwritten_by_the_next)
{
    zsh_box_seg_t seg;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&seg, &zsh_test_budget, "this process"));
    /* Key 42's call failed before its two readers took it; board 3 now
     * belongs to key 77. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_board_put_u64(&seg, 3, 42, 0, 2, 5));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_board_put_u64(&seg, 3, 77, 0, 2, 6));
    ZSH_EXPECT_EQ(~(uint64_t)0, zsh_board_take_u64(&seg, 3, 42, 0));
    ZSH_EXPECT_EQ(6u, zsh_board_take_u64(&seg, 3, 77, 0));
    zsh_box_release(&seg);
}

ZSH_TEST(board, a_message_of_two_parts_reads_as_one_up_to_the_longest_a_board_holds)
{
    static uint8_t head[64], body[ZSH_BOARD_MSG_MAX];
    zsh_box_parts_t parts = {head, sizeof(head), body, ZSH_BOARD_MSG_MAX - sizeof(head) + 1};
    zsh_box_seg_t seg;
    const void *msg;
    size_t len = 0, i;

    for (i = 0; i < sizeof(head); i++) {
        head[i] = (uint8_t)(200 + i);
    }
    for (i = 0; i < sizeof(body); i++) {
        body[i] = (uint8_t)(i * 13);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&seg, &zsh_test_budget, "this process"));
    ZSH_EXPECT_STATUS(ZSH_ERR_INTERNAL, zsh_board_put(&seg, 2, 42, 0, 1, &parts));
    parts.body_len--;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_board_put(&seg, 2, 42, 0, 1, &parts));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_board_peek(&seg, 2, 42, 0, &msg, &len));
    ZSH_EXPECT_EQ((size_t)ZSH_BOARD_MSG_MAX, len);
    ZSH_EXPECT_TRUE(memcmp(msg, head, sizeof(head)) == 0);
    ZSH_EXPECT_TRUE(memcmp((const uint8_t *)msg + sizeof(head), body, parts.body_len) == 0);
    zsh_board_release(&seg, 2, 0);
    /* A head shorter than the header's line: the body fills the rest of it. */
    parts.head_len = 5;
    parts.body_len = 100;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_board_put(&seg, 2, 42, 1, 1, &parts));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_board_peek(&seg, 2, 42, 1, &msg, &len));
    ZSH_EXPECT_EQ(105u, len);
    ZSH_EXPECT_TRUE(memcmp(msg, head, 5) == 0);
    ZSH_EXPECT_TRUE(memcmp((const uint8_t *)msg + 5, body, 100) == 0);
    zsh_board_release(&seg, 2, 1);
    zsh_box_release(&seg);
}

ZSH_TEST(board, a_message_stays_where_it_lies_until_its_last_reader_releases_it)
{
    zsh_box_seg_t seg;
    const void *first, *second;
    uint64_t value;
    size_t len = 0;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&seg, &zsh_test_budget, "this process"));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_board_put_u64(&seg, 5, 42, 0, 2, 77));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_board_peek(&seg, 5, 42, 0, &first, &len));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_board_peek(&seg, 5, 42, 0, &second, &len));
    ZSH_EXPECT_TRUE(first == second);
    zsh_board_release(&seg, 5, 0);
    /* One reader still uses it: the next message for its slot must wait. */
    ZSH_EXPECT_STATUS(ZSH_INPROGRESS, zsh_board_put_u64(&seg, 5, 42, ZSH_BOARD_SLOTS, 2, 78));
    memcpy(&value, second, sizeof(value));
    ZSH_EXPECT_EQ(77u, value);
    zsh_board_release(&seg, 5, 0);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_board_put_u64(&seg, 5, 42, ZSH_BOARD_SLOTS, 2, 78));
    zsh_box_release(&seg);
}

/* A peer maps the writer's segment through pidfd_getfd, as transports/ucx
 * does, and reads there what the writer put in its own mapping. */
ZSH_TEST(board, a_peer_that_maps_the_segment_reads_what_its_owner_wrote)
{
    zsh_box_seg_t own, peer;
    uint8_t msg[3000];
    zsh_box_parts_t parts = {msg, sizeof(msg), NULL, 0};
    const void *got;
    size_t len = 0, i;

    for (i = 0; i < sizeof(msg); i++) {
        msg[i] = (uint8_t)(i * 7);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&own, &zsh_test_budget, "this process"));
    if (zsh_box_attach((int64_t)getpid(), own.fd, &peer, &zsh_test_budget, "this process") !=
        ZSH_OK) {
        zsh_box_release(&own);
        ZSH_SKIP("pidfd_getfd is not permitted here (kernel before 5.6, seccomp or Yama)");
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_board_put(&own, 4095, 42, 1, 1, &parts));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_board_peek(&peer, 4095, 42, 1, &got, &len));
    ZSH_EXPECT_EQ(sizeof(msg), len);
    ZSH_EXPECT_TRUE(memcmp(msg, got, sizeof(msg)) == 0);
    ZSH_EXPECT_STATUS(ZSH_INPROGRESS,
                      zsh_board_put(&own, 4095, 42, 1 + ZSH_BOARD_SLOTS, 1, &parts));
    zsh_board_release(&peer, 4095, 1);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_board_put(&own, 4095, 42, 1 + ZSH_BOARD_SLOTS, 1, &parts));
    zsh_box_release(&peer);
    zsh_box_release(&own);
}
