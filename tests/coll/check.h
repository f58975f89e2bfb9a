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

#include "comm/comm.h"
#include "base/config.h"
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

/* Whether @algo can run on @comm for a call of @total_bytes: the direct
 * algorithms need every rank on one node with cross-memory attach
 * (tests/coll/direct_test.c checks that they get it wherever the kernel
 * allows), the eager ones 2 to ZSH_EAGER_MAX_RANKS ranks and at most
 * ZSH_DESC_INLINE_MAX bytes. */
bool zsh_check_algo_runs(const zsh_comm_t *comm, zsh_algo_t algo, size_t total_bytes);

/* The UCX transport's settings as the environment has them (ZSH_CMA, ZSH_SHM). */
zsh_ucx_config_t zsh_check_ucx_cfg(void);

/* Allocate @bytes (at least 1) or fail the test. */
void  *zsh_check_alloc(size_t bytes);

#endif
