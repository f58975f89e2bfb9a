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
#include "param_state_run.h"
#include "rule_ref.h"

#include <zeroshard/optim.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define ZSH_PS_STEPS 3
#define ZSH_PS_MORE  2

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
    if (!zsh_ps_make(comm, kind, sa, ZSH_FLOAT32, false, &a) ||
        !zsh_ps_make(comm, kind, sb, ZSH_FLOAT32, nvme, &b) ||
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
            if (!zsh_ps_same_bits(got, (s == 1) ? m : v, zsh_ps_sizes[p], sizeof(float), what)) {
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
        if (!zsh_ps_same_bits(other, got, zsh_ps_sizes[p], sizeof(float), what)) {
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
        if (!zsh_ps_make(comm, ZSH_OPTIM_ADAM, stage, ZSH_FLOAT32, false, &r)) {
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
            zsh_ps_same_bits(got, want, zsh_ps_sizes[0], sizeof(float), what);
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
    if (!zsh_ps_make(comm, ZSH_OPTIM_SGD, 1, ZSH_FLOAT32, false, &sgd) ||
        !zsh_ps_make(comm, ZSH_OPTIM_ADAM, 3, ZSH_FLOAT32, false, &adam)) {
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
