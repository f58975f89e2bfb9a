/*
 * ZeRO++'s quantized traffic model (zsh_optim_estimate_quant()) against
 * numbers worked by hand: Ψ = 10^6 bf16 parameters, 4 ranks on 2 nodes,
 * blocks of 2048 (a scale is 4 / 2048 = 1 / 512 of a byte per element):
 * hpZ + qwZ moves Ψ (1 + 1/512) + 2Ψ bytes across nodes; with int4 qgZ,
 * Ψ (1 + 1/512) + Ψ / 2 (1/2 + 1/512), 0.626465 of the fp16 model M (the
 * paper's 0.75 M less the 0.25 M / 2 the node's full-precision sum saves);
 * at one rank per node backward's gather crosses too (2Ψ more). What
 * cannot be modelled is refused by name.
 */
#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

#include <math.h>
#include <string.h>

static bool zsh_eq_near(double want, double got)
{
    return fabs(want - got) <= 1e-9 * fabs(want);
}

ZSH_TEST(optim_estimate_quant, two_nodes_of_two_match_the_hand_worked_bytes)
{
    zsh_optim_estimate_in_t in = {1e6, 4, 3, ZSH_BFLOAT16, 0};
    zsh_quant_estimate_out_t o;
    double qw = 1e6 * (1.0 + 1.0 / 512.0);

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_estimate_quant(&in, 2, 2048, 4, &o));
    ZSH_EXPECT_TRUE(zsh_eq_near(qw + 2e6, o.cross_node_bytes_qwz));
    ZSH_EXPECT_TRUE(zsh_eq_near(qw + 5e5 * (0.5 + 1.0 / 512.0), o.cross_node_bytes_qgz));
    ZSH_EXPECT_TRUE(zsh_eq_near(o.cross_node_bytes_qgz / 2.0, o.link_bytes_qgz));
    ZSH_EXPECT_TRUE(fabs(o.paper_m - 0.626465) < 1e-6);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_estimate_quant(&in, 2, 2048, 8, &o));
    ZSH_EXPECT_TRUE(zsh_eq_near(qw + 5e5 * (1.0 + 1.0 / 512.0), o.cross_node_bytes_qgz));
    /* One rank per node: no hpZ group, backward's gather crosses in bf16. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_estimate_quant(&in, 1, 2048, 4, &o));
    ZSH_EXPECT_TRUE(zsh_eq_near(qw + 2e6 + 1e6 * (0.5 + 1.0 / 512.0), o.cross_node_bytes_qgz));
}

ZSH_TEST(optim_estimate_quant, what_cannot_be_modelled_is_refused_by_name)
{
    zsh_optim_estimate_in_t in = {1e6, 4, 2, ZSH_FLOAT32, 0};
    zsh_quant_estimate_out_t o;

    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_estimate_quant(&in, 2, 2048, 8, &o));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "the stage is 2");
    in.stage = 3;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_estimate_quant(&in, 4, 2048, 8, &o));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "one node of 4 ranks");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_estimate_quant(&in, 2, 2048, 3, &o));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "grad_bits 3");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_estimate_quant(&in, 2, 0, 8, &o));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "block of 0 elements");
}
