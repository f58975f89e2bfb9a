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
#include "harness/zsh_test.h"
#include "optim/tier.h"

#include "core/half.h"

#include <zeroshard/optim.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZSH_MS_NPARAMS 3
#define ZSH_MS_MOST    301

static const size_t zsh_ms_sizes[ZSH_MS_NPARAMS] = {301, 37, 250};

typedef struct {
    zsh_optim_t *opt;
    uint16_t    *buf[ZSH_MS_NPARAMS];
    zsh_param_t *param[ZSH_MS_NPARAMS];
    char        *dir; /* the NVMe tier's, or NULL */
} zsh_ms_run_t;

static bool zsh_ms_make(zsh_comm_t *comm, int stage, bool nvme, zsh_ms_run_t *r)
{
    char tmpl[] = "/var/tmp/zsh-master-state-test-XXXXXX", name[2] = "a";
    zsh_optim_config_t cfg;
    size_t i;
    int p;

    memset(r, 0, sizeof(*r));
    zsh_optim_config_init(&cfg);
    cfg.stage        = stage;
    cfg.kind         = ZSH_OPTIM_ADAMW;
    cfg.precision    = ZSH_BFLOAT16;
    cfg.lr           = 0.01;
    cfg.weight_decay = 0.1;
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
    for (p = 0; p < ZSH_MS_NPARAMS; p++) {
        r->buf[p] = malloc(zsh_ms_sizes[p] * sizeof(uint16_t));
        for (i = 0; i < zsh_ms_sizes[p]; i++) {
            r->buf[p][i] = zsh_float_to_bf16((float)sin(0.3 * (double)i + p));
        }
        name[0] = (char)('a' + p);
        if (zsh_optim_register(r->opt, name, zsh_ms_sizes[p], ZSH_BFLOAT16, r->buf[p],
                               &r->param[p]) != ZSH_OK) {
            zsh_test_fail(__FILE__, __LINE__, "register: %s", zsh_last_error());
            return false;
        }
    }
    return true;
}

static void zsh_ms_free(zsh_ms_run_t *r)
{
    int p;

    zsh_optim_destroy(r->opt);
    for (p = 0; p < ZSH_MS_NPARAMS; p++) {
        free(r->buf[p]);
    }
    if (r->dir != NULL) {
        rmdir(r->dir);
        free(r->dir);
    }
}

/* Steps [from, to], every rank the same gradients: multiples of 2^-6,
 * exact in bf16 and in the sum over the ranks. */
static bool zsh_ms_steps(zsh_ms_run_t *r, int from, int to)
{
    uint16_t grad[ZSH_MS_MOST];
    zsh_status_t status = ZSH_OK;
    size_t i;
    int p, t;

    for (t = from; (status == ZSH_OK) && (t <= to); t++) {
        for (p = ZSH_MS_NPARAMS; (status == ZSH_OK) && (p-- > 0);) {
            for (i = 0; i < zsh_ms_sizes[p]; i++) {
                grad[i] = zsh_float_to_bf16(
                    (float)((int)((i * 7 + (size_t)p * 3 + (size_t)t * 5) % 13) - 6) * 0x1p-6f);
            }
            status = zsh_optim_grad_ready(r->opt, r->param[p], grad);
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

static bool zsh_ms_same(const void *got, const void *want, size_t n, size_t es,
                        const char *what)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0) {
            zsh_test_fail(__FILE__, __LINE__, "%s: element %zu differs", what, i);
            return false;
        }
    }
    return true;
}

/* Train 3 steps at @stage; the masters round to the parameters and hold
 * more than them; a second optimizer at @stage (@nvme: masters and states in
 * the NVMe tier) given everything, the masters before the parameters or
 * after (@masters_first), continues with the first for 2 steps. */
static void zsh_ms_resume(zsh_comm_t *comm, int stage, bool nvme, bool masters_first)
{
    float m[ZSH_MS_MOST], s[ZSH_MS_MOST], other[ZSH_MS_MOST];
    uint16_t w[ZSH_MS_MOST], rounded[ZSH_MS_MOST], w2[ZSH_MS_MOST];
    zsh_ms_run_t a, b;
    unsigned long updates;
    size_t i, richer = 0;
    char what[160];
    int p, k;

    memset(&b, 0, sizeof(b));
    if (!zsh_ms_make(comm, stage, false, &a) || !zsh_ms_make(comm, stage, nvme, &b) ||
        !zsh_ms_steps(&a, 1, 3)) {
        goto out;
    }
    for (p = 0; p < ZSH_MS_NPARAMS; p++) {
        snprintf(what, sizeof(what), "stage %d%s, %d ranks, masters %s: '%c'", stage,
                 nvme ? " (NVMe)" : "", zsh_comm_size(comm), masters_first ? "first" : "last",
                 'a' + p);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_state(a.opt, a.param[p], ZSH_OPTIM_MASTER, m));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(a.opt, a.param[p], w));
        zsh_half_narrow(ZSH_BFLOAT16, m, zsh_ms_sizes[p], rounded);
        if (!zsh_ms_same(rounded, w, zsh_ms_sizes[p], sizeof(uint16_t), what)) {
            goto out;
        }
        for (i = 0; i < zsh_ms_sizes[p]; i++) {
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
    if (!zsh_ms_steps(&a, 4, 5) || !zsh_ms_steps(&b, 4, 5)) {
        goto out;
    }
    for (p = 0; p < ZSH_MS_NPARAMS; p++) {
        snprintf(what, sizeof(what), "stage %d%s, %d ranks, masters %s: '%c' 2 steps on", stage,
                 nvme ? " (NVMe)" : "", zsh_comm_size(comm), masters_first ? "first" : "last",
                 'a' + p);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_state(a.opt, a.param[p], ZSH_OPTIM_MASTER, m));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_state(b.opt, b.param[p], ZSH_OPTIM_MASTER, other));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(a.opt, a.param[p], w));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_param(b.opt, b.param[p], w2));
        if (!zsh_ms_same(other, m, zsh_ms_sizes[p], sizeof(float), what) ||
            !zsh_ms_same(w2, w, zsh_ms_sizes[p], sizeof(uint16_t), what)) {
            break;
        }
    }
out:
    zsh_ms_free(&a);
    zsh_ms_free(&b);
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
static int zsh_ms_set_keeps(zsh_ms_run_t *r, const uint16_t *w, const float *before,
                            const char *what)
{
    float after[ZSH_MS_MOST], want[ZSH_MS_MOST];
    size_t i, n = zsh_ms_sizes[0];
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
    return zsh_ms_same(after, want, n, sizeof(float), what) ? kept : -1;
}

ZSH_RANK_TEST(optim_master_state, a_parameter_set_to_its_own_values_keeps_its_masters_but_where_changed)
{
    float before[ZSH_MS_MOST];
    uint16_t w[ZSH_MS_MOST];
    zsh_ms_run_t r;
    char what[96];
    size_t i, n = zsh_ms_sizes[0];
    int stage, kept;

    for (stage = 0; stage <= 3; stage++) {
        if (!zsh_ms_make(comm, stage, stage == 3, &r) || !zsh_ms_steps(&r, 1, 3)) {
            zsh_ms_free(&r);
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
        zsh_ms_free(&r);
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
