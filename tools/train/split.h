/*
 * Where a zsh_train step's time goes: compute (the model's math), blocked
 * communication (fetch, release, grad-ready and the loss's all-reduce, less
 * the I/O wait inside them), I/O wait (what the optimizer layer's stats
 * count) and the optimizer step (less its I/O wait); with the ranks' peak
 * resident memory and the bytes they moved to and from the NVMe tier.
 */
#ifndef ZSH_TRAIN_SPLIT_H_
#define ZSH_TRAIN_SPLIT_H_

#include <zeroshard/optim.h>

typedef struct zsh_train_split {
    double            start;    /* clock at the step's start */
    double            blocked;  /* seconds in the layer's calls and collectives, I/O included */
    double            step_at;  /* clock when zsh_optim_step() was called */
    double            step;     /* seconds in zsh_optim_step() */
    zsh_optim_stats_t before, at_step, after;
} zsh_train_split_t;

/* The monotonic clock, in seconds. */
double zsh_train_now(void);

/* Mark the step's start, before its first call of the layer. */
void zsh_train_split_start(zsh_train_split_t *sp, const zsh_optim_t *opt);

/* Around zsh_optim_step(). */
void zsh_train_split_step_begin(zsh_train_split_t *sp, const zsh_optim_t *opt);
void zsh_train_split_step_end(zsh_train_split_t *sp, const zsh_optim_t *opt);

/* This rank's peak resident memory, in KiB. */
unsigned long long zsh_train_peak_rss_kib(void);

/* Close step @k: combine the ranks' memory and I/O bytes (collective) and
 * print, on rank 0, the line
 *   split K: total_s T compute_s C comm_s M io_wait_s W optimizer_s O
 *            rss_max_kib R rss_sum_kib S io_read_bytes B io_write_bytes B
 *            [io_engine E]
 * with rank 0's times (they sum to total_s) and the ranks' memory and bytes.
 * 0 on success. */
int zsh_train_split_end(zsh_train_split_t *sp, zsh_comm_t *comm, unsigned long k);

#endif
