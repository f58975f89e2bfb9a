/*
 * The job's failed ranks: which, why, and in what order they were noticed.
 *
 * One object per job context owns all of it. A failure is recorded once,
 * from the transport (a dead endpoint, a peer gone from its shared memory)
 * or from another rank's control message; the first cause stays. The order
 * matters for the message: a survivor that exits after a death also looks
 * dead to the others, and the death it left after must keep its place as
 * the cause.
 */
#ifndef ZSH_COLL_FAULT_FAILURE_H_
#define ZSH_COLL_FAULT_FAILURE_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>

/* Called once for each rank when its failure is first recorded. */
typedef void (*zsh_failures_hook_t)(void *arg, int rank);

/* What is known of one rank. */
typedef struct zsh_failure {
    bool     failed;
    bool     notice;     /* the other ranks have yet to hear of it from us */
    unsigned order;      /* 1 for the first to fail, 2 next, ... */
    char    *why;
    char    *deferred;   /* reported by the transport, not yet recorded */
} zsh_failure_t;

/*
 * Only failure.c writes it. Its first three fields are read by the inline
 * checks below, which every call and every progress pass makes: with no
 * failure, the answer costs a load, not a call.
 */
typedef struct zsh_failures {
    unsigned            count;      /* failures recorded so far */
    bool                deferred;   /* some rank has a deferred report */
    bool                notices;    /* some rank has a notice due */
    int                 self, nranks;
    zsh_failures_hook_t hook;
    void               *hook_arg;
    zsh_failure_t       ranks[];
} zsh_failures_t;

/* Failures of the @nranks ranks of a job, seen from rank @self; @hook (may
 * be NULL) hears of each. */
zsh_status_t zsh_failures_create(int self, int nranks, zsh_failures_hook_t hook, void *arg,
                                 zsh_failures_t **failures_p);
void         zsh_failures_destroy(zsh_failures_t *failures);

/* Record that @rank failed because of @why; with @tell, the other ranks
 * have yet to hear of it from us (zsh_failures_next_notice()). Later
 * reports of the same rank are ignored. */
void         zsh_failures_record(zsh_failures_t *failures, int rank, const char *why, bool tell);

static inline bool zsh_failures_is_failed(const zsh_failures_t *failures, int rank)
{
    return failures->ranks[rank].failed;
}

const char  *zsh_failures_why(const zsh_failures_t *failures, int rank);

/* Failures recorded so far: a count that only grows, to cache answers by. */
static inline unsigned zsh_failures_count(const zsh_failures_t *failures)
{
    return failures->count;
}

/*
 * What the transport reports from inside its progress is deferred, then
 * recorded (with @tell) by zsh_failures_apply() after the control messages
 * of the same pass, so that a death another rank told us about first keeps
 * its place as the cause.
 */
void         zsh_failures_defer(zsh_failures_t *failures, int rank, const char *reason);
void         zsh_failures_apply(zsh_failures_t *failures);

static inline bool zsh_failures_deferred(const zsh_failures_t *failures)
{
    return failures->deferred;
}

/* A rank whose failure the other ranks have yet to hear of from us, taken
 * off that list; -1 when there is none. */
int          zsh_failures_next_notice(zsh_failures_t *failures);

static inline bool zsh_failures_notices(const zsh_failures_t *failures)
{
    return failures->notices;
}

/* Of the ranks @ranks[0 .. n), the index of the first to fail, or -1. */
int          zsh_failures_first(const zsh_failures_t *failures, const int *ranks, int n);

/* "; then rank 2 failed: <why>" for up to three of @ranks that failed after
 * @ranks[first], in the order they did, then how many more: a rank that left
 * after a death may be noticed before the death itself, so every failed
 * member is named with its reason. Ranks are named by their index in @ranks. */
void         zsh_failures_after(const zsh_failures_t *failures, const int *ranks, int n,
                                int first, char *buf, size_t len);

#endif
