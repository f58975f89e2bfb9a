/*
 * The stage tables by number, and the steps a stage may have nothing to do
 * in (a replica publishes nothing after the update, say).
 */
#include "optim/stage/shared.h"

const zsh_stage_ops_t *zsh_stage_ops(int stage)
{
    static const zsh_stage_ops_t *const tables[] = {&zsh_stage0_ops, &zsh_stage1_ops,
                                                    &zsh_stage2_ops, &zsh_stage3_ops};

    return tables[stage];
}

zsh_status_t zsh_stage_nothing(zsh_optim_t *opt)
{
    (void)opt;
    return ZSH_OK;
}

zsh_status_t zsh_stage_bucket_nothing(zsh_optim_t *opt, zsh_obucket_t *b)
{
    (void)opt;
    (void)b;
    return ZSH_OK;
}

void zsh_stage_end_nothing(zsh_optim_t *opt)
{
    (void)opt;
}
