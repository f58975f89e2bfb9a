/*
 * Bucket-sized host buffers, kept between uses: the staging buffers that
 * collect a bucket's gradients at stages 2-3, the buffers the step
 * all-gathers a bucket's parameters in at stages 1-2 (opt->bufs), and the
 * buffers stage 3 gathers buckets in (opt->gathers). Every step asks for
 * the same buckets' sizes again, so a buffer given back is kept in a pool
 * and handed to the next request of its size (or a little smaller): a
 * fresh one each time cost its page faults and the kernel's zeroing of
 * every page, per step as much as the whole model, and for stage 3 twice
 * (docs/DECISIONS.md, "Bucket buffers kept between steps"). Each pool is
 * bounded by max_live_bytes, which bounds staging and gathered buckets
 * each already; kept buffers count as held buffer bytes. Device memory
 * comes from the stream-ordered allocator, which keeps its own.
 */
#include "optim/optim_impl.h"

#include "core/status.h"

#include <string.h>

void zsh_optim_bufs_init(zsh_optim_t *opt)
{
    zsh_pool_t *pools[2] = {&opt->bufs, &opt->gathers};
    int k;

    for (k = 0; k < 2; k++) {
        zsh_pool_init(pools[k], opt->cfg.max_live_bytes);
        pools[k]->acct = &opt->acct;
        pools[k]->kind = ZSH_MEM_BUFFERS;
    }
}

void zsh_optim_bufs_attach(zsh_optim_t *opt)
{
    size_t i;

    if (opt->acct.place != ZSH_PLACE_HOST) {
        return;
    }
    for (i = 0; i < opt->nbuckets; i++) {
        if (opt->buckets[i].fetch.pshard != NULL) {
            zsh_shard_use_pool(opt->buckets[i].fetch.pshard, &opt->gathers);
        }
    }
}

void zsh_optim_bufs_fini(zsh_optim_t *opt)
{
    zsh_pool_fini(&opt->bufs);
    zsh_pool_fini(&opt->gathers);
}

/* The pool of staging and publishing buffers: in host memory only. */
static zsh_pool_t *zsh_optim_host_bufs(zsh_optim_t *opt)
{
    return (opt->acct.place == ZSH_PLACE_HOST) ? &opt->bufs : NULL;
}

void *zsh_optim_buf_get(zsh_optim_t *opt, size_t bytes, size_t *block_p)
{
    return zsh_pool_get_or_alloc(zsh_optim_host_bufs(opt), &opt->acct, bytes, block_p);
}

void zsh_optim_buf_put(zsh_optim_t *opt, void *ptr, size_t bytes, size_t block,
                       zsh_comm_t *comm)
{
    zsh_pool_put_or_free(&opt->bufs, &opt->acct, ptr, bytes, block, comm);
}

zsh_status_t zsh_optim_staging_get(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_param_t *param)
{
    size_t bytes = zsh_obucket_full_bytes(opt, b);
    zsh_status_t status;

    status = zsh_optim_staging_room(opt, bytes);
    if (status != ZSH_OK) {
        return status;
    }
    b->staging = zsh_optim_buf_get(opt, bytes, &b->staging_block);
    if (b->staging == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_grad_ready: no memory to stage "
                         "parameter '%s'", param->name);
    }
    if (b->staging_block != 0) {
        /* A kept buffer holds what its last bucket left: the padding after
         * the parameters, which no gradient writes, is reduced into the
         * shard's padding, and must add nothing there (qgZ's blocks
         * quantize it with the last parameter's tail). */
        memset((char *)b->staging + b->numel * opt->esize, 0, bytes - b->numel * opt->esize);
    }
    opt->staging_bytes += bytes;
    return ZSH_OK;
}

void zsh_optim_staging_put(zsh_optim_t *opt, zsh_obucket_t *b, zsh_comm_t *comm)
{
    if (b->staging != NULL) {
        zsh_optim_buf_put(opt, b->staging, zsh_obucket_full_bytes(opt, b), b->staging_block,
                          comm);
    }
    b->staging        = NULL;
    b->staging_block = 0;
}
