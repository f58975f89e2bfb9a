/*
 * The collective layer's variables: their defaults, and communicator
 * creation refusing a malformed one by name.
 */
#include "harness/inproc.h"
#include "harness/zsh_test.h"

#include "api/config.h"

#include <stdlib.h>
#include <string.h>

ZSH_TEST(coll_config, defaults_match_the_documented_values)
{
    const char *was = getenv("ZSH_TIMEOUT");
    char *saved     = (was != NULL) ? strdup(was) : NULL;
    zsh_coll_config_t cfg;

    unsetenv("ZSH_TIMEOUT");
    unsetenv("ZSH_CHUNK_SIZE");
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_coll_config_read(&cfg));
    ZSH_EXPECT_TRUE(cfg.timeout == 300.0);
    ZSH_EXPECT_EQ(256 * 1024, cfg.chunk_size);
    ZSH_EXPECT_EQ(ZSH_ALGO_AUTO, cfg.allgather_algo);
    if (saved != NULL) {
        setenv("ZSH_TIMEOUT", saved, 1);
    }
    free(saved);
}

ZSH_TEST(coll_config, invalid_environment_fails_communicator_creation_by_name)
{
    const char *was = getenv("ZSH_TIMEOUT");
    char *saved     = (was != NULL) ? strdup(was) : NULL;
    zsh_comm_t *comm = NULL;
    zsh_oob_t oob    = {0, 1, NULL, NULL, NULL, NULL};

    setenv("ZSH_TIMEOUT", "soon", 1);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_init_oob(&oob, &comm));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_TIMEOUT='soon'");
    ZSH_EXPECT_TRUE(comm == NULL);
    if (saved != NULL) {
        setenv("ZSH_TIMEOUT", saved, 1);
    } else {
        unsetenv("ZSH_TIMEOUT");
    }
    free(saved);
}

ZSH_TEST(coll_config, algorithm_of_another_collective_is_rejected_with_the_valid_choices)
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
