/*
 * The stage 3 fetch order: the first step records which buckets are fetched,
 * in order; later steps replay it and gather the next buckets ahead of use.
 * When a step's order departs from the record, prefetching stops for that
 * step and the order it actually took replaces the record.
 */
#ifndef ZSH_OPTIM_PREFETCH_H_
#define ZSH_OPTIM_PREFETCH_H_

#include <stdbool.h>
#include <stddef.h>

typedef struct zsh_prefetch {
    size_t *trace;       /* recorded bucket order (no immediate repeats) */
    size_t  ntrace, captrace;
    size_t *seen;        /* this step's order so far */
    size_t  nseen, capseen;
    size_t  pos;         /* next trace entry expected */
    bool    have_trace;
    bool    diverged;    /* this step left the recorded order */
} zsh_prefetch_t;

void zsh_prefetch_free(zsh_prefetch_t *pf);

/* Note a fetch of @bucket: 1 on the first fetch of a step that departs from
 * the recorded order (diverged is then set), 0 otherwise, -1 if out of memory. */
int  zsh_prefetch_note(zsh_prefetch_t *pf, size_t bucket);

/* The @i-th bucket expected after the current position, or false at the end
 * of the record (or when there is none, or the step diverged). */
bool zsh_prefetch_ahead(const zsh_prefetch_t *pf, size_t i, size_t *bucket_p);

/* End of step: this step's order becomes the record. */
void zsh_prefetch_end_step(zsh_prefetch_t *pf);

#endif
