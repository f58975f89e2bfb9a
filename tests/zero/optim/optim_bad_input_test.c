/*
 * Misuse is refused with ZSH_ERR_INVALID_ARG and a message naming the
 * parameter, before anything changes, and the optimizer keeps working.
 */
#include "harness/zsh_test.h"

#include <zeroshard/optim.h>
#include <zeroshard/shard.h>

#include <stdio.h>

#define ZSH_EXPECT_REJECTED(_call, _needle) \
    do { \
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, (_call)); \
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), (_needle)); \
    } while (0)

typedef struct zsh_bad {
    zsh_optim_t *opt;
    zsh_param_t *w, *b;
    float        wbuf[10], bbuf[3], grad[10];
} zsh_bad_t;

static void zsh_bad_create(zsh_comm_t *comm, int stage, zsh_bad_t *t)
{
    zsh_optim_config_t cfg;

    zsh_optim_config_init(&cfg);
    cfg.stage = stage;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &t->opt));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(t->opt, "fc1.weight", 10, ZSH_FLOAT32, t->wbuf,
                                                 &t->w));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(t->opt, "fc1.bias", 3, ZSH_FLOAT32, t->bbuf,
                                                 &t->b));
}

ZSH_RANK_TEST(optim_bad_input, each_misuse_names_the_parameter_and_changes_nothing)
{
    zsh_param_t *late;
    zsh_bad_t t = {0};
    void *data;
    int stage;

    for (stage = 0; stage <= 3; stage++) {
        zsh_bad_create(comm, stage, &t);
        ZSH_EXPECT_REJECTED(zsh_optim_register(t.opt, "emb.weight", 4, ZSH_BFLOAT16, t.wbuf,
                                               &late),
                            "parameter 'emb.weight' has dtype bf16 but the optimizer's "
                            "precision is fp32");
        /* Fetch without release. */
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_fetch(t.opt, t.w, &data));
        ZSH_EXPECT_REJECTED(zsh_optim_fetch(t.opt, t.w, &data),
                            "parameter 'fc1.weight' is already fetched");
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(t.opt, t.w, t.grad));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(t.opt, t.b, t.grad));
        ZSH_EXPECT_REJECTED(zsh_optim_step(t.opt, NULL), "parameter 'fc1.weight' is still fetched");
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(t.opt, t.w));
        ZSH_EXPECT_REJECTED(zsh_optim_release(t.opt, t.w), "parameter 'fc1.weight' is not fetched");
        /* Grad-ready twice. */
        ZSH_EXPECT_REJECTED(zsh_optim_grad_ready(t.opt, t.b, t.grad),
                            "parameter 'fc1.bias' already has a gradient pending this step");
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(t.opt, NULL));
        /* Step with a gradient missing. */
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(t.opt, t.w, t.grad));
        ZSH_EXPECT_REJECTED(zsh_optim_step(t.opt, NULL), "parameter 'fc1.bias' has no gradient");
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(t.opt, t.b, t.grad));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(t.opt, NULL));
        /* Registering after the first step. */
        ZSH_EXPECT_REJECTED(zsh_optim_register(t.opt, "late.weight", 4, ZSH_FLOAT32, t.wbuf,
                                               &late),
                            "parameter 'late.weight' registered after the layout was built");
        zsh_optim_destroy(t.opt);
    }
}

ZSH_RANK_TEST(optim_bad_input, bad_settings_are_named)
{
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;

    zsh_optim_config_init(&cfg);
    cfg.stage = 4;
    ZSH_EXPECT_REJECTED(zsh_optim_create(comm, &cfg, &opt), "stage 4");
    cfg.stage     = 1;
    cfg.precision = ZSH_INT32;
    ZSH_EXPECT_REJECTED(zsh_optim_create(comm, &cfg, &opt), "precision int32");
    cfg.precision = ZSH_FLOAT32;
    cfg.kind      = ZSH_OPTIM_SGD;
    cfg.nesterov  = 1;
    ZSH_EXPECT_REJECTED(zsh_optim_create(comm, &cfg, &opt), "nesterov needs momentum");
    cfg.size = 8;
    ZSH_EXPECT_REJECTED(zsh_optim_create(comm, &cfg, &opt), "zsh_optim_config_init");
    ZSH_EXPECT_TRUE(opt == NULL);
}

ZSH_RANK_TEST(optim_bad_input, destroyed_communicator_is_refused_by_optim_and_shard)
{
    zsh_optim_t *opt = NULL;
    zsh_shard_t *shard = NULL;
    zsh_comm_t *child;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, 0, 0, &child));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_destroy(child));
    ZSH_EXPECT_REJECTED(zsh_optim_create(child, NULL, &opt), "was already destroyed");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "zsh_optim_create: ");
    ZSH_EXPECT_REJECTED(zsh_shard_create(child, 10, ZSH_FLOAT32, &shard), "was already destroyed");
    ZSH_EXPECT_TRUE((opt == NULL) && (shard == NULL));
}
