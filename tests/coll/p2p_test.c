/*
 * Point-to-point messages (zsh_isend, zsh_irecv): every dtype and a range
 * of counts around a ring, receives from any sender that name it, tags that
 * keep messages apart, order within one tag, collectives that go on beside
 * them, and the failures that leave the communicator usable.
 */
#include "coll/check.h"

#include "core/dtype.h"

#include <stdlib.h>
#include <string.h>

static const zsh_dtype_t zsh_p2p_dtypes[] = {ZSH_INT8,    ZSH_UINT8,    ZSH_INT32,   ZSH_UINT32,
                                             ZSH_INT64,   ZSH_UINT64,   ZSH_FLOAT16, ZSH_BFLOAT16,
                                             ZSH_FLOAT32, ZSH_FLOAT64};

/* Send rank's inputs right and check the left neighbour's, @count of @dtype. */
static void zsh_p2p_ring_case(zsh_comm_t *comm, zsh_dtype_t dtype, size_t count, int tag)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    size_t bytes = count * zsh_dtype_size(dtype);
    void *send = zsh_check_alloc(bytes + 1), *recv = zsh_check_alloc(bytes + 1);
    zsh_request_t *sreq = NULL, *rreq = NULL;
    int source = -2;

    zsh_check_fill(send, dtype, ZSH_SUM, rank, n, 0, count);
    memset(recv, 0x5a, bytes);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_irecv(recv, count, dtype, left, tag, comm, &rreq));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_isend(send, count, dtype, right, tag, comm, &sreq));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(sreq));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(rreq));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_source(rreq, &source));
    ZSH_EXPECT_EQ(left, source);
    zsh_check_buf(recv, dtype, ZSH_SUM, n, left, 0, count, zsh_dtype_name(dtype), __FILE__,
                  __LINE__);
    zsh_request_free(sreq);
    zsh_request_free(rreq);
    free(recv);
    free(send);
}

ZSH_RANK_TEST(p2p, ring_delivers_every_dtype_and_count_from_the_named_sender)
{
    static const size_t counts[] = {0, 1, 7, 1031, 70001};
    size_t d, c;

    if (zsh_comm_size(comm) < 2) {
        return;
    }
    for (d = 0; d < sizeof(zsh_p2p_dtypes) / sizeof(zsh_p2p_dtypes[0]); d++) {
        for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            zsh_p2p_ring_case(comm, zsh_p2p_dtypes[d], counts[c], (int)(d * 8 + c));
        }
    }
}

ZSH_RANK_TEST(p2p, receive_from_any_source_names_each_sender_once)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), i, source;
    int32_t value = rank * 100 + 7, *got;
    zsh_request_t **reqs;
    int *seen;

    if (n < 2) {
        return;
    }
    if (rank != 0) {
        zsh_request_t *req = NULL;

        ZSH_EXPECT_STATUS(ZSH_OK, zsh_isend(&value, 1, ZSH_INT32, 0, 42, comm, &req));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
        zsh_request_free(req);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
        return;
    }
    got  = calloc((size_t)n, sizeof(*got));
    seen = calloc((size_t)n, sizeof(*seen));
    reqs = calloc((size_t)n, sizeof(*reqs));
    for (i = 1; i < n; i++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_irecv(&got[i], 1, ZSH_INT32, ZSH_ANY_SOURCE, 42, comm,
                                            &reqs[i]));
    }
    for (i = 1; i < n; i++) {
        source = -2;
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(reqs[i]));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_source(reqs[i], &source));
        ZSH_EXPECT_TRUE((source > 0) && (source < n));
        if ((source > 0) && (source < n)) {
            seen[source]++;
            ZSH_EXPECT_EQ(source * 100 + 7, got[i]);
        }
        zsh_request_free(reqs[i]);
    }
    for (i = 1; i < n; i++) {
        ZSH_EXPECT_EQ(1, seen[i]);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
    free(reqs);
    free(seen);
    free(got);
}

ZSH_RANK_TEST(p2p, tags_keep_messages_apart_and_one_tag_keeps_its_order)
{
    int rank = zsh_comm_rank(comm), i;
    int64_t out[4] = {10, 20, 30, 99}, in[4] = {0, 0, 0, 0};
    zsh_request_t *reqs[4];

    if (zsh_comm_size(comm) < 2 || rank > 1) {
        if (zsh_comm_size(comm) >= 2) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
        }
        return;
    }
    if (rank == 0) {
        /* three of tag 1 in order, then tag 2 */
        for (i = 0; i < 4; i++) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_isend(&out[i], 1, ZSH_INT64, 1, (i < 3) ? 1 : 2, comm,
                                                &reqs[i]));
        }
    } else {
        /* tag 2 is asked for first, and still gets only its own message */
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_irecv(&in[3], 1, ZSH_INT64, 0, 2, comm, &reqs[3]));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(reqs[3]));
        for (i = 0; i < 3; i++) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_irecv(&in[i], 1, ZSH_INT64, 0, 1, comm, &reqs[i]));
        }
    }
    for (i = 0; i < 4; i++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(reqs[i]));
        zsh_request_free(reqs[i]);
    }
    if (rank == 1) {
        for (i = 0; i < 4; i++) {
            ZSH_EXPECT_EQ(out[i], in[i]);
        }
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
}

/* A receive waits while every rank runs collectives, some of them with
 * more point-to-point calls than others: the sequence stays in step. */
ZSH_RANK_TEST(p2p, collectives_beside_pending_messages_complete_and_never_match_them)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    float mine = (float)rank, sum = 0, got = -1;
    zsh_request_t *rreq = NULL, *sreq = NULL;

    if (n < 2) {
        return;
    }
    if (rank == 1) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_irecv(&got, 1, ZSH_FLOAT32, 0, 0, comm, &rreq));
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(&mine, &sum, 1, ZSH_FLOAT32, ZSH_SUM, comm));
    ZSH_EXPECT_EQ(n * (n - 1) / 2, (int)sum);
    if (rank == 0) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_isend(&mine, 1, ZSH_FLOAT32, 1, 0, comm, &sreq));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(sreq));
        zsh_request_free(sreq);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(&mine, &sum, 1, ZSH_FLOAT32, ZSH_SUM, comm));
    if (rank == 1) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(rreq));
        ZSH_EXPECT_EQ(0, (int)got);
        zsh_request_free(rreq);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
}

ZSH_RANK_TEST(p2p, a_message_of_the_wrong_length_fails_the_receive_and_the_comm_goes_on)
{
    int rank = zsh_comm_rank(comm);
    float out[4] = {1, 2, 3, 4}, in[5];
    zsh_request_t *req = NULL;

    if (zsh_comm_size(comm) < 2) {
        return;
    }
    if (rank == 0) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_isend(out, 4, ZSH_FLOAT32, 1, 3, comm, &req));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
        zsh_request_free(req);
    } else if (rank == 1) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_irecv(in, 5, ZSH_FLOAT32, 0, 3, comm, &req));
        ZSH_EXPECT_STATUS(ZSH_ERR_MISMATCH, zsh_request_wait(req));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "recv");
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "received 16 bytes");
        zsh_request_free(req);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
}

ZSH_RANK_TEST(p2p, a_receive_nobody_sends_times_out_naming_its_peer_and_the_comm_goes_on)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    float in = 0;
    zsh_request_t *req = NULL;

    if (n < 2) {
        return;
    }
    if (rank == 0) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_irecv(&in, 1, ZSH_FLOAT32, n - 1, 9, comm, &req));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_set_timeout(req, 0.2));
        ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, zsh_request_wait(req));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "not heard from rank(s): ");
        zsh_request_free(req);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_irecv(&in, 1, ZSH_FLOAT32, ZSH_ANY_SOURCE, 9, comm, &req));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_set_timeout(req, 0.2));
        ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, zsh_request_wait(req));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "not heard from rank(s): any");
        zsh_request_free(req);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
}

ZSH_RANK_TEST(p2p, bad_arguments_are_refused_naming_them)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), source;
    float v = 0;
    zsh_request_t *req = NULL;

    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_isend(&v, 1, ZSH_FLOAT32, rank, 0, comm, &req));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "peer=");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_isend(&v, 1, ZSH_FLOAT32, n, 0, comm, &req));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_isend(&v, 1, ZSH_FLOAT32, ZSH_ANY_SOURCE, 0, comm, &req));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_irecv(&v, 1, ZSH_FLOAT32, -2, 0, comm, &req));
    if (n > 1) {
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                          zsh_isend(&v, 1, ZSH_FLOAT32, (rank + 1) % n, -1, comm, &req));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "tag=-1");
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_irecv(&v, 1, ZSH_FLOAT32, (rank + 1) % n,
                                                         ZSH_TAG_MAX + 1, comm, &req));
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                          zsh_isend(NULL, 1, ZSH_FLOAT32, (rank + 1) % n, 0, comm, &req));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "buf is NULL");
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                          zsh_isend(&v, 1, (zsh_dtype_t)99, (rank + 1) % n, 0, comm, &req));
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                          zsh_isend(&v, 1, ZSH_FLOAT32, (rank + 1) % n, 0, comm, NULL));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "req_p");
    }
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_request_source(NULL, &source));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_ibarrier(comm, &req));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_request_source(req, &source));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "not a receive");
    zsh_request_free(req);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm)); /* nothing refused took a number */
}
