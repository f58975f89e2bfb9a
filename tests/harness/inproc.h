/*
 * In-process jobs: one thread per rank, bootstrapped through an in-memory
 * out-of-band allgather, as UCC's gtest does. Fast enough for plain
 * `make check`, and the same rank tests also run under mpirun.
 */
#ifndef ZSH_TESTS_GTEST_INPROC_H_
#define ZSH_TESTS_GTEST_INPROC_H_

#include "harness/zsh_test.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Run @fn(comm, arg) on @nranks threads, each with its own communicator
 * created by zsh_comm_init_oob(); returns once all have destroyed theirs. */
void zsh_inproc_run(int nranks, void (*fn)(zsh_comm_t *comm, void *arg), void *arg);

/* An in-memory OOB for @nranks threads; each thread takes zsh_inproc_oob(job, rank). */
typedef struct zsh_inproc_job zsh_inproc_job_t;
zsh_inproc_job_t *zsh_inproc_job_create(int nranks);
void              zsh_inproc_job_destroy(zsh_inproc_job_t *job);
zsh_oob_t         zsh_inproc_oob(zsh_inproc_job_t *job, int rank);

#ifdef __cplusplus
}
#endif

#endif
