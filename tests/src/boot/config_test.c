/*
 * The bootstrap's variables: torchrun's names work, the ZSH_ ones win, and
 * numbers outside their range are refused by name as they are read.
 */
#include "harness/zsh_test.h"

#include "boot/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ZSH_TEST(boot_config, prefixed_variables_win_over_torchrun_names)
{
    zsh_boot_config_t cfg;

    setenv("RANK", "3", 1);
    setenv("ZSH_RANK", "5", 1);
    setenv("WORLD_SIZE", "8", 1);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_boot_config_read(&cfg));
    ZSH_EXPECT_EQ(5, cfg.rank);
    ZSH_EXPECT_EQ(8, cfg.world_size);
    ZSH_EXPECT_STR_CONTAINS(zsh_config_source(zsh_config_field_find("RANK", NULL)), "ZSH_RANK");
    unsetenv("ZSH_RANK");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_boot_config_read(&cfg));
    ZSH_EXPECT_EQ(3, cfg.rank);
    setenv("WORLD_SIZE", "eight", 1);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_boot_config_read(&cfg));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "WORLD_SIZE='eight'");
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
}

ZSH_TEST(boot_config, values_outside_their_range_are_refused_naming_the_range)
{
    static const struct {
        const char *variable, *value, *expected;
    } cases[] = {
        {"MASTER_PORT", "70000", "MASTER_PORT='70000' is out of range: expected an integer "
                                 "from 1 to 65535, or empty for unset"},
        {"ZSH_MASTER_PORT", "0", "ZSH_MASTER_PORT='0' is out of range"},
        {"WORLD_SIZE", "0", "WORLD_SIZE='0' is out of range: expected an integer from 1 to "
                            "1048576"},
        {"ZSH_RANK", "1048576", "ZSH_RANK='1048576' is out of range"},
        {"ZSH_STORE_TIMEOUT", "0", "ZSH_STORE_TIMEOUT='0' is out of range: expected a number "
                                   "of seconds from 0.1 to 86400"},
    };
    zsh_boot_config_t cfg;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        setenv(cases[i].variable, cases[i].value, 1);
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_boot_config_read(&cfg));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), cases[i].expected);
        unsetenv(cases[i].variable);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_boot_config_read(&cfg));
}

ZSH_TEST(boot_config, the_job_key_is_read_but_never_printed)
{
    const zsh_config_field_t *f = zsh_config_field_find("JOB_KEY", NULL);
    char value[ZSH_CONFIG_STR_MAX], err[512], long_key[400];
    zsh_boot_config_t cfg;

    ZSH_ASSERT_TRUE(f != NULL);
    setenv("ZSH_JOB_KEY", "s3cret-s3cret-s3cret", 1);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_boot_config_read(&cfg));
    ZSH_EXPECT_EQ(0, strcmp("s3cret-s3cret-s3cret", cfg.job_key));
    zsh_config_format(f, &cfg, value, sizeof(value));
    ZSH_EXPECT_EQ(0, strcmp("(set)", value));
    /* Too long: refused, saying how long, without echoing it. */
    memset(long_key, 'k', sizeof(long_key) - 1);
    long_key[sizeof(long_key) - 1] = '\0';
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(f, long_key, &cfg, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "ZSH_JOB_KEY (399 characters) is invalid");
    ZSH_EXPECT_TRUE(strstr(err, "kkkk") == NULL);
    unsetenv("ZSH_JOB_KEY");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_boot_config_read(&cfg));
    zsh_config_format(f, &cfg, value, sizeof(value));
    ZSH_EXPECT_EQ(0, strcmp("", value));
}
