/*
 * qgZ's reduce-scatter (qreduce.h).
 */
#include "shard/qreduce.h"

#include "core/status.h"
#include "quant/quant.h"

#include <string.h>

/* One part of the all-to-all: a shard's scales, then its levels, padded to
 * 4 bytes so the next part's scales stay aligned. */
static size_t zsh_qreduce_part_bytes(size_t count, size_t block, int bits)
{
    size_t bytes = zsh_quant_blocks(count, block) * sizeof(float) +
                   zsh_quant_bytes(count, block, bits);

    return (bytes + 3) & ~(size_t)3;
}

zsh_status_t zsh_qreduce_scatter(const float *grad, float *out, size_t count,
                                 const zsh_qreduce_map_t *map, size_t block, int bits,
                                 zsh_account_t *acct, zsh_qreduce_bytes_t *bytes_p,
                                 size_t *nonfinite_p)
{
    const zsh_quant_kernels_t *k = zsh_quant_best();
    int L = zsh_comm_size(map->node), M = zsh_comm_size(map->rail), l, m;
    size_t nsc = zsh_quant_blocks(count, block) * sizeof(float);
    size_t pbytes = zsh_qreduce_part_bytes(count, block, bits);
    size_t perm_bytes = (size_t)L * (size_t)M * count * sizeof(float);
    size_t piece_bytes = (size_t)M * count * sizeof(float), nonfinite = 0;
    size_t qbytes = 2 * (size_t)M * pbytes;
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
    for (m = 0; m < M; m++) {
        char *part = send + (size_t)m * pbytes;
        nonfinite += k->quantize(piece + (size_t)m * count, count, block, bits, part + nsc,
                                 (float *)part);
    }
    status = zsh_alltoall(send, recv, pbytes, ZSH_UINT8, map->rail);
    if (status != ZSH_OK) {
        failed = map->rail;
        goto out;
    }
    memset(out, 0, count * sizeof(float));
    for (m = 0; m < M; m++) {
        const char *part = recv + (size_t)m * pbytes;
        k->dequantize_add(part + nsc, (const float *)part, count, block, bits, out);
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
