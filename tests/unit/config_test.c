#include "gtest/inproc.h"
#include "gtest/zsh_test.h"

#include "core/config.h"

#include <stdlib.h>
#include <string.h>

ZSH_TEST(config, every_default_parses_and_every_row_has_help)
{
    const zsh_config_field_t *fields;
    zsh_config_t cfg;
    char err[256], value[256];
    size_t i, n;

    fields = zsh_config_fields(&n);
    ZSH_ASSERT_TRUE(n > 10);
    for (i = 0; i < n; i++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(&fields[i], fields[i].dflt, &cfg, err,
                                                   sizeof(err)));
        ZSH_EXPECT_TRUE(strlen(fields[i].help) > 10);
        /* What zsh_info prints must read back to the same value. */
        zsh_config_format(&fields[i], &cfg, value, sizeof(value));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(&fields[i], value, &cfg, err, sizeof(err)));
    }
}

ZSH_TEST(config, defaults_match_the_documented_values)
{
    zsh_config_t cfg;

    unsetenv("ZSH_TIMEOUT");
    unsetenv("ZSH_CHUNK_SIZE");
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_config_read(&cfg));
    ZSH_EXPECT_TRUE(cfg.timeout == 300.0);
    ZSH_EXPECT_EQ(256 * 1024, cfg.chunk_size);
    ZSH_EXPECT_EQ(ZSH_ALGO_AUTO, cfg.allgather_algo);
}

ZSH_TEST(config, sizes_accept_binary_suffixes)
{
    const zsh_config_field_t *f = zsh_config_field_find("CHUNK_SIZE");
    zsh_config_t cfg;
    char err[256];

    ZSH_ASSERT_TRUE(f != NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, "64k", &cfg, err, sizeof(err)));
    ZSH_EXPECT_EQ(65536, cfg.chunk_size);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, "2MiB", &cfg, err, sizeof(err)));
    ZSH_EXPECT_EQ(2 << 20, cfg.chunk_size);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, "4096", &cfg, err, sizeof(err)));
    ZSH_EXPECT_EQ(4096, cfg.chunk_size);
}

ZSH_TEST(config, sizes_that_may_be_auto_take_auto_or_a_byte_count)
{
    const zsh_config_field_t *f = zsh_config_field_find("STREAM_MIN_SIZE");
    zsh_config_t cfg;
    char err[256], value[64];

    ZSH_ASSERT_TRUE(f != NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, "AUTO", &cfg, err, sizeof(err)));
    ZSH_EXPECT_EQ(ZSH_CONFIG_AUTO_SIZE, cfg.stream_min_size);
    zsh_config_format(f, &cfg, value, sizeof(value));
    ZSH_EXPECT_EQ(0, strcmp("auto", value));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, "3m", &cfg, err, sizeof(err)));
    ZSH_EXPECT_EQ(3 << 20, cfg.stream_min_size);
    zsh_config_format(f, &cfg, value, sizeof(value));
    ZSH_EXPECT_EQ(0, strcmp("3145728", value));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(f, "automatic", &cfg, err,
                                                            sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "ZSH_STREAM_MIN_SIZE='automatic' is invalid: expected auto or "
                                 "a byte count");
    ZSH_EXPECT_EQ(3 << 20, cfg.stream_min_size);
}

ZSH_TEST(config, malformed_values_name_the_variable_and_what_is_expected)
{
    zsh_config_t cfg;
    char err[256];

    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_config_parse(zsh_config_field_find("CHUNK_SIZE"), "12q", &cfg, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "ZSH_CHUNK_SIZE='12q'");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_config_parse(zsh_config_field_find("TIMEOUT"), "-3", &cfg, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "seconds");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(zsh_config_field_find("ALLGATHER_ALGO"),
                                                            "fast", &cfg, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "ring");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_config_parse(zsh_config_field_find("RANK"), "x1", &cfg, err, sizeof(err)));
}

ZSH_TEST(config, prefixed_variables_win_over_torchrun_names)
{
    zsh_config_t cfg;

    setenv("RANK", "3", 1);
    setenv("ZSH_RANK", "5", 1);
    setenv("WORLD_SIZE", "8", 1);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_read(&cfg));
    ZSH_EXPECT_EQ(5, cfg.rank);
    ZSH_EXPECT_EQ(8, cfg.world_size);
    ZSH_EXPECT_STR_CONTAINS(zsh_config_source(zsh_config_field_find("RANK")), "ZSH_RANK");
    unsetenv("ZSH_RANK");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_read(&cfg));
    ZSH_EXPECT_EQ(3, cfg.rank);
    setenv("WORLD_SIZE", "eight", 1);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_read(&cfg));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "WORLD_SIZE='eight'");
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
}

ZSH_TEST(config, invalid_environment_fails_communicator_creation_by_name)
{
    zsh_comm_t *comm = NULL;
    zsh_oob_t oob    = {0, 1, NULL, NULL, NULL, NULL};

    setenv("ZSH_TIMEOUT", "soon", 1);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_init_oob(&oob, &comm));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_TIMEOUT='soon'");
    ZSH_EXPECT_TRUE(comm == NULL);
    setenv("ZSH_TIMEOUT", "60", 1);
}

ZSH_TEST(config, algorithm_of_another_collective_is_rejected_with_the_valid_choices)
{
    zsh_inproc_job_t *job = zsh_inproc_job_create(1);
    zsh_oob_t oob         = zsh_inproc_oob(job, 0);
    zsh_comm_t *comm      = NULL;

    setenv("ZSH_ALLREDUCE_ALGO", "bruck", 1);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_init_oob(&oob, &comm));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_ALLREDUCE_ALGO=bruck");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "use auto, ring, rd, direct or eager");
    ZSH_EXPECT_TRUE(comm == NULL);
    unsetenv("ZSH_ALLREDUCE_ALGO");
    zsh_inproc_job_destroy(job);
}
