/*
 * Where the engine's files live: a directory per job and rank, 0700, files
 * 0600, a second engine of the same job and rank beside the first, nothing
 * left after destroy, and a directory that is missing, a file, under a file
 * or read-only refused naming it.
 */
#define _GNU_SOURCE
#include "harness/zsh_test.h"
#include "zero/aio/aio_helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static int zsh_aio_mode(const char *path)
{
    struct stat st;

    return (stat(path, &st) == 0) ? (int)(st.st_mode & 07777) : -1;
}

ZSH_TEST(aio_dir, files_are_0600_in_a_0700_directory_per_job_and_rank)
{
    zsh_aio_params_t params;
    zsh_aio_file_t *file;
    zsh_aio_t *aio;
    char *dir = zsh_aio_test_tmpdir("/dev/shm"), want[600], job[512];
    mode_t old = umask(0);

    ZSH_ASSERT_TRUE(dir != NULL);
    params      = zsh_aio_test_params(dir, "job-7", ZSH_AIO_AUTO, 0, 0);
    params.rank = 3;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_create(&params, &aio));
    umask(old);
    snprintf(job, sizeof(job), "%s/zeroshard-job-7", dir);
    snprintf(want, sizeof(want), "%s/r3-0", job);
    ZSH_EXPECT_EQ(0, strcmp(want, zsh_aio_dir(aio)));
    ZSH_EXPECT_EQ(0700, zsh_aio_mode(job));
    ZSH_EXPECT_EQ(0700, zsh_aio_mode(zsh_aio_dir(aio)));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_open(aio, "opt.0", &file));
    ZSH_EXPECT_EQ(0600, zsh_aio_mode(zsh_aio_file_path(file)));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_reserve(file, 1 << 20));
    zsh_aio_destroy(aio);
    ZSH_EXPECT_EQ(0, zsh_aio_test_entries(dir));
    zsh_aio_test_rmtree(dir);
    free(dir);
}

ZSH_TEST(aio_dir, two_engines_of_one_job_and_rank_get_different_directories)
{
    zsh_aio_params_t params;
    zsh_aio_t *a, *b;
    char *dir = zsh_aio_test_tmpdir("/dev/shm"), job[512];

    ZSH_ASSERT_TRUE(dir != NULL);
    params = zsh_aio_test_params(dir, "same", ZSH_AIO_AUTO, 0, 0);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_aio_create(&params, &a));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_aio_create(&params, &b));
    ZSH_EXPECT_TRUE(strcmp(zsh_aio_dir(a), zsh_aio_dir(b)) != 0);
    ZSH_EXPECT_STR_CONTAINS(zsh_aio_dir(b), "/r0-1");
    snprintf(job, sizeof(job), "%s/zeroshard-same", dir);
    zsh_aio_destroy(a);
    ZSH_EXPECT_EQ(1, zsh_aio_test_entries(job)); /* b's directory, and the job's kept */
    zsh_aio_destroy(b);
    ZSH_EXPECT_EQ(0, zsh_aio_test_entries(dir));
    zsh_aio_test_rmtree(dir);
    free(dir);
}

static void zsh_aio_refused(const char *nvme_dir, const char *why)
{
    zsh_aio_params_t params = zsh_aio_test_params(nvme_dir, NULL, ZSH_AIO_AUTO, 0, 0);
    zsh_aio_t *aio = NULL;

    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_aio_create(&params, &aio));
    ZSH_EXPECT_TRUE(aio == NULL);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), nvme_dir);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), why);
}

ZSH_TEST(aio_dir, a_missing_directory_or_a_file_is_refused_naming_it)
{
    char *dir = zsh_aio_test_tmpdir("/dev/shm"), missing[512], file[512], under[512];
    int fd;

    ZSH_ASSERT_TRUE(dir != NULL);
    snprintf(missing, sizeof(missing), "%s/absent", dir);
    snprintf(file, sizeof(file), "%s/plain", dir);
    snprintf(under, sizeof(under), "%s/plain/sub", dir);
    fd = open(file, O_CREAT | O_WRONLY, 0600);
    ZSH_ASSERT_TRUE(fd >= 0);
    close(fd);
    zsh_aio_refused(missing, strerror(ENOENT));
    zsh_aio_refused(file, strerror(ENOTDIR));
    zsh_aio_refused(under, strerror(ENOTDIR));
    ZSH_EXPECT_EQ(1, zsh_aio_test_entries(dir)); /* nothing made beside the file */
    zsh_aio_test_rmtree(dir);
    free(dir);
}

ZSH_TEST(aio_dir, a_read_only_directory_is_refused_naming_it)
{
    char *mnt;

    if (geteuid() != 0) {
        ZSH_SKIP("root ignores permissions, and only root may mount a read-only tmpfs");
    }
    mnt = zsh_aio_test_tmpdir("/tmp");
    ZSH_ASSERT_TRUE(mnt != NULL);
    if (mount("tmpfs", mnt, "tmpfs", MS_RDONLY, "size=64k") != 0) {
        rmdir(mnt);
        free(mnt);
        ZSH_SKIP("mount -t tmpfs refused here (no CAP_SYS_ADMIN in this namespace?)");
    }
    zsh_aio_refused(mnt, strerror(EROFS));
    ZSH_EXPECT_TRUE(umount(mnt) == 0);
    rmdir(mnt);
    free(mnt);
}

ZSH_TEST(aio_dir, a_job_id_that_is_not_a_plain_name_is_refused)
{
    zsh_aio_params_t params = zsh_aio_test_params("/dev/shm", "../escape", ZSH_AIO_AUTO, 0, 0);
    zsh_aio_t *aio = NULL;

    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_aio_create(&params, &aio));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "../escape");
    params.job_id = "a/b";
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_aio_create(&params, &aio));
    ZSH_EXPECT_TRUE(aio == NULL);
}
