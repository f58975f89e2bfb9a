/*
 * The optimizer's bucket size comes from ZSH_BUCKET_SIZE unless the config
 * struct sets one: the ZeRO layer's config table gives defaults, callers override,
 * and it reads nothing of any other layer's. Its sizes and counts have ranges.
 */
#include "harness/inproc.h"
#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    size_t bucket_size;
    size_t nbuckets;
} zsh_optim_env_case_t;

static void zsh_optim_env_run(zsh_comm_t *comm, void *arg)
{
    zsh_optim_env_case_t *c = arg;
    float a[200] = {0}, b[200] = {0};
    zsh_optim_config_t cfg;
    zsh_optim_stats_t st;
    zsh_param_t *pa, *pb;
    zsh_optim_t *opt;

    zsh_optim_config_init(&cfg);
    cfg.bucket_size = c->bucket_size;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "a", 200, ZSH_FLOAT32, a, &pa));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "b", 200, ZSH_FLOAT32, b, &pb));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_setup(opt));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, &st));
    c->nbuckets = st.nbuckets;
    zsh_optim_destroy(opt);
}

ZSH_TEST(optim_config, bucket_size_comes_from_the_environment_unless_the_config_sets_it)
{
    zsh_optim_env_case_t from_env = {0, 0}, override = {1 << 20, 0};

    setenv("ZSH_BUCKET_SIZE", "1k", 1); /* 200 fp32 each: one parameter per bucket */
    zsh_inproc_run(1, zsh_optim_env_run, &from_env);
    zsh_inproc_run(1, zsh_optim_env_run, &override);
    unsetenv("ZSH_BUCKET_SIZE");
    ZSH_EXPECT_EQ(2, from_env.nbuckets);
    ZSH_EXPECT_EQ(1, override.nbuckets);
}

typedef struct {
    zsh_status_t status;
    char         error[256]; /* the rank thread's last error */
} zsh_optim_create_result_t;

static void zsh_optim_own_variables_run(zsh_comm_t *comm, void *arg)
{
    zsh_optim_create_result_t *r = arg;
    zsh_optim_t *opt;

    /* The collective layer's variable, malformed after the communicator
     * was made: the optimizer has no business reading it. */
    setenv("ZSH_TIMEOUT", "soon", 1);
    r->status = zsh_optim_create(comm, NULL, &opt);
    snprintf(r->error, sizeof(r->error), "%s", zsh_last_error());
    setenv("ZSH_TIMEOUT", "60", 1);
    if (r->status == ZSH_OK) {
        zsh_optim_destroy(opt);
    }
}

ZSH_TEST(optim_config, creating_an_optimizer_reads_only_the_zero_layers_variables)
{
    zsh_optim_create_result_t r = {ZSH_ERR_INTERNAL, ""};

    zsh_inproc_run(1, zsh_optim_own_variables_run, &r);
    ZSH_EXPECT_STATUS(ZSH_OK, r.status);
    setenv("ZSH_BUCKET_SIZE", "big", 1);
    zsh_inproc_run(1, zsh_optim_own_variables_run, &r);
    unsetenv("ZSH_BUCKET_SIZE");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, r.status);
    ZSH_EXPECT_STR_CONTAINS(r.error, "ZSH_BUCKET_SIZE='big'");
}

ZSH_TEST(optim_config, sizes_and_counts_outside_their_range_are_refused_by_name)
{
    static const struct {
        const char *variable, *value, *expected;
    } cases[] = {
        {"ZSH_BUCKET_SIZE", "0", "ZSH_BUCKET_SIZE='0' is out of range: expected a byte count "
                                 "from 1k to 4g"},
        {"ZSH_BUCKET_SIZE", "8g", "ZSH_BUCKET_SIZE='8g' is out of range"},
        {"ZSH_MAX_LIVE_BYTES", "0", "ZSH_MAX_LIVE_BYTES='0' is out of range"},
        {"ZSH_PREFETCH", "17", "ZSH_PREFETCH='17' is out of range: expected an integer from 0 "
                               "to 16"},
    };
    zsh_optim_create_result_t r;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        r.status = ZSH_ERR_INTERNAL;
        setenv(cases[i].variable, cases[i].value, 1);
        zsh_inproc_run(1, zsh_optim_own_variables_run, &r);
        unsetenv(cases[i].variable);
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, r.status);
        ZSH_EXPECT_STR_CONTAINS(r.error, cases[i].expected);
    }
    setenv("ZSH_PREFETCH", "0", 1); /* 0 is documented: no prefetch */
    zsh_inproc_run(1, zsh_optim_own_variables_run, &r);
    unsetenv("ZSH_PREFETCH");
    ZSH_EXPECT_STATUS(ZSH_OK, r.status);
}

ZSH_TEST(optim_config, a_malformed_huge_pages_setting_is_refused_by_name)
{
    zsh_optim_create_result_t r = {ZSH_ERR_INTERNAL, ""};

    setenv("ZSH_HUGE_PAGES", "sometimes", 1);
    zsh_inproc_run(1, zsh_optim_own_variables_run, &r);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, r.status);
    ZSH_EXPECT_STR_CONTAINS(r.error, "ZSH_HUGE_PAGES='sometimes'");
    setenv("ZSH_HUGE_PAGES", "off", 1);
    zsh_inproc_run(1, zsh_optim_own_variables_run, &r);
    unsetenv("ZSH_HUGE_PAGES");
    ZSH_EXPECT_STATUS(ZSH_OK, r.status);
}
