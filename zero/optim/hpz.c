/*
 * hpZ (ZeRO++'s hierarchical partitioning): at stage 3, besides the primary
 * partition of every bucket over all N ranks, each rank keeps a slice of a
 * secondary partition over a group of G ranks of its node: N * count / G
 * elements, the ones the group's all-gather puts at this rank's place.
 *
 * The rule that picks the secondary: a gather of a bucket whose slice is
 * valid reads the slice, over the node group. A slice becomes valid when a
 * gather from the primary shards completes (the forward pass's), and every
 * slice is invalidated by an update (a step that applies, or a new value
 * set for the bucket). So a step's first gather of a bucket crosses nodes
 * and every later one (backward's, or any re-gather after an eviction)
 * stays in the node. The slice holds the very bytes the primary gather
 * produced, so the gathered buffer is the same bit for bit either way.
 */
#include "optim/optim_impl.h"

#include "core/status.h"
#include "optim/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ZSH_HPZ: off, auto or a group size, into *@hpz_p (1 off, ZSH_HPZ_AUTO). */
static zsh_status_t zsh_optim_hpz_parse(const char *env, int *hpz_p)
{
    char *end;
    long v;

    if ((strcasecmp(env, "off") == 0) || (strcmp(env, "0") == 0) || (strcmp(env, "1") == 0)) {
        *hpz_p = ZSH_HPZ_OFF;
        return ZSH_OK;
    }
    if (strcasecmp(env, "auto") == 0) {
        *hpz_p = ZSH_HPZ_AUTO;
        return ZSH_OK;
    }
    errno = 0;
    v     = strtol(env, &end, 10);
    if ((errno != 0) || (end == env) || (*end != '\0') || (v < 2) || (v > ZSH_OPTIM_MAX_HPZ)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_create: ZSH_HPZ='%s' is not off, auto or a group size from 2 "
                         "to %d", env, ZSH_OPTIM_MAX_HPZ);
    }
    *hpz_p = (int)v;
    return ZSH_OK;
}

zsh_status_t zsh_optim_hpz_resolve(zsh_optim_t *opt, const char *env)
{
    const char *fn = "zsh_optim_create";
    zsh_optim_config_t *cfg = &opt->cfg;
    const char *from = (cfg->hpz == 0) ? " (ZSH_HPZ)" : "";
    int nnodes, local_size;
    zsh_status_t status;

    status = zsh_comm_node(opt->comm, NULL, &nnodes, NULL, &local_size);
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: ", fn);
        return status;
    }
    opt->nnodes     = nnodes;
    opt->local_size = local_size;
    if (cfg->hpz == 0) {
        if (!opt->stage_ops->shards_params) {
            cfg->hpz = ZSH_HPZ_OFF; /* a job-wide default, as ZSH_PREFETCH: nothing to gather */
            return ZSH_OK;
        }
        status = zsh_optim_hpz_parse(env, &cfg->hpz);
        if (status != ZSH_OK) {
            return status;
        }
    }
    if (cfg->hpz == ZSH_HPZ_OFF) {
        return ZSH_OK;
    }
    if (!opt->stage_ops->shards_params) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: hpz=%d needs stage 3, and the stage is %d: below stage 3 the "
                         "parameters are never gathered", fn, cfg->hpz, cfg->stage);
    }
    /* Whatever size a rank settles on, every rank checks the nodes together
     * at setup: a rank of a smaller node must not skip the collective. */
    opt->hpz_check = nnodes > 1;
    if (cfg->offload_params != ZSH_OFFLOAD_NONE) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: hpz%s keeps a secondary copy of the parameters in compute memory, "
                         "which offload_params=%s is there to free: use one or the other", fn,
                         from, zsh_offload_names[cfg->offload_params]);
    }
    if (cfg->hpz == ZSH_HPZ_AUTO) {
        cfg->hpz = (nnodes > 1) ? local_size : ZSH_HPZ_OFF; /* one node: nothing to save */
        return ZSH_OK;
    }
    if (local_size % cfg->hpz != 0) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: hpz=%d%s does not divide the %d ranks on this rank's node: the "
                         "secondary groups split a node into equal parts", fn, cfg->hpz, from,
                         local_size);
    }
    return ZSH_OK;
}

size_t zsh_optim_hpz_count(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    return b->count * ((size_t)opt->size / (size_t)opt->cfg.hpz);
}

/* Every node must hold as many ranks: the groups then tile every node alike
 * and every rank's slice covers the same share. Collective, so every rank
 * refuses together. */
static zsh_status_t zsh_optim_hpz_check_nodes(zsh_optim_t *opt)
{
    int32_t v[2] = {opt->local_size, -opt->local_size}, r[2];
    zsh_status_t status;

    status = zsh_optim_comm_status(opt, zsh_allreduce(v, r, 2, ZSH_INT32, ZSH_MAX, opt->comm));
    if (status != ZSH_OK) {
        return status;
    }
    if (r[0] != -r[1]) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_setup: hpz needs the same number of ranks on every node, and "
                         "the %d nodes hold %d to %d", opt->nnodes, -r[1], r[0]);
    }
    return ZSH_OK;
}

zsh_status_t zsh_optim_hpz_setup(zsh_optim_t *opt)
{
    int g = opt->cfg.hpz, node, local_rank;
    zsh_obucket_t *b;
    zsh_status_t status;
    size_t i;

    if (!opt->stage_ops->shards_params) {
        return ZSH_OK;
    }
    status = opt->hpz_check ? zsh_optim_hpz_check_nodes(opt) : ZSH_OK;
    if ((status != ZSH_OK) || (g <= 1)) {
        return status;
    }
    if (status == ZSH_OK) {
        status = zsh_comm_node(opt->comm, &node, NULL, &local_rank, NULL);
    }
    if (status == ZSH_OK) {
        /* Group k of a node holds its local ranks [k * g, (k + 1) * g), in order. */
        status = zsh_comm_split(opt->comm, node * (opt->local_size / g) + local_rank / g,
                                local_rank, &opt->hpzcomm);
    }
    for (i = 0; (status == ZSH_OK) && (i < opt->nbuckets); i++) {
        b      = &opt->buckets[i];
        b->hpz.sec = zsh_account_alloc(&opt->acct, ZSH_MEM_PARAMS,
                                   zsh_optim_hpz_count(opt, b) * opt->esize);
        if (b->hpz.sec == NULL) {
            status = zsh_error(ZSH_ERR_NO_MEMORY,
                               "zsh_optim_setup: no memory for the hpZ slice of the bucket from "
                               "parameter '%s'", b->params[0]->name);
        }
    }
    if (status != ZSH_OK) {
        zsh_error_prefix("hpz: ");
    }
    return status;
}

void zsh_optim_hpz_free(zsh_optim_t *opt)
{
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        if (opt->buckets[i].hpz.sec != NULL) {
            zsh_account_free(&opt->acct, ZSH_MEM_PARAMS, opt->buckets[i].hpz.sec,
                             zsh_optim_hpz_count(opt, &opt->buckets[i]) * opt->esize);
            opt->buckets[i].hpz.sec = NULL;
        }
        opt->buckets[i].hpz.sec_valid = false;
    }
    if (opt->hpzcomm != NULL) {
        zsh_comm_destroy(opt->hpzcomm);
        opt->hpzcomm = NULL;
    }
}

void zsh_optim_hpz_keep(zsh_optim_t *opt, zsh_obucket_t *b, const void *full)
{
    size_t bytes;

    if ((opt->hpzcomm == NULL) || b->hpz.sec_valid) {
        return;
    }
    bytes = zsh_optim_hpz_count(opt, b) * opt->esize;
    memcpy(b->hpz.sec, (const char *)full + (size_t)zsh_comm_rank(opt->hpzcomm) * bytes, bytes);
    b->hpz.sec_valid = true;
}

void zsh_optim_hpz_invalidate(zsh_optim_t *opt)
{
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        opt->buckets[i].hpz.sec_valid = false;
    }
}
