/*
 * Every backend writes and reads back what it wrote: several requests in
 * flight on several files, of sizes that are not a multiple of the block
 * size times the queue depth, over O_DIRECT on /var/tmp and buffered I/O on
 * /dev/shm (tmpfs refuses O_DIRECT). The stats count the bytes and the time
 * the caller waited.
 */
#include "harness/zsh_test.h"
#include "zero/aio/aio_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZSH_AIO_RT_FILES 3
#define ZSH_AIO_RT_REQS  2 /* per file */

/* Sizes of each file's requests: 61, then 37 blocks of 4k, against pieces
 * of 16k, 4 in flight. */
static const size_t zsh_aio_rt_len[ZSH_AIO_RT_REQS] = {61 * 4096, 37 * 4096};

static void zsh_aio_round_trip(zsh_aio_kind_t kind, const char *base)
{
    enum { NREQ = ZSH_AIO_RT_FILES * ZSH_AIO_RT_REQS };
    zsh_aio_req_t *req[NREQ] = {NULL};
    zsh_aio_file_t *file[ZSH_AIO_RT_FILES];
    void *out[NREQ] = {NULL}, *in[NREQ] = {NULL};
    zsh_aio_params_t params;
    zsh_aio_stats_t st;
    uint64_t total = 0;
    zsh_aio_t *aio;
    char why[256], name[16];
    char *dir;
    int f, r, i;

    if (!zsh_aio_test_kind_ok(kind, why, sizeof(why))) {
        ZSH_SKIP(why);
    }
    dir = zsh_aio_test_tmpdir(base);
    if (dir == NULL) {
        ZSH_SKIP("cannot make a scratch directory there");
    }
    params = zsh_aio_test_params(dir, "rt", kind, 4, 16384);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_aio_create(&params, &aio));
    ZSH_EXPECT_EQ(0, strcmp(zsh_aio_backend(aio),
                            (kind == ZSH_AIO_URING) ? "io_uring" :
                            (kind == ZSH_AIO_LIBAIO) ? "libaio" : "threads"));
    for (f = 0; f < ZSH_AIO_RT_FILES; f++) {
        snprintf(name, sizeof(name), "f%d", f);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_open(aio, name, &file[f]));
    }
    /* All writes in flight at once, then all reads. */
    for (f = 0, i = 0; f < ZSH_AIO_RT_FILES; f++) {
        uint64_t off = 0;

        for (r = 0; r < ZSH_AIO_RT_REQS; r++, i++) {
            out[i] = zsh_aio_buf_alloc(zsh_aio_rt_len[r]);
            in[i]  = zsh_aio_buf_alloc(zsh_aio_rt_len[r]);
            zsh_aio_test_fill(out[i], zsh_aio_rt_len[r], (unsigned)(i + 7 * kind));
            memset(in[i], 0, zsh_aio_rt_len[r]);
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_write(aio, file[f], off, out[i],
                                                    zsh_aio_rt_len[r], &req[i]));
            off += zsh_aio_rt_len[r];
            total += zsh_aio_rt_len[r];
        }
    }
    for (i = 0; i < NREQ; i++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_wait(req[i]));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_test(req[i]));
        zsh_aio_req_free(req[i]);
    }
    for (f = 0, i = 0; f < ZSH_AIO_RT_FILES; f++) {
        uint64_t off = 0;

        for (r = 0; r < ZSH_AIO_RT_REQS; r++, i++) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_read(aio, file[f], off, in[i], zsh_aio_rt_len[r],
                                                   &req[i]));
            off += zsh_aio_rt_len[r];
        }
    }
    for (f = 0, i = 0; f < ZSH_AIO_RT_FILES; f++) {
        for (r = 0; r < ZSH_AIO_RT_REQS; r++, i++) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_wait(req[i]));
            zsh_aio_req_free(req[i]);
            ZSH_EXPECT_EQ(0, memcmp(in[i], out[i], zsh_aio_rt_len[r]));
        }
    }
    zsh_aio_get_stats(aio, &st);
    ZSH_EXPECT_EQ(total, st.write_bytes);
    ZSH_EXPECT_EQ(total, st.read_bytes);
    ZSH_EXPECT_TRUE(st.wait_s > 0);
    ZSH_EXPECT_TRUE(st.busy_s > 0);
    zsh_aio_destroy(aio);
    ZSH_EXPECT_EQ(0, zsh_aio_test_entries(dir)); /* files, own and job directory gone */
    for (i = 0; i < NREQ; i++) {
        free(out[i]);
        free(in[i]);
    }
    zsh_aio_test_rmtree(dir);
    free(dir);
}

ZSH_TEST(aio, uring_round_trips_o_direct_on_var_tmp)
{
    zsh_aio_round_trip(ZSH_AIO_URING, "/var/tmp");
}

ZSH_TEST(aio, libaio_round_trips_o_direct_on_var_tmp)
{
    zsh_aio_round_trip(ZSH_AIO_LIBAIO, "/var/tmp");
}

ZSH_TEST(aio, threads_round_trip_o_direct_on_var_tmp)
{
    zsh_aio_round_trip(ZSH_AIO_THREADS, "/var/tmp");
}

ZSH_TEST(aio, uring_round_trips_buffered_on_dev_shm)
{
    zsh_aio_round_trip(ZSH_AIO_URING, "/dev/shm");
}

ZSH_TEST(aio, libaio_round_trips_buffered_on_dev_shm)
{
    zsh_aio_round_trip(ZSH_AIO_LIBAIO, "/dev/shm");
}

ZSH_TEST(aio, threads_round_trip_buffered_on_dev_shm)
{
    zsh_aio_round_trip(ZSH_AIO_THREADS, "/dev/shm");
}

/* A request far larger than depth x block keeps going on its own: the
 * caller only waits at the end, and the whole of it lands. */
ZSH_TEST(aio, a_request_larger_than_the_queue_completes_without_the_caller)
{
    const size_t len = 4u << 20;
    zsh_aio_params_t params;
    zsh_aio_req_t *req;
    zsh_aio_file_t *file;
    zsh_aio_stats_t st;
    zsh_aio_t *aio;
    void *buf;
    char *dir = zsh_aio_test_tmpdir("/dev/shm");
    int spins = 0;

    ZSH_ASSERT_TRUE(dir != NULL);
    params = zsh_aio_test_params(dir, "big", ZSH_AIO_AUTO, 2, 65536);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_aio_create(&params, &aio));
    buf = zsh_aio_buf_alloc(len);
    zsh_aio_test_fill(buf, len, 3);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_open(aio, "big", &file));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_write(aio, file, 0, buf, len, &req));
    while ((zsh_aio_test(req) == ZSH_INPROGRESS) && (spins < 20000)) {
        usleep(500); /* no wait: only the progress thread moves it */
        spins++;
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_test(req));
    zsh_aio_req_free(req);
    zsh_aio_get_stats(aio, &st);
    ZSH_EXPECT_EQ(len, st.write_bytes);
    zsh_aio_destroy(aio);
    free(buf);
    zsh_aio_test_rmtree(dir);
    free(dir);
}

ZSH_TEST(aio, misaligned_buffer_offset_or_length_is_refused)
{
    zsh_aio_params_t params;
    zsh_aio_req_t *req = NULL;
    zsh_aio_file_t *file;
    zsh_aio_t *aio;
    char *buf, *dir = zsh_aio_test_tmpdir("/dev/shm");

    ZSH_ASSERT_TRUE(dir != NULL);
    params = zsh_aio_test_params(dir, NULL, ZSH_AIO_AUTO, 0, 0);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_aio_create(&params, &aio));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_open(aio, "f", &file));
    buf = zsh_aio_buf_alloc(3 * 4096);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_aio_write(aio, file, 0, buf + 8, 4096, &req));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), zsh_aio_file_path(file));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_aio_write(aio, file, 512, buf, 4096, &req));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_aio_read(aio, file, 0, buf, 4000, &req));
    ZSH_EXPECT_TRUE(req == NULL);
    zsh_aio_destroy(aio);
    free(buf);
    zsh_aio_test_rmtree(dir);
    free(dir);
}

/* Destroy waits for what is in flight; the request is still the caller's to
 * wait on and free afterwards, as an error path may do it in that order. */
ZSH_TEST(aio, a_request_outlives_its_engine_until_freed)
{
    const size_t len = 1u << 20;
    zsh_aio_params_t params;
    zsh_aio_req_t *ok, *bad;
    zsh_aio_file_t *file;
    zsh_aio_t *aio;
    void *buf;
    char *dir = zsh_aio_test_tmpdir("/dev/shm");

    ZSH_ASSERT_TRUE(dir != NULL);
    params = zsh_aio_test_params(dir, NULL, ZSH_AIO_AUTO, 2, 4096);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_aio_create(&params, &aio));
    buf = zsh_aio_buf_alloc(len);
    memset(buf, 9, len);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_open(aio, "f", &file));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_write(aio, file, 0, buf, len, &ok));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_read(aio, file, 2 * len, buf, len, &bad)); /* past EOF */
    zsh_aio_destroy(aio);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_test(ok));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_aio_wait(ok));
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_aio_wait(bad));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "short read of ");
    zsh_aio_req_free(ok);
    zsh_aio_req_free(bad);
    ZSH_EXPECT_EQ(0, zsh_aio_test_entries(dir));
    free(buf);
    zsh_aio_test_rmtree(dir);
    free(dir);
}
