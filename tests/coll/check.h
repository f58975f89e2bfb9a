/*
 * Inputs and expected results for collective tests.
 *
 * Inputs are small integers chosen per op so that every result is exact in
 * every dtype, in any reduction order (as nccl-tests' -c does): sums stay
 * within fp16's exact range, products are powers of two (wrapping in the
 * 8-bit integers exactly as two's complement does), and AVG inputs are
 * base + (2 * rank - (size - 1)), whose average is exactly base.
 */
#ifndef ZSH_TESTS_COLL_CHECK_H_
#define ZSH_TESTS_COLL_CHECK_H_

#include "harness/zsh_test.h"

#include "base/call.h"
#include "base/config.h"
#include "comm/comm.h"
#include "ucx/config.h"

#include <stdbool.h>
#include <stddef.h>

#define ZSH_CHECK_NDTYPES 10
#define ZSH_CHECK_NOPS    5

extern const zsh_dtype_t zsh_check_dtypes[ZSH_CHECK_NDTYPES];
extern const zsh_op_t    zsh_check_ops[ZSH_CHECK_NOPS];

/* Element counts every collective test covers: 0, 1, primes, and counts
 * larger than the chunk size the tests force (ZSH_CHECK_CHUNK). */
#define ZSH_CHECK_CHUNK 256
extern const size_t zsh_check_counts[];
extern const size_t zsh_check_ncounts;

/* Element @i of @buf as a double, and the reverse (integers wrap as the type does). */
double zsh_check_get(const void *buf, zsh_dtype_t dtype, size_t i);
void   zsh_check_set(void *buf, zsh_dtype_t dtype, size_t i, double v);

/* The value rank @rank contributes at global index @idx for @op. */
double zsh_check_input(zsh_op_t op, zsh_dtype_t dtype, int rank, int nranks, size_t idx);

/* Fill @count elements of @buf with rank @rank's inputs for indexes [first, first + count). */
void   zsh_check_fill(void *buf, zsh_dtype_t dtype, zsh_op_t op, int rank, int nranks,
                      size_t first, size_t count);

/* The exact reduction of every rank's input at @idx, as the dtype holds it. */
double zsh_check_reduced(zsh_op_t op, zsh_dtype_t dtype, int nranks, size_t idx);

/* Compare @buf[0, count) with the reduction at [first, first + count), or
 * with rank @src_rank's inputs when @src_rank >= 0 (data movement). Reports
 * the first mismatch with its index, expected and actual value. */
bool   zsh_check_buf(const void *buf, zsh_dtype_t dtype, zsh_op_t op, int nranks, int src_rank,
                     size_t first, size_t count, const char *what, const char *file, int line);

/* The configuration @comm's collectives read. Tests force algorithms and
 * chunk sizes through it; every rank must make the same change. */
zsh_coll_config_t *zsh_check_cfg(zsh_comm_t *comm);

/*
 * Force @algo for the collective @type on @comm, with the chunk size the
 * tests force (ZSH_CHECK_CHUNK), saving the configuration in @saved for
 * zsh_check_restore(). Where @algo cannot run on @comm at all, it changes
 * nothing and returns the reason, for ZSH_SKIP: the direct algorithms need
 * every rank on one node with cross-memory attach (tests/coll/algo/direct_test.c
 * checks that they get it wherever the kernel allows), the eager ones 2 to
 * ZSH_EAGER_MAX_RANKS ranks. NULL once forced. Every rank must make the same
 * call.
 */
const char *zsh_check_force(zsh_comm_t *comm, zsh_coll_type_t type, zsh_algo_t algo,
                            zsh_coll_config_t *saved);
void        zsh_check_restore(zsh_comm_t *comm, const zsh_coll_config_t *saved);

/*
 * One case of a collective's reference test: a call of @count elements (per
 * rank for all-gather and reduce-scatter) of @dtype with @op's inputs, in
 * place or not, with @algo forced (AUTO: none), checked against the
 * reference.
 */
typedef void (*zsh_check_case_t)(zsh_comm_t *comm, zsh_dtype_t dtype, zsh_op_t op, size_t count,
                                 bool inplace, zsh_algo_t algo);

/* @one for every dtype, every op the dtype supports (all-gather and
 * all-to-all: the MIN inputs alone, as they only move data), every count, in place and out of
 * place, with @algo forced for @type; or, where @algo cannot run on @comm
 * at all, the test marked skipped with zsh_check_force()'s reason. */
void zsh_check_matrix(zsh_comm_t *comm, zsh_coll_type_t type, zsh_algo_t algo,
                      zsh_check_case_t one);

/* Each collective's reference case (allgather_test.c, reduce_scatter_test.c,
 * allreduce_test.c), for tests that run them on communicators of their own
 * making. */
void zsh_allgather_case(zsh_comm_t *comm, zsh_dtype_t dtype, zsh_op_t op, size_t count,
                        bool inplace, zsh_algo_t algo);
void zsh_reduce_scatter_case(zsh_comm_t *comm, zsh_dtype_t dtype, zsh_op_t op, size_t count,
                             bool inplace, zsh_algo_t algo);
void zsh_allreduce_case(zsh_comm_t *comm, zsh_dtype_t dtype, zsh_op_t op, size_t count,
                        bool inplace, zsh_algo_t algo);
void zsh_alltoall_case(zsh_comm_t *comm, zsh_dtype_t dtype, zsh_op_t op, size_t count,
                       bool inplace, zsh_algo_t algo);

/* An all-reduce of @count floats whose sum depends on its order, with @algo
 * forced, then a check that every rank holds the same bits. */
void zsh_allreduce_bitwise(zsh_comm_t *comm, zsh_algo_t algo, size_t count);

/*
 * One call whose status the caller checks against what @algo owes it: a
 * call of @total_bytes (as the selection counts them: every rank's block
 * for all-gather and reduce-scatter, the vector for all-reduce) too large
 * for eager must fail with ZSH_ERR_UNSUPPORTED and leave the @len bytes at
 * @recv as they were; any other must succeed.
 */
typedef struct zsh_check_call {
    zsh_status_t expected;
    const void  *recv;
    void        *before; /* recv as it was, where the call must be refused */
    size_t       len;
} zsh_check_call_t;

void zsh_check_call_begin(zsh_check_call_t *call, const zsh_comm_t *comm, zsh_algo_t algo,
                          size_t total_bytes, const void *recv, size_t len);

/* Check the call's @status (and an untouched recv where it was refused);
 * true where it ran, so that its results are the caller's to check. */
bool zsh_check_call_end(zsh_check_call_t *call, zsh_status_t status, const char *what,
                        const char *file, int line);

/* The UCX transport's settings as the environment has them (ZSH_CMA, ZSH_SHM). */
zsh_ucx_config_t zsh_check_ucx_cfg(void);

/* Allocate @bytes (at least 1) or fail the test. */
void  *zsh_check_alloc(size_t bytes);

#endif
