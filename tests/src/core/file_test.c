/*
 * Reading a whole file (core/file.h): the buffer follows the file, not the
 * bound, so reading a small file under a large bound reserves little; a file
 * longer than fstat said (one under /proc says 0 bytes) is read whole; one
 * past the bound is refused naming it.
 */
#include "harness/zsh_test.h"

#include "core/file.h"
#include "core/status.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A file in the temporary folder holding @len bytes 'a', 'b', ...; its path in @path. */
static int zsh_file_test_make(char *path, size_t room, size_t len)
{
    FILE *f;
    size_t i;

    snprintf(path, room, "/tmp/zsh-file-test-XXXXXX");
    close(mkstemp(path));
    f = fopen(path, "w");
    if (f == NULL) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        fputc('a' + (int)(i % 26), f);
    }
    return fclose(f) == 0;
}

ZSH_TEST(file, a_small_file_under_a_large_bound_is_read_into_a_buffer_of_its_size)
{
    char path[64], *text = NULL;
    size_t len = 0;

    ZSH_ASSERT_TRUE(zsh_file_test_make(path, sizeof(path), 1000));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_file_read_all(path, false, (size_t)256 << 20, "the test file",
                                                &text, &len));
    ZSH_EXPECT_EQ(1000, len);
    ZSH_ASSERT_TRUE(text != NULL);
    ZSH_EXPECT_EQ('\0', text[1000]);
    ZSH_EXPECT_EQ('a' + 999 % 26, text[999]);
    /* The 256 MiB bound is not what was reserved. */
    ZSH_EXPECT_TRUE(malloc_usable_size(text) < 4096);
    free(text);
    unlink(path);
}

ZSH_TEST(file, a_file_longer_than_fstat_says_is_read_whole)
{
    char *text = NULL;
    size_t len = 0;

    /* /proc's files are regular with a size of 0. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_file_read_all("/proc/self/status", false, 1 << 20,
                                                "the status file", &text, &len));
    ZSH_ASSERT_TRUE(text != NULL);
    ZSH_EXPECT_TRUE(len > 100);
    ZSH_EXPECT_EQ(len, strlen(text));
    ZSH_EXPECT_STR_CONTAINS(text, "Name:");
    ZSH_EXPECT_STR_CONTAINS(text, "Pid:");
    free(text);
}

ZSH_TEST(file, a_file_past_the_bound_is_refused_naming_it_and_one_at_the_bound_is_read)
{
    char path[64], *text = NULL;
    size_t len = 0;

    ZSH_ASSERT_TRUE(zsh_file_test_make(path, sizeof(path), 101));
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_file_read_all(path, false, 100, "the test file", &text,
                                                    &len));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "larger than 100 bytes");
    ZSH_EXPECT_TRUE(text == NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_file_read_all(path, false, 101, "the test file", &text, &len));
    ZSH_EXPECT_EQ(101, len);
    free(text);
    /* Past the bound with fstat saying 0: the read itself holds it. */
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_file_read_all("/proc/self/status", false, 20,
                                                    "the status file", &text, &len));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "larger than 20 bytes");
    unlink(path);
}
