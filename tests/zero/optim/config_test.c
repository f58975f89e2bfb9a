/*
 * The optimizer's bucket size comes from ZSH_BUCKET_SIZE unless the config
 * struct sets one: the one config table gives defaults, callers override.
 */
#include "harness/inproc.h"
#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

#include <stdlib.h>

typedef struct {
    size_t bucket_size;
    size_t nbuckets;
} zsh_optim_env_case_t;

static void zsh_optim_env_run(zsh_comm_t *comm, void *arg)
{
    zsh_optim_env_case_t *c = arg;
    float a[100] = {0}, b[100] = {0};
    zsh_optim_config_t cfg;
    zsh_optim_stats_t st;
    zsh_param_t *pa, *pb;
    zsh_optim_t *opt;

    zsh_optim_config_init(&cfg);
    cfg.bucket_size = c->bucket_size;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "a", 100, ZSH_FLOAT32, a, &pa));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "b", 100, ZSH_FLOAT32, b, &pb));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_setup(opt));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, &st));
    c->nbuckets = st.nbuckets;
    zsh_optim_destroy(opt);
}

ZSH_TEST(optim_config, bucket_size_comes_from_the_environment_unless_the_config_sets_it)
{
    zsh_optim_env_case_t from_env = {0, 0}, override = {1 << 20, 0};

    setenv("ZSH_BUCKET_SIZE", "400", 1); /* 100 fp32: one parameter per bucket */
    zsh_inproc_run(1, zsh_optim_env_run, &from_env);
    zsh_inproc_run(1, zsh_optim_env_run, &override);
    unsetenv("ZSH_BUCKET_SIZE");
    ZSH_EXPECT_EQ(2, from_env.nbuckets);
    ZSH_EXPECT_EQ(1, override.nbuckets);
}
