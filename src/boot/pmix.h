/*
 * Bootstrap through a PMIx launcher (mpirun, srun): rank and size come from
 * PMIx, and the out-of-band allgather is a PMIx put + fence + get.
 */
#ifndef ZSH_BOOT_PMIX_H_
#define ZSH_BOOT_PMIX_H_

#include "boot/config.h"

#include <zeroshard.h>

#include <stdbool.h>

typedef struct zsh_boot_pmix zsh_boot_pmix_t;

/* Whether this build has PMIx support. */
bool         zsh_boot_pmix_built(void);

/* Join the PMIx job of this process and fill *oob with an allgather over
 * it; valid until zsh_boot_pmix_destroy(). */
zsh_status_t zsh_boot_pmix_create(const zsh_boot_config_t *cfg, zsh_oob_t *oob,
                                  zsh_boot_pmix_t **pmix_p);
void         zsh_boot_pmix_destroy(zsh_boot_pmix_t *pmix);

#endif
