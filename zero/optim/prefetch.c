#include "optim/prefetch.h"

#include <stdlib.h>

void zsh_prefetch_free(zsh_prefetch_t *pf)
{
    free(pf->trace);
    free(pf->seen);
    *pf = (zsh_prefetch_t){0};
}

/* Append @bucket to @seen unless it repeats the last entry; -1 if out of memory. */
static int zsh_prefetch_append(zsh_prefetch_t *pf, size_t bucket)
{
    size_t *seen;
    size_t cap;

    if ((pf->nseen > 0) && (pf->seen[pf->nseen - 1] == bucket)) {
        return 0;
    }
    if (pf->nseen == pf->capseen) {
        cap  = (pf->capseen == 0) ? 16 : 2 * pf->capseen;
        seen = realloc(pf->seen, cap * sizeof(*seen));
        if (seen == NULL) {
            return -1;
        }
        pf->seen    = seen;
        pf->capseen = cap;
    }
    pf->seen[pf->nseen++] = bucket;
    return 1;
}

int zsh_prefetch_note(zsh_prefetch_t *pf, size_t bucket)
{
    int added = zsh_prefetch_append(pf, bucket);

    if (added <= 0) {
        return added; /* a repeat, or out of memory */
    }
    if (!pf->have_trace || pf->diverged) {
        return 0;
    }
    if ((pf->pos < pf->ntrace) && (pf->trace[pf->pos] == bucket)) {
        pf->pos++;
        return 0;
    }
    pf->diverged = true;
    return 1;
}

bool zsh_prefetch_ahead(const zsh_prefetch_t *pf, size_t i, size_t *bucket_p)
{
    if (!pf->have_trace || pf->diverged || (pf->pos + i >= pf->ntrace)) {
        return false;
    }
    *bucket_p = pf->trace[pf->pos + i];
    return true;
}

void zsh_prefetch_end_step(zsh_prefetch_t *pf)
{
    size_t *buf = pf->trace, cap = pf->captrace;

    /* Swap the arrays: this step's order becomes the record, and the old
     * record's storage is reused for the next step. */
    pf->trace      = pf->seen;
    pf->captrace   = pf->capseen;
    pf->ntrace     = pf->nseen;
    pf->seen       = buf;
    pf->capseen    = cap;
    pf->nseen      = 0;
    pf->pos        = 0;
    pf->diverged   = false;
    pf->have_trace = true;
}
