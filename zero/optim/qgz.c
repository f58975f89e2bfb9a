/*
 * qgZ (ZeRO++'s quantized gradients) in the optimizer: where
 * cfg.quantize_grads is on (settled in qwz.c with qwZ), setup makes this
 * rank's node group and rail group (the ranks of its local index on every
 * node) and the map of where every rank is, from one all-gather of each
 * rank's node and local rank, and every bucket's gradients then go through
 * shard/qreduce.h instead of the plain reduce-scatter.
 *
 * A bucket's reduction overlaps the rest of the backward pass as the plain
 * one does: it starts when the bucket is complete, its all-to-all is posted
 * by a later test once the node's part is done, and the step waits for
 * it. The rail's all-to-alls must be posted in the same order on every
 * rank, so they are posted in the order the reductions started (the
 * queue): a bucket whose node part finished first waits for those before
 * it. Its staging buffer is freed at the start (the reduction keeps a
 * copy), but stays counted in staging_bytes till the reduction ends, which
 * holds as much.
 */
#include "optim/optim_impl.h"

#include "core/status.h"
#include "shard/qreduce.h"

#include <stdlib.h>

zsh_status_t zsh_optim_qgz_setup(zsh_optim_t *opt)
{
    const char *fn = "zsh_optim_setup";
    int node, local, n = opt->size, r, L, M, *all;
    zsh_status_t status;

    if (opt->cfg.quantize_grads != ZSH_QUANTIZE_ON) {
        return ZSH_OK;
    }
    status = zsh_comm_node(opt->comm, &node, NULL, &local, NULL);
    all    = malloc(3 * (size_t)n * sizeof(int));
    if ((status != ZSH_OK) || (all == NULL)) {
        free(all);
        return (status != ZSH_OK) ? status : zsh_error(ZSH_ERR_NO_MEMORY, "%s: qgz: no memory", fn);
    }
    all[3 * opt->rank]     = node;
    all[3 * opt->rank + 1] = local;
    all[3 * opt->rank + 2] = opt->local_size;
    status = zsh_optim_comm_status(opt, zsh_allgather(all + 3 * opt->rank, all, 3, ZSH_INT32,
                                                      opt->comm));
    L = opt->local_size;
    M = opt->nnodes;
    for (r = 0; (status == ZSH_OK) && (r < n); r++) {
        if ((all[3 * r + 2] != L) || (all[3 * r] >= M) || (all[3 * r + 1] >= L)) {
            status = zsh_error(ZSH_ERR_INVALID_ARG,
                               "%s: quantize_grads needs the same number of ranks on every "
                               "node, and rank %d's node holds %d, this rank's %d", fn, r,
                               all[3 * r + 2], L);
        }
    }
    if (status == ZSH_OK) {
        opt->qgz.owner = malloc((size_t)n * sizeof(int));
        opt->qgz.queue = malloc(((opt->nbuckets > 0) ? opt->nbuckets : 1) *
                                sizeof(*opt->qgz.queue));
        status = ((opt->qgz.owner != NULL) && (opt->qgz.queue != NULL))
                     ? ZSH_OK
                     : zsh_error(ZSH_ERR_NO_MEMORY, "%s: qgz: no memory", fn);
    }
    for (r = 0; (status == ZSH_OK) && (r < n); r++) {
        opt->qgz.owner[all[3 * r] * L + all[3 * r + 1]] = r;
    }
    free(all);
    if (status == ZSH_OK) {
        status = zsh_comm_split(opt->comm, node, local, &opt->qgz.node);
    }
    if (status == ZSH_OK) {
        status = zsh_comm_split(opt->comm, local, node, &opt->qgz.rail);
    }
    if (status != ZSH_OK) {
        zsh_error_prefix("qgz: ");
    }
    return status;
}

void zsh_optim_qgz_free(zsh_optim_t *opt)
{
    if (opt->qgz.node != NULL) {
        zsh_comm_destroy(opt->qgz.node);
    }
    if (opt->qgz.rail != NULL) {
        zsh_comm_destroy(opt->qgz.rail);
    }
    free(opt->qgz.owner);
    free(opt->qgz.queue);
    opt->qgz.queue = NULL;
    opt->qgz.node  = NULL;
    opt->qgz.rail  = NULL;
    opt->qgz.owner = NULL;
}

/* Post the all-to-alls of the queue's reductions in order while their node
 * parts are done, waiting for them through @upto (NULL: none). A crossing
 * that fails is kept as its bucket's. */
static void zsh_optim_qgz_cross(zsh_optim_t *opt, const zsh_obucket_t *upto)
{
    bool wait = (upto != NULL);
    zsh_obucket_t *b;
    zsh_status_t status;

    while (opt->qgz.crossed < opt->qgz.started) {
        b      = opt->qgz.queue[opt->qgz.crossed];
        status = zsh_qreduce_cross(b->qgz.q, wait);
        if (status == ZSH_INPROGRESS) {
            return;
        }
        b->qgz.status = status;
        opt->qgz.crossed++;
        if (b == upto) {
            wait = false;
        }
    }
    opt->qgz.started = 0;
    opt->qgz.crossed = 0;
}

zsh_status_t zsh_optim_qgz_reduce(zsh_optim_t *opt, zsh_obucket_t *b)
{
    zsh_qreduce_map_t map = {opt->qgz.node, opt->qgz.rail, opt->qgz.owner, &b->qwz.cuts};
    zsh_status_t status;

    status = zsh_qreduce_start(b->staging, opt->dev_ops->shard_dst(opt, b), b->count,
                               opt->cfg.precision, &map, opt->cfg.quantize_block,
                               opt->cfg.quantize_grad_bits, &opt->acct, &b->qgz.q);
    zsh_optim_staging_put(opt, b, (status != ZSH_OK) ? opt->comm : NULL);
    if (status != ZSH_OK) {
        opt->staging_bytes -= zsh_obucket_full_bytes(opt, b);
        return zsh_optim_comm_status(opt, status);
    }
    b->qgz.status = ZSH_OK;
    opt->qgz.queue[opt->qgz.started++] = b;
    zsh_optim_qgz_cross(opt, NULL);
    return ZSH_OK;
}

zsh_status_t zsh_optim_qgz_poll(zsh_optim_t *opt, zsh_obucket_t *b, bool wait)
{
    zsh_qreduce_bytes_t bytes = {0, 0};
    size_t nonfinite = 0;
    zsh_status_t status;

    zsh_optim_qgz_cross(opt, (wait && !zsh_qreduce_crossed(b->qgz.q)) ? b : NULL);
    status = b->qgz.status;
    if ((status == ZSH_OK) && !zsh_qreduce_crossed(b->qgz.q)) {
        return ZSH_INPROGRESS;
    }
    if (status == ZSH_OK) {
        status = zsh_qreduce_finish(b->qgz.q, wait);
        if (status == ZSH_INPROGRESS) {
            return status;
        }
    }
    zsh_qreduce_end(b->qgz.q, &bytes, &nonfinite);
    b->qgz.q = NULL;
    opt->staging_bytes -= zsh_obucket_full_bytes(opt, b);
    if (status == ZSH_OK) {
        opt->comm_bytes += bytes.node_bytes + bytes.cross_bytes;
        opt->node_bytes += bytes.node_bytes;
        opt->quant_bytes += bytes.cross_bytes;
        opt->stats.qgz_reductions++;
        opt->stats.qgz_nonfinite_blocks += nonfinite;
    }
    return zsh_optim_comm_status(opt, status);
}
