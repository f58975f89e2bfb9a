/*
 * What a segment costs in address space (transports/ucx/shm/box.c): nothing
 * until a line is opened, one line's length per line opened, given back when
 * it is closed, never past the budget (ZSH_SHM_MAX), and a line that cannot
 * be mapped fails naming ZSH_SHM_MAX, ZSH_SHM=0, the size and the reason.
 */
#include "harness/zsh_test.h"

#include "ucx/shm/board.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

ZSH_TEST(shm_budget, a_segment_maps_only_the_lines_opened_and_gives_them_back_when_closed)
{
    zsh_box_budget_t budget = {SIZE_MAX, 0};
    size_t line = zsh_box_line_len();
    zsh_box_seg_t seg;
    unsigned i;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&seg, &budget, "this process"));
    ZSH_EXPECT_EQ(0, budget.used);
    /* A line holds a box and a board, in whole pages. */
    ZSH_EXPECT_TRUE(line >= zsh_box_region_len() + zsh_board_region_len());
    ZSH_EXPECT_EQ(0, line % (size_t)sysconf(_SC_PAGESIZE));
    ZSH_EXPECT_TRUE(line < 128 * 1024);
    for (i = 0; i < 3; i++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_line_open(&seg, 100 * i));
        ZSH_EXPECT_EQ((i + 1) * line, budget.used);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_line_open(&seg, 100)); /* open already: no more */
    ZSH_EXPECT_EQ(3 * line, budget.used);
    /* The last line too: the segment has room for every one. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_line_open(&seg, ZSH_BOX_COUNT - 1));
    ZSH_EXPECT_EQ(4 * line, budget.used);
    zsh_box_line_close(&seg, 100);
    ZSH_EXPECT_EQ(3 * line, budget.used);
    ZSH_EXPECT_TRUE(seg.lines[100] == NULL);
    zsh_box_line_close(&seg, 100); /* closed already: nothing */
    ZSH_EXPECT_EQ(3 * line, budget.used);
    zsh_box_release(&seg);
    ZSH_EXPECT_EQ(0, budget.used);
}

ZSH_TEST(shm_budget, a_message_survives_its_line_being_closed_and_opened_again)
{
    zsh_box_budget_t budget = {SIZE_MAX, 0};
    uint64_t value = 77, got = 0;
    zsh_box_seg_t seg;
    size_t len = 0;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&seg, &budget, "this process"));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_put(&seg, 5, 42, 0, &value, sizeof(value)));
    zsh_box_line_close(&seg, 5);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_take(&seg, 5, 42, 0, &got, sizeof(got), &len));
    ZSH_EXPECT_EQ(77, got);
    zsh_box_release(&seg);
}

ZSH_TEST(shm_budget, a_line_past_zsh_shm_max_is_refused_naming_it_and_zsh_shm)
{
    zsh_box_budget_t budget = {0, 0};
    uint64_t value = 1;
    zsh_box_seg_t seg;

    budget.max = 2 * zsh_box_line_len() + 1;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_box_create(&seg, &budget, "this process"));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_line_open(&seg, 1));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_line_open(&seg, 2));
    ZSH_EXPECT_STATUS(ZSH_ERR_NO_MEMORY, zsh_box_line_open(&seg, 3));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_SHM_MAX");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_SHM=0");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "line 3");
    ZSH_EXPECT_TRUE(seg.lines[3] == NULL);
    ZSH_EXPECT_EQ(2 * zsh_box_line_len(), budget.used);
    /* A line first used by a message is held to the same budget. */
    ZSH_EXPECT_STATUS(ZSH_ERR_NO_MEMORY, zsh_box_put(&seg, 4, 42, 0, &value, sizeof(value)));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_SHM_MAX");
    /* Closing one makes room for another. */
    zsh_box_line_close(&seg, 1);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_box_line_open(&seg, 3));
    zsh_box_release(&seg);
}

ZSH_TEST(shm_budget, an_mmap_that_fails_names_the_size_the_reason_zsh_shm_max_and_zsh_shm)
{
    zsh_box_budget_t budget = {SIZE_MAX, 0};
    zsh_box_seg_t seg;
    char size[32];
    int fds[2];

    /* A pipe cannot be mapped: mmap fails as a full address space would. */
    ZSH_ASSERT_TRUE(pipe(fds) == 0);
    if (zsh_box_attach((int64_t)getpid(), fds[0], &seg, &budget, "rank 6") != ZSH_OK) {
        close(fds[0]);
        close(fds[1]);
        ZSH_SKIP("pidfd_getfd is not permitted here (kernel before 5.6, seccomp or Yama)");
    }
    ZSH_EXPECT_STATUS(ZSH_ERR_NO_MEMORY, zsh_box_line_open(&seg, 9));
    snprintf(size, sizeof(size), "mmap of %zu bytes", zsh_box_line_len());
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), size);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "rank 6");
    /* The reason: a pipe's end opened for reading, or no device to map. */
    ZSH_EXPECT_TRUE((strstr(zsh_last_error(), "Permission denied") != NULL) ||
                    (strstr(zsh_last_error(), "No such device") != NULL));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_SHM_MAX");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_SHM=0");
    ZSH_EXPECT_EQ(0, budget.used);
    zsh_box_release(&seg);
    close(fds[0]);
    close(fds[1]);
}
