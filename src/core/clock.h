/*
 * Monotonic time and deadlines. Every wait in ZeroShard has a deadline, so
 * this is the one clock they all read.
 */
#ifndef ZSH_CORE_CLOCK_H_
#define ZSH_CORE_CLOCK_H_

#include <time.h>

/* Seconds on the monotonic clock. */
static inline double zsh_clock_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The same clock, cheaper and up to a scheduler tick behind: for checking
 * deadlines of seconds on every progress pass. */
static inline double zsh_clock_coarse(void)
{
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#else
    return zsh_clock_now();
#endif
}

/* Milliseconds left until @deadline, clamped to [0, @cap_ms], for poll(). */
static inline int zsh_clock_ms_left(double deadline, int cap_ms)
{
    double left = (deadline - zsh_clock_now()) * 1e3;

    if (left <= 0) {
        return 0;
    }
    return (left > cap_ms) ? cap_ms : (int)left + 1;
}

#endif
