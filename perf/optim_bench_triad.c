#include "optim_bench_triad.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

/* Built for the same instruction sets as the layer's update kernels
 * (zero/optim/rule/rule.h, under the same conditions), so the bound is not that
 * of a narrower loop. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    defined(__GLIBC__)
#define ZSH_OB_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define ZSH_OB_CLONES
#endif

/* Released once every thread has started, or told to leave if one could
 * not: the barriers count them all. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t  cond;
    int             state;       /* 0 wait, 1 go, -1 leave */
} zsh_triad_gate_t;

typedef struct {
    zsh_triad_gate_t  *gate;
    float             *a, *b, *c;
    size_t             lo, hi;
    int                reps;
    pthread_barrier_t *start, *stop;
    double            *secs;     /* per rep: the slowest thread's time, by thread 0 */
    double             t0;
} zsh_triad_part_t;

double zsh_ob_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

ZSH_OB_CLONES
static void zsh_triad_loop(float *restrict a, const float *restrict b, const float *restrict c,
                           float s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        a[i] = b[i] + s * c[i];
    }
}

static void *zsh_triad_thread(void *arg)
{
    zsh_triad_part_t *p = arg;
    volatile float sink;
    float s = 0.5f;
    size_t i;
    int r, state;

    pthread_mutex_lock(&p->gate->lock);
    while (p->gate->state == 0) {
        pthread_cond_wait(&p->gate->cond, &p->gate->lock);
    }
    state = p->gate->state;
    pthread_mutex_unlock(&p->gate->lock);
    if (state < 0) {
        return NULL;
    }
    for (i = p->lo; i < p->hi; i++) {
        p->a[i] = 0.0f, p->b[i] = 1.0f + (float)(i & 7), p->c[i] = 0.25f;
    }
    for (r = 0; r < p->reps; r++) {
        pthread_barrier_wait(p->start);
        p->t0 = zsh_ob_now();
        zsh_triad_loop(p->a + p->lo, p->b + p->lo, p->c + p->lo, s, p->hi - p->lo);
        p->secs[r] = zsh_ob_now() - p->t0;
        pthread_barrier_wait(p->stop);
        s += 1e-3f;
    }
    if (p->hi > p->lo) {
        sink = p->a[p->lo]; /* keep the loop */
        (void)sink;
    }
    return NULL;
}

double zsh_ob_triad(size_t n, int reps, int threads)
{
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    float *c = malloc(n * sizeof(float));
    zsh_triad_part_t *parts = calloc((size_t)threads, sizeof(*parts));
    double *secs = calloc((size_t)threads * (size_t)reps, sizeof(double)), best = 0.0, t;
    pthread_t *tids = calloc((size_t)threads, sizeof(pthread_t));
    pthread_barrier_t start, stop;
    zsh_triad_gate_t gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    size_t per = (n / (size_t)threads + 15) / 16 * 16;
    int i, r, started = 0;

    if ((a == NULL) || (b == NULL) || (c == NULL) || (parts == NULL) || (secs == NULL) ||
        (tids == NULL)) {
        goto out;
    }
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    pthread_barrier_init(&stop, NULL, (unsigned)threads);
    for (i = 0; i < threads; i++) {
        parts[i] = (zsh_triad_part_t){&gate, a, b, c, 0, 0, reps, &start, &stop, secs + (size_t)i * reps,
                                      0.0};
        parts[i].lo = (per * (size_t)i < n) ? per * (size_t)i : n;
        parts[i].hi = ((i == threads - 1) || (per * (size_t)(i + 1) > n)) ? n
                                                                          : per * (size_t)(i + 1);
    }
    for (i = 1; i < threads; i++) {
        if (pthread_create(&tids[i], NULL, zsh_triad_thread, &parts[i]) != 0) {
            break;
        }
        started++;
    }
    pthread_mutex_lock(&gate.lock);
    gate.state = (started == threads - 1) ? 1 : -1;
    pthread_cond_broadcast(&gate.cond);
    pthread_mutex_unlock(&gate.lock);
    if (gate.state > 0) {
        zsh_triad_thread(&parts[0]);
    }
    for (i = 1; i <= started; i++) {
        pthread_join(tids[i], NULL);
    }
    for (r = 0; (gate.state > 0) && (r < reps); r++) {
        t = 0.0;
        for (i = 0; i < threads; i++) {
            t = (secs[(size_t)i * reps + r] > t) ? secs[(size_t)i * reps + r] : t;
        }
        if ((t > 0.0) && (12.0 * (double)n / t > best)) {
            best = 12.0 * (double)n / t;
        }
    }
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&stop);
out:
    free(tids), free(secs), free(parts);
    free(a), free(b), free(c);
    return best;
}
