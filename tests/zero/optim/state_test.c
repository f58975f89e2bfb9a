/*
 * The walk of the optimizer's state that checkpoints use (optim/state.h),
 * through that header and the public API (not optim_impl.h): the ranks' parts tile
 * every parameter exactly once, in registration order; this rank's region
 * is its part, or every parameter whole at stage 0; what a set writes a get
 * reads back and a fetch sees; a span outside its piece, a kind the rule
 * does not keep and another rank's piece are refused; the checks name the
 * parameter; the agreement gives every rank the highest failing rank's
 * message.
 */
#include "harness/zsh_test.h"
#include "optim/state.h"

#include "core/half.h"
#include "core/status.h"

#include <zeroshard/optim.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_ST_NPARAMS 6

static const size_t zsh_st_sizes[ZSH_ST_NPARAMS] = {37, 5, 100, 1, 64, 23};

typedef struct zsh_st_model {
    zsh_optim_t *opt;
    zsh_param_t *params[ZSH_ST_NPARAMS];
    void        *bufs[ZSH_ST_NPARAMS];
} zsh_st_model_t;

/* The value of element @i of parameter @p in kind @k: small integers, exact
 * in bf16 for the weights. */
static float zsh_st_value(size_t p, size_t i, int k)
{
    return (float)(k * 1000) + (float)(p * 16 + i % 16);
}

static float zsh_st_read(zsh_dtype_t dt, const void *buf, size_t i)
{
    return (dt == ZSH_FLOAT32) ? ((const float *)buf)[i]
                               : zsh_bf16_to_float(((const uint16_t *)buf)[i]);
}

static void zsh_st_write(zsh_dtype_t dt, void *buf, size_t i, float f)
{
    uint32_t u;

    if (dt == ZSH_FLOAT32) {
        ((float *)buf)[i] = f;
    } else {
        memcpy(&u, &f, sizeof(u));
        ((uint16_t *)buf)[i] = (uint16_t)(u >> 16); /* exact for the values used */
    }
}

/* Six parameters in buckets of at most 64 elements (a parameter larger
 * than that alone in its own), set up; false after a failure. */
static bool zsh_st_create(zsh_comm_t *comm, int stage, zsh_dtype_t dt, zsh_optim_kind_t kind,
                          float momentum, zsh_st_model_t *m)
{
    size_t esize = (dt == ZSH_FLOAT32) ? 4 : 2, p, i;
    zsh_optim_config_t cfg;
    char name[16];

    memset(m, 0, sizeof(*m));
    zsh_optim_config_init(&cfg);
    cfg.stage       = stage;
    cfg.precision   = dt;
    cfg.kind        = kind;
    cfg.momentum    = momentum;
    cfg.bucket_size = 64 * esize;
    if (!zsh_test_status_is(__FILE__, __LINE__, "zsh_optim_create", ZSH_OK,
                            zsh_optim_create(comm, &cfg, &m->opt))) {
        return false;
    }
    for (p = 0; p < ZSH_ST_NPARAMS; p++) {
        m->bufs[p] = calloc(zsh_st_sizes[p], esize);
        if (m->bufs[p] == NULL) {
            zsh_test_fail(__FILE__, __LINE__, "no memory");
            return false;
        }
        for (i = 0; i < zsh_st_sizes[p]; i++) {
            zsh_st_write(dt, m->bufs[p], i, zsh_st_value(p, i, 0) + 1.0f);
        }
        snprintf(name, sizeof(name), "p%zu", p);
        if (!zsh_test_status_is(__FILE__, __LINE__, "zsh_optim_register", ZSH_OK,
                                zsh_optim_register(m->opt, name, zsh_st_sizes[p], dt, m->bufs[p],
                                                   &m->params[p]))) {
            return false;
        }
    }
    return zsh_test_status_is(__FILE__, __LINE__, "zsh_optim_setup", ZSH_OK,
                              zsh_optim_setup(m->opt));
}

static void zsh_st_destroy(zsh_st_model_t *m)
{
    size_t p;

    zsh_optim_destroy(m->opt);
    for (p = 0; p < ZSH_ST_NPARAMS; p++) {
        free(m->bufs[p]);
    }
}

ZSH_RANK_TEST(optim_state, every_ranks_part_tiles_each_parameter_once_in_registration_order)
{
    int size = zsh_comm_size(comm), stage, r;
    size_t cover[ZSH_ST_NPARAMS][100], p, i, last_bucket, last_end;
    zsh_ostate_piece_t pc, prev;
    zsh_ostate_info_t info;
    zsh_ostate_iter_t it;
    zsh_st_model_t m;
    long last;

    for (stage = 0; stage <= 3; stage++) {
        if (!zsh_st_create(comm, stage, ZSH_FLOAT32, ZSH_OPTIM_ADAM, 0.0f, &m)) {
            zsh_st_destroy(&m);
            return;
        }
        zsh_optim_state_info(m.opt, &info);
        ZSH_EXPECT_EQ(size, info.size);
        ZSH_EXPECT_EQ(zsh_comm_rank(comm), info.rank);
        ZSH_EXPECT_EQ(3, info.nkinds);
        ZSH_EXPECT_EQ(ZSH_ST_NPARAMS, info.nparams);
        memset(cover, 0, sizeof(cover));
        last_bucket = 0;
        last_end    = 0;
        for (r = 0; r < size; r++) {
            last = -1;
            memset(&prev, 0, sizeof(prev));
            zsh_optim_state_iter_init(&it, m.opt, ZSH_OSTATE_WALK_PART, r);
            while (zsh_optim_state_iter_next(&it, &pc)) {
                /* One piece per parameter and rank, in registration order. */
                ZSH_ASSERT_TRUE((long)pc.param > last);
                ZSH_ASSERT_TRUE(pc.param < ZSH_ST_NPARAMS);
                ZSH_ASSERT_TRUE((pc.count > 0) && (pc.start + pc.count <= zsh_st_sizes[pc.param]));
                /* A rank's part of a bucket is one run of flat positions,
                 * after the parts of the ranks below it. */
                if ((last >= 0) && (pc.bucket == prev.bucket)) {
                    ZSH_EXPECT_EQ(prev.flat + prev.count, pc.flat);
                } else if (pc.bucket == last_bucket) {
                    ZSH_EXPECT_TRUE(pc.flat >= last_end);
                }
                for (i = pc.start; i < pc.start + pc.count; i++) {
                    cover[pc.param][i]++;
                }
                last = (long)pc.param;
                prev = pc;
            }
            if (last >= 0) {
                last_bucket = prev.bucket;
                last_end    = prev.flat + prev.count;
            }
        }
        for (p = 0; p < ZSH_ST_NPARAMS; p++) {
            for (i = 0; i < zsh_st_sizes[p]; i++) {
                if (cover[p][i] != 1) {
                    zsh_test_fail(__FILE__, __LINE__, "stage %d: element %zu of p%zu is in %zu "
                                  "parts, expected 1", stage, i, p, cover[p][i]);
                    break;
                }
            }
        }
        /* Out-of-range ranks own nothing. */
        zsh_optim_state_iter_init(&it, m.opt, ZSH_OSTATE_WALK_PART, size);
        ZSH_EXPECT_TRUE(!zsh_optim_state_iter_next(&it, &pc));
        zsh_optim_state_iter_init(&it, m.opt, ZSH_OSTATE_WALK_PART, -1);
        ZSH_EXPECT_TRUE(!zsh_optim_state_iter_next(&it, &pc));
        zsh_st_destroy(&m);
    }
}

ZSH_RANK_TEST(optim_state, the_region_is_this_ranks_part_or_every_parameter_whole_at_stage_0)
{
    zsh_ostate_piece_t a, b;
    zsh_ostate_iter_t ri, pi;
    zsh_st_model_t m;
    size_t n;
    int stage;

    for (stage = 0; stage <= 3; stage++) {
        if (!zsh_st_create(comm, stage, ZSH_FLOAT32, ZSH_OPTIM_SGD, 0.9f, &m)) {
            zsh_st_destroy(&m);
            return;
        }
        zsh_optim_state_iter_init(&ri, m.opt, ZSH_OSTATE_WALK_REGION, 0);
        zsh_optim_state_iter_init(&pi, m.opt, ZSH_OSTATE_WALK_PART, zsh_comm_rank(comm));
        for (n = 0; zsh_optim_state_iter_next(&ri, &a); n++) {
            if (stage == 0) {
                ZSH_EXPECT_EQ(n, a.param);
                ZSH_EXPECT_EQ(0, a.start);
                ZSH_EXPECT_EQ(zsh_st_sizes[n], a.count);
                continue;
            }
            ZSH_ASSERT_TRUE(zsh_optim_state_iter_next(&pi, &b));
            ZSH_EXPECT_TRUE(memcmp(&a, &b, sizeof(a)) == 0);
        }
        if (stage == 0) {
            ZSH_EXPECT_EQ(ZSH_ST_NPARAMS, n);
        } else {
            ZSH_EXPECT_TRUE(!zsh_optim_state_iter_next(&pi, &b));
        }
        zsh_st_destroy(&m);
    }
}

/* Every kind of @m's region: set to zsh_st_value in spans of at most 7
 * elements, or checked against it (before any set: the weights one above,
 * the states zero). */
static void zsh_st_region(zsh_st_model_t *m, int nkinds, bool set, bool fresh, int stage)
{
    float vals[7], scratch[7];
    zsh_ostate_piece_t pc;
    zsh_ostate_iter_t it;
    size_t off, n, j;
    float want;
    int k;

    zsh_optim_state_iter_init(&it, m->opt, ZSH_OSTATE_WALK_REGION, 0);
    while (zsh_optim_state_iter_next(&it, &pc)) {
        for (off = 0; off < pc.count; off += n) {
            n = (pc.count - off < 7) ? pc.count - off : 7;
            for (k = 0; k < nkinds; k++) {
                for (j = 0; j < n; j++) {
                    vals[j] = zsh_st_value(pc.param, pc.start + off + j, k);
                }
                if (set) {
                    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_state_set(m->opt, (zsh_ostate_t)k, &pc,
                                                                  off, n, vals, scratch));
                    continue;
                }
                ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_state_get(m->opt, (zsh_ostate_t)k, &pc, off,
                                                              n, vals));
                for (j = 0; j < n; j++) {
                    want = zsh_st_value(pc.param, pc.start + off + j, k);
                    if (fresh) { /* as registered: the weights one above, no state yet */
                        want = (k == 0) ? want + 1.0f : 0.0f;
                    }
                    if (vals[j] != want) {
                        zsh_test_fail(__FILE__, __LINE__, "stage %d kind %d: p%zu[%zu] is %g, "
                                      "expected %g", stage, k, pc.param, pc.start + off + j,
                                      (double)vals[j], (double)want);
                        return;
                    }
                }
            }
        }
    }
}

ZSH_RANK_TEST(optim_state, what_set_writes_get_reads_back_and_a_fetch_sees_at_every_stage)
{
    zsh_dtype_t dts[2] = {ZSH_FLOAT32, ZSH_BFLOAT16};
    zsh_st_model_t m;
    int stage, d;
    size_t p, i;
    void *data;

    for (d = 0; d < 2; d++) {
        for (stage = 0; stage <= 3; stage++) {
            if (!zsh_st_create(comm, stage, dts[d], ZSH_OPTIM_ADAM, 0.0f, &m)) {
                zsh_st_destroy(&m);
                return;
            }
            zsh_st_region(&m, 3, false, true, stage);
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_state_set_begin(m.opt));
            zsh_st_region(&m, 3, true, false, stage);
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_state_set_end(m.opt));
            zsh_st_region(&m, 3, false, false, stage);
            /* Every rank's parameters hold every rank's weights. */
            for (p = 0; p < ZSH_ST_NPARAMS; p++) {
                ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_fetch(m.opt, m.params[p], &data));
                for (i = 0; i < zsh_st_sizes[p]; i++) {
                    if (zsh_st_read(dts[d], data, i) != zsh_st_value(p, i, 0)) {
                        zsh_test_fail(__FILE__, __LINE__, "stage %d: fetched p%zu[%zu] is %g, "
                                      "expected %g", stage, p, i,
                                      (double)zsh_st_read(dts[d], data, i),
                                      (double)zsh_st_value(p, i, 0));
                        break;
                    }
                }
                ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_release(m.opt, m.params[p]));
            }
            zsh_st_destroy(&m);
        }
    }
}

ZSH_RANK_TEST(optim_state, a_span_past_its_piece_an_unkept_kind_or_another_ranks_piece_is_refused)
{
    int size = zsh_comm_size(comm), rank = zsh_comm_rank(comm), stage;
    zsh_ostate_piece_t pc, other;
    zsh_ostate_iter_t it;
    zsh_st_model_t m;
    float vals[4];

    for (stage = 0; stage <= 3; stage++) {
        /* Plain SGD: the weights only. */
        if (!zsh_st_create(comm, stage, ZSH_FLOAT32, ZSH_OPTIM_SGD, 0.0f, &m)) {
            zsh_st_destroy(&m);
            return;
        }
        zsh_optim_state_iter_init(&it, m.opt, ZSH_OSTATE_WALK_REGION, 0);
        if (zsh_optim_state_iter_next(&it, &pc)) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_state_get(m.opt, ZSH_OSTATE_WEIGHTS, &pc,
                                                          pc.count - 1, 1, vals));
            ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_state_get(m.opt, ZSH_OSTATE_WEIGHTS,
                                                                       &pc, pc.count, 1, vals));
            ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "of a piece of");
            ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_state_get(m.opt, ZSH_OSTATE_EXP_AVG,
                                                                       &pc, 0, 1, vals));
            ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "this optimizer keeps 1");
            other        = pc;
            other.bucket = (size_t)-1;
            ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_state_set(m.opt, ZSH_OSTATE_WEIGHTS,
                                                                       &other, 0, 1, vals, vals));
        }
        /* The next rank's pieces: its own at stage 0 too (every rank keeps
         * it all), another's after. */
        zsh_optim_state_iter_init(&it, m.opt, ZSH_OSTATE_WALK_PART, (rank + 1) % size);
        if ((size > 1) && zsh_optim_state_iter_next(&it, &other)) {
            if (stage == 0) {
                ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_state_get(m.opt, ZSH_OSTATE_WEIGHTS, &other,
                                                              0, 1, vals));
            } else {
                ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                                  zsh_optim_state_get(m.opt, ZSH_OSTATE_WEIGHTS, &other, 0, 1,
                                                      vals));
                ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "outside this rank's state region");
            }
        }
        zsh_st_destroy(&m);
    }
}

ZSH_RANK_TEST(optim_state, the_checks_name_a_pending_gradient_and_for_a_load_a_fetched_parameter)
{
    zsh_st_model_t m;
    void *data, *grad;
    size_t p;
    int applied;

    if (!zsh_st_create(comm, 3, ZSH_FLOAT32, ZSH_OPTIM_SGD, 0.0f, &m)) {
        zsh_st_destroy(&m);
        return;
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_state_prepare(m.opt, "fn"));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_state_check(m.opt, "fn", true));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_fetch(m.opt, m.params[2], &data));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_state_check(m.opt, "fn", false));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_state_check(m.opt, "fn", true));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "fn: parameter 'p2' is fetched");
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_release(m.opt, m.params[2]));
    grad = calloc(100, sizeof(float));
    ZSH_ASSERT_TRUE(grad != NULL);
    for (p = 0; p < ZSH_ST_NPARAMS; p++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(m.opt, m.params[p], grad));
    }
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_state_check(m.opt, "fn", false));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "fn: parameter 'p0' has a gradient pending");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(m.opt, &applied));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_state_check(m.opt, "fn", true));
    free(grad);
    zsh_st_destroy(&m);
}

ZSH_RANK_TEST(optim_state, the_agreement_gives_every_rank_the_highest_failing_ranks_message)
{
    int size = zsh_comm_size(comm), rank = zsh_comm_rank(comm), high = (size - 1) / 2 * 2;
    zsh_st_model_t m;
    char want[64];

    if (!zsh_st_create(comm, 1, ZSH_FLOAT32, ZSH_OPTIM_SGD, 0.0f, &m)) {
        zsh_st_destroy(&m);
        return;
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_state_agree(m.opt, ZSH_OK));
    /* The even ranks fail; the highest of them is @high. */
    if (rank % 2 == 0) {
        ZSH_EXPECT_STATUS(ZSH_ERR_IO,
                          zsh_optim_state_agree(m.opt, zsh_error(ZSH_ERR_IO, "rank %d's disk is "
                                                                 "full", rank)));
        /* Its own message, not another rank's. */
        snprintf(want, sizeof(want), "rank %d's disk is full", rank);
        ZSH_EXPECT_TRUE(strcmp(zsh_last_error(), want) == 0);
    } else {
        ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_optim_state_agree(m.opt, ZSH_OK));
        snprintf(want, sizeof(want), "rank %d: rank %d's disk is full", high, high);
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), want);
    }
    /* The optimizer's collectives still work. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_state_agree(m.opt, ZSH_OK));
    zsh_st_destroy(&m);
}
