/*
 * The update rule on a run of elements in the layer's precision.
 *
 * Mixed precision runs the rule on the fp32 master weights. bf16 gradients
 * go straight into the rule's bf16 kernels, which can also round the result
 * into the bf16 parameters in the same pass (zsh_optim_apply_out); fp16
 * ones are widened through a small fp32 chunk on the stack (no buffer
 * proportional to the model).
 */
#include "optim/optim_impl.h"

#include "core/half.h"

#include <string.h>

#define ZSH_UPDATE_CHUNK 512

/* The rule on @n elements on the calling thread. */
static void zsh_optim_apply_run(const zsh_optim_t *opt, float *p, const void *g, float *m,
                                float *v, void *out, size_t n, const zsh_update_t *u)
{
    float chunk[ZSH_UPDATE_CHUNK];
    size_t i, c;

    if (!opt->mixed) {
        if (opt->cfg.kind == ZSH_OPTIM_SGD) {
            zsh_sgd_update(p, g, m, n, u);
        } else {
            zsh_adam_update(p, g, m, v, n, u);
        }
        if (out != NULL) { /* fp32 master weights of a device model: its copy */
            memcpy(out, p, n * sizeof(float));
        }
        return;
    }
    if (opt->cfg.precision == ZSH_BFLOAT16) {
        if (opt->cfg.kind == ZSH_OPTIM_SGD) {
            zsh_sgd_update_bf16(p, g, m, out, n, u);
        } else {
            zsh_adam_update_bf16(p, g, m, v, out, n, u);
        }
        return;
    }
    for (i = 0; i < n; i += c) {
        c = (n - i < ZSH_UPDATE_CHUNK) ? n - i : ZSH_UPDATE_CHUNK;
        zsh_half_widen(opt->cfg.precision, (const uint16_t *)g + i, c, chunk);
        if (opt->cfg.kind == ZSH_OPTIM_SGD) {
            zsh_sgd_update(p + i, chunk, (m != NULL) ? m + i : NULL, c, u);
        } else {
            zsh_adam_update(p + i, chunk, m + i, v + i, c, u);
        }
        if (out != NULL) {
            zsh_half_narrow(opt->cfg.precision, p + i, c, (uint16_t *)out + i);
        }
    }
}

/* One call's run of elements, sliced between the update threads. */
typedef struct {
    const zsh_optim_t  *opt;
    float              *p, *m, *v;
    const void         *g;
    void               *out;
    size_t              n;
    const zsh_update_t *u;
} zsh_apply_job_t;

static void zsh_optim_apply_part(void *arg, int part, int nparts)
{
    const zsh_apply_job_t *j = arg;
    /* Slices start on whole cache lines of every array (64 fp32 elements
     * are 4 lines of fp32, 2 of bf16), so no two threads write one line. */
    size_t per = (j->n / (size_t)nparts + 63) / 64 * 64;
    size_t lo = per * (size_t)part, hi = lo + per, es = j->opt->esize;

    if (lo >= j->n) {
        return;
    }
    if ((hi > j->n) || (part == nparts - 1)) {
        hi = j->n;
    }
    zsh_optim_apply_run(j->opt, j->p + lo, (const char *)j->g + lo * es,
                        (j->m != NULL) ? j->m + lo : NULL, (j->v != NULL) ? j->v + lo : NULL,
                        (j->out != NULL) ? (char *)j->out + lo * es : NULL, hi - lo, j->u);
}

/* Below this many elements per thread, waking the threads costs more than
 * the slice they would take. */
#define ZSH_APPLY_MIN_PER_THREAD 32768

void zsh_optim_apply_out(const zsh_optim_t *opt, float *p, const void *g, float *m, float *v,
                         void *out, size_t n, const zsh_update_t *u)
{
    zsh_apply_job_t job = {opt, p, m, v, g, out, n, u};
    size_t nparts = n / ZSH_APPLY_MIN_PER_THREAD;

    if (nparts > (size_t)zsh_workers_count(opt->workers)) {
        nparts = (size_t)zsh_workers_count(opt->workers);
    }
    if (nparts <= 1) {
        zsh_optim_apply_run(opt, p, g, m, v, out, n, u);
        return;
    }
    zsh_workers_run(opt->workers, (int)nparts, zsh_optim_apply_part, &job);
}
