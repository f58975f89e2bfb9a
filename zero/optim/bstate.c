/*
 * The one door through which a stage 3 bucket changes state (bstate.h).
 */
#include "optim/optim_impl.h"

#include "core/status.h"

#include <stdio.h>

/* "live or sharded": the states @from may move to, for the error. */
static void zsh_bstate_list_next(zsh_bstate_t from, char *buf, size_t size)
{
    size_t used = 0, left = 0;
    int s;

    for (s = 0; s < ZSH_BSTATE_COUNT; s++) {
        left += zsh_bstate_allowed(from, (zsh_bstate_t)s);
    }
    buf[0] = '\0';
    for (s = 0; (s < ZSH_BSTATE_COUNT) && (used < size); s++) {
        if (!zsh_bstate_allowed(from, (zsh_bstate_t)s)) {
            continue;
        }
        left--;
        used += (size_t)snprintf(buf + used, size - used, "%s%s",
                                 zsh_bstate_name((zsh_bstate_t)s),
                                 (left > 1) ? ", " : (left == 1) ? " or " : "");
    }
    if (buf[0] == '\0') {
        snprintf(buf, size, "nothing");
    }
}

zsh_status_t zsh_obucket_move(zsh_obucket_t *b, zsh_bstate_t to)
{
    zsh_bstate_t from = b->fetch.state;
    char next[128];

    if (zsh_bstate_allowed(from, to)) {
        b->fetch.state = to;
        return ZSH_OK;
    }
    zsh_bstate_list_next(from, next, sizeof(next));
    return zsh_error(ZSH_ERR_INTERNAL,
                     "stage 3 bucket %zu (from parameter '%s'): no move from state %s to %s; %s "
                     "may move to %s", (b->nparams > 0) ? b->params[0]->bucket : 0,
                     (b->nparams > 0) ? b->params[0]->name : "", zsh_bstate_name(from),
                     zsh_bstate_name(to), zsh_bstate_name(from), next);
}
