#include "coll/check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The call must be rejected with a message naming @needle, and the
 * communicator must still work afterwards. */
#define ZSH_EXPECT_REJECTED(_call, _needle) \
    do { \
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, (_call)); \
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), (_needle)); \
    } while (0)

static void zsh_bad_input_still_works(zsh_comm_t *comm)
{
    int one = 1, sum = 0;

    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(&one, &sum, 1, ZSH_INT32, ZSH_SUM, comm));
    ZSH_EXPECT_EQ(zsh_comm_size(comm), sum);
}

ZSH_RANK_TEST(bad_input, null_buffers_with_elements_are_rejected)
{
    float buf[64] = {0};

    ZSH_EXPECT_REJECTED(zsh_allgather(NULL, buf, 1, ZSH_FLOAT32, comm), "sendbuf is NULL");
    ZSH_EXPECT_REJECTED(zsh_allgather(buf, NULL, 1, ZSH_FLOAT32, comm), "recvbuf is NULL");
    ZSH_EXPECT_REJECTED(zsh_reduce_scatter(NULL, buf, 2, ZSH_FLOAT32, ZSH_SUM, comm),
                        "sendbuf is NULL with recvcount=2");
    ZSH_EXPECT_REJECTED(zsh_allreduce(buf, NULL, 3, ZSH_FLOAT32, ZSH_SUM, comm),
                        "recvbuf is NULL with count=3");
    ZSH_EXPECT_REJECTED(zsh_broadcast(NULL, 3, ZSH_FLOAT32, 0, comm), "buf is NULL");
    /* A zero count needs no buffers at all. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allgather(NULL, NULL, 0, ZSH_FLOAT32, comm));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(NULL, NULL, 0, ZSH_FLOAT32, ZSH_SUM, comm));
    zsh_bad_input_still_works(comm);
}

ZSH_RANK_TEST(bad_input, unknown_dtype_op_and_avg_on_integers_are_rejected)
{
    float buf[64] = {0};

    ZSH_EXPECT_REJECTED(zsh_allgather(buf, buf + 8, 1, (zsh_dtype_t)99, comm), "dtype=99");
    ZSH_EXPECT_REJECTED(zsh_allreduce(buf, buf, 1, ZSH_FLOAT32, (zsh_op_t)42, comm), "op=42");
    ZSH_EXPECT_REJECTED(zsh_allreduce(buf, buf, 1, (zsh_dtype_t)-1, ZSH_SUM, comm), "dtype=-1");
    ZSH_EXPECT_REJECTED(zsh_allreduce(buf, buf, 1, ZSH_INT32, ZSH_AVG, comm), "op=avg");
    ZSH_EXPECT_REJECTED(zsh_reduce_scatter(buf, buf, 1, ZSH_UINT8, ZSH_AVG, comm), "dtype=uint8");
    zsh_bad_input_still_works(comm);
}

ZSH_RANK_TEST(bad_input, root_out_of_range_is_rejected)
{
    int n = zsh_comm_size(comm);
    double x = 0;

    ZSH_EXPECT_REJECTED(zsh_broadcast(&x, 1, ZSH_FLOAT64, -1, comm), "root=-1");
    ZSH_EXPECT_REJECTED(zsh_broadcast(&x, 1, ZSH_FLOAT64, n, comm), "out of range");
    zsh_bad_input_still_works(comm);
}

ZSH_RANK_TEST(bad_input, sizes_that_overflow_are_rejected)
{
    float buf[4] = {0};

    ZSH_EXPECT_REJECTED(zsh_allreduce(buf, buf, SIZE_MAX / 2, ZSH_FLOAT32, ZSH_SUM, comm),
                        "overflows");
    ZSH_EXPECT_REJECTED(zsh_allgather(buf, buf, SIZE_MAX / 8 + 1, ZSH_INT64, comm), "overflows");
    zsh_bad_input_still_works(comm);
}

ZSH_RANK_TEST(bad_input, overlapping_buffers_that_are_not_in_place_are_rejected)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    float *buf = zsh_check_alloc(sizeof(float) * 4 * (size_t)(n + 1));

    /* One element past the in-place position overlaps the receive buffer. */
    ZSH_EXPECT_REJECTED(zsh_allgather(buf + 2 * rank + 1, buf, 2, ZSH_FLOAT32, comm), "overlaps");
    ZSH_EXPECT_REJECTED(zsh_reduce_scatter(buf, buf + 2 * rank + 1, 2, ZSH_FLOAT32, ZSH_SUM, comm),
                        "overlaps");
    ZSH_EXPECT_REJECTED(zsh_allreduce(buf, buf + 1, 2, ZSH_FLOAT32, ZSH_SUM, comm), "in place");
    zsh_bad_input_still_works(comm);
    free(buf);
}

ZSH_RANK_TEST(bad_input, null_communicator_request_and_pending_destroy_are_rejected)
{
    zsh_request_t *req = NULL;
    float x = 1, y = 0;

    ZSH_EXPECT_REJECTED(zsh_allreduce(&x, &y, 1, ZSH_FLOAT32, ZSH_SUM, NULL), "comm is NULL");
    ZSH_EXPECT_REJECTED(zsh_barrier(NULL), "comm is NULL");
    ZSH_EXPECT_REJECTED(zsh_iallreduce(&x, &y, 1, ZSH_FLOAT32, ZSH_SUM, comm, NULL), "req_p");
    ZSH_EXPECT_REJECTED(zsh_request_wait(NULL), "req is NULL");
    ZSH_EXPECT_REJECTED(zsh_comm_destroy(NULL), "comm is NULL");
    ZSH_EXPECT_EQ(-1, zsh_comm_rank(NULL));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(&x, &y, 1, ZSH_FLOAT32, ZSH_SUM, comm, &req));
    ZSH_EXPECT_REJECTED(zsh_comm_destroy(comm), "not freed");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
    zsh_request_free(req);
    ZSH_EXPECT_EQ(zsh_comm_size(comm), (int)y);
    zsh_bad_input_still_works(comm);
}

/* The two nonblocking calls without buffers to speak of refuse what their
 * blocking forms refuse, and a missing request pointer, before anything is
 * sent; no request is handed out. */
ZSH_RANK_TEST(bad_input, ibroadcast_and_ibarrier_refuse_bad_arguments_before_posting)
{
    zsh_request_t *req = NULL;
    int n = zsh_comm_size(comm);
    double x = 0;

    ZSH_EXPECT_REJECTED(zsh_ibroadcast(&x, 1, ZSH_FLOAT64, 0, comm, NULL), "req_p");
    ZSH_EXPECT_REJECTED(zsh_ibroadcast(NULL, 3, ZSH_FLOAT32, 0, comm, &req), "buf is NULL");
    ZSH_EXPECT_REJECTED(zsh_ibroadcast(&x, 1, ZSH_FLOAT64, n, comm, &req), "out of range");
    ZSH_EXPECT_REJECTED(zsh_ibroadcast(&x, 1, ZSH_FLOAT64, -1, comm, &req), "root=-1");
    ZSH_EXPECT_REJECTED(zsh_ibroadcast(&x, 1, (zsh_dtype_t)99, 0, comm, &req), "dtype=99");
    ZSH_EXPECT_REJECTED(zsh_ibroadcast(&x, 1, ZSH_FLOAT64, 0, NULL, &req), "comm is NULL");
    ZSH_EXPECT_REJECTED(zsh_ibarrier(comm, NULL), "zsh_ibarrier: req_p is NULL");
    ZSH_EXPECT_REJECTED(zsh_ibarrier(NULL, &req), "comm is NULL");
    ZSH_EXPECT_TRUE(req == NULL);
    zsh_bad_input_still_works(comm);
}
