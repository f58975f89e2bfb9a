/*
 * The stage tables (optim/stage.h), with no ranks: each stage's table is
 * found by its number and fills every operation, so no caller meets a
 * missing one on a path only some settings take; what each partitions is
 * ZeRO's (stage 2 adds the gradients, stage 3 the parameters); and the
 * state region is the whole bucket at stage 0 and the owned shard after.
 */
#include "harness/zsh_test.h"

#include "optim/optim_impl.h"

static void zsh_stage_table_check_filled(const zsh_stage_ops_t *t)
{
    ZSH_EXPECT_TRUE(t->name != NULL);
    ZSH_EXPECT_TRUE(t->state_base != NULL);
    ZSH_EXPECT_TRUE(t->state_count != NULL);
    ZSH_EXPECT_TRUE(t->owned_end != NULL);
    ZSH_EXPECT_TRUE(t->grads_alloc != NULL);
    ZSH_EXPECT_TRUE(t->grads_free != NULL);
    ZSH_EXPECT_TRUE(t->params_place != NULL);
    ZSH_EXPECT_TRUE(t->grad_dst != NULL);
    ZSH_EXPECT_TRUE(t->reduce_start != NULL);
    ZSH_EXPECT_TRUE(t->grads_owned != NULL);
    ZSH_EXPECT_TRUE(t->norm_sum != NULL);
    ZSH_EXPECT_TRUE(t->fetch != NULL);
    ZSH_EXPECT_TRUE(t->release != NULL);
    ZSH_EXPECT_TRUE(t->step_begin != NULL);
    ZSH_EXPECT_TRUE(t->update_walk != NULL);
    ZSH_EXPECT_TRUE(t->publish != NULL);
    ZSH_EXPECT_TRUE(t->step_end != NULL);
    ZSH_EXPECT_TRUE(t->up_prepare != NULL);
    ZSH_EXPECT_TRUE(t->params_up != NULL);
    ZSH_EXPECT_TRUE(t->param_at != NULL);
    ZSH_EXPECT_TRUE(t->set_param != NULL);
    ZSH_EXPECT_TRUE(t->params_rw != NULL);
}

ZSH_TEST(stage_table, every_stage_has_its_table_and_every_operation_filled)
{
    int stage;

    for (stage = 0; stage <= 3; stage++) {
        ZSH_EXPECT_EQ(stage, zsh_stage_ops(stage)->stage);
        zsh_stage_table_check_filled(zsh_stage_ops(stage));
    }
}

ZSH_TEST(stage_table, stage_2_shards_the_gradients_and_stage_3_the_parameters)
{
    int stage;

    for (stage = 0; stage <= 3; stage++) {
        ZSH_EXPECT_EQ(stage >= 2, zsh_stage_ops(stage)->shards_grads);
        ZSH_EXPECT_EQ(stage == 3, zsh_stage_ops(stage)->shards_params);
    }
}

ZSH_TEST(stage_table, state_region_is_the_bucket_at_stage_0_and_the_owned_shard_after)
{
    /* 10 elements over 3 ranks, seen from rank 1: shards of 4, [4, 8) owned. */
    zsh_obucket_t b = {.numel = 10, .count = 4, .lo = 4, .hi = 8};
    const zsh_stage_ops_t *t;
    int stage;

    t = zsh_stage_ops(0);
    ZSH_EXPECT_EQ(0, t->state_base(NULL, &b));
    ZSH_EXPECT_EQ(10, t->state_count(NULL, &b));
    ZSH_EXPECT_EQ(10, t->owned_end(NULL, &b));
    for (stage = 1; stage <= 3; stage++) {
        t = zsh_stage_ops(stage);
        ZSH_EXPECT_EQ(4, t->state_base(NULL, &b));
        ZSH_EXPECT_EQ(4, t->state_count(NULL, &b));
        ZSH_EXPECT_EQ(8, t->owned_end(NULL, &b));
    }
}
