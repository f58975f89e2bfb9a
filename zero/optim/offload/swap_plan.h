/*
 * The order of the NVMe tier's step (swap.c), without the I/O: sub-group k
 * is updated (then written) in slot k % S while the next sub-groups are read
 * ahead into the other slots, up to k + S - 2 with S >= 3 slots (one slot
 * for the update, one for the write still in flight, the rest reading); with
 * 1 or 2 slots a sub-group is read just before its update. A read into a
 * slot waits for that slot's previous sub-group's write, so a slot is reused
 * only once its sub-group is written. Pure, so the schedule is tested
 * without ranks or files (tests/zero/optim/swap_plan_test.c).
 */
#ifndef ZSH_OPTIM_SWAP_PLAN_H_
#define ZSH_OPTIM_SWAP_PLAN_H_

#include <stdbool.h>
#include <stddef.h>

typedef enum zsh_swap_op {
    ZSH_SWAP_READ,   /* wait for the slot's writes, then read sub-group sg into it */
    ZSH_SWAP_UPDATE  /* wait for the slot's reads, update sub-group sg, write it back */
} zsh_swap_op_t;

typedef struct zsh_swap_action {
    zsh_swap_op_t op;
    size_t        sg;   /* the sub-group */
    size_t        slot; /* the slot that holds it: sg % nslots */
} zsh_swap_action_t;

typedef struct zsh_swap_plan {
    size_t nsg, nslots;
    size_t k;    /* the next sub-group to update */
    size_t next; /* the next sub-group to read */
} zsh_swap_plan_t;

/* A plan for @nsg sub-groups through @nslots (>= 1) slots. */
static inline void zsh_swap_plan_init(zsh_swap_plan_t *p, size_t nsg, size_t nslots)
{
    *p = (zsh_swap_plan_t){.nsg = nsg, .nslots = (nslots > 0) ? nslots : 1};
}

/* The next action into @a; false once every sub-group is updated. */
static inline bool zsh_swap_plan_next(zsh_swap_plan_t *p, zsh_swap_action_t *a)
{
    size_t ahead;

    if (p->k >= p->nsg) {
        return false;
    }
    ahead = p->k + ((p->nslots >= 3) ? p->nslots - 2 : 0);
    ahead = (ahead < p->nsg) ? ahead : p->nsg - 1;
    if (p->next <= ahead) {
        *a = (zsh_swap_action_t){ZSH_SWAP_READ, p->next, p->next % p->nslots};
        p->next++;
        return true;
    }
    *a = (zsh_swap_action_t){ZSH_SWAP_UPDATE, p->k, p->k % p->nslots};
    p->k++;
    return true;
}

#endif
