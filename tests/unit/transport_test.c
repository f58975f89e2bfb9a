#include "gtest/zsh_test.h"

#include "core/clock.h"
#include "transports/tl.h"

#include <stdlib.h>
#include <string.h>

/* Two transport contexts in one thread, connected as ranks 0 and 1. */
typedef struct zsh_tl_pair {
    const zsh_tl_ops_t *tl;
    zsh_tl_ctx_t       *ctx[2];
} zsh_tl_pair_t;

static int zsh_tl_pair_open(zsh_tl_pair_t *p)
{
    const void *addr[2];
    size_t len[2], stride;
    zsh_config_t cfg;
    char *addrs;
    int i;

    p->tl = &zsh_tl_ucx_ops;
    if (zsh_config_read(&cfg) != ZSH_OK) {
        return -1;
    }
    for (i = 0; i < 2; i++) {
        if (p->tl->create(&cfg, &p->ctx[i]) != ZSH_OK) {
            return -1;
        }
        p->tl->address(p->ctx[i], &addr[i], &len[i]);
    }
    stride = (len[0] > len[1]) ? len[0] : len[1];
    addrs  = calloc(2, stride);
    memcpy(addrs, addr[0], len[0]);
    memcpy(addrs + stride, addr[1], len[1]);
    for (i = 0; i < 2; i++) {
        if (p->tl->connect(p->ctx[i], i, 2, addrs, stride) != ZSH_OK) {
            free(addrs);
            return -1;
        }
    }
    free(addrs);
    return 0;
}

static void zsh_tl_pair_close(zsh_tl_pair_t *p)
{
    p->tl->destroy(p->ctx[0]);
    p->tl->destroy(p->ctx[1]);
}

/* Progress both sides until @req (owned by side @side) finishes. */
static zsh_status_t zsh_tl_pair_wait(zsh_tl_pair_t *p, int side, zsh_tl_req_t *req)
{
    double deadline = zsh_clock_now() + 10;
    zsh_status_t status;

    if (req == NULL) {
        return ZSH_OK;
    }
    do {
        p->tl->progress(p->ctx[0]);
        p->tl->progress(p->ctx[1]);
        status = p->tl->test(p->ctx[side], req);
    } while ((status == ZSH_INPROGRESS) && (zsh_clock_now() < deadline));
    p->tl->release(p->ctx[side], req);
    return status;
}

static zsh_status_t zsh_tl_pair_exchange(zsh_tl_pair_t *p, uint64_t tag, const void *sbuf,
                                         size_t slen, void *rbuf, size_t rlen)
{
    zsh_tl_req_t *sreq = NULL, *rreq = NULL;
    zsh_status_t rs, ss;

    rs = p->tl->irecv(p->ctx[1], 0, tag, rbuf, rlen, &rreq);
    ss = p->tl->isend(p->ctx[0], 1, tag, sbuf, slen, &sreq);
    if (ss == ZSH_INPROGRESS) {
        ss = zsh_tl_pair_wait(p, 0, sreq);
    }
    if (rs == ZSH_INPROGRESS) {
        rs = zsh_tl_pair_wait(p, 1, rreq);
    }
    return (rs != ZSH_OK) ? rs : ss;
}

ZSH_TEST(transport, tagged_messages_arrive_intact_at_every_size)
{
    static const size_t sizes[] = {0, 1, 100, 8192, 1 << 20};
    zsh_tl_pair_t p;
    char *src = malloc(1 << 20), *dst = malloc(1 << 20);
    size_t i, s;

    ZSH_ASSERT_TRUE(zsh_tl_pair_open(&p) == 0);
    for (i = 0; i < (1 << 20); i++) {
        src[i] = (char)(i * 7);
    }
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        memset(dst, 0, 1 << 20);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_tl_pair_exchange(&p, 42 + s, src, sizes[s], dst, sizes[s]));
        ZSH_EXPECT_TRUE(memcmp(src, dst, sizes[s]) == 0);
    }
    zsh_tl_pair_close(&p);
    free(src);
    free(dst);
}

ZSH_TEST(transport, receive_of_the_wrong_length_is_a_mismatch)
{
    zsh_tl_pair_t p;
    char src[256] = {0}, dst[256];

    ZSH_ASSERT_TRUE(zsh_tl_pair_open(&p) == 0);
    ZSH_EXPECT_STATUS(ZSH_ERR_MISMATCH, zsh_tl_pair_exchange(&p, 7, src, 60, dst, 100));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "received 60 bytes from rank 0, expected 100");
    ZSH_EXPECT_STATUS(ZSH_ERR_MISMATCH, zsh_tl_pair_exchange(&p, 8, src, 200, dst, 10));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "longer than the 10-byte receive");
    zsh_tl_pair_close(&p);
}

ZSH_TEST(transport, put_and_get_reach_registered_memory)
{
    size_t len = 1 << 16, i;
    char *local = malloc(len), *remote = calloc(1, len), *back = calloc(1, len);
    zsh_tl_mem_t *mem;
    zsh_tl_rkey_t *rkey;
    zsh_tl_req_t *req = NULL;
    zsh_tl_pair_t p;
    void *packed;
    size_t packed_len;
    zsh_status_t status;

    ZSH_ASSERT_TRUE(zsh_tl_pair_open(&p) == 0);
    for (i = 0; i < len; i++) {
        local[i] = (char)(i * 13 + 1);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, p.tl->mem_reg(p.ctx[1], remote, len, &mem));
    ZSH_ASSERT_STATUS(ZSH_OK, p.tl->rkey_pack(p.ctx[1], mem, &packed, &packed_len));
    ZSH_ASSERT_STATUS(ZSH_OK, p.tl->rkey_unpack(p.ctx[0], 1, packed, &rkey));
    p.tl->rkey_buf_free(p.ctx[1], packed);

    status = p.tl->put(p.ctx[0], 1, local, len, (uint64_t)(uintptr_t)remote, rkey, &req);
    ZSH_EXPECT_STATUS(ZSH_OK, (status == ZSH_INPROGRESS) ? zsh_tl_pair_wait(&p, 0, req) : status);
    status = p.tl->flush(p.ctx[0], 1, &req);
    ZSH_EXPECT_STATUS(ZSH_OK, (status == ZSH_INPROGRESS) ? zsh_tl_pair_wait(&p, 0, req) : status);
    ZSH_EXPECT_TRUE(memcmp(local, remote, len) == 0);

    status = p.tl->get(p.ctx[0], 1, back, len, (uint64_t)(uintptr_t)remote, rkey, &req);
    ZSH_EXPECT_STATUS(ZSH_OK, (status == ZSH_INPROGRESS) ? zsh_tl_pair_wait(&p, 0, req) : status);
    ZSH_EXPECT_TRUE(memcmp(local, back, len) == 0);

    p.tl->rkey_destroy(p.ctx[0], rkey);
    p.tl->mem_dereg(p.ctx[1], mem);
    zsh_tl_pair_close(&p);
    free(local);
    free(remote);
    free(back);
}
