/*
 * The threads that share a step's update: the caller's and N-1 more, each
 * on its own slice of a run of elements.
 *
 * The update rules are element-wise, so slicing changes no bit of the
 * result; it pays where a rank has cores to itself (one rank per GPU, or
 * ZeRO-Offload's CPU step next to an accelerator). The threads sleep on a
 * condition variable between runs: ranks may outnumber cores, and a
 * spinning helper would take the core a peer needs.
 */
#ifndef ZSH_OPTIM_WORKERS_H_
#define ZSH_OPTIM_WORKERS_H_

#include <zeroshard.h>

#include <stddef.h>

typedef struct zsh_workers zsh_workers_t;

/* Part @part (0-based) of @nparts of a job on @arg. */
typedef void (*zsh_workers_fn_t)(void *arg, int part, int nparts);

/* @nthreads in all, the caller's included: nthreads - 1 are started. */
zsh_status_t zsh_workers_create(int nthreads, zsh_workers_t **w_p);
void         zsh_workers_destroy(zsh_workers_t *w);

/* Threads in all, the caller's included; 1 for NULL. */
int zsh_workers_count(const zsh_workers_t *w);

/*
 * @fn(@arg, i, @nparts) for every i in [0, @nparts), @nparts at most
 * zsh_workers_count(): part 0 on the calling thread, the others on the
 * started threads. Returns when every part has returned.
 */
void zsh_workers_run(zsh_workers_t *w, int nparts, zsh_workers_fn_t fn, void *arg);

#endif
