/*
 * zsh_optim_get_state(), zsh_optim_set_state() and the counts of updates:
 * what a torch-format optimizer state dict is made of. Three parameters of
 * awkward sizes, one left out of the first step (its count behind), under
 * AdamW and SGD with momentum: after 3 steps every rank reads each state
 * whole with torch.optim's bits (rule_ref.h), and a second optimizer given
 * the parameters, states and counts, at the same stage or another, with the
 * states in memory or the NVMe tier, continues bit for bit with the first.
 * States keep their exact bits (-0.0, NaN payloads) through a write and a
 * read. States the rule does not keep, another optimizer's parameter and
 * ranks reading different parameters are refused.
 */
#include "harness/zsh_test.h"
#include "rule_ref.h"
#include "optim/optim_impl.h"

#include <zeroshard/optim.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZSH_PS_NPARAMS 3
#define ZSH_PS_STEPS   3
#define ZSH_PS_MORE    2
#define ZSH_PS_MOST    301

static const size_t zsh_ps_sizes[ZSH_PS_NPARAMS] = {301, 37, 250};

typedef struct {
    zsh_optim_t *opt;
    float       *buf[ZSH_PS_NPARAMS];
    zsh_param_t *param[ZSH_PS_NPARAMS];
    char        *dir; /* the NVMe tier's, or NULL */
} zsh_ps_run_t;

static float zsh_ps_init(int p, size_t i)
{
    return (float)sin(0.3 * (double)i + p);
}

/* Multiples of 2^-6 below 1: the sum over up to 8 ranks is exact. */
static float zsh_ps_grad(int p, size_t i, int t)
{
    return (float)((int)((i * 7 + (size_t)p * 3 + (size_t)t * 5) % 13) - 6) * 0x1p-6f;
}

/* Parameter 1 has no gradient at step 1. */
static bool zsh_ps_skips(int p, int t)
{
    return (p == 1) && (t == 1);
}

static void zsh_ps_config(zsh_optim_config_t *cfg, zsh_optim_kind_t kind, int stage)
{
    zsh_optim_config_init(cfg);
    cfg->stage        = stage;
    cfg->kind         = kind;
    cfg->lr           = 0.01;
    cfg->momentum     = (kind == ZSH_OPTIM_SGD) ? 0.9 : 0.0;
    cfg->weight_decay = 0.1;
}

static bool zsh_ps_make(zsh_comm_t *comm, zsh_optim_kind_t kind, int stage, bool nvme,
                        zsh_ps_run_t *r)
{
    char tmpl[] = "/var/tmp/zsh-param-state-test-XXXXXX", name[2] = "a";
    zsh_optim_config_t cfg;
    size_t i;
    int p;

    memset(r, 0, sizeof(*r));
    zsh_ps_config(&cfg, kind, stage);
    if (nvme) {
        r->dir = mkdtemp(tmpl);
        r->dir = (r->dir != NULL) ? strdup(r->dir) : NULL;
        if (r->dir == NULL) {
            return false;
        }
        cfg.offload_optimizer = ZSH_OFFLOAD_NVME;
        cfg.bucket_size       = 1024;
        cfg.sub_group_size    = ZSH_TIER_ALIGN_ELEMS;
        cfg.host_mem_limit    = 2 * 5 * 4 * ZSH_TIER_ALIGN_ELEMS; /* reads in several spans */
        cfg.nvme_dir          = r->dir;
    }
    if (zsh_optim_create(comm, &cfg, &r->opt) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "create: %s", zsh_last_error());
        return false;
    }
    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        r->buf[p] = malloc(zsh_ps_sizes[p] * sizeof(float));
        for (i = 0; i < zsh_ps_sizes[p]; i++) {
            r->buf[p][i] = zsh_ps_init(p, i);
        }
        name[0] = (char)('a' + p);
        if (zsh_optim_register(r->opt, name, zsh_ps_sizes[p], ZSH_FLOAT32, r->buf[p],
                               &r->param[p]) != ZSH_OK) {
            zsh_test_fail(__FILE__, __LINE__, "register: %s", zsh_last_error());
            return false;
        }
    }
    return true;
}

static void zsh_ps_free(zsh_ps_run_t *r)
{
    int p;

    zsh_optim_destroy(r->opt);
    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        free(r->buf[p]);
    }
    if (r->dir != NULL) {
        rmdir(r->dir);
        free(r->dir);
    }
}

/* Steps [from, to] of the gradients every rank gives alike. */
static bool zsh_ps_steps(zsh_ps_run_t *r, int from, int to)
{
    float grad[ZSH_PS_MOST];
    zsh_status_t status = ZSH_OK;
    size_t i;
    int p, t;

    for (t = from; (status == ZSH_OK) && (t <= to); t++) {
        for (p = ZSH_PS_NPARAMS; (status == ZSH_OK) && (p-- > 0);) {
            for (i = 0; i < zsh_ps_sizes[p]; i++) {
                grad[i] = zsh_ps_grad(p, i, t);
            }
            status = zsh_ps_skips(p, t) ? zsh_optim_grad_none(r->opt, r->param[p])
                                        : zsh_optim_grad_ready(r->opt, r->param[p], grad);
        }
        if (status == ZSH_OK) {
            status = zsh_optim_step(r->opt, NULL);
        }
    }
    if (status != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "step %d: %s", t - 1, zsh_last_error());
    }
    return status == ZSH_OK;
}

/* Parameter @p's states after @upto steps of @c's rule, into @m and @v. */
static void zsh_ps_reference(const zsh_optim_config_t *c, int p, int n, int upto, float *m,
                             float *v)
{
    float w[ZSH_PS_MOST], g[ZSH_PS_MOST];
    size_t i, k = zsh_ps_sizes[p];
    int t, own = 0;

    for (i = 0; i < k; i++) {
        w[i] = zsh_ps_init(p, i);
        m[i] = v[i] = 0.0f;
    }
    for (t = 1; t <= upto; t++) {
        if (zsh_ps_skips(p, t)) {
            continue;
        }
        for (i = 0; i < k; i++) {
            g[i] = (float)n * zsh_ps_grad(p, i, t);
        }
        own++;
        if (c->kind == ZSH_OPTIM_SGD) {
            zsh_rule_sgd_torch(w, g, m, k, c, own, 1.0f);
        } else {
            zsh_rule_adam_torch(w, g, m, v, k, c, own, 1.0f);
        }
    }
}

static bool zsh_ps_same_bits(const float *got, const float *want, size_t n, const char *what)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            zsh_test_fail(__FILE__, __LINE__, "%s: element %zu is %a, not %a", what, i,
                          (double)got[i], (double)want[i]);
            return false;
        }
    }
    return true;
}

static int zsh_ps_nstates(zsh_optim_kind_t kind)
{
    return (kind == ZSH_OPTIM_SGD) ? 1 : 2;
}

/* Train @kind at stage @sa for 3 steps; check the states read against the
 * rule's; give them to a new optimizer at stage @sb; 2 more steps each. */
static void zsh_ps_resume(zsh_comm_t *comm, zsh_optim_kind_t kind, int sa, int sb, bool nvme)
{
    float got[ZSH_PS_MOST], m[ZSH_PS_MOST], v[ZSH_PS_MOST], other[ZSH_PS_MOST];
    int n = zsh_comm_size(comm), p, s;
    zsh_ps_run_t a, b;
    zsh_optim_config_t cfg;
    unsigned long updates;
    char what[160];

    memset(&b, 0, sizeof(b));
    zsh_ps_config(&cfg, kind, sa);
    if (!zsh_ps_make(comm, kind, sa, false, &a) || !zsh_ps_make(comm, kind, sb, nvme, &b) ||
        !zsh_ps_steps(&a, 1, ZSH_PS_STEPS)) {
        goto out;
    }
    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        zsh_ps_reference(&cfg, p, n, ZSH_PS_STEPS, m, v);
        for (s = 1; s <= zsh_ps_nstates(kind); s++) {
            snprintf(what, sizeof(what), "kind %d, stage %d, %d ranks: state %d of '%c'",
                     (int)kind, sa, n, s, 'a' + p);
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_state(a.opt, a.param[p],
                                                          (zsh_optim_state_t)s, got));
            if (!zsh_ps_same_bits(got, (s == 1) ? m : v, zsh_ps_sizes[p], what)) {
                goto out;
            }
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_state(b.opt, b.param[p],
                                                          (zsh_optim_state_t)s, got));
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_updates(a.opt, a.param[p], &updates));
        ZSH_EXPECT_EQ(zsh_ps_skips(p, 1) ? ZSH_PS_STEPS - 1 : ZSH_PS_STEPS, (int)updates);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_updates(b.opt, b.param[p], updates));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(a.opt, a.param[p], got));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_param(b.opt, b.param[p], got));
    }
    if (!zsh_ps_steps(&a, ZSH_PS_STEPS + 1, ZSH_PS_STEPS + ZSH_PS_MORE) ||
        !zsh_ps_steps(&b, ZSH_PS_STEPS + 1, ZSH_PS_STEPS + ZSH_PS_MORE)) {
        goto out;
    }
    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        snprintf(what, sizeof(what), "kind %d, stage %d then %d%s, %d ranks: '%c' after %d more "
                 "steps", (int)kind, sa, sb, nvme ? " (NVMe)" : "", n, 'a' + p, ZSH_PS_MORE);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(a.opt, a.param[p], got));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(b.opt, b.param[p], other));
        if (!zsh_ps_same_bits(other, got, zsh_ps_sizes[p], what)) {
            break;
        }
    }
out:
    zsh_ps_free(&a);
    zsh_ps_free(&b);
}

ZSH_RANK_TEST(optim_param_state, states_read_whole_are_torchs_and_continue_training_exactly)
{
    static const int pairs[][3] = {{0, 0, 0}, {1, 1, 0}, {2, 2, 0}, {3, 3, 0},
                                   {1, 3, 0}, {3, 0, 0}, {2, 3, 1}};
    static const zsh_optim_kind_t kinds[] = {ZSH_OPTIM_ADAMW, ZSH_OPTIM_SGD};
    size_t k, j;

    for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        for (j = 0; j < sizeof(pairs) / sizeof(pairs[0]); j++) {
            zsh_ps_resume(comm, kinds[k], pairs[j][0], pairs[j][1], pairs[j][2] != 0);
        }
    }
}

ZSH_RANK_TEST(optim_param_state, a_state_keeps_its_exact_bits_through_a_write_and_a_read)
{
    static const uint32_t odd[] = {0x80000000u /* -0.0 */, 0x7fc00123u /* a NaN's payload */,
                                   0xff800000u /* -inf */, 0x00000001u /* denormal */};
    float want[ZSH_PS_MOST], got[ZSH_PS_MOST];
    zsh_ps_run_t r;
    char what[96];
    size_t i;
    int stage, s;

    for (stage = 0; stage <= 3; stage++) {
        if (!zsh_ps_make(comm, ZSH_OPTIM_ADAM, stage, false, &r)) {
            zsh_ps_free(&r);
            return;
        }
        for (s = 1; s <= 2; s++) {
            for (i = 0; i < zsh_ps_sizes[0]; i++) {
                memcpy(&want[i], &odd[(i + (size_t)s) % 4], sizeof(float));
                if (i % 5 == 0) {
                    want[i] = (float)i * 0.25f * (float)s;
                }
            }
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_state(r.opt, r.param[0],
                                                          (zsh_optim_state_t)s, want));
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_state(r.opt, r.param[0],
                                                          (zsh_optim_state_t)s, got));
            snprintf(what, sizeof(what), "stage %d, %d ranks, state %d", stage,
                     zsh_comm_size(comm), s);
            zsh_ps_same_bits(got, want, zsh_ps_sizes[0], what);
        }
        zsh_ps_free(&r);
    }
}

ZSH_RANK_TEST(optim_param_state, states_the_rule_lacks_other_parameters_and_ranks_at_odds_are_refused)
{
    float vals[ZSH_PS_MOST] = {0}, seen[ZSH_PS_MOST];
    zsh_ps_run_t sgd, adam;
    zsh_optim_config_t cfg;
    zsh_optim_t *plain = NULL;
    zsh_param_t *w;
    unsigned long updates = 7;
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);

    memset(&adam, 0, sizeof(adam));
    if (!zsh_ps_make(comm, ZSH_OPTIM_SGD, 1, false, &sgd) ||
        !zsh_ps_make(comm, ZSH_OPTIM_ADAM, 3, false, &adam)) {
        zsh_ps_free(&sgd);
        zsh_ps_free(&adam);
        return;
    }
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_optim_get_state(sgd.opt, sgd.param[0], ZSH_OPTIM_EXP_AVG_SQ, vals));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "parameter 'a': SGD keeps no exp_avg_sq") != NULL);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_state(sgd.opt, sgd.param[0],
                                                               (zsh_optim_state_t)0, vals));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "state 0 is none of") != NULL);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_optim_get_state(sgd.opt, adam.param[0], ZSH_OPTIM_EXP_AVG, vals));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "not one of this optimizer's") != NULL);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_updates(sgd.opt, adam.param[0], 1));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_get_updates(sgd.opt, NULL, &updates));
    ZSH_EXPECT_EQ(7, (int)updates);

    /* One rank's wrong argument fails every rank, none left waiting. */
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_optim_get_state(adam.opt, adam.param[1], ZSH_OPTIM_EXP_AVG,
                                          (rank == n - 1) ? NULL : vals));
    /* Ranks reading different states of a parameter. */
    ZSH_EXPECT_STATUS((n > 1) ? ZSH_ERR_MISMATCH : ZSH_OK,
                      zsh_optim_get_state(adam.opt, adam.param[0],
                                          (rank == 0) ? ZSH_OPTIM_EXP_AVG : ZSH_OPTIM_EXP_AVG_SQ,
                                          vals));
    /* The optimizer is still usable: a read of the same by every rank. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_state(adam.opt, adam.param[2], ZSH_OPTIM_EXP_AVG_SQ,
                                                  seen));

    zsh_ps_config(&cfg, ZSH_OPTIM_SGD, 0);
    cfg.momentum = 0.0;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &plain));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(plain, "w", 4, ZSH_FLOAT32, vals, &w));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_state(plain, w, ZSH_OPTIM_EXP_AVG, seen));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "SGD without momentum keeps no momentum_buffer") !=
                    NULL);
    zsh_optim_destroy(plain);
    zsh_ps_free(&sgd);
    zsh_ps_free(&adam);
}
