/*
 * Flat buckets: views appended into one contiguous buffer that is sharded as
 * a whole, so one collective moves every tensor in it. Sealing fixes the
 * layout; the sharded tensor is created only then, when its length is known.
 */
#include "shard/shard_impl.h"

#include "core/dtype.h"
#include "core/status.h"

#include <stdlib.h>

typedef struct zsh_bucket_view {
    size_t offset, numel;
} zsh_bucket_view_t;

struct zsh_bucket {
    zsh_comm_t        *comm;
    zsh_dtype_t        dtype;
    size_t             capacity;
    size_t             total;     /* elements appended so far */
    zsh_bucket_view_t *views;
    size_t             nviews, maxviews;
    zsh_shard_t       *shard;     /* set by zsh_bucket_seal() */
};

zsh_status_t zsh_bucket_create(zsh_comm_t *comm, zsh_dtype_t dtype, size_t capacity,
                               zsh_bucket_t **bucket_p)
{
    zsh_bucket_t *bucket;

    if ((comm == NULL) || (bucket_p == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_bucket_create: %s is NULL",
                         (comm == NULL) ? "comm" : "bucket_p");
    }
    if (!zsh_dtype_valid(dtype)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_bucket_create: invalid dtype %d", (int)dtype);
    }
    bucket = calloc(1, sizeof(*bucket));
    if (bucket == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_bucket_create: out of memory");
    }
    bucket->comm     = comm;
    bucket->dtype    = dtype;
    bucket->capacity = capacity;
    *bucket_p        = bucket;
    return ZSH_OK;
}

void zsh_bucket_destroy(zsh_bucket_t *bucket)
{
    if (bucket == NULL) {
        return;
    }
    zsh_shard_destroy(bucket->shard);
    free(bucket->views);
    free(bucket);
}

zsh_status_t zsh_bucket_add(zsh_bucket_t *bucket, size_t numel, size_t *offset_p)
{
    zsh_bucket_view_t *views;
    size_t maxviews;

    if (bucket->shard != NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_bucket_add: the bucket is sealed");
    }
    if ((bucket->nviews > 0) && (numel > bucket->capacity - bucket->total ||
                                 bucket->total > bucket->capacity)) {
        /* Not an error worth a message: the caller starts the next bucket. */
        return ZSH_ERR_NO_MEMORY;
    }
    if (bucket->nviews == bucket->maxviews) {
        maxviews = (bucket->maxviews == 0) ? 8 : 2 * bucket->maxviews;
        views    = realloc(bucket->views, maxviews * sizeof(*views));
        if (views == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_bucket_add: out of memory");
        }
        bucket->views    = views;
        bucket->maxviews = maxviews;
    }
    bucket->views[bucket->nviews++] = (zsh_bucket_view_t){bucket->total, numel};
    *offset_p                       = bucket->total;
    bucket->total += numel;
    return ZSH_OK;
}

size_t zsh_bucket_nviews(const zsh_bucket_t *bucket)
{
    return bucket->nviews;
}

zsh_status_t zsh_bucket_view(const zsh_bucket_t *bucket, size_t i, size_t *offset_p,
                             size_t *numel_p)
{
    if (i >= bucket->nviews) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_bucket_view: view %zu of %zu", i,
                         bucket->nviews);
    }
    *offset_p = bucket->views[i].offset;
    *numel_p  = bucket->views[i].numel;
    return ZSH_OK;
}

zsh_status_t zsh_bucket_seal_counted(zsh_bucket_t *bucket, zsh_account_t *acct,
                                     zsh_account_t *local_acct, zsh_mem_kind_t local_kind,
                                     zsh_shard_t **shard_p)
{
    zsh_status_t status;

    if (bucket->shard == NULL) {
        status = zsh_shard_create_counted(bucket->comm, bucket->total, bucket->dtype, acct,
                                          local_acct, local_kind, &bucket->shard);
        if (status != ZSH_OK) {
            return status;
        }
    }
    *shard_p = bucket->shard;
    return ZSH_OK;
}

zsh_status_t zsh_bucket_seal(zsh_bucket_t *bucket, zsh_shard_t **shard_p)
{
    return zsh_bucket_seal_counted(bucket, NULL, NULL, ZSH_MEM_PARAMS, shard_p);
}
