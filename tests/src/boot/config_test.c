/*
 * The bootstrap's variables: torchrun's names work, and the ZSH_ ones win.
 */
#include "harness/zsh_test.h"

#include "boot/config.h"

#include <stdlib.h>

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
