/*
 * zsh_optim_estimate_nodes(): on 2 nodes x 2 ranks at stage 3, hpZ takes a
 * step's cross-node traffic from 3Ψ to 2Ψ elements, each node's link gets
 * half of it (what the other node holds) with the hierarchical collectives,
 * and the secondary partition costs Ψ / 2
 * per rank; one node crosses nothing; what cannot apply is refused.
 */
#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

ZSH_TEST(optim_estimate_nodes, hpz_takes_stage_3_from_3_to_2_psi_across_nodes)
{
    zsh_optim_estimate_in_t in = {1000, 4, 3, ZSH_FLOAT32, 0};
    zsh_node_estimate_out_t o;

    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_estimate_nodes(&in, 2, ZSH_HPZ_AUTO, &o));
    ZSH_EXPECT_EQ(2, o.nodes);
    ZSH_EXPECT_EQ(2, o.hpz);
    ZSH_EXPECT_TRUE(o.cross_node_bytes == 12000.0);
    ZSH_EXPECT_TRUE(o.cross_node_bytes_hpz == 8000.0);
    ZSH_EXPECT_TRUE(o.link_bytes == 6000.0);
    ZSH_EXPECT_TRUE(o.link_bytes_hpz == 4000.0);
    ZSH_EXPECT_TRUE(o.hpz_bytes == 2000.0);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_estimate_nodes(&in, 4, ZSH_HPZ_AUTO, &o));
    ZSH_EXPECT_TRUE((o.cross_node_bytes == 0.0) && (o.cross_node_bytes_hpz == 0.0));
    in.stage = 2;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_estimate_nodes(&in, 2, ZSH_HPZ_OFF, &o));
    ZSH_EXPECT_TRUE((o.cross_node_bytes == 8000.0) && (o.hpz_bytes == 0.0));
}

ZSH_TEST(optim_estimate_nodes, what_cannot_apply_is_refused)
{
    zsh_optim_estimate_in_t in = {1000, 4, 2, ZSH_FLOAT32, 0};
    zsh_node_estimate_out_t o;

    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_estimate_nodes(&in, 2, 2, &o));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "needs stage 3");
    in.stage = 3;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_estimate_nodes(&in, 3, 1, &o));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "3 ranks per node do not divide the 4 ranks");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_estimate_nodes(&in, 2, 3, &o));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "hpz=3");
}
