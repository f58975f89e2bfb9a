/*
 * The checkpoint writer (zero/ckpt/writer.c) at every size its buffers
 * treat differently: nothing, under one page, within the first chunk-sized
 * buffer, across each doubling, past both full buffers, holding no more
 * buffer than the file needs. The file holds
 * the bytes committed then zeros to the next page, and its manifest entry
 * the bytes, the whole file's checksum and every chunk's. A file it cannot
 * create fails the open, and every call after it.
 */
#include "harness/zsh_test.h"
#include "aio/aio.h"
#include "ckpt/format.h"
#include "ckpt/hash.h"
#include "ckpt/writer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Byte @i of the stream: not a short period, so a misplaced piece shows. */
static unsigned char writer_byte(size_t i)
{
    return (unsigned char)((i * 2654435761u) >> 13);
}

/* Write @n bytes in commits of irregular lengths, close, and check the
 * file and its entry; on a failure, the size it failed at. */
static void writer_case(zsh_aio_t *aio, const char *dir, size_t n)
{
    char path[128];
    zsh_ckpt_writer_t w;
    size_t done = 0, room, step, i, c, len;
    uint64_t padded = (n + ZSH_CKPT_ALIGN - 1) / ZSH_CKPT_ALIGN * ZSH_CKPT_ALIGN;
    unsigned char *dst, *back;
    FILE *f;

    snprintf(path, sizeof(path), "%s/w%zu", dir, n);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ckpt_writer_open(&w, aio, path));
    for (i = 0; done < n; i++) {
        dst = zsh_ckpt_writer_room(&w, &room);
        ZSH_ASSERT_TRUE(dst != NULL);
        step = 1 + (i * 7919u) % 300000u;
        step = (step < room) ? step : room;
        step = (step < n - done) ? step : n - done;
        for (c = 0; c < step; c++) {
            dst[c] = writer_byte(done + c);
        }
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_ckpt_writer_commit(&w, step));
        done += step;
    }
    /* What the writer holds: one chunk-sized buffer for a file within a
     * chunk, the second only once a full buffer went out. */
    if (n <= ZSH_CKPT_CHUNK) {
        ZSH_EXPECT_EQ(ZSH_CKPT_CHUNK, w.cap);
    }
    if (n <= ZSH_CKPT_WBUF) {
        ZSH_EXPECT_TRUE(w.buf[1] == NULL);
    } else {
        ZSH_EXPECT_EQ(ZSH_CKPT_WBUF, w.cap);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ckpt_writer_close(&w));

    back = malloc(padded + 1);
    ZSH_ASSERT_TRUE(back != NULL);
    f = fopen(path, "rb");
    ZSH_ASSERT_TRUE(f != NULL);
    len = fread(back, 1, padded + 1, f);
    fclose(f);
    unlink(path);
    if (len != padded) {
        zsh_test_fail(__FILE__, __LINE__, "%zu bytes: the file has %zu, not %llu", n, len,
                      (unsigned long long)padded);
    }
    for (i = 0; (len == padded) && (i < padded); i++) {
        if (back[i] != ((i < n) ? writer_byte(i) : 0)) {
            zsh_test_fail(__FILE__, __LINE__, "%zu bytes: byte %zu is %u", n, i, back[i]);
            break;
        }
    }
    ZSH_EXPECT_EQ(padded, w.meta.bytes);
    ZSH_EXPECT_EQ(zsh_ckpt_nchunks(padded), w.meta.nchunks);
    if (len == padded) {
        ZSH_EXPECT_TRUE(w.meta.hash == XXH3_64bits(back, padded));
        for (c = 0; c < w.meta.nchunks; c++) {
            size_t off = c * ZSH_CKPT_CHUNK;
            size_t clen = (padded - off < ZSH_CKPT_CHUNK) ? padded - off : ZSH_CKPT_CHUNK;

            if (w.meta.chunks[c] != XXH3_64bits(back + off, clen)) {
                zsh_test_fail(__FILE__, __LINE__, "%zu bytes: chunk %zu's checksum", n, c);
            }
        }
    }
    free(w.meta.chunks);
    free(back);
}

ZSH_TEST(ckpt_writer, a_file_of_any_size_holds_its_bytes_and_every_chunks_checksum)
{
    const size_t chunk = ZSH_CKPT_CHUNK, wbuf = ZSH_CKPT_WBUF;
    const size_t sizes[] = {0, 1, 4095, 4096, chunk - 1, chunk, chunk + 1, 2 * chunk + 100,
                            wbuf, wbuf + 1, 2 * wbuf + 3 * 4096 + 7};
    zsh_aio_params_t params = {0};
    char dir[] = "/var/tmp/zsh-writer-test-XXXXXX";
    zsh_aio_t *aio = NULL;
    size_t i;

    ZSH_ASSERT_TRUE(mkdtemp(dir) != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_aio_create(&params, &aio));
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        writer_case(aio, dir, sizes[i]);
    }
    zsh_aio_destroy(aio);
    rmdir(dir);
}

ZSH_TEST(ckpt_writer, a_file_that_cannot_be_created_fails_the_open_and_every_call_after_it)
{
    zsh_aio_params_t params = {0};
    char dir[] = "/var/tmp/zsh-writer-test-XXXXXX", path[128];
    zsh_ckpt_writer_t w;
    zsh_aio_t *aio = NULL;
    zsh_status_t status;
    size_t room = 0;
    FILE *f;

    ZSH_ASSERT_TRUE(mkdtemp(dir) != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_aio_create(&params, &aio));
    /* Its directory gone (a snapshot's temporary directory swept by
     * another rank), and a file already there (created exclusively). */
    snprintf(path, sizeof(path), "%s/gone/w", dir);
    status = zsh_ckpt_writer_open(&w, aio, path);
    ZSH_EXPECT_TRUE(status != ZSH_OK);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), path);
    ZSH_EXPECT_TRUE(zsh_ckpt_writer_room(&w, &room) == NULL);
    ZSH_EXPECT_EQ(status, w.status);
    zsh_ckpt_writer_abort(&w); /* holds nothing: a second abort is harmless */
    snprintf(path, sizeof(path), "%s/there", dir);
    f = fopen(path, "w");
    ZSH_ASSERT_TRUE(f != NULL);
    fclose(f);
    status = zsh_ckpt_writer_open(&w, aio, path);
    ZSH_EXPECT_TRUE(status != ZSH_OK);
    ZSH_EXPECT_TRUE(zsh_ckpt_writer_room(&w, &room) == NULL);
    zsh_ckpt_writer_abort(&w);
    unlink(path);
    zsh_aio_destroy(aio);
    rmdir(dir);
}
