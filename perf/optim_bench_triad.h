/*
 * The bound of zsh_optim_bench: a STREAM triad (a[i] = b[i] + s * c[i]) on
 * three fp32 arrays, split between as many threads as the step it bounds
 * uses, so a step on two cores is not held to one core's bandwidth.
 */
#ifndef ZSH_PERF_OPTIM_BENCH_TRIAD_H_
#define ZSH_PERF_OPTIM_BENCH_TRIAD_H_

#include <stddef.h>

/* Best bytes/s over @reps triads of @n elements on @threads threads (each
 * touches its slice first, so its pages sit where it runs), counting 12
 * bytes per element as STREAM does; 0 without the memory or a thread. */
double zsh_ob_triad(size_t n, int reps, int threads);

/* Seconds on the monotonic clock, for the bench's timings and the triad's. */
double zsh_ob_now(void);

#endif
