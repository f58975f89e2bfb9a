#include "train/split.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

double zsh_train_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The layer's counters; all zero if it cannot give them, so a delta is 0. */
static void zsh_train_stats(const zsh_optim_t *opt, zsh_optim_stats_t *st)
{
    if (zsh_optim_get_stats(opt, st) != ZSH_OK) {
        memset(st, 0, sizeof(*st));
    }
}

void zsh_train_split_start(zsh_train_split_t *sp, const zsh_optim_t *opt)
{
    zsh_train_stats(opt, &sp->before);
    sp->blocked = 0.0;
    sp->step    = 0.0;
    sp->start   = zsh_train_now();
}

void zsh_train_split_step_begin(zsh_train_split_t *sp, const zsh_optim_t *opt)
{
    zsh_train_stats(opt, &sp->at_step);
    sp->step_at = zsh_train_now();
}

void zsh_train_split_step_end(zsh_train_split_t *sp, const zsh_optim_t *opt)
{
    sp->step = zsh_train_now() - sp->step_at;
    zsh_train_stats(opt, &sp->after);
}

unsigned long long zsh_train_peak_rss_kib(void)
{
    struct rusage ru;

    return (getrusage(RUSAGE_SELF, &ru) == 0) ? (unsigned long long)ru.ru_maxrss : 0;
}

static double zsh_train_nonneg(double v)
{
    return (v > 0.0) ? v : 0.0;
}

int zsh_train_split_end(zsh_train_split_t *sp, zsh_comm_t *comm, unsigned long k)
{
    double total = zsh_train_now() - sp->start;
    /* I/O waited for inside fetch and grad-ready, and inside the step. */
    double io_calls = zsh_train_nonneg(sp->at_step.io_wait_s - sp->before.io_wait_s);
    double io_step  = zsh_train_nonneg(sp->after.io_wait_s - sp->at_step.io_wait_s);
    unsigned long long sum[3], max;

    sum[0] = zsh_train_peak_rss_kib();
    sum[1] = sp->after.io_read_bytes - sp->before.io_read_bytes;
    sum[2] = sp->after.io_write_bytes - sp->before.io_write_bytes;
    max    = sum[0];
    if ((zsh_allreduce(sum, sum, 3, ZSH_UINT64, ZSH_SUM, comm) != ZSH_OK) ||
        (zsh_allreduce(&max, &max, 1, ZSH_UINT64, ZSH_MAX, comm) != ZSH_OK)) {
        fprintf(stderr, "zsh_train: step %lu: combining the ranks' counters: %s\n", k,
                zsh_last_error());
        return 1;
    }
    if (zsh_comm_rank(comm) != 0) {
        return 0;
    }
    printf("split %lu: total_s %.6f compute_s %.6f comm_s %.6f io_wait_s %.6f optimizer_s %.6f "
           "rss_max_kib %llu rss_sum_kib %llu io_read_bytes %llu io_write_bytes %llu",
           k, total, zsh_train_nonneg(total - sp->blocked - sp->step),
           zsh_train_nonneg(sp->blocked - io_calls), io_calls + io_step,
           zsh_train_nonneg(sp->step - io_step), max, sum[0], sum[1], sum[2]);
    if (sp->after.io_engine != NULL) {
        printf(" io_engine %s", sp->after.io_engine);
    }
    putchar('\n');
    fflush(stdout);
    return 0;
}
