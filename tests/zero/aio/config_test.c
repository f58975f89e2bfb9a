/*
 * The I/O engine's variables: a block size that O_DIRECT cannot take, a
 * queue depth out of range and a malformed fault hook are refused naming
 * the variable, and the engine takes them when the parameters leave 0.
 */
#include "harness/zsh_test.h"
#include "zero/aio/aio_helpers.h"

#include <stdlib.h>

static zsh_status_t zsh_aio_cfg_create(const char *var, const char *value)
{
    zsh_aio_params_t params;
    zsh_status_t status;
    zsh_aio_t *aio = NULL;
    char *dir = zsh_aio_test_tmpdir("/dev/shm");

    if (dir == NULL) {
        return ZSH_ERR_INTERNAL;
    }
    setenv(var, value, 1);
    params = zsh_aio_test_params(dir, NULL, ZSH_AIO_AUTO, 0, 0);
    status = zsh_aio_create(&params, &aio);
    unsetenv(var);
    zsh_aio_destroy(aio);
    zsh_aio_test_rmtree(dir);
    free(dir);
    return status;
}

ZSH_TEST(aio_config, a_block_size_not_a_multiple_of_4k_is_refused_naming_it)
{
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_aio_cfg_create("ZSH_AIO_BLOCK_SIZE", "6000"));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_AIO_BLOCK_SIZE");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_aio_cfg_create("ZSH_AIO_BLOCK_SIZE", "128m"));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_AIO_BLOCK_SIZE");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_cfg_create("ZSH_AIO_BLOCK_SIZE", "64k"));
}

ZSH_TEST(aio_config, queue_depth_threads_and_backend_have_ranges)
{
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_aio_cfg_create("ZSH_AIO_QUEUE_DEPTH", "0"));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_AIO_QUEUE_DEPTH");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_aio_cfg_create("ZSH_AIO_QUEUE_DEPTH", "2000"));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_aio_cfg_create("ZSH_AIO_THREADS", "65"));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_AIO_THREADS");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_aio_cfg_create("ZSH_AIO", "spdk"));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_AIO");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_cfg_create("ZSH_AIO", "threads"));
}

ZSH_TEST(aio_config, a_malformed_fault_hook_is_refused_naming_it)
{
    static const char *const bad[] = {"eio", "eio:write", "enospc:read:1", "short:write:0",
                                      "boom:read:1", "eio:write:-1", "eio:write:2x"};
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_aio_cfg_create("ZSH_AIO_FAULT", bad[i]));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_AIO_FAULT");
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_cfg_create("ZSH_AIO_FAULT", "short:read:0"));
}

ZSH_TEST(aio_config, the_engine_takes_the_variables_when_the_parameters_leave_zero)
{
    zsh_aio_params_t params;
    zsh_aio_t *aio;
    char *dir = zsh_aio_test_tmpdir("/dev/shm");

    ZSH_ASSERT_TRUE(dir != NULL);
    setenv("ZSH_AIO", "threads", 1);
    params = zsh_aio_test_params(dir, NULL, ZSH_AIO_AUTO, 0, 0);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_create(&params, &aio));
    unsetenv("ZSH_AIO");
    ZSH_EXPECT_STR_CONTAINS(zsh_aio_backend(aio), "threads");
    zsh_aio_destroy(aio);
    params.kind = ZSH_AIO_THREADS; /* the parameters win over ZSH_AIO */
    setenv("ZSH_AIO", "uring", 1);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_create(&params, &aio));
    unsetenv("ZSH_AIO");
    ZSH_EXPECT_STR_CONTAINS(zsh_aio_backend(aio), "threads");
    zsh_aio_destroy(aio);
    zsh_aio_test_rmtree(dir);
    free(dir);
}
