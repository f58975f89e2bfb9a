/* See param_state_run.h. */
#include "param_state_run.h"
#include "optim/tier.h"

#include "core/half.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const size_t zsh_ps_sizes[ZSH_PS_NPARAMS] = {301, 37, 250};

float zsh_ps_init(int p, size_t i)
{
    return (float)sin(0.3 * (double)i + p);
}

float zsh_ps_grad(int p, size_t i, int t)
{
    return (float)((int)((i * 7 + (size_t)p * 3 + (size_t)t * 5) % 13) - 6) * 0x1p-6f;
}

bool zsh_ps_skips(int p, int t)
{
    return (p == 1) && (t == 1);
}

void zsh_ps_config(zsh_optim_config_t *cfg, zsh_optim_kind_t kind, int stage)
{
    zsh_optim_config_init(cfg);
    cfg->stage        = stage;
    cfg->kind         = kind;
    cfg->lr           = 0.01;
    cfg->momentum     = (kind == ZSH_OPTIM_SGD) ? 0.9 : 0.0;
    cfg->weight_decay = 0.1;
}

bool zsh_ps_make(zsh_comm_t *comm, zsh_optim_kind_t kind, int stage, zsh_dtype_t precision,
                 bool nvme, zsh_ps_run_t *r)
{
    char tmpl[] = "/var/tmp/zsh-param-state-test-XXXXXX", name[2] = "a";
    size_t es = (precision == ZSH_FLOAT32) ? sizeof(float) : sizeof(uint16_t), i;
    float init[ZSH_PS_MOST];
    zsh_optim_config_t cfg;
    int p;

    memset(r, 0, sizeof(*r));
    r->precision = precision;
    zsh_ps_config(&cfg, kind, stage);
    cfg.precision = precision;
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
        r->buf[p] = malloc(zsh_ps_sizes[p] * es);
        for (i = 0; i < zsh_ps_sizes[p]; i++) {
            init[i] = zsh_ps_init(p, i);
        }
        zsh_half_narrow(precision, init, zsh_ps_sizes[p], r->buf[p]);
        name[0] = (char)('a' + p);
        if (zsh_optim_register(r->opt, name, zsh_ps_sizes[p], precision, r->buf[p],
                               &r->param[p]) != ZSH_OK) {
            zsh_test_fail(__FILE__, __LINE__, "register: %s", zsh_last_error());
            return false;
        }
    }
    return true;
}

void zsh_ps_free(zsh_ps_run_t *r)
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

bool zsh_ps_steps(zsh_ps_run_t *r, int from, int to)
{
    float grad[ZSH_PS_MOST];
    uint32_t narrowed[ZSH_PS_MOST]; /* room for fp32 */
    zsh_status_t status = ZSH_OK;
    size_t i;
    int p, t;

    for (t = from; (status == ZSH_OK) && (t <= to); t++) {
        for (p = ZSH_PS_NPARAMS; (status == ZSH_OK) && (p-- > 0);) {
            for (i = 0; i < zsh_ps_sizes[p]; i++) {
                grad[i] = zsh_ps_grad(p, i, t);
            }
            zsh_half_narrow(r->precision, grad, zsh_ps_sizes[p], narrowed);
            status = zsh_ps_skips(p, t) ? zsh_optim_grad_none(r->opt, r->param[p])
                                        : zsh_optim_grad_ready(r->opt, r->param[p], narrowed);
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

bool zsh_ps_same_bits(const void *got, const void *want, size_t n, size_t es, const char *what)
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
