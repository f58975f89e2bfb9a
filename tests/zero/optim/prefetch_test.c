/*
 * Stage 3 prefetch: after the first step records the fetch order, later
 * steps find their buckets already gathered; a step that fetches in another
 * order is still correct, rebuilds the record once, and then prefetches
 * along the new order.
 */
#include "quad.h"

static const size_t zsh_prefetch_reversed[ZSH_QUAD_NPARAMS] = {5, 4, 3, 2, 1, 0};

/* Registration order for steps 1-2, reversed from step 3 on. */
static const size_t *zsh_prefetch_order(int step)
{
    return (step >= 3) ? zsh_prefetch_reversed : NULL;
}

static void zsh_prefetch_config(zsh_optim_config_t *cfg, int prefetch)
{
    zsh_optim_config_init(cfg);
    cfg->stage          = 3;
    cfg->lr             = 0.05f;
    cfg->bucket_size    = 4;        /* one parameter per bucket */
    cfg->max_live_bytes = 1 << 20;  /* every bucket fits */
    cfg->prefetch       = prefetch;
}

ZSH_RANK_TEST(optim_prefetch, later_steps_find_their_buckets_prefetched)
{
    zsh_quad_run_t ref = {.bad_rank = -1}, run = {.bad_rank = -1}, off = {.bad_rank = -1};
    zsh_optim_config_t cfg;

    zsh_prefetch_config(&cfg, 2);
    ZSH_ASSERT_TRUE(zsh_quad_reference(comm, &cfg, 3, &ref));
    ZSH_ASSERT_TRUE(zsh_quad_train(comm, &cfg, 3, &run));
    zsh_quad_expect_near(&run, &ref, 3, 1e-5, "prefetch");
    /* Steps 2 and 3, and the read-back of the final parameters after them
     * (in the same order): bucket 0 is fetched cold, and each fetch
     * prefetches the next ones, so buckets 1-5 are hits. */
    ZSH_EXPECT_EQ(3 * (ZSH_QUAD_NPARAMS - 1), run.stats.prefetch_hits);
    ZSH_EXPECT_EQ(0, run.stats.order_rebuilds);
    zsh_prefetch_config(&cfg, 0);
    ZSH_ASSERT_TRUE(zsh_quad_train(comm, &cfg, 3, &off));
    ZSH_EXPECT_EQ(0, off.stats.prefetch_hits);
    zsh_quad_free(&off);
    zsh_quad_free(&run);
    zsh_quad_free(&ref);
}

ZSH_RANK_TEST(optim_prefetch, a_changed_fetch_order_is_correct_and_rebuilds_once_per_change)
{
    zsh_quad_run_t ref = {.bad_rank = -1, .order = zsh_prefetch_order};
    zsh_quad_run_t run = {.bad_rank = -1, .order = zsh_prefetch_order};
    zsh_optim_config_t cfg;

    zsh_prefetch_config(&cfg, 2);
    cfg.max_live_bytes = 64; /* tight: prefetched buckets must be the right ones */
    ZSH_ASSERT_TRUE(zsh_quad_reference(comm, &cfg, 5, &ref));
    ZSH_ASSERT_TRUE(zsh_quad_train(comm, &cfg, 5, &run));
    zsh_quad_expect_near(&run, &ref, 5, 1e-5, "changed order");
    /* Once at step 3; once more when the final parameters are read back in
     * registration order after step 5. */
    ZSH_EXPECT_EQ(2, run.stats.order_rebuilds);
    zsh_quad_free(&run);
    zsh_quad_free(&ref);
}
