/*
 * qgZ's reduce-scatter (qreduce.h): a reduction in flight moves from the
 * node's reduce-scatter to the rail's all-to-all to the sum, each scratch
 * buffer freed as soon as the part that reads it is done, so a bucket in
 * flight holds about its own size.
 */
#include "shard/qreduce.h"

#include "core/dtype.h"
#include "core/half.h"
#include "core/status.h"
#include "quant/half.h"

#include <stdlib.h>
#include <string.h>

enum { ZSH_QR_NODE, ZSH_QR_RAIL, ZSH_QR_DONE };

struct zsh_qreduce {
    const zsh_quant_kernels_t *k;
    zsh_comm_t    *node, *rail;
    zsh_account_t *acct;
    zsh_dtype_t    dtype;
    size_t         esize;
    void          *out;
    size_t         count, block;
    int            bits, L, M, phase;
    int            mine, me;       /* local rank; the shard this rank sums */
    const int     *owner;          /* the map's: which shard each rank owns */
    const zsh_quant_cuts_t *cuts;  /* where the buffer's tensors begin */
    size_t         pbytes, perm_bytes, piece_bytes, qbytes, nonfinite;
    char          *perm, *piece;   /* the node's input, its result */
    char          *send, *recv;    /* the rail's parts */
    float         *wide;           /* bf16, fp16: the scratch, then the fp32 sum */
    zsh_request_t *req;            /* the collective in flight */
    zsh_comm_t    *failed;         /* the group whose call failed, if one did */
};

/* One part of the all-to-all: a shard's scales, then its levels, padded to
 * 4 bytes so the next part's scales stay aligned; every part as large as
 * the largest rank's shard needs, its blocks cut at @cuts. */
static size_t zsh_qreduce_part_bytes(const zsh_quant_cuts_t *cuts, int nranks, size_t count,
                                     size_t block, int bits)
{
    size_t most = 0, bytes, first;
    int r;

    for (r = 0; r < nranks; r++) {
        first = (size_t)r * count;
        bytes = zsh_quant_cut_blocks(cuts, first, count, block) * sizeof(float) +
                zsh_quant_cut_bytes(cuts, first, count, block, bits);
        most  = (bytes > most) ? bytes : most;
    }
    return (most + 3) & ~(size_t)3;
}

static void zsh_qreduce_drop(zsh_qreduce_t *q, void **buf, size_t bytes)
{
    zsh_account_free_buffer(q->acct, ZSH_MEM_BUFFERS, *buf, bytes, q->failed);
    *buf = NULL;
}

/* The request in flight finished with @status: keep the group that failed. */
static zsh_status_t zsh_qreduce_landed(zsh_qreduce_t *q, zsh_status_t status, zsh_comm_t *comm)
{
    zsh_request_free(q->req);
    q->req = NULL;
    if (status != ZSH_OK) {
        q->failed = comm;
    }
    return status;
}

zsh_status_t zsh_qreduce_start(const void *grad, void *out, size_t count, zsh_dtype_t dtype,
                               const zsh_qreduce_map_t *map, size_t block, int bits,
                               zsh_account_t *acct, zsh_qreduce_t **q_p)
{
    int L = zsh_comm_size(map->node), M = zsh_comm_size(map->rail), l, m;
    zsh_qreduce_t *q;
    zsh_status_t status;

    status = zsh_quant_check(block, bits);
    if ((status == ZSH_OK) && (dtype != ZSH_FLOAT32) && (dtype != ZSH_BFLOAT16) &&
        (dtype != ZSH_FLOAT16)) {
        status = zsh_error(ZSH_ERR_INVALID_ARG, "zsh_qreduce_scatter: quantizes fp32, bf16 or "
                           "fp16 gradients, not %s", zsh_dtype_name(dtype));
    }
    if ((status == ZSH_OK) && ((L < 1) || (M < 1))) {
        status = zsh_error(ZSH_ERR_INVALID_ARG, "zsh_qreduce_scatter: the node or rail group "
                           "is not a communicator");
    }
    if (status != ZSH_OK) {
        return status;
    }
    q = calloc(1, sizeof(*q));
    if (q == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_qreduce_scatter: no memory");
    }
    q->k           = zsh_quant_best();
    q->node        = map->node;
    q->rail        = map->rail;
    q->acct        = acct;
    q->out         = out;
    q->dtype       = dtype;
    q->esize       = zsh_dtype_size(dtype);
    q->count       = count;
    q->block       = block;
    q->bits        = bits;
    q->L           = L;
    q->M           = M;
    q->phase       = ZSH_QR_NODE;
    q->mine        = zsh_comm_rank(map->node);
    q->me          = map->owner[zsh_comm_rank(map->rail) * L + q->mine];
    q->owner       = map->owner;
    q->cuts        = map->cuts;
    q->pbytes      = zsh_qreduce_part_bytes(map->cuts, L * M, count, block, bits);
    q->perm_bytes  = (size_t)L * (size_t)M * count * q->esize;
    q->piece_bytes = (size_t)M * count * q->esize;
    /* A half-precision reduction widens its pieces through a scratch, then
     * sums the nodes' parts in fp32 there before rounding once. */
    q->qbytes = 2 * (size_t)M * q->pbytes;
    if (dtype != ZSH_FLOAT32) {
        q->qbytes += ((zsh_quant_half_scratch(block) > count) ? zsh_quant_half_scratch(block)
                                                               : count) * sizeof(float);
    }
    q->perm        = zsh_account_alloc(acct, ZSH_MEM_BUFFERS, q->perm_bytes);
    q->piece       = zsh_account_alloc(acct, ZSH_MEM_BUFFERS, q->piece_bytes);
    if ((q->perm == NULL) || (q->piece == NULL)) {
        status = zsh_error(ZSH_ERR_NO_MEMORY, "zsh_qreduce_scatter: no memory for %zu bytes",
                           q->perm_bytes + q->piece_bytes);
        goto fail;
    }
    /* The node's reduce-scatter gives local rank l the shards of its rail,
     * in node order: lay the buffer out so. */
    for (l = 0; l < L; l++) {
        for (m = 0; m < M; m++) {
            memcpy(q->perm + ((size_t)l * (size_t)M + (size_t)m) * count * q->esize,
                   (const char *)grad + (size_t)map->owner[m * L + l] * count * q->esize,
                   count * q->esize);
        }
    }
    status = zsh_ireduce_scatter(q->perm, q->piece, (size_t)M * count, dtype, ZSH_SUM,
                                 q->node, &q->req);
    if (status != ZSH_OK) {
        q->failed = q->node;
        goto fail;
    }
    *q_p = q;
    return ZSH_OK;
fail:
    zsh_qreduce_end(q, NULL, NULL);
    return status;
}

zsh_status_t zsh_qreduce_cross(zsh_qreduce_t *q, bool wait)
{
    zsh_status_t status;
    int m;

    if (q->phase != ZSH_QR_NODE) {
        return ZSH_OK;
    }
    status = wait ? zsh_request_wait(q->req) : zsh_request_test(q->req);
    if (status == ZSH_INPROGRESS) {
        return status;
    }
    if (zsh_qreduce_landed(q, status, q->node) != ZSH_OK) {
        return status;
    }
    zsh_qreduce_drop(q, (void **)&q->perm, q->perm_bytes);
    q->send = zsh_account_alloc(q->acct, ZSH_MEM_BUFFERS, q->qbytes);
    if (q->send == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_qreduce_scatter: no memory for %zu bytes",
                         q->qbytes);
    }
    q->recv = q->send + (size_t)q->M * q->pbytes;
    q->wide = (q->dtype != ZSH_FLOAT32) ? (float *)(q->recv + (size_t)q->M * q->pbytes) : NULL;
    /* Piece m is the shard of the rail's rank on node m: its blocks are cut
     * where that rank's range of the buffer is. */
    for (m = 0; m < q->M; m++) {
        char *part = q->send + (size_t)m * q->pbytes;
        size_t first = (size_t)q->owner[m * q->L + q->mine] * q->count;
        q->nonfinite += zsh_quant_cut_quantize_as(
            q->k, q->cuts, first, q->dtype, q->piece + (size_t)m * q->count * q->esize, q->count,
            q->block, q->bits,
            part + zsh_quant_cut_blocks(q->cuts, first, q->count, q->block) * sizeof(float),
            (float *)part, q->wide);
    }
    zsh_qreduce_drop(q, (void **)&q->piece, q->piece_bytes);
    status = zsh_ialltoall(q->send, q->recv, q->pbytes, ZSH_UINT8, q->rail, &q->req);
    if (status != ZSH_OK) {
        q->failed = q->rail;
        return status;
    }
    q->phase = ZSH_QR_RAIL;
    return ZSH_OK;
}

bool zsh_qreduce_crossed(const zsh_qreduce_t *q)
{
    return q->phase != ZSH_QR_NODE;
}

zsh_status_t zsh_qreduce_finish(zsh_qreduce_t *q, bool wait)
{
    zsh_status_t status;
    size_t first;
    float *sum;
    int m;

    if (q->phase != ZSH_QR_RAIL) {
        return (q->phase == ZSH_QR_DONE) ? ZSH_OK : ZSH_INPROGRESS;
    }
    status = wait ? zsh_request_wait(q->req) : zsh_request_test(q->req);
    if (status == ZSH_INPROGRESS) {
        return status;
    }
    if (zsh_qreduce_landed(q, status, q->rail) != ZSH_OK) {
        return status;
    }
    sum   = (q->dtype == ZSH_FLOAT32) ? q->out : q->wide;
    memset(sum, 0, q->count * sizeof(float));
    first = (size_t)q->me * q->count;
    for (m = 0; m < q->M; m++) {
        const char *part = q->recv + (size_t)m * q->pbytes;
        zsh_quant_cut_dequantize(
            q->k, q->cuts, first,
            part + zsh_quant_cut_blocks(q->cuts, first, q->count, q->block) * sizeof(float),
            (const float *)part, q->count, q->block, q->bits, 1, sum);
    }
    if (q->dtype != ZSH_FLOAT32) {
        zsh_half_narrow(q->dtype, sum, q->count, q->out);
    }
    q->phase = ZSH_QR_DONE;
    return ZSH_OK;
}

void zsh_qreduce_end(zsh_qreduce_t *q, zsh_qreduce_bytes_t *bytes_p, size_t *nonfinite_p)
{
    if (q == NULL) {
        return;
    }
    if (q->req != NULL) {
        /* Given up while in flight: its buffers may still be written. */
        q->failed = (q->phase == ZSH_QR_NODE) ? q->node : q->rail;
        zsh_request_free(q->req);
    }
    if (q->phase == ZSH_QR_DONE) {
        if (bytes_p != NULL) {
            bytes_p->node_bytes  = q->perm_bytes;
            bytes_p->cross_bytes = (size_t)q->M * q->pbytes;
        }
        if (nonfinite_p != NULL) {
            *nonfinite_p += q->nonfinite;
        }
    }
    zsh_qreduce_drop(q, (void **)&q->perm, q->perm_bytes);
    zsh_qreduce_drop(q, (void **)&q->piece, q->piece_bytes);
    zsh_qreduce_drop(q, (void **)&q->send, q->qbytes);
    free(q);
}

zsh_status_t zsh_qreduce_scatter(const void *grad, void *out, size_t count, zsh_dtype_t dtype,
                                 const zsh_qreduce_map_t *map, size_t block, int bits,
                                 zsh_account_t *acct, zsh_qreduce_bytes_t *bytes_p,
                                 size_t *nonfinite_p)
{
    zsh_qreduce_t *q = NULL;
    zsh_status_t status = zsh_qreduce_start(grad, out, count, dtype, map, block, bits, acct,
                                            &q);

    if (status == ZSH_OK) {
        status = zsh_qreduce_cross(q, true);
    }
    if (status == ZSH_OK) {
        status = zsh_qreduce_finish(q, true);
    }
    zsh_qreduce_end(q, bytes_p, nonfinite_p);
    return status;
}
