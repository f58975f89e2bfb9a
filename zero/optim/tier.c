/*
 * The offload tiers: where each kind of model state lives, and what the
 * stats report about them.
 */
#include "optim/optim_impl.h"

void zsh_optim_tier_stats(const zsh_optim_t *opt, zsh_optim_stats_t *stats)
{
    stats->compute_bytes = stats->param_bytes + stats->grad_bytes + stats->state_bytes;
    stats->host_bytes    = 0;
    stats->nvme_bytes    = 0;
    stats->io_engine     = NULL;
    (void)opt;
}
