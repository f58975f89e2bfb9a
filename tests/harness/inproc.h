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

/* How a rank thread makes its communicator over @oob, for a test that needs
 * another way than zsh_comm_init_oob() (a transport of its own, say). */
typedef zsh_status_t (*zsh_inproc_init_t)(const zsh_oob_t *oob, void *arg, zsh_comm_t **comm_p);

/* zsh_inproc_run() with communicators made by @init(oob, @init_arg). */
void zsh_inproc_run_with(int nranks, zsh_inproc_init_t init, void *init_arg,
                         void (*fn)(zsh_comm_t *comm, void *arg), void *arg);

/* An in-memory OOB for @nranks threads; each thread takes zsh_inproc_oob(job, rank). */
typedef struct zsh_inproc_job zsh_inproc_job_t;
zsh_inproc_job_t *zsh_inproc_job_create(int nranks);
void              zsh_inproc_job_destroy(zsh_inproc_job_t *job);
zsh_oob_t         zsh_inproc_oob(zsh_inproc_job_t *job, int rank);

#ifdef __cplusplus
}
#endif

#endif
