#include "task/validate.h"

#include "core/dtype.h"
#include "core/status.h"

#include <stdint.h>
#include <stdio.h>

static const char *zsh_validate_count_name(zsh_coll_type_t type)
{
    switch (type) {
    case ZSH_COLL_ALLGATHER:      return "sendcount";
    case ZSH_COLL_REDUCE_SCATTER: return "recvcount";
    default:                      return "count";
    }
}

static bool zsh_validate_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;

    return (alen > 0) && (blen > 0) && (pa < pb + blen) && (pb < pa + alen);
}

static zsh_status_t zsh_validate_types(const char *fn, const zsh_coll_args_t *args)
{
    bool reduces = (args->type == ZSH_COLL_REDUCE_SCATTER) || (args->type == ZSH_COLL_ALLREDUCE);

    if (!zsh_dtype_valid(args->dtype)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: dtype=%d is not a valid zsh_dtype_t", fn,
                         (int)args->dtype);
    }
    if (reduces && !zsh_op_valid(args->op)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: op=%d is not a valid zsh_op_t", fn,
                         (int)args->op);
    }
    if (reduces && !zsh_op_supports(args->op, args->dtype)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: op=%s is defined for floating types only, not dtype=%s", fn,
                         zsh_op_name(args->op), zsh_dtype_name(args->dtype));
    }
    return ZSH_OK;
}

/* Sizes of the send and receive buffers in bytes, checking for overflow. */
static zsh_status_t zsh_validate_sizes(const char *fn, const zsh_comm_t *comm,
                                       const zsh_coll_args_t *args, size_t *send_p,
                                       size_t *recv_p)
{
    size_t esize = zsh_dtype_size(args->dtype);
    size_t n     = (size_t)comm->size;
    size_t bytes;

    bool per_rank = zsh_coll_count_per_rank(args->type);
    char ranks[48] = "";

    if (args->count > SIZE_MAX / esize / (per_rank ? n : 1)) {
        if (per_rank) {
            snprintf(ranks, sizeof(ranks), " times %d ranks", comm->size);
        }
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: %s=%zu of dtype=%s (%zu bytes)%s overflows size_t", fn,
                         zsh_validate_count_name(args->type), args->count,
                         zsh_dtype_name(args->dtype), esize, ranks);
    }
    bytes = args->count * esize;
    switch (args->type) {
    case ZSH_COLL_ALLGATHER:      *send_p = bytes;     *recv_p = bytes * n; break;
    case ZSH_COLL_REDUCE_SCATTER: *send_p = bytes * n; *recv_p = bytes;     break;
    case ZSH_COLL_ALLTOALL:       *send_p = bytes * n; *recv_p = bytes * n; break;
    default:                      *send_p = bytes;     *recv_p = bytes;     break;
    }
    return ZSH_OK;
}

/* The in-place address of sendbuf (allgather; allreduce and alltoall: recvbuf
 * itself) or recvbuf (reduce-scatter),
 * as an integer: the buffers may be NULL here, and NULL + offset is undefined. */
static uintptr_t zsh_validate_inplace(const zsh_comm_t *comm, const zsh_coll_args_t *args)
{
    size_t block = args->count * zsh_dtype_size(args->dtype) * (size_t)comm->rank;

    switch (args->type) {
    case ZSH_COLL_ALLGATHER:      return (uintptr_t)args->recvbuf + block;
    case ZSH_COLL_REDUCE_SCATTER: return (uintptr_t)args->sendbuf + block;
    default:                      return (uintptr_t)args->recvbuf;
    }
}

static zsh_status_t zsh_validate_buffers(const char *fn, const zsh_comm_t *comm,
                                         const zsh_coll_args_t *args, size_t send_len,
                                         size_t recv_len)
{
    uintptr_t inplace   = zsh_validate_inplace(comm, args);
    const char *count   = zsh_validate_count_name(args->type);
    bool is_inplace;

    if ((args->count > 0) && (args->type != ZSH_COLL_BROADCAST) && (args->sendbuf == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: sendbuf is NULL with %s=%zu", fn, count,
                         args->count);
    }
    if ((args->count > 0) && (args->recvbuf == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL with %s=%zu", fn,
                         (args->type == ZSH_COLL_BROADCAST) ? "buf" : "recvbuf", count,
                         args->count);
    }
    if (args->type == ZSH_COLL_BROADCAST) {
        return ZSH_OK;
    }
    is_inplace = (args->type == ZSH_COLL_REDUCE_SCATTER) ? ((uintptr_t)args->recvbuf == inplace)
                                                         : ((uintptr_t)args->sendbuf == inplace);
    if (!is_inplace && zsh_validate_overlap(args->sendbuf, send_len, args->recvbuf, recv_len)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: sendbuf=%p (%zu bytes) overlaps recvbuf=%p (%zu bytes) but is not "
                         "in place (in place means %s=%p on rank %d)",
                         fn, args->sendbuf, send_len, args->recvbuf, recv_len,
                         (args->type == ZSH_COLL_REDUCE_SCATTER) ? "recvbuf" : "sendbuf",
                         (void *)inplace, comm->rank);
    }
    return ZSH_OK;
}

zsh_status_t zsh_validate(const char *fn, const zsh_comm_t *comm, const zsh_coll_args_t *args)
{
    size_t send_len = 0, recv_len = 0;
    zsh_status_t status;

    status = zsh_comm_check_live(fn, comm);
    if (status != ZSH_OK) {
        return status;
    }
    if (args->type == ZSH_COLL_BARRIER) {
        return ZSH_OK;
    }
    status = zsh_validate_types(fn, args);
    if (status != ZSH_OK) {
        return status;
    }
    if ((args->type == ZSH_COLL_BROADCAST) && ((args->root < 0) || (args->root >= comm->size))) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: root=%d is out of range [0, %d)", fn,
                         args->root, comm->size);
    }
    status = zsh_validate_sizes(fn, comm, args, &send_len, &recv_len);
    if (status != ZSH_OK) {
        return status;
    }
    return zsh_validate_buffers(fn, comm, args, send_len, recv_len);
}
