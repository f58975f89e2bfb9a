#include "fault/revoke.h"

#include "core/status.h"

#include <stdlib.h>
#include <string.h>

bool zsh_revoke_set(zsh_revoke_t *revoke, zsh_status_t status, uint32_t seq, const char *why)
{
    if (revoke->status != ZSH_OK) {
        return false;
    }
    revoke->status = status;
    revoke->seq    = seq;
    revoke->why    = strdup(why);
    return true;
}

zsh_status_t zsh_revoke_error(const zsh_revoke_t *revoke)
{
    return zsh_error(revoke->status, "%s", (revoke->why != NULL) ? revoke->why : "revoked");
}

void zsh_revoke_clear(zsh_revoke_t *revoke)
{
    free(revoke->why);
    memset(revoke, 0, sizeof(*revoke));
}
