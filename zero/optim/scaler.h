/*
 * Dynamic loss scaling for fp16: a step whose gradients hold an inf or NaN
 * is skipped and the scale halved; after a window of clean steps it doubles.
 * A static scaler keeps its scale and never skips.
 */
#ifndef ZSH_OPTIM_SCALER_H_
#define ZSH_OPTIM_SCALER_H_

#include <stdbool.h>

typedef struct zsh_scaler {
    float    scale;
    float    min_scale;
    unsigned window;   /* clean steps before the scale doubles */
    unsigned clean;    /* clean steps since the last change */
    bool     dynamic;
} zsh_scaler_t;

void zsh_scaler_init(zsh_scaler_t *s, float scale, bool dynamic, unsigned window,
                     float min_scale);

/* Record a step with or without overflow; true when the step must be skipped. */
bool zsh_scaler_update(zsh_scaler_t *s, bool overflow);

#endif
