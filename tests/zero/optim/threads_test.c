/*
 * The update threads: every slice of a run is updated once, the caller
 * taking the first, and any count of threads gives the bits of one (the
 * rules are element-wise). Counts out of range are refused by name, and a
 * caller built before the field existed gets ZSH_OPTIM_THREADS.
 */
#include "harness/inproc.h"
#include "harness/zsh_test.h"

#include "optim/workers.h"

#include <zeroshard/optim.h>

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_WT_MAX 8

typedef struct {
    pthread_mutex_t lock;
    int             runs[ZSH_WT_MAX];
    pthread_t       who[ZSH_WT_MAX];
    int             nparts_seen;
} zsh_wt_record_t;

static void zsh_wt_part(void *arg, int part, int nparts)
{
    zsh_wt_record_t *r = arg;

    pthread_mutex_lock(&r->lock);
    r->runs[part]++;
    r->who[part]    = pthread_self();
    r->nparts_seen  = nparts;
    pthread_mutex_unlock(&r->lock);
}

ZSH_TEST(optim_workers, every_part_runs_once_the_first_on_the_caller_the_others_on_their_threads)
{
    zsh_workers_t *w = NULL;
    zsh_wt_record_t r;
    int round, nparts, i, j;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_workers_create(4, &w));
    ZSH_EXPECT_EQ(4, zsh_workers_count(w));
    for (round = 0; round < 200; round++) {
        nparts = 1 + round % 5; /* 5 asks for more than there are: 4 run */
        memset(&r, 0, sizeof(r));
        pthread_mutex_init(&r.lock, NULL);
        zsh_workers_run(w, nparts, zsh_wt_part, &r);
        if (nparts > 4) {
            nparts = 4;
        }
        ZSH_EXPECT_EQ(nparts, r.nparts_seen);
        for (i = 0; i < ZSH_WT_MAX; i++) {
            ZSH_EXPECT_EQ((i < nparts) ? 1 : 0, r.runs[i]);
        }
        ZSH_EXPECT_TRUE(pthread_equal(r.who[0], pthread_self()));
        for (i = 1; i < nparts; i++) {
            ZSH_EXPECT_TRUE(!pthread_equal(r.who[i], pthread_self()));
            for (j = 1; j < i; j++) {
                ZSH_EXPECT_TRUE(!pthread_equal(r.who[i], r.who[j]));
            }
        }
        pthread_mutex_destroy(&r.lock);
    }
    zsh_workers_destroy(w);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_workers_create(0, &w));
}

/* Elements of the large parameter: several slices of every thread count
 * tried, and a length no slice boundary divides. */
#define ZSH_WT_BIG   (200000 + 37)
#define ZSH_WT_SMALL 1000

typedef struct {
    zsh_optim_kind_t kind;
    zsh_dtype_t      prec;
    int              threads;
    void            *big, *small; /* the parameters after the steps */
    zsh_status_t     status;
} zsh_wt_case_t;

static void zsh_wt_fill(zsh_dtype_t prec, void *buf, size_t n, double phase, double scale)
{
    float x;
    size_t i;

    for (i = 0; i < n; i++) {
        x = (float)(scale * sin(phase + 0.37 * (double)i));
        if (prec == ZSH_FLOAT32) {
            ((float *)buf)[i] = x;
        } else {
            /* Any bits do: both runs read the same. Keep them finite. */
            uint32_t b;
            memcpy(&b, &x, sizeof(b));
            ((uint16_t *)buf)[i] = (prec == ZSH_BFLOAT16) ? (uint16_t)(b >> 16)
                                                          : (uint16_t)(0x3000u + (i * 7u) % 0x800u);
        }
    }
}

static void zsh_wt_train(zsh_comm_t *comm, void *arg)
{
    zsh_wt_case_t *c = arg;
    size_t es = (c->prec == ZSH_FLOAT32) ? 4 : 2;
    void *gbig = malloc(ZSH_WT_BIG * es), *gsmall = malloc(ZSH_WT_SMALL * es);
    zsh_optim_config_t cfg;
    zsh_param_t *pb, *ps;
    zsh_optim_t *opt = NULL;
    int step;

    zsh_wt_fill(c->prec, c->big, ZSH_WT_BIG, 0.1, 1.0);
    zsh_wt_fill(c->prec, c->small, ZSH_WT_SMALL, 0.2, 1.0);
    zsh_optim_config_init(&cfg);
    cfg.kind           = c->kind;
    cfg.precision      = c->prec;
    cfg.momentum       = (c->kind == ZSH_OPTIM_SGD) ? 0.9f : 0.0f;
    cfg.nesterov       = (c->kind == ZSH_OPTIM_SGD);
    cfg.weight_decay   = 0.01f;
    cfg.max_grad_norm  = 1.0f;
    cfg.update_threads = c->threads;
    c->status = zsh_optim_create(comm, &cfg, &opt);
    if (c->status == ZSH_OK) {
        c->status = zsh_optim_register(opt, "big", ZSH_WT_BIG, c->prec, c->big, &pb);
    }
    if (c->status == ZSH_OK) {
        c->status = zsh_optim_register(opt, "small", ZSH_WT_SMALL, c->prec, c->small, &ps);
    }
    for (step = 0; (c->status == ZSH_OK) && (step < 3); step++) {
        zsh_wt_fill(c->prec, gbig, ZSH_WT_BIG, 1.0 + step, 0.5);
        zsh_wt_fill(c->prec, gsmall, ZSH_WT_SMALL, 2.0 + step, 0.5);
        c->status = zsh_optim_grad_ready(opt, pb, gbig);
        if (c->status == ZSH_OK) {
            c->status = zsh_optim_grad_ready(opt, ps, gsmall);
        }
        if (c->status == ZSH_OK) {
            c->status = zsh_optim_step(opt, NULL);
        }
    }
    zsh_optim_destroy(opt);
    free(gbig);
    free(gsmall);
}

ZSH_TEST(optim_threads, any_count_of_update_threads_gives_the_bits_of_one)
{
    static const zsh_optim_kind_t kinds[] = {ZSH_OPTIM_SGD, ZSH_OPTIM_ADAM, ZSH_OPTIM_ADAMW};
    static const zsh_dtype_t precs[] = {ZSH_FLOAT32, ZSH_BFLOAT16, ZSH_FLOAT16};
    static const int counts[] = {2, 3, 8};
    size_t k, p, t, es;
    zsh_wt_case_t one, many;

    for (k = 0; k < 3; k++) {
        for (p = 0; p < 3; p++) {
            es  = (precs[p] == ZSH_FLOAT32) ? 4 : 2;
            one = (zsh_wt_case_t){kinds[k], precs[p], 1, malloc(ZSH_WT_BIG * es),
                                  malloc(ZSH_WT_SMALL * es), ZSH_ERR_INTERNAL};
            zsh_inproc_run(1, zsh_wt_train, &one);
            ZSH_EXPECT_STATUS(ZSH_OK, one.status);
            for (t = 0; t < 3; t++) {
                many = (zsh_wt_case_t){kinds[k], precs[p], counts[t], malloc(ZSH_WT_BIG * es),
                                       malloc(ZSH_WT_SMALL * es), ZSH_ERR_INTERNAL};
                zsh_inproc_run(1, zsh_wt_train, &many);
                ZSH_EXPECT_STATUS(ZSH_OK, many.status);
                if ((memcmp(one.big, many.big, ZSH_WT_BIG * es) != 0) ||
                    (memcmp(one.small, many.small, ZSH_WT_SMALL * es) != 0)) {
                    zsh_test_fail(__FILE__, __LINE__, "kind %d precision %d: %d update threads "
                                  "give other parameters than 1", (int)kinds[k],
                                  (int)precs[p], counts[t]);
                }
                free(many.big);
                free(many.small);
            }
            free(one.big);
            free(one.small);
        }
    }
}

typedef struct {
    int          threads;     /* update_threads, or -2: a caller built before the field */
    zsh_status_t status;
    char         error[256];
} zsh_wt_create_t;

static void zsh_wt_create(zsh_comm_t *comm, void *arg)
{
    zsh_wt_create_t *c = arg;
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;

    zsh_optim_config_init(&cfg);
    if (c->threads == -2) {
        cfg.size           = offsetof(zsh_optim_config_t, update_threads);
        cfg.update_threads = 9999; /* past the older caller's struct: never read */
    } else {
        cfg.update_threads = c->threads;
    }
    c->status = zsh_optim_create(comm, &cfg, &opt);
    snprintf(c->error, sizeof(c->error), "%s", zsh_last_error());
    zsh_optim_destroy(opt);
}

ZSH_TEST(optim_threads, counts_out_of_range_are_refused_by_name_and_older_callers_get_the_variable)
{
    zsh_wt_create_t c = {-1, ZSH_ERR_INTERNAL, ""};

    zsh_inproc_run(1, zsh_wt_create, &c);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, c.status);
    ZSH_EXPECT_STR_CONTAINS(c.error, "update_threads is -1");
    c.threads = 257;
    zsh_inproc_run(1, zsh_wt_create, &c);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, c.status);
    ZSH_EXPECT_STR_CONTAINS(c.error, "update_threads is 257");
    c.threads = 0;
    setenv("ZSH_OPTIM_THREADS", "0", 1);
    zsh_inproc_run(1, zsh_wt_create, &c);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, c.status);
    ZSH_EXPECT_STR_CONTAINS(c.error, "ZSH_OPTIM_THREADS='0' is out of range");
    setenv("ZSH_OPTIM_THREADS", "3", 1);
    c.threads = -2;
    zsh_inproc_run(1, zsh_wt_create, &c);
    ZSH_EXPECT_STATUS(ZSH_OK, c.status);
    c.threads = 4;
    zsh_inproc_run(1, zsh_wt_create, &c);
    ZSH_EXPECT_STATUS(ZSH_OK, c.status);
    unsetenv("ZSH_OPTIM_THREADS");
}
