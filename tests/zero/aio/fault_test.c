/*
 * The I/O engine's failures name the file, where and why: injected EIO,
 * ENOSPC and short reads, a file truncated behind the engine's back, and a
 * really full disk (a tiny tmpfs, when root may mount one). A failed
 * request still finishes its other pieces before it reports.
 */
#define _GNU_SOURCE
#include "harness/zsh_test.h"
#include "zero/aio/aio_helpers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#define ZSH_AIO_FT_BLOCK 4096
#define ZSH_AIO_FT_LEN   (16 * ZSH_AIO_FT_BLOCK)

typedef struct {
    char           *dir;
    zsh_aio_t      *aio;
    zsh_aio_file_t *file;
    void           *buf;
} zsh_aio_ft_t;

static bool zsh_aio_ft_open(zsh_aio_ft_t *t, const char *base)
{
    zsh_aio_params_t params;

    memset(t, 0, sizeof(*t));
    t->dir = zsh_aio_test_tmpdir(base);
    if (t->dir == NULL) {
        return false;
    }
    params = zsh_aio_test_params(t->dir, "fault", ZSH_AIO_AUTO, 4, ZSH_AIO_FT_BLOCK);
    if ((zsh_aio_create(&params, &t->aio) != ZSH_OK) ||
        (zsh_aio_open(t->aio, "state", &t->file) != ZSH_OK)) {
        return false;
    }
    t->buf = zsh_aio_buf_alloc(ZSH_AIO_FT_LEN);
    zsh_aio_test_fill(t->buf, ZSH_AIO_FT_LEN, 1);
    return true;
}

static void zsh_aio_ft_close(zsh_aio_ft_t *t)
{
    zsh_aio_destroy(t->aio);
    free(t->buf);
    zsh_aio_test_rmtree(t->dir);
    free(t->dir);
}

/* Run one request; its status, with the request finished either way. */
static zsh_status_t zsh_aio_ft_run(zsh_aio_ft_t *t, int write, size_t len)
{
    zsh_aio_req_t *req;
    zsh_status_t status;

    status = write ? zsh_aio_write(t->aio, t->file, 0, t->buf, len, &req)
                   : zsh_aio_read(t->aio, t->file, 0, t->buf, len, &req);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_aio_wait(req);
    if (zsh_aio_test(req) == ZSH_INPROGRESS) { /* a failure reports only once all is done */
        status = ZSH_ERR_INTERNAL;
    }
    zsh_aio_req_free(req);
    return status;
}

static void zsh_aio_ft_injected(zsh_aio_fault_t fault, int write, const char *why)
{
    zsh_aio_ft_t t;

    ZSH_ASSERT_TRUE(zsh_aio_ft_open(&t, "/dev/shm"));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_ft_run(&t, 1, ZSH_AIO_FT_LEN));
    zsh_aio_inject(t.aio, fault, write, 3);
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_aio_ft_run(&t, write, ZSH_AIO_FT_LEN));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), zsh_aio_file_path(t.file));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), why);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "at offset ");
    zsh_aio_inject(t.aio, ZSH_AIO_FAULT_NONE, 0, 0);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_ft_run(&t, write, ZSH_AIO_FT_LEN));
    zsh_aio_ft_close(&t);
}

ZSH_TEST(aio_fault, injected_eio_on_write_names_the_file)
{
    zsh_aio_ft_injected(ZSH_AIO_FAULT_EIO, 1, strerror(EIO));
}

ZSH_TEST(aio_fault, injected_eio_on_read_names_the_file)
{
    zsh_aio_ft_injected(ZSH_AIO_FAULT_EIO, 0, strerror(EIO));
}

ZSH_TEST(aio_fault, injected_enospc_on_write_names_the_file)
{
    zsh_aio_ft_injected(ZSH_AIO_FAULT_ENOSPC, 1, strerror(ENOSPC));
}

ZSH_TEST(aio_fault, injected_short_read_names_the_file)
{
    zsh_aio_ft_injected(ZSH_AIO_FAULT_SHORT, 0, "short read of ");
}

ZSH_TEST(aio_fault, zsh_aio_fault_fails_the_pieces_after_the_first_n)
{
    zsh_aio_ft_t t;
    bool ok;

    setenv("ZSH_AIO_FAULT", "eio:write:3", 1);
    ok = zsh_aio_ft_open(&t, "/dev/shm");
    unsetenv("ZSH_AIO_FAULT");
    ZSH_ASSERT_TRUE(ok);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_ft_run(&t, 1, 3 * ZSH_AIO_FT_BLOCK));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_ft_run(&t, 0, 3 * ZSH_AIO_FT_BLOCK)); /* reads pass */
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_aio_ft_run(&t, 1, ZSH_AIO_FT_BLOCK));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "write of ");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), zsh_aio_file_path(t.file));
    zsh_aio_ft_close(&t);
}

/* The file shrinks behind the engine: the read gets fewer bytes than asked. */
ZSH_TEST(aio_fault, a_truncated_file_gives_a_short_read)
{
    zsh_aio_ft_t t;

    ZSH_ASSERT_TRUE(zsh_aio_ft_open(&t, "/var/tmp"));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_ft_run(&t, 1, ZSH_AIO_FT_LEN));
    ZSH_ASSERT_TRUE(truncate(zsh_aio_file_path(t.file), ZSH_AIO_FT_LEN / 2 + 1000) == 0);
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_aio_ft_run(&t, 0, ZSH_AIO_FT_LEN));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "short read of ");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), zsh_aio_file_path(t.file));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), " of 4096 bytes");
    zsh_aio_ft_close(&t);
}

/* A tmpfs of 1 MiB: the reserve and a write past it both say ENOSPC. */
ZSH_TEST(aio_fault, a_full_disk_gives_enospc_naming_the_file)
{
    const size_t len = 2u << 20;
    zsh_aio_params_t params;
    zsh_aio_file_t *file;
    zsh_aio_req_t *req;
    zsh_aio_t *aio;
    void *buf;
    char *mnt;

    if (geteuid() != 0) {
        ZSH_SKIP("mounting a tiny tmpfs needs root");
    }
    mnt = zsh_aio_test_tmpdir("/tmp");
    ZSH_ASSERT_TRUE(mnt != NULL);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m,mode=0700") != 0) {
        rmdir(mnt);
        free(mnt);
        ZSH_SKIP("mount -t tmpfs refused here (no CAP_SYS_ADMIN in this namespace?)");
    }
    params = zsh_aio_test_params(mnt, "full", ZSH_AIO_AUTO, 4, 65536);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_create(&params, &aio));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_open(aio, "state", &file));
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_aio_reserve(file, len));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), zsh_aio_file_path(file));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), strerror(ENOSPC));
    buf = zsh_aio_buf_alloc(len);
    memset(buf, 1, len);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_write(aio, file, 0, buf, len, &req));
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_aio_wait(req));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), zsh_aio_file_path(file));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), strerror(ENOSPC));
    zsh_aio_req_free(req);
    zsh_aio_destroy(aio);
    free(buf);
    ZSH_EXPECT_EQ(0, zsh_aio_test_entries(mnt));
    ZSH_EXPECT_TRUE(umount(mnt) == 0);
    rmdir(mnt);
    free(mnt);
}
