/*
 * The driver shared by round-based algorithms (Bruck, recursive doubling,
 * dissemination): each round posts at most one receive (slot 0) and one
 * send (slot 1); the next round starts once both are done, and rounds after
 * the first, which send what earlier rounds received, only once the call's
 * descriptors matched.
 */
#ifndef ZSH_COLL_ALGO_ROUNDS_H_
#define ZSH_COLL_ALGO_ROUNDS_H_

#include "task/task.h"

typedef struct zsh_rounds {
    int    round;            /* current round */
    int    nrounds;
    int    newrank;          /* recursive doubling: rank among the power of two, or -1 */
    int    pof2, rem;
    bool   posted;           /* ops of the current round are posted */
    bool   started;          /* the first round was posted */
    bool   reduces;          /* the current round reduces tmp into acc */
    size_t count;            /* recursive doubling: elements of the vector */
    char  *acc, *tmp;        /* scratch */
} zsh_rounds_t;

_Static_assert(sizeof(zsh_rounds_t) <= ZSH_TASK_STATE_BYTES, "rounds' state fits in its task");

static inline zsh_rounds_t *zsh_rounds(zsh_task_t *task)
{
    return zsh_task_state(task);
}

/* ceil(log2(@n)) for @n >= 1: the rounds of Bruck and of recursive doubling
 * over @n ranks. */
static inline int zsh_ceil_log2(int n)
{
    int rounds = 0;

    while ((1 << rounds) < n) {
        rounds++;
    }
    return rounds;
}

/* Post a receive (slot 0) and a send (slot 1) of tag step @step. */
zsh_status_t zsh_task_sendrecv(zsh_task_t *task, uint32_t step, int recv_peer, void *rbuf,
                               size_t rlen, int send_peer, const void *sbuf, size_t slen);

/* Run rounds round .. @end - 1: @post posts a round's operations (slots 0
 * and 1), @finish (may be NULL) runs when both are done. */
zsh_status_t zsh_rounds_run(zsh_task_t *task, int end, zsh_status_t (*post)(zsh_task_t *task),
                            void (*finish)(zsh_task_t *task));

#endif
