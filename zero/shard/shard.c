/*
 * Sharded tensors: a padded local shard per rank, gathered into a full
 * buffer on demand and fed by reduce-scatter. Only the public collectives
 * are used, as a framework would use them.
 */
#include "shard/shard_impl.h"

#include "shard/qgather.h"

#include "core/dtype.h"
#include "core/status.h"
#include "mem/checked.h"
#include "mem/device.h"
#include "mem/huge.h"
#include "quant/quant.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct zsh_shard {
    zsh_comm_t    *comm;
    zsh_dtype_t    dtype;
    size_t         esize;
    size_t         numel;
    size_t         count;      /* ceil(numel / N) */
    int            rank, size;
    zsh_account_t *acct;       /* counts the gathered buffer */
    zsh_account_t *local_acct; /* counts the local shard */
    zsh_mem_kind_t local_kind; /* ZSH_MEM_KINDS: no local shard */
    void          *local;      /* count elements */
    void          *full;       /* N * count elements while gathered */
    zsh_pool_t    *pool;       /* where full comes from in host memory; NULL: acct */
    size_t         full_block; /* full's block in pool; 0: allocated from acct */
    zsh_request_t *req;        /* the gather in flight, if any */
    void          *qbuf;       /* qwZ: every rank's quantized part, while gathered */
    size_t         qblock;     /* qwZ: the in-flight gather's block size (0: none) */
    size_t         sent_bytes; /* the last gather's buffer as it travelled */
    size_t         nonfinite;  /* qwZ: blocks with NaN or inf this rank sent, so far */
    zsh_quant_cuts_t qcuts;    /* qwZ: the in-flight gather's cuts (the caller's array) */
};

/* The bytes of one rank's part of the in-flight quantized gather. */
static size_t zsh_shard_part_bytes(const zsh_shard_t *shard)
{
    return zsh_qgather_part_bytes(&shard->qcuts, shard->size, shard->count, shard->qblock);
}

/* qwZ's buffer: every rank's part, then the scratch a half-precision
 * tensor is converted through. */
static size_t zsh_shard_qbuf_bytes(const zsh_shard_t *shard)
{
    return zsh_shard_part_bytes(shard) * (size_t)shard->size +
           zsh_qgather_scratch(shard->dtype, shard->qblock) * sizeof(float);
}

static float *zsh_shard_qscratch(const zsh_shard_t *shard)
{
    return (float *)((char *)shard->qbuf + zsh_shard_part_bytes(shard) * (size_t)shard->size);
}

zsh_status_t zsh_shard_create_counted(zsh_comm_t *comm, size_t numel, zsh_dtype_t dtype,
                                      zsh_account_t *acct, zsh_account_t *local_acct,
                                      zsh_mem_kind_t local_kind, zsh_shard_t **shard_p)
{
    int nranks = zsh_comm_size(comm);
    size_t count, full_bytes;
    zsh_shard_t *shard;

    if ((comm == NULL) || (shard_p == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_shard_create: %s is NULL",
                         (comm == NULL) ? "comm" : "shard_p");
    }
    if (!zsh_dtype_valid(dtype)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_shard_create: invalid dtype %d", (int)dtype);
    }
    if (nranks < 1) {
        /* The communicator was destroyed or is not one: zsh_comm_size() said which. */
        zsh_error_prefix("zsh_shard_create: ");
        return ZSH_ERR_INVALID_ARG;
    }
    /* The gathered copy is the largest buffer the tensor ever needs: if its
     * size fits, so does every other size computed from numel. */
    count = zsh_shard_part_count(numel, nranks);
    if (!zsh_size_mul3(count, (size_t)nranks, zsh_dtype_size(dtype), &full_bytes)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_shard_create: numel %zu of %s, padded to %zu x %d ranks, "
                         "is more than %zu bytes", numel, zsh_dtype_name(dtype), count, nranks,
                         SIZE_MAX);
    }
    if (zsh_huge_config_check() != ZSH_OK) {
        zsh_error_prefix("zsh_shard_create: ");
        return ZSH_ERR_INVALID_ARG;
    }
    shard = calloc(1, sizeof(*shard));
    if (shard == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_shard_create: out of memory");
    }
    shard->comm       = comm;
    shard->dtype      = dtype;
    shard->esize      = zsh_dtype_size(dtype);
    shard->numel      = numel;
    shard->rank       = zsh_comm_rank(comm);
    shard->size       = nranks;
    shard->count      = count;
    shard->acct       = acct;
    shard->local_acct = local_acct;
    shard->local_kind = local_kind;
    if (local_kind == ZSH_MEM_KINDS) {
        *shard_p = shard;
        return ZSH_OK;
    }
    shard->local = zsh_account_alloc(local_acct, local_kind, shard->count * shard->esize);
    if (shard->local == NULL) {
        free(shard);
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_shard_create: no memory for a shard of %zu %s",
                         numel, zsh_dtype_name(dtype));
    }
    *shard_p = shard;
    return ZSH_OK;
}

zsh_status_t zsh_shard_create(zsh_comm_t *comm, size_t numel, zsh_dtype_t dtype,
                              zsh_shard_t **shard_p)
{
    return zsh_shard_create_counted(comm, numel, dtype, NULL, NULL, ZSH_MEM_PARAMS, shard_p);
}

static size_t zsh_shard_full_bytes(const zsh_shard_t *shard)
{
    return shard->count * (size_t)shard->size * shard->esize;
}

/* Free the gathered buffer; a failed gather's receives may still write
 * it, so it goes through the communicator then. */
static void zsh_shard_free_full(zsh_shard_t *shard, bool failed)
{
    if (shard->qbuf != NULL) {
        zsh_account_free_buffer(shard->acct, ZSH_MEM_BUFFERS, shard->qbuf,
                                zsh_shard_qbuf_bytes(shard),
                                failed ? shard->comm : NULL);
        shard->qbuf = NULL;
    }
    zsh_pool_put_or_free(shard->pool, shard->acct, shard->full, zsh_shard_full_bytes(shard),
                         shard->full_block, failed ? shard->comm : NULL);
    shard->full       = NULL;
    shard->full_block = 0;
}

void zsh_shard_use_pool(zsh_shard_t *shard, zsh_pool_t *pool)
{
    shard->pool = pool;
}

void zsh_shard_destroy(zsh_shard_t *shard)
{
    bool failed = false;

    if (shard == NULL) {
        return;
    }

    if (shard->req != NULL) {
        failed = (zsh_request_wait(shard->req) != ZSH_OK);
        zsh_request_free(shard->req);
    }
    zsh_shard_free_full(shard, failed);
    if (shard->local_kind != ZSH_MEM_KINDS) {
        zsh_account_free(shard->local_acct, shard->local_kind, shard->local,
                         shard->count * shard->esize);
    }
    free(shard);
}

size_t zsh_shard_numel(const zsh_shard_t *shard)
{
    return shard->numel;
}

size_t zsh_shard_count(const zsh_shard_t *shard)
{
    return shard->count;
}

size_t zsh_shard_begin(const zsh_shard_t *shard)
{
    size_t lo, hi;

    zsh_shard_part_range(shard->numel, shard->size, shard->rank, &lo, &hi);
    return lo;
}

size_t zsh_shard_owned(const zsh_shard_t *shard)
{
    size_t lo, hi;

    zsh_shard_part_range(shard->numel, shard->size, shard->rank, &lo, &hi);
    return hi - lo;
}

void *zsh_shard_local(zsh_shard_t *shard)
{
    return shard->local;
}

size_t zsh_shard_gathered_bytes(const zsh_shard_t *shard)
{
    return (shard->full != NULL) ? zsh_shard_full_bytes(shard) : 0;
}

int zsh_shard_is_gathered(const zsh_shard_t *shard)
{
    return shard->full != NULL;
}

size_t zsh_shard_sent_bytes(const zsh_shard_t *shard)
{
    return shard->sent_bytes;
}

size_t zsh_shard_nonfinite_blocks(const zsh_shard_t *shard)
{
    return shard->nonfinite;
}

zsh_status_t zsh_shard_gather_start(zsh_shard_t *shard)
{
    return zsh_shard_gather_start_src(shard, NULL);
}

/* The gathered buffer, allocated for a gather about to start. */
static zsh_status_t zsh_shard_full_alloc(zsh_shard_t *shard)
{
    if (shard->full != NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_shard_gather: the tensor of %zu elements is already gathered; "
                         "release it first", shard->numel);
    }
    shard->full = zsh_pool_get_or_alloc(shard->pool, shard->acct, zsh_shard_full_bytes(shard),
                                        &shard->full_block);
    if (shard->full == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_shard_gather: no memory for %zu bytes",
                         zsh_shard_full_bytes(shard));
    }
    return ZSH_OK;
}

/* A staged gather into device memory: @local copied to this rank's block,
 * gathered in place. */
static zsh_status_t zsh_shard_gather_staged(zsh_shard_t *shard, const void *local)
{
    size_t bytes = shard->count * shard->esize;
    char *mine;
    zsh_status_t status;

    status = zsh_shard_full_alloc(shard);
    if (status != ZSH_OK) {
        return status;
    }
    /* The gather is enqueued on the account's stream too (the layer's
     * communicator has it), so it starts once the block has landed. */
    mine   = (char *)shard->full + (size_t)shard->rank * bytes;
    status = zsh_dev_copy(mine, local, bytes, shard->acct->stream);
    if (status == ZSH_OK) {
        status = zsh_iallgather(mine, shard->full, shard->count, shard->dtype, shard->comm,
                                &shard->req);
    }
    if (status != ZSH_OK) {
        zsh_shard_release(shard);
    }
    return status;
}

/* qwZ: this rank's @block (fp32, bf16 or fp16) quantized into its part of the parts'
 * buffer, gathered in place there, dequantized at the wait. */
static zsh_status_t zsh_shard_gather_quantized(zsh_shard_t *shard, const void *block,
                                               size_t qblock, const zsh_quant_cuts_t *cuts)
{
    size_t pbytes;
    char *mine;
    zsh_status_t status;

    bool half = (shard->dtype == ZSH_BFLOAT16) || (shard->dtype == ZSH_FLOAT16);

    if (((shard->dtype != ZSH_FLOAT32) && !half) ||
        ((shard->acct != NULL) && (shard->acct->place == ZSH_PLACE_DEVICE))) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_shard_gather: a quantized gather takes fp32, bf16 or fp16 host "
                         "memory, not %s%s", zsh_dtype_name(shard->dtype),
                         ((shard->dtype == ZSH_FLOAT32) || half) ? " device memory" : "");
    }
    status = zsh_shard_full_alloc(shard);
    if (status != ZSH_OK) {
        return status;
    }
    shard->qblock = qblock;
    shard->qcuts  = (cuts != NULL) ? *cuts : (zsh_quant_cuts_t){NULL, 0};
    pbytes        = zsh_shard_part_bytes(shard);
    shard->qbuf = zsh_account_alloc(shard->acct, ZSH_MEM_BUFFERS, zsh_shard_qbuf_bytes(shard));
    if (shard->qbuf == NULL) {
        zsh_shard_release(shard);
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_shard_gather: no memory for %zu bytes of "
                         "quantized parts", zsh_shard_qbuf_bytes(shard));
    }
    shard->sent_bytes = pbytes * (size_t)shard->size;
    mine = (char *)shard->qbuf + (size_t)shard->rank * pbytes;
    shard->nonfinite += zsh_qgather_pack(&shard->qcuts, shard->rank, shard->dtype, block,
                                         shard->count, qblock, mine, zsh_shard_qscratch(shard));
    status = zsh_iallgather(mine, shard->qbuf, pbytes, ZSH_UINT8, shard->comm, &shard->req);
    if (status != ZSH_OK) {
        zsh_shard_release(shard);
    }
    return status;
}

zsh_status_t zsh_shard_gather_start_src(zsh_shard_t *shard, const zsh_shard_src_t *src)
{
    static const zsh_shard_src_t own = {0};
    size_t full_count = shard->count * (size_t)shard->size;
    const void *block;
    zsh_comm_t *comm;
    zsh_status_t status;
    int nparts;

    src   = (src != NULL) ? src : &own;
    block = (src->buf != NULL) ? src->buf : shard->local;
    comm  = (src->comm != NULL) ? src->comm : shard->comm;
    if (block == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_shard_gather: the tensor of %zu elements keeps its shard "
                         "elsewhere", shard->numel);
    }
    nparts = zsh_comm_size(comm);
    if ((nparts < 1) || (full_count % (size_t)nparts != 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_shard_gather: the %zu x %d elements of the tensor do not split "
                         "into equal parts over %d ranks", shard->count, shard->size, nparts);
    }
    if (src->staged && (comm != shard->comm)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_shard_gather: a staged gather goes over the tensor's own "
                         "communicator, not a group of %d ranks", nparts);
    }
    if ((src->quant_block != 0) && (src->staged || (comm != shard->comm))) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_shard_gather: a quantized gather goes over the tensor's own "
                         "communicator from host memory, not %s",
                         src->staged ? "a staged block" : "a group");
    }
    if (src->quant_block != 0) {
        status = zsh_quant_check(src->quant_block, 8);
        return (status == ZSH_OK) ? zsh_shard_gather_quantized(shard, block, src->quant_block,
                                                             src->quant_cuts)
                                  : status;
    }
    shard->sent_bytes = zsh_shard_full_bytes(shard);
    if (src->staged && (shard->acct != NULL) && (shard->acct->place == ZSH_PLACE_DEVICE)) {
        return zsh_shard_gather_staged(shard, block);
    }
    status = zsh_shard_full_alloc(shard);
    if (status == ZSH_OK) {
        status = zsh_iallgather(block, shard->full, full_count / (size_t)nparts, shard->dtype,
                                comm, &shard->req);
        if (status != ZSH_OK) {
            zsh_shard_release(shard);
        }
    }
    return status;
}

zsh_status_t zsh_shard_gather_wait(zsh_shard_t *shard, void **full_p)
{
    zsh_status_t status = ZSH_OK;

    if (shard->full == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_shard_gather_wait: no gather was started");
    }
    if (shard->req != NULL) {
        status = zsh_request_wait(shard->req);
        zsh_request_free(shard->req);
        shard->req = NULL;
    }
    if (status != ZSH_OK) {
        zsh_shard_free_full(shard, true);
        return status;
    }
    if (shard->qbuf != NULL) {
        zsh_qgather_unpack(&shard->qcuts, shard->qbuf, shard->size, shard->count, shard->qblock,
                           shard->dtype, shard->full, zsh_shard_qscratch(shard));
        zsh_account_free_buffer(shard->acct, ZSH_MEM_BUFFERS, shard->qbuf,
                                zsh_shard_qbuf_bytes(shard),
                                NULL);
        shard->qbuf = NULL;
    }
    *full_p = shard->full;
    return ZSH_OK;
}

zsh_status_t zsh_shard_gather(zsh_shard_t *shard, void **full_p)
{
    zsh_status_t status = zsh_shard_gather_start(shard);

    return (status == ZSH_OK) ? zsh_shard_gather_wait(shard, full_p) : status;
}

void zsh_shard_release(zsh_shard_t *shard)
{
    zsh_shard_free_full(shard, false);
}

zsh_status_t zsh_shard_reduce_scatter(zsh_shard_t *shard, const void *grad, zsh_op_t op,
                                      void *out)
{
    size_t bytes = zsh_shard_full_bytes(shard);
    zsh_status_t status;
    void *padded;

    if (((grad == NULL) || (out == NULL)) && (shard->numel > 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_shard_reduce_scatter: %s is NULL",
                         (grad == NULL) ? "grad" : "out");
    }
    if (shard->numel == shard->count * (size_t)shard->size) {
        return zsh_reduce_scatter(grad, out, shard->count, shard->dtype, op, shard->comm);
    }
    /* The collective needs N equal blocks: pad a copy with zeros. */
    padded = zsh_account_alloc(shard->acct, ZSH_MEM_BUFFERS, bytes);
    if (padded == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_shard_reduce_scatter: no memory for %zu bytes",
                         bytes);
    }
    memcpy(padded, grad, shard->numel * shard->esize);
    status = zsh_reduce_scatter(padded, out, shard->count, shard->dtype, op, shard->comm);
    zsh_account_free_buffer(shard->acct, ZSH_MEM_BUFFERS, padded, bytes,
                            (status != ZSH_OK) ? shard->comm : NULL);
    return status;
}
