/*
 * The fp32 master weights of mixed precision as a state
 * (zsh_optim_get_state / zsh_optim_set_state with ZSH_OPTIM_MASTER), and
 * zsh_optim_set_param keeping a master that already rounds to the value
 * given. bf16 AdamW, three parameters of awkward sizes, at every stage and
 * with the masters in the NVMe tier: after 3 steps the masters read whole
 * round to the parameters and are not the parameters widened (the step's
 * low bits are there to lose); a second optimizer given the parameters, the
 * states, the counts and the masters, in either order, continues bit for
 * bit with the first, masters included. A parameter set to its own values
 * with one element changed keeps every other element's master. fp32
 * parameters have no masters to read.
 */
#include "param_state_run.h"

#include "core/half.h"

#include <zeroshard/optim.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Train 3 steps at @stage; the masters round to the parameters and hold
 * more than them; a second optimizer at @stage (@nvme: masters and states in
 * the NVMe tier) given everything, the masters before the parameters or
 * after (@masters_first), continues with the first for 2 steps. */
static void zsh_ms_resume(zsh_comm_t *comm, int stage, bool nvme, bool masters_first)
{
    float m[ZSH_PS_MOST], s[ZSH_PS_MOST], other[ZSH_PS_MOST];
    uint16_t w[ZSH_PS_MOST], rounded[ZSH_PS_MOST], w2[ZSH_PS_MOST];
    zsh_ps_run_t a, b;
    unsigned long updates;
    size_t i, richer = 0;
    char how[96], what[160];
    int p, k;

    snprintf(how, sizeof(how), "stage %d%s, %d ranks, masters %s", stage, nvme ? " (NVMe)" : "",
             zsh_comm_size(comm), masters_first ? "first" : "last");
    memset(&b, 0, sizeof(b));
    if (!zsh_ps_make(comm, ZSH_OPTIM_ADAMW, stage, ZSH_BFLOAT16, false, &a) ||
        !zsh_ps_make(comm, ZSH_OPTIM_ADAMW, stage, ZSH_BFLOAT16, nvme, &b) ||
        !zsh_ps_steps(&a, 1, 3)) {
        goto out;
    }
    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        snprintf(what, sizeof(what), "%s: '%c'", how, 'a' + p);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_state(a.opt, a.param[p], ZSH_OPTIM_MASTER, m));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(a.opt, a.param[p], w));
        zsh_half_narrow(ZSH_BFLOAT16, m, zsh_ps_sizes[p], rounded);
        if (!zsh_ps_same_bits(rounded, w, zsh_ps_sizes[p], sizeof(uint16_t), what)) {
            goto out;
        }
        for (i = 0; i < zsh_ps_sizes[p]; i++) {
            richer += zsh_bf16_to_float(w[i]) != m[i];
        }
        if (masters_first) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_state(b.opt, b.param[p], ZSH_OPTIM_MASTER, m));
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_param(b.opt, b.param[p], w));
        if (!masters_first) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_state(b.opt, b.param[p], ZSH_OPTIM_MASTER, m));
        }
        for (k = 1; k <= 2; k++) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_state(a.opt, a.param[p],
                                                          (zsh_optim_state_t)k, s));
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_state(b.opt, b.param[p],
                                                          (zsh_optim_state_t)k, s));
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_updates(a.opt, a.param[p], &updates));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_updates(b.opt, b.param[p], updates));
    }
    /* Else the test could not tell a master from its parameter widened. */
    ZSH_EXPECT_TRUE(richer > 100);
    if (!zsh_ps_steps(&a, 4, 5) || !zsh_ps_steps(&b, 4, 5)) {
        goto out;
    }
    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        snprintf(what, sizeof(what), "%s: '%c' 2 steps on", how, 'a' + p);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_state(a.opt, a.param[p], ZSH_OPTIM_MASTER, m));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_state(b.opt, b.param[p], ZSH_OPTIM_MASTER, other));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(a.opt, a.param[p], w));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(b.opt, b.param[p], w2));
        if (!zsh_ps_same_bits(other, m, zsh_ps_sizes[p], sizeof(float), what) ||
            !zsh_ps_same_bits(w2, w, zsh_ps_sizes[p], sizeof(uint16_t), what)) {
            break;
        }
    }
out:
    zsh_ps_free(&a);
    zsh_ps_free(&b);
}

ZSH_RANK_TEST(optim_master_state, master_weights_read_and_written_continue_training_exactly)
{
    int stage;

    for (stage = 0; stage <= 3; stage++) {
        zsh_ms_resume(comm, stage, false, (stage % 2) == 0);
        zsh_ms_resume(comm, stage, false, (stage % 2) != 0);
    }
    zsh_ms_resume(comm, 2, true, false);
    zsh_ms_resume(comm, 3, true, true);
}

/* Set parameter 'a' to @w; its masters after it: @before where they round
 * to @w, else @w widened. Returns how many were kept, or -1. */
static int zsh_ms_set_keeps(zsh_ps_run_t *r, const uint16_t *w, const float *before,
                            const char *what)
{
    float after[ZSH_PS_MOST], want[ZSH_PS_MOST];
    size_t i, n = zsh_ps_sizes[0];
    int kept = 0;

    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_param(r->opt, r->param[0], w));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_state(r->opt, r->param[0], ZSH_OPTIM_MASTER, after));
    for (i = 0; i < n; i++) {
        if (zsh_float_to_bf16(before[i]) == w[i]) {
            want[i] = before[i];
            kept += zsh_bf16_to_float(w[i]) != before[i];
        } else {
            want[i] = zsh_bf16_to_float(w[i]);
        }
    }
    return zsh_ps_same_bits(after, want, n, sizeof(float), what) ? kept : -1;
}

ZSH_RANK_TEST(optim_master_state, a_parameter_set_to_its_own_values_keeps_its_masters_but_where_changed)
{
    float before[ZSH_PS_MOST];
    uint16_t w[ZSH_PS_MOST];
    zsh_ps_run_t r;
    char what[96];
    size_t i, n = zsh_ps_sizes[0];
    int stage, kept;

    for (stage = 0; stage <= 3; stage++) {
        if (!zsh_ps_make(comm, ZSH_OPTIM_ADAMW, stage, ZSH_BFLOAT16, stage == 3, &r) || !zsh_ps_steps(&r, 1, 3)) {
            zsh_ps_free(&r);
            return;
        }
        snprintf(what, sizeof(what), "stage %d, %d ranks: the masters", stage,
                 zsh_comm_size(comm));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_state(r.opt, r.param[0], ZSH_OPTIM_MASTER,
                                                      before));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(r.opt, r.param[0], w));
        w[n / 2] = zsh_float_to_bf16(0.75f);
        /* Every master but the changed one's holds bits its parameter lacks. */
        kept = zsh_ms_set_keeps(&r, w, before, what);
        ZSH_EXPECT_TRUE(kept > (int)n / 2);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_state(r.opt, r.param[0], ZSH_OPTIM_MASTER,
                                                      before));
        for (i = 0; i < n; i++) {
            w[i] = zsh_float_to_bf16(0.5f);
        }
        ZSH_EXPECT_TRUE(zsh_ms_set_keeps(&r, w, before, what) >= 0);
        zsh_ps_free(&r);
    }
}

ZSH_RANK_TEST(optim_master_state, fp32_parameters_have_no_master_weights_to_read_or_write)
{
    float vals[4] = {0};
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *w;

    zsh_optim_config_init(&cfg);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "w", 4, ZSH_FLOAT32, vals, &w));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_get_state(opt, w, ZSH_OPTIM_MASTER, vals));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "parameter 'w': fp32 parameters have no master "
                                             "weights") != NULL);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_state(opt, w, ZSH_OPTIM_MASTER, vals));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_optim_set_state(opt, w, (zsh_optim_state_t)4, vals));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "state 4 is none of") != NULL);
    zsh_optim_destroy(opt);
}
