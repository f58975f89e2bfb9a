/*
 * quant_bench: the quantization kernels against the memory bound measured
 * in the same run.
 *
 *   quant_bench [-n ELEMENTS] [-b BLOCK] [-i ITERS]
 *
 * For every width this CPU runs and for int8 and int4: quantize, dequantize
 * and dequantize_add over a run of N fp32 elements (default 16M, far beyond
 * the caches), the median of ITERS timings each. The bound: memcpy of the
 * N-element fp32 run, timed alternately with each kernel (a busy host slows
 * both alike), the median of as many, counting its read and its write (8
 * bytes per element). A kernel's bandwidth counts the
 * bytes it must read and write (fp32 values, levels, scales; the
 * accumulator both read and written); the ratio to memcpy's is the fraction
 * of the memory bound it reaches. One line per (width, bits, kernel).
 */
#include "quant/quant.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double zsh_qb_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int zsh_qb_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double zsh_qb_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof(double), zsh_qb_cmp);
    return t[n / 2];
}

typedef struct {
    size_t n, block;
    int    bits, iters;
    float *x, *out, *copy, *scales;
    void  *q;
} zsh_qb_t;

/* Median seconds of kernel @what (0 quantize, 1 dequantize, 2 dequantize_add)
 * into *@kernel_s, and of the memcpy timed alternately with it into
 * *@copy_s, so a busy host slows both alike. */
static void zsh_qb_time(const zsh_quant_kernels_t *k, zsh_qb_t *b, int what, double *kernel_s,
                        double *copy_s)
{
    double *t = malloc(2 * (size_t)b->iters * sizeof(double)), *c = t + b->iters, t0;
    int i;

    for (i = 0; i < b->iters; i++) {
        t0 = zsh_qb_now();
        memcpy(b->copy, b->x, b->n * sizeof(float));
        c[i] = zsh_qb_now() - t0;
        t0 = zsh_qb_now();
        if (what == 0) {
            (void)k->quantize(b->x, b->n, b->block, b->bits, b->q, b->scales);
        } else if (what == 1) {
            k->dequantize(b->q, b->scales, b->n, b->block, b->bits, b->out);
        } else {
            k->dequantize_add(b->q, b->scales, b->n, b->block, b->bits, b->out);
        }
        t[i] = zsh_qb_now() - t0;
    }
    *kernel_s = zsh_qb_median(t, b->iters);
    *copy_s   = zsh_qb_median(c, b->iters);
    free(t);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"quantize", "dequantize", "dequantize_add"};
    zsh_qb_t b = {.n = 16u << 20, .block = 2048, .iters = 11};
    size_t i;
    int opt, w, what;

    while ((opt = getopt(argc, argv, "n:b:i:")) != -1) {
        if (opt == 'n') {
            b.n = strtoull(optarg, NULL, 0);
        } else if (opt == 'b') {
            b.block = strtoull(optarg, NULL, 0);
        } else if (opt == 'i') {
            b.iters = atoi(optarg);
        } else {
            fprintf(stderr, "usage: quant_bench [-n ELEMENTS] [-b BLOCK] [-i ITERS]\n");
            return 2;
        }
    }
    if ((b.n == 0) || (b.iters < 1) || (zsh_quant_check(b.block, 8) != ZSH_OK)) {
        fprintf(stderr, "quant_bench: -n and -i must be positive, -b %u..%u\n",
                (unsigned)ZSH_QUANT_BLOCK_MIN, (unsigned)ZSH_QUANT_BLOCK_MAX);
        return 2;
    }
    b.x      = malloc(b.n * sizeof(float));
    b.out    = malloc(b.n * sizeof(float));
    b.copy   = malloc(b.n * sizeof(float));
    b.scales = malloc(zsh_quant_blocks(b.n, b.block) * sizeof(float));
    b.q      = malloc(b.n);
    if ((b.x == NULL) || (b.out == NULL) || (b.scales == NULL) || (b.q == NULL) || (b.copy == NULL)) {
        fprintf(stderr, "quant_bench: no memory for %zu elements\n", b.n);
        return 1;
    }
    for (i = 0; i < b.n; i++) {
        b.x[i] = (float)((double)(i % 1009) - 504.0) * 0.01f;
    }
    memset(b.out, 0, b.n * sizeof(float));
    memset(b.q, 0, b.n);
    memset(b.copy, 0, b.n * sizeof(float));
    printf("# n %zu block %zu iters %d; memcpy of the fp32 run timed alternately with each "
           "kernel, counting read and write\n", b.n, b.block, b.iters);
    printf("%-7s %-4s %-15s %9s %9s %12s %8s\n", "width", "bits", "kernel", "ms", "GB/s",
           "memcpy GB/s", "/memcpy");
    for (w = 0; w < ZSH_QUANT_NWIDTHS; w++) {
        const zsh_quant_kernels_t *k = zsh_quant_kernels((zsh_quant_width_t)w);
        for (b.bits = 8; (k != NULL) && (b.bits >= 4); b.bits -= 4) {
            double qbytes = (double)zsh_quant_bytes(b.n, b.block, b.bits);
            double sbytes = 4.0 * (double)zsh_quant_blocks(b.n, b.block);
            double fbytes = 4.0 * (double)b.n;
            double bytes[3] = {fbytes + qbytes + sbytes, qbytes + sbytes + fbytes,
                               qbytes + sbytes + 2.0 * fbytes};

            for (what = 0; what < 3; what++) {
                double s, copy_s, bw, copy_bw;

                zsh_qb_time(k, &b, what, &s, &copy_s);
                bw      = bytes[what] / s;
                copy_bw = 8.0 * (double)b.n / copy_s;
                printf("%-7s %-4d %-15s %9.3f %9.2f %12.2f %8.2f\n", k->name, b.bits,
                       names[what], s * 1e3, bw * 1e-9, copy_bw * 1e-9, bw / copy_bw);
            }
        }
    }
    free(b.x);
    free(b.out);
    free(b.scales);
    free(b.q);
    free(b.copy);
    return 0;
}
