/*
 * The step when state lives in files: the rank's state is walked in
 * sub-groups (contiguous ranges of every file, see tier.h). Each sub-group
 * is read into host buffers, updated, and written back; with S slots of
 * buffers, sub-group k is updated while k + 1 .. k + S - 2 are read and
 * k - 1 is written, so the disk is kept busy in both directions while the
 * rule runs. A slot is reused only once its previous sub-group is written.
 *
 * What is read and written per kind:
 *   grads       read (the shard the reduce-scatter left), never written
 *   master, m, v read (states never written yet are zeros, not read), written
 *   params      fp32: read and written (the shard is the weight updated);
 *               mixed precision: written only, rounded from the master
 *   undo        written only: the sub-group's parameters in memory, copied
 *               when it is read and on disk before the update may change
 *               them, so a step that fails on any rank puts back every
 *               sub-group it changed (zsh_optim_swap_undo) and leaves the
 *               parameters as they were before it
 */
#include "optim/optim_impl.h"
#include "optim/offload/swap_plan.h"

#include "core/status.h"

#include <string.h>

typedef struct zsh_swap_slot {
    size_t         sg;                       /* the sub-group it holds */
    bool           busy;                     /* holds a sub-group not yet written */
    char          *buf[ZSH_TK_KINDS];
    zsh_aio_req_t *req[ZSH_TK_KINDS];
} zsh_swap_slot_t;

static size_t zsh_swap_bytes(const zsh_optim_t *opt, zsh_tkind_t kind)
{
    return opt->tiers.sg_elems * zsh_tier_esize(opt, kind);
}

static void zsh_swap_range(const zsh_optim_t *opt, size_t sg, size_t *lo_p, size_t *hi_p)
{
    size_t lo = sg * opt->tiers.sg_elems, hi = lo + opt->tiers.sg_elems;

    *lo_p = lo;
    *hi_p = (hi < opt->tiers.felems) ? hi : opt->tiers.felems;
}

static void zsh_swap_view(const zsh_optim_t *opt, const zsh_swap_slot_t *slot,
                          zsh_swap_view_t *view)
{
    zsh_swap_range(opt, slot->sg, &view->lo, &view->hi);
    memcpy(view->buf, slot->buf, sizeof(view->buf));
}

/* Wait for every request of @slot; the first failure is the tier's. */
static zsh_status_t zsh_swap_wait(zsh_optim_t *opt, zsh_swap_slot_t *slot)
{
    zsh_status_t status, first = ZSH_OK;
    int k;

    for (k = 0; k < ZSH_TK_KINDS; k++) {
        status = zsh_tier_wait(opt, &slot->req[k]);
        first  = (first == ZSH_OK) ? status : first;
    }
    return first;
}

static zsh_status_t zsh_swap_read(zsh_optim_t *opt, zsh_swap_slot_t *slot, size_t sg)
{
    size_t lo, hi;
    zsh_status_t status = ZSH_OK;
    bool zero;
    int k;

    zsh_swap_range(opt, sg, &lo, &hi);
    slot->sg   = sg;
    slot->busy = true;
    for (k = 0; (status == ZSH_OK) && (k < ZSH_TK_KINDS); k++) {
        if (slot->buf[k] == NULL) {
            continue;
        }
        if (k == ZSH_TK_UNDO) {
            zsh_swap_view_t view;

            zsh_swap_view(opt, slot, &view);
            zsh_optim_params_swap(opt, &view, true);
            status = zsh_tier_io(opt, ZSH_TK_UNDO, true, lo, slot->buf[k], hi - lo,
                                 &slot->req[k]);
            continue;
        }
        zero = ((k == ZSH_TK_EXP_AVG) || (k == ZSH_TK_EXP_AVG_SQ)) ? opt->tiers.fresh[sg]
               : (k == ZSH_TK_PARAMS)                             ? opt->mixed
                                                                   : false;
        if (zero) {
            memset(slot->buf[k], 0, (hi - lo) * zsh_tier_esize(opt, (zsh_tkind_t)k));
        } else {
            status = zsh_tier_io(opt, (zsh_tkind_t)k, false, lo, slot->buf[k], hi - lo,
                                 &slot->req[k]);
        }
    }
    return status;
}

static zsh_status_t zsh_swap_write(zsh_optim_t *opt, zsh_swap_slot_t *slot)
{
    size_t lo, hi;
    zsh_status_t status = ZSH_OK;
    int k;

    zsh_swap_range(opt, slot->sg, &lo, &hi);
    for (k = 0; (status == ZSH_OK) && (k < ZSH_TK_KINDS); k++) {
        if ((slot->buf[k] != NULL) && (k != ZSH_TK_GRADS) && (k != ZSH_TK_UNDO)) {
            status = zsh_tier_io(opt, (zsh_tkind_t)k, true, lo, slot->buf[k], hi - lo,
                                 &slot->req[k]);
        }
    }
    return status;
}

/* A failure can only be the device's, sending parameters up: the
 * optimizer's, which stops the step at the agreement after it. */
static zsh_status_t zsh_swap_update(zsh_optim_t *opt, zsh_swap_slot_t *slot,
                                    const zsh_update_t *u)
{
    zsh_status_t status = ZSH_OK;
    zsh_swap_view_t view;
    size_t i;

    zsh_swap_view(opt, slot, &view);
    for (i = 0; (status == ZSH_OK) && (i < opt->nbuckets); i++) {
        status = zsh_optim_update_view(opt, &opt->buckets[i], u, &view);
    }
    return opt->dev_ops->failed(opt, status);
}

static void zsh_swap_free(zsh_optim_t *opt, zsh_swap_slot_t *slots, size_t n)
{
    size_t i;
    int k;

    for (i = 0; i < n; i++) {
        zsh_swap_wait(opt, &slots[i]);
        for (k = 0; k < ZSH_TK_KINDS; k++) {
            zsh_pool_put(&opt->tiers.pool, slots[i].buf[k], zsh_swap_bytes(opt, (zsh_tkind_t)k));
            slots[i].buf[k] = NULL; /* a failed allocation frees them before the step does */
        }
    }
}

static zsh_status_t zsh_swap_alloc(zsh_optim_t *opt, zsh_swap_slot_t *slots, size_t n)
{
    size_t i;
    int k;

    memset(slots, 0, n * sizeof(*slots));
    for (i = 0; i < n; i++) {
        for (k = 0; k < ZSH_TK_KINDS; k++) {
            if (opt->tiers.file[k] == NULL) { /* in memory: not swapped */
                continue;
            }
            slots[i].buf[k] = zsh_pool_get(&opt->tiers.pool, zsh_swap_bytes(opt, (zsh_tkind_t)k));
            if (slots[i].buf[k] == NULL) {
                zsh_swap_free(opt, slots, n);
                return zsh_error(ZSH_ERR_NO_MEMORY,
                                 "no room in host_mem_limit (%zu bytes, ZSH_HOST_MEM_LIMIT) for "
                                 "the step's sub-group buffers", opt->cfg.host_mem_limit);
            }
        }
    }
    return ZSH_OK;
}

zsh_status_t zsh_optim_swap_step(zsh_optim_t *opt, const zsh_update_t *u)
{
    zsh_swap_slot_t slots[ZSH_TIER_SLOTS_MAX];
    size_t nslots = opt->tiers.slots, nsg = opt->tiers.nsg, k;
    zsh_swap_plan_t plan;
    zsh_swap_action_t a;
    zsh_swap_slot_t *slot;
    zsh_status_t status;

    status = zsh_swap_alloc(opt, slots, nslots); /* tier.c planned 1..ZSH_TIER_SLOTS_MAX */
    if (status != ZSH_OK) {
        zsh_tier_fail(opt, status); /* so that every rank stops at the agreement */
    }
    zsh_swap_plan_init(&plan, nsg, nslots);
    while ((status == ZSH_OK) && zsh_swap_plan_next(&plan, &a)) {
        slot   = &slots[a.slot];
        status = zsh_swap_wait(opt, slot); /* READ: its last writes; UPDATE: its reads, undo */
        if ((status == ZSH_OK) && (a.op == ZSH_SWAP_READ)) {
            status = zsh_swap_read(opt, slot, a.sg);
        } else if (status == ZSH_OK) {
            status = zsh_swap_update(opt, slot, u);
            opt->tiers.updated = a.sg + 1;
            if (status == ZSH_OK) {
                status = zsh_swap_write(opt, slot);
            }
        }
    }
    zsh_swap_free(opt, slots, nslots); /* waits for the last writes */
    if (zsh_tier_check(opt, NULL) != ZSH_OK) {
        status = zsh_tier_check(opt, NULL);
    }
    if (status == ZSH_OK) {
        for (k = 0; k < nsg; k++) {
            opt->tiers.fresh[k] = false;
        }
    }
    return status;
}

zsh_status_t zsh_optim_swap_undo(zsh_optim_t *opt)
{
    size_t bytes = zsh_swap_bytes(opt, ZSH_TK_UNDO), k;
    zsh_status_t status = ZSH_OK;
    zsh_swap_slot_t slot;
    zsh_swap_view_t view;

    if ((opt->tiers.file[ZSH_TK_UNDO] == NULL) || (opt->tiers.updated == 0)) {
        return ZSH_OK;
    }
    memset(&slot, 0, sizeof(slot));
    slot.buf[ZSH_TK_UNDO] = zsh_pool_get(&opt->tiers.pool, bytes);
    if (slot.buf[ZSH_TK_UNDO] == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "no room in host_mem_limit (%zu bytes) to put the "
                         "parameters back", opt->cfg.host_mem_limit);
    }
    for (k = 0; (status == ZSH_OK) && (k < opt->tiers.updated); k++) {
        slot.sg = k;
        zsh_swap_range(opt, k, &view.lo, &view.hi);
        status = zsh_tier_io(opt, ZSH_TK_UNDO, false, view.lo, slot.buf[ZSH_TK_UNDO],
                             view.hi - view.lo, &slot.req[ZSH_TK_UNDO]);
        if (status == ZSH_OK) {
            status = zsh_tier_wait(opt, &slot.req[ZSH_TK_UNDO]);
        }
        if (status == ZSH_OK) {
            zsh_swap_view(opt, &slot, &view);
            zsh_optim_params_swap(opt, &view, false);
        }
    }
    zsh_pool_put(&opt->tiers.pool, slot.buf[ZSH_TK_UNDO], bytes);
    if (status != ZSH_OK) {
        zsh_error_prefix("the parameters of sub-groups %zu to %zu of %zu stay updated: ", k - 1,
                         opt->tiers.updated - 1, opt->tiers.nsg);
        return status;
    }
    opt->tiers.updated = 0;
    return ZSH_OK;
}
