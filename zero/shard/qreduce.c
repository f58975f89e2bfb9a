/*
 * qgZ's reduce-scatter (qreduce.h).
 */
#include "shard/qreduce.h"

#include "core/status.h"
#include "quant/quant.h"

#include <string.h>

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

zsh_status_t zsh_qreduce_scatter(const float *grad, float *out, size_t count,
                                 const zsh_qreduce_map_t *map, size_t block, int bits,
                                 zsh_account_t *acct, zsh_qreduce_bytes_t *bytes_p,
                                 size_t *nonfinite_p)
{
    const zsh_quant_kernels_t *k = zsh_quant_best();
    int L = zsh_comm_size(map->node), M = zsh_comm_size(map->rail), l, m, me;
    int mine = zsh_comm_rank(map->node), node = zsh_comm_rank(map->rail);
    size_t pbytes, first;
    size_t perm_bytes = (size_t)L * (size_t)M * count * sizeof(float);
    size_t piece_bytes = (size_t)M * count * sizeof(float), nonfinite = 0;
    size_t qbytes = 0;
    float *perm, *piece;
    char *send, *recv;
    zsh_comm_t *failed = NULL;
    zsh_status_t status;

    status = zsh_quant_check(block, bits);
    if ((status == ZSH_OK) && ((L < 1) || (M < 1))) {
        status = zsh_error(ZSH_ERR_INVALID_ARG, "zsh_qreduce_scatter: the node or rail group "
                           "is not a communicator");
    }
    if (status != ZSH_OK) {
        return status;
    }
    pbytes = zsh_qreduce_part_bytes(map->cuts, L * M, count, block, bits);
    qbytes = 2 * (size_t)M * pbytes;
    perm  = zsh_account_alloc(acct, ZSH_MEM_BUFFERS, perm_bytes);
    piece = zsh_account_alloc(acct, ZSH_MEM_BUFFERS, piece_bytes);
    send  = zsh_account_alloc(acct, ZSH_MEM_BUFFERS, qbytes);
    recv  = (send != NULL) ? send + (size_t)M * pbytes : NULL;
    if ((perm == NULL) || (piece == NULL) || (send == NULL)) {
        status = zsh_error(ZSH_ERR_NO_MEMORY, "zsh_qreduce_scatter: no memory for %zu bytes",
                           perm_bytes + piece_bytes + qbytes);
        goto out;
    }
    /* The node's reduce-scatter gives local rank l the shards of its rail,
     * in node order: lay the buffer out so. */
    for (l = 0; l < L; l++) {
        for (m = 0; m < M; m++) {
            memcpy(perm + ((size_t)l * (size_t)M + (size_t)m) * count,
                   grad + (size_t)map->owner[m * L + l] * count, count * sizeof(float));
        }
    }
    status = zsh_reduce_scatter(perm, piece, (size_t)M * count, ZSH_FLOAT32, ZSH_SUM, map->node);
    if (status != ZSH_OK) {
        failed = map->node;
        goto out;
    }
    /* Piece m is the shard of the rail's rank on node m: its blocks are cut
     * where that rank's range of the buffer is. */
    for (m = 0; m < M; m++) {
        char *part = send + (size_t)m * pbytes;
        first = (size_t)map->owner[m * L + mine] * count;
        nonfinite += zsh_quant_cut_quantize(
            k, map->cuts, first, piece + (size_t)m * count, count, block, bits,
            part + zsh_quant_cut_blocks(map->cuts, first, count, block) * sizeof(float),
            (float *)part);
    }
    status = zsh_alltoall(send, recv, pbytes, ZSH_UINT8, map->rail);
    if (status != ZSH_OK) {
        failed = map->rail;
        goto out;
    }
    memset(out, 0, count * sizeof(float));
    me    = map->owner[node * L + mine];
    first = (size_t)me * count;
    for (m = 0; m < M; m++) {
        const char *part = recv + (size_t)m * pbytes;
        zsh_quant_cut_dequantize(
            k, map->cuts, first,
            part + zsh_quant_cut_blocks(map->cuts, first, count, block) * sizeof(float),
            (const float *)part, count, block, bits, 1, out);
    }
    if (bytes_p != NULL) {
        bytes_p->node_bytes  = perm_bytes;
        bytes_p->cross_bytes = (size_t)M * pbytes;
    }
    if (nonfinite_p != NULL) {
        *nonfinite_p += nonfinite;
    }
out:
    zsh_account_free_buffer(acct, ZSH_MEM_BUFFERS, perm, perm_bytes, failed);
    zsh_account_free_buffer(acct, ZSH_MEM_BUFFERS, piece, piece_bytes, failed);
    zsh_account_free_buffer(acct, ZSH_MEM_BUFFERS, send, qbytes, failed);
    return status;
}
