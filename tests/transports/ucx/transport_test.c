#include "harness/zsh_test.h"

#include "core/clock.h"
#include "tl.h"
#include "ucx/cma/cma.h"
#include "ucx/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct zsh_tl_pair {
    const zsh_tl_ops_t *tl;
    zsh_tl_ctx_t       *ctx[2];
} zsh_tl_pair_t;

/* Two transport contexts in one thread, connected as ranks 0 and 1, rank i
 * with configuration @cfg[i]. */
static int zsh_tl_pair_open_cfg(zsh_tl_pair_t *p, const zsh_ucx_config_t cfg[2])
{
    const void *addr[2];
    size_t len[2], stride;
    char *addrs;
    int i;

    p->tl = &zsh_tl_ucx_ops;
    for (i = 0; i < 2; i++) {
        if (p->tl->create(&cfg[i], &p->ctx[i]) != ZSH_OK) {
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

/* Both ranks as the environment says, with ZSH_CMA=@cma. */
static int zsh_tl_pair_open_cma(zsh_tl_pair_t *p, int cma)
{
    zsh_ucx_config_t cfg[2];

    if (zsh_ucx_config_read(&cfg[0]) != ZSH_OK) {
        return -1;
    }
    cfg[0].cma = cma;
    cfg[1]     = cfg[0];
    return zsh_tl_pair_open_cfg(p, cfg);
}

static int zsh_tl_pair_open(zsh_tl_pair_t *p)
{
    return zsh_tl_pair_open_cma(p, 1);
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
    ZSH_ASSERT_STATUS(ZSH_OK, p.tl->rma->mem_reg(p.ctx[1], remote, len, &mem));
    ZSH_ASSERT_STATUS(ZSH_OK, p.tl->rma->rkey_pack(p.ctx[1], mem, &packed, &packed_len));
    ZSH_ASSERT_STATUS(ZSH_OK, p.tl->rma->rkey_unpack(p.ctx[0], 1, packed, &rkey));
    p.tl->rma->rkey_buf_free(p.ctx[1], packed);

    status = p.tl->rma->put(p.ctx[0], 1, local, len, (uint64_t)(uintptr_t)remote, rkey, &req);
    ZSH_EXPECT_STATUS(ZSH_OK, (status == ZSH_INPROGRESS) ? zsh_tl_pair_wait(&p, 0, req) : status);
    status = p.tl->rma->flush(p.ctx[0], 1, &req);
    ZSH_EXPECT_STATUS(ZSH_OK, (status == ZSH_INPROGRESS) ? zsh_tl_pair_wait(&p, 0, req) : status);
    ZSH_EXPECT_TRUE(memcmp(local, remote, len) == 0);

    status = p.tl->rma->get(p.ctx[0], 1, back, len, (uint64_t)(uintptr_t)remote, rkey, &req);
    ZSH_EXPECT_STATUS(ZSH_OK, (status == ZSH_INPROGRESS) ? zsh_tl_pair_wait(&p, 0, req) : status);
    ZSH_EXPECT_TRUE(memcmp(local, back, len) == 0);

    p.tl->rma->rkey_destroy(p.ctx[0], rkey);
    p.tl->rma->mem_dereg(p.ctx[1], mem);
    zsh_tl_pair_close(&p);
    free(local);
    free(remote);
    free(back);
}

ZSH_TEST(transport, peer_copy_reads_and_writes_the_memory_of_a_reachable_peer)
{
    size_t len = (1 << 20) + 3, i;
    char *mine = malloc(len), *theirs = calloc(1, len), *back = calloc(1, len);
    zsh_tl_pair_t p;

    ZSH_ASSERT_TRUE(zsh_tl_pair_open(&p) == 0);
    if (!p.tl->local->copy_reachable(p.ctx[0], 1)) {
        zsh_tl_pair_close(&p);
        free(mine);
        free(theirs);
        free(back);
        ZSH_SKIP("process_vm_readv is not permitted here (Yama ptrace_scope or seccomp)");
    }
    ZSH_EXPECT_TRUE(p.tl->local->copy_reachable(p.ctx[1], 0));
    for (i = 0; i < len; i++) {
        mine[i] = (char)(i * 11 + 5);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, p.tl->local->copy(p.ctx[0], 1, mine, (uint64_t)(uintptr_t)theirs,
                                              len, true));
    ZSH_EXPECT_TRUE(memcmp(mine, theirs, len) == 0);
    ZSH_EXPECT_STATUS(ZSH_OK, p.tl->local->copy(p.ctx[1], 0, back, (uint64_t)(uintptr_t)mine,
                                              len, false));
    ZSH_EXPECT_TRUE(memcmp(mine, back, len) == 0);
    zsh_tl_pair_close(&p);
    free(mine);
    free(theirs);
    free(back);
}

ZSH_TEST(transport, peer_copy_without_cross_memory_attach_is_unsupported_and_copies_nothing)
{
    char mine[64], theirs[64];
    zsh_tl_pair_t p;

    memset(mine, 1, sizeof(mine));
    memset(theirs, 2, sizeof(theirs));
    ZSH_ASSERT_TRUE(zsh_tl_pair_open_cma(&p, 0) == 0);
    ZSH_EXPECT_TRUE(!p.tl->local->copy_reachable(p.ctx[0], 1));
    ZSH_EXPECT_TRUE(!p.tl->local->copy_reachable(p.ctx[1], 0));
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED,
                      p.tl->local->copy(p.ctx[0], 1, mine, (uint64_t)(uintptr_t)theirs,
                                      sizeof(mine), true));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_CMA");
    ZSH_EXPECT_TRUE((theirs[0] == 2) && (theirs[63] == 2));
    ZSH_EXPECT_TRUE(!p.tl->local->copy_reachable(p.ctx[0], 2)); /* no such rank */
    zsh_tl_pair_close(&p);
}

ZSH_TEST(transport, processes_on_two_kernels_never_reach_each_other_even_in_equal_namespaces)
{
    zsh_cma_id_t a, b;

    zsh_cma_local_id(true, &a);
    a.usable = 1; /* the verdict on identities, whatever this kernel allows */
    snprintf(a.boot_id, sizeof(a.boot_id), "%s", "6f1c2a4e-0000-4000-8000-000000000001");
    b = a;
    b.pid++;
    ZSH_EXPECT_TRUE(zsh_cma_reachable(&a, &b));
    /* Every host's initial PID namespace has the same inode: only the boot id tells them apart. */
    snprintf(b.boot_id, sizeof(b.boot_id), "%s", "6f1c2a4e-0000-4000-8000-000000000002");
    ZSH_EXPECT_TRUE(!zsh_cma_reachable(&a, &b));
    b = a;
    b.pidns_ino++;
    ZSH_EXPECT_TRUE(!zsh_cma_reachable(&a, &b));
    b = a;
    b.usable = 0;
    ZSH_EXPECT_TRUE(!zsh_cma_reachable(&a, &b));
}

ZSH_TEST(transport, mailboxes_carry_messages_both_ways_in_ticket_order)
{
    char out[2][64], in[64];
    zsh_tl_pair_t p;
    size_t len = 0;
    int side;

    ZSH_ASSERT_TRUE(zsh_tl_pair_open(&p) == 0);
    if (!p.tl->local->box_reachable(p.ctx[0], 1)) {
        zsh_tl_pair_close(&p);
        ZSH_SKIP("no mailboxes here: cross-memory attach or memfd_create is not permitted");
    }
    ZSH_EXPECT_TRUE(p.tl->local->box_reachable(p.ctx[1], 0));
    for (side = 0; side < 2; side++) {
        memset(out[side], 'a' + side, sizeof(out[side]));
        ZSH_EXPECT_STATUS(ZSH_OK, p.tl->local->box_send(p.ctx[side], 1 - side, 5, 42, 0, out[side], 10));
        ZSH_EXPECT_STATUS(ZSH_OK, p.tl->local->box_send(p.ctx[side], 1 - side, 5, 42, 1, out[side], 64));
    }
    for (side = 0; side < 2; side++) {
        ZSH_EXPECT_STATUS(ZSH_INPROGRESS, p.tl->local->box_recv(p.ctx[side], 1 - side, 5, 42, 2, in,
                                                         sizeof(in), &len));
        ZSH_EXPECT_STATUS(ZSH_OK, p.tl->local->box_recv(p.ctx[side], 1 - side, 5, 42, 1, in, sizeof(in),
                                                 &len));
        ZSH_EXPECT_EQ(64, len);
        ZSH_EXPECT_TRUE(memcmp(in, out[1 - side], 64) == 0);
        ZSH_EXPECT_STATUS(ZSH_OK, p.tl->local->box_recv(p.ctx[side], 1 - side, 5, 42, 0, in, sizeof(in),
                                                 &len));
        ZSH_EXPECT_EQ(10, len);
    }
    zsh_tl_pair_close(&p);
}

ZSH_TEST(transport, mailboxes_switched_off_are_unsupported_on_both_sides)
{
    zsh_ucx_config_t cfg[2];
    zsh_tl_pair_t p;
    char msg[8] = {0};

    /* Rank 0 with ZSH_SHM=0, rank 1 with it on: neither may use them. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ucx_config_read(&cfg[0]));
    cfg[1]     = cfg[0];
    cfg[0].shm = 0;
    cfg[1].shm = 1;
    ZSH_ASSERT_TRUE(zsh_tl_pair_open_cfg(&p, cfg) == 0);
    ZSH_EXPECT_TRUE(!p.tl->local->box_reachable(p.ctx[0], 1));
    ZSH_EXPECT_TRUE(!p.tl->local->box_reachable(p.ctx[1], 0));
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, p.tl->local->box_send(p.ctx[1], 0, 1, 42, 0, msg,
                                                          sizeof(msg)));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_SHM");
    zsh_tl_pair_close(&p);
}
