#include "base/config.h"

/* Indexes match zsh_algo_t. */
const char *const zsh_algo_names[ZSH_ALGO_LAST + 1] = {"auto", "ring", "bruck", "rd", "binomial",
                                                       "rma", "direct", "eager", "hier",
                                                       "dissemination", "pairwise",
                                                       "ordered", "chain",
                                                       NULL};

const char *zsh_algo_name(zsh_algo_t algo)
{
    if (algo == ZSH_ALGO_NCCL) {
        return "nccl";
    }
    return ((unsigned)algo < ZSH_ALGO_LAST) ? zsh_algo_names[algo] : "unknown";
}
