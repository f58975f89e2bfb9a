#include "base/desc.h"

#include "core/dtype.h"
#include "core/status.h"

#include <stdio.h>
#include <string.h>

#define ZSH_DESC_MAGIC 0x7a736864u /* "zshd" */

/* Indexes match zsh_coll_type_t. */
static const char *const zsh_desc_type_names[] = {"allgather", "reduce_scatter", "allreduce",
                                                  "broadcast", "alltoall", "barrier",
                                                  "fence", "send", "recv"};

const char *zsh_desc_type_name(unsigned type)
{
    return (type < sizeof(zsh_desc_type_names) / sizeof(zsh_desc_type_names[0]))
               ? zsh_desc_type_names[type] : "unknown";
}

void zsh_desc_make(const zsh_coll_args_t *args, uint32_t seq, uint64_t uid, zsh_algo_t algo,
                   bool deterministic, zsh_desc_t *desc)
{
    memset(desc, 0, sizeof(*desc));
    desc->magic = ZSH_DESC_MAGIC;
    desc->seq   = seq;
    desc->uid   = uid;
    desc->type  = (uint8_t)args->type;
    desc->algo  = (uint8_t)algo;
    if ((args->type == ZSH_COLL_BARRIER) || (args->type == ZSH_COLL_FENCE)) {
        return;
    }
    desc->count = args->count;
    desc->dtype = (uint8_t)args->dtype;
    if ((args->type == ZSH_COLL_REDUCE_SCATTER) || (args->type == ZSH_COLL_ALLREDUCE)) {
        desc->op            = (uint8_t)args->op;
        desc->deterministic = deterministic ? 1 : 0;
    }
    if (args->type == ZSH_COLL_BROADCAST) {
        desc->root = args->root;
    }
}

void zsh_desc_format(const zsh_desc_t *desc, char *buf, size_t len)
{
    const char *name = zsh_desc_type_name(desc->type);

    switch (desc->type) {
    case ZSH_COLL_BARRIER:
    case ZSH_COLL_FENCE:
        snprintf(buf, len, "%s()", name);
        return;
    case ZSH_COLL_REDUCE_SCATTER:
    case ZSH_COLL_ALLREDUCE:
        snprintf(buf, len, "%s(count=%llu, %s, %s%s)", name, (unsigned long long)desc->count,
                 zsh_dtype_name((zsh_dtype_t)desc->dtype), zsh_op_name((zsh_op_t)desc->op),
                 desc->deterministic ? ", deterministic" : "");
        return;
    case ZSH_COLL_BROADCAST:
        snprintf(buf, len, "%s(count=%llu, %s, root=%d)", name, (unsigned long long)desc->count,
                 zsh_dtype_name((zsh_dtype_t)desc->dtype), desc->root);
        return;
    default:
        snprintf(buf, len, "%s(count=%llu, %s)", name, (unsigned long long)desc->count,
                 zsh_dtype_name((zsh_dtype_t)desc->dtype));
        return;
    }
}

/* The same collective but for the algorithm and the mode, which follow
 * from each rank's settings rather than from its call. */
static bool zsh_desc_same_call(const zsh_desc_t *a, const zsh_desc_t *b)
{
    return (a->type == b->type) && (a->count == b->count) && (a->dtype == b->dtype) &&
           (a->op == b->op) && (a->root == b->root);
}

zsh_status_t zsh_desc_compare(const zsh_desc_t *mine, const zsh_desc_t *theirs,
                              uint32_t comm_id, int rank, int peer)
{
    char mine_s[128], theirs_s[128];

    if (theirs->magic != ZSH_DESC_MAGIC) {
        return zsh_error(ZSH_ERR_MISMATCH, "seq %u on comm %u: rank %d sent a malformed "
                         "collective descriptor", mine->seq, comm_id, peer);
    }
    if (theirs->uid != mine->uid) {
        return zsh_error(ZSH_ERR_MISMATCH, "seq %u on comm %u: rank %d's call belongs to "
                         "another communicator that had the same id", mine->seq, comm_id, peer);
    }
    if (memcmp(theirs, mine, sizeof(*mine)) == 0) {
        return ZSH_OK;
    }
    zsh_desc_format(theirs, theirs_s, sizeof(theirs_s));
    zsh_desc_format(mine, mine_s, sizeof(mine_s));
    if ((theirs->seq == mine->seq) && (theirs->deterministic != mine->deterministic) &&
        zsh_desc_same_call(mine, theirs)) {
        return zsh_error(ZSH_ERR_MISMATCH, "seq %u on comm %u: rank %d called %s but rank %d "
                         "called %s; is the deterministic mode (ZSH_DETERMINISTIC, "
                         "zsh_comm_set_deterministic) set alike on every rank?", mine->seq,
                         comm_id, peer, theirs_s, rank, mine_s);
    }
    if ((theirs->seq == mine->seq) && (strcmp(theirs_s, mine_s) == 0) &&
        (theirs->algo != mine->algo)) {
        return zsh_error(ZSH_ERR_MISMATCH, "seq %u on comm %u: rank %d ran %s as %s but rank %d "
                         "as %s; are the ZSH_ variables set alike on every rank?", mine->seq,
                         comm_id, peer, theirs_s, zsh_algo_name((zsh_algo_t)theirs->algo), rank,
                         zsh_algo_name((zsh_algo_t)mine->algo));
    }
    if (theirs->seq != mine->seq) {
        return zsh_error(ZSH_ERR_MISMATCH, "comm %u: rank %d called %s as its collective "
                         "seq %u but rank %d called %s as seq %u", comm_id, peer, theirs_s,
                         theirs->seq, rank, mine_s, mine->seq);
    }
    return zsh_error(ZSH_ERR_MISMATCH, "seq %u on comm %u: rank %d called %s but rank %d "
                     "called %s", mine->seq, comm_id, peer, theirs_s, rank, mine_s);
}
