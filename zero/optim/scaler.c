#include "optim/scaler.h"

void zsh_scaler_init(zsh_scaler_t *s, float scale, bool dynamic, unsigned window,
                     float min_scale)
{
    s->scale     = scale;
    s->min_scale = min_scale;
    s->window    = (window == 0) ? 1 : window;
    s->clean     = 0;
    s->dynamic   = dynamic;
}

bool zsh_scaler_update(zsh_scaler_t *s, bool overflow)
{
    if (!s->dynamic) {
        return false;
    }
    if (overflow) {
        s->scale = (s->scale / 2.0f < s->min_scale) ? s->min_scale : s->scale / 2.0f;
        s->clean = 0;
        return true;
    }
    if (++s->clean >= s->window) {
        s->scale *= 2.0f;
        s->clean = 0;
    }
    return false;
}
