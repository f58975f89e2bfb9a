/*
 * The shared-memory lines of a communicator's mailboxes or boards are
 * mapped while it lives: one line of each member's segment on this node,
 * taken when it is created and given back when it is destroyed, so that a
 * job's address space follows the communicators it uses.
 */
#include "harness/zsh_test.h"

#include "comm/comm.h"
#include "comm/context.h"
#include "ucx/ucx.h"

#include <stddef.h>

/* What this rank's transport has mapped for mailboxes and boards. */
static size_t zsh_lines_mapped(zsh_comm_t *comm)
{
    return comm->ctx->tl_ctx->box_budget.used;
}

ZSH_RANK_TEST(lines, a_communicator_maps_a_line_per_member_while_it_lives)
{
    size_t line = zsh_box_line_len(), before, child_lines;
    int rank = zsh_comm_rank(comm), n = zsh_comm_size(comm);
    zsh_comm_t *child;

    if (!comm->local.box && !comm->local.board) {
        ZSH_SKIP("no mailboxes or boards here (one rank, ZSH_SHM=0, or cross-memory attach or "
                 "memfd_create not permitted)");
    }
    /* The job's communicator and this one: every member's line of each. */
    before = zsh_lines_mapped(comm);
    ZSH_EXPECT_EQ(2 * (size_t)n * line, before);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, rank % 2, rank, &child));
    child_lines = (child->local.box || child->local.board) ? (size_t)child->size * line : 0;
    ZSH_EXPECT_EQ((child->size >= 2) ? (size_t)child->size * line : 0, child_lines);
    ZSH_EXPECT_EQ(before + child_lines, zsh_lines_mapped(comm));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(child));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(child));
    ZSH_EXPECT_EQ(before, zsh_lines_mapped(comm));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
}
