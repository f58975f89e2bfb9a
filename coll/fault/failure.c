#include "fault/failure.h"

#include "core/log.h"
#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

zsh_status_t zsh_failures_create(int self, int nranks, zsh_failures_hook_t hook, void *arg,
                                 zsh_failures_t **failures_p)
{
    zsh_failures_t *f;

    f = calloc(1, sizeof(*f) + (size_t)nranks * sizeof(f->ranks[0]));
    if (f == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate failure tracking for %d ranks",
                         nranks);
    }
    f->self     = self;
    f->nranks   = nranks;
    f->hook     = hook;
    f->hook_arg = arg;
    *failures_p = f;
    return ZSH_OK;
}

void zsh_failures_destroy(zsh_failures_t *f)
{
    int r;

    if (f == NULL) {
        return;
    }
    for (r = 0; r < f->nranks; r++) {
        free(f->ranks[r].why);
        free(f->ranks[r].deferred);
    }
    free(f);
}

void zsh_failures_record(zsh_failures_t *f, int rank, const char *why, bool tell)
{
    zsh_failure_t *r;

    if ((rank < 0) || (rank >= f->nranks) || (rank == f->self) || f->ranks[rank].failed) {
        return;
    }
    r         = &f->ranks[rank];
    r->failed = true;
    r->why    = strdup(why);
    r->order  = ++f->count;
    r->notice = tell;
    f->notices |= tell;
    zsh_log(ZSH_LOG_ERROR, "rank %d of the job failed: %s", rank, why);
    if (f->hook != NULL) {
        f->hook(f->hook_arg, rank);
    }
}

const char *zsh_failures_why(const zsh_failures_t *f, int rank)
{
    return (f->ranks[rank].why != NULL) ? f->ranks[rank].why : "(reason lost: out of memory)";
}

void zsh_failures_defer(zsh_failures_t *f, int rank, const char *reason)
{
    if ((rank >= 0) && (rank < f->nranks) && (f->ranks[rank].deferred == NULL)) {
        f->ranks[rank].deferred = strdup(reason);
        f->deferred             = true;
    }
}

void zsh_failures_apply(zsh_failures_t *f)
{
    int r;

    f->deferred = false;
    for (r = 0; r < f->nranks; r++) {
        if (f->ranks[r].deferred != NULL) {
            zsh_failures_record(f, r, f->ranks[r].deferred, true);
            free(f->ranks[r].deferred);
            f->ranks[r].deferred = NULL;
        }
    }
}

int zsh_failures_next_notice(zsh_failures_t *f)
{
    int r;

    for (r = 0; f->notices && (r < f->nranks); r++) {
        if (f->ranks[r].notice) {
            f->ranks[r].notice = false;
            return r;
        }
    }
    f->notices = false;
    return -1;
}

int zsh_failures_first(const zsh_failures_t *f, const int *ranks, int n)
{
    int i, first = -1;

    for (i = 0; i < n; i++) {
        if (f->ranks[ranks[i]].failed &&
            ((first < 0) || (f->ranks[ranks[i]].order < f->ranks[ranks[first]].order))) {
            first = i;
        }
    }
    return first;
}

/* Of @ranks, the index of the one that failed next after order @last, or -1. */
static int zsh_failures_next(const zsh_failures_t *f, const int *ranks, int n, unsigned last)
{
    int i, next = -1;

    for (i = 0; i < n; i++) {
        const zsh_failure_t *r = &f->ranks[ranks[i]];

        if (r->failed && (r->order > last) &&
            ((next < 0) || (r->order < f->ranks[ranks[next]].order))) {
            next = i;
        }
    }
    return next;
}

void zsh_failures_after(const zsh_failures_t *f, const int *ranks, int n, int first, char *buf,
                        size_t len)
{
    unsigned last = f->ranks[ranks[first]].order;
    size_t used   = 0;
    int next, shown = 0, more = 0;

    buf[0] = '\0';
    while ((next = zsh_failures_next(f, ranks, n, last)) >= 0) {
        last = f->ranks[ranks[next]].order;
        if ((shown < 3) && (used < len)) {
            used += (size_t)snprintf(buf + used, len - used, "; then rank %d failed: %s", next,
                                     zsh_failures_why(f, ranks[next]));
            shown++;
        } else {
            more++;
        }
    }
    if ((more > 0) && (used < len)) {
        snprintf(buf + used, len - used, "; and %d more", more);
    }
}
