#include <config.h>

#include "harness/zsh_test.h"

#include "core/status.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

ZSH_TEST(status, every_status_has_a_distinct_string)
{
    static const zsh_status_t all[] = {
        ZSH_OK, ZSH_INPROGRESS, ZSH_ERR_INVALID_ARG, ZSH_ERR_NO_MEMORY, ZSH_ERR_UNSUPPORTED,
        ZSH_ERR_TRANSPORT, ZSH_ERR_TIMEOUT, ZSH_ERR_PEER_FAILED, ZSH_ERR_MISMATCH, ZSH_ERR_IO,
        ZSH_ERR_ABORTED, ZSH_ERR_INTERNAL};
    size_t i, j, n = sizeof(all) / sizeof(all[0]);

    for (i = 0; i < n; i++) {
        ZSH_EXPECT_TRUE(strcmp(zsh_status_string(all[i]), "unknown status") != 0);
        for (j = 0; j < i; j++) {
            ZSH_EXPECT_TRUE(strcmp(zsh_status_string(all[i]), zsh_status_string(all[j])) != 0);
        }
    }
    ZSH_EXPECT_STR_CONTAINS(zsh_status_string((zsh_status_t)-77), "unknown");
}

static void *zsh_status_other_thread(void *arg)
{
    (void)arg;
    zsh_error(ZSH_ERR_IO, "failure on the other thread");
    return NULL;
}

ZSH_TEST(status, last_error_is_per_thread_and_never_null)
{
    pthread_t t;

    zsh_error_clear();
    ZSH_EXPECT_TRUE(zsh_last_error() != NULL);
    ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, zsh_error(ZSH_ERR_TIMEOUT, "waited %d s", 3));
    pthread_create(&t, NULL, zsh_status_other_thread, NULL);
    pthread_join(t, NULL);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "waited 3 s");
}

ZSH_TEST(version, header_and_library_agree)
{
    int major = -1, minor = -1, patch = -1;

    zsh_get_version(&major, &minor, &patch);
    ZSH_EXPECT_EQ(ZSH_VERSION_MAJOR, major);
    ZSH_EXPECT_EQ(ZSH_VERSION_MINOR, minor);
    ZSH_EXPECT_EQ(ZSH_VERSION_PATCH, patch);
    zsh_get_version(NULL, NULL, NULL);
}

/* version.h is generated from configure's version; the string and the
 * numbers must say the same thing as the package itself. */
ZSH_TEST(version, generated_header_matches_the_package_version)
{
    char numbers[64];
    int major = -1, minor = -1, patch = -1;

    zsh_get_version(&major, &minor, &patch);
    snprintf(numbers, sizeof(numbers), "%d.%d.%d", major, minor, patch);
    if ((strcmp(PACKAGE_VERSION, ZSH_VERSION_STRING) != 0) ||
        (strcmp(PACKAGE_VERSION, numbers) != 0)) {
        zsh_test_fail(__FILE__, __LINE__, "package %s, ZSH_VERSION_STRING %s, zsh_get_version %s",
                      PACKAGE_VERSION, ZSH_VERSION_STRING, numbers);
    }
}
