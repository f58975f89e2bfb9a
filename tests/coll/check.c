#include "coll/check.h"

#include "algo/eager.h"
#include "ucx/config.h"

#include "core/dtype.h"
#include "core/elem.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const zsh_dtype_t zsh_check_dtypes[ZSH_CHECK_NDTYPES] = {
    ZSH_INT8,    ZSH_UINT8,    ZSH_INT32,   ZSH_UINT32,  ZSH_INT64,
    ZSH_UINT64,  ZSH_FLOAT16,  ZSH_BFLOAT16, ZSH_FLOAT32, ZSH_FLOAT64,
};

const zsh_op_t zsh_check_ops[ZSH_CHECK_NOPS] = {ZSH_SUM, ZSH_PROD, ZSH_MIN, ZSH_MAX, ZSH_AVG};

const size_t zsh_check_counts[] = {0, 1, 2, 7, 61, 257, 1031};
const size_t zsh_check_ncounts  = sizeof(zsh_check_counts) / sizeof(zsh_check_counts[0]);

double zsh_check_get(const void *buf, zsh_dtype_t dtype, size_t i)
{
    return zsh_elem_get(buf, dtype, i);
}

void zsh_check_set(void *buf, zsh_dtype_t dtype, size_t i, double v)
{
    zsh_elem_set(buf, dtype, i, v);
}

static bool zsh_check_unsigned(zsh_dtype_t dtype)
{
    return (dtype == ZSH_UINT8) || (dtype == ZSH_UINT32) || (dtype == ZSH_UINT64);
}

double zsh_check_input(zsh_op_t op, zsh_dtype_t dtype, int rank, int nranks, size_t idx)
{
    bool sign = !zsh_check_unsigned(dtype);
    size_t r  = (size_t)rank;

    switch (op) {
    case ZSH_SUM:
        return sign ? (double)((r * 7 + idx * 3) % 5) - 2 : (double)((r * 7 + idx * 3) % 4);
    case ZSH_PROD:
        switch ((r + idx) % 3) {
        case 0:  return 2;
        case 1:  return 1;
        default: return sign ? -1 : 1;
        }
    case ZSH_MIN:
    case ZSH_MAX:
        return sign ? (double)((r * 13 + idx * 7) % 17) - 8 : (double)((r * 13 + idx * 7) % 17);
    case ZSH_AVG:
        return (double)(idx % 9) - 4 + (double)(2 * rank - (nranks - 1));
    }
    return 0;
}

void zsh_check_fill(void *buf, zsh_dtype_t dtype, zsh_op_t op, int rank, int nranks,
                    size_t first, size_t count)
{
    size_t i;

    for (i = 0; i < count; i++) {
        zsh_check_set(buf, dtype, i, zsh_check_input(op, dtype, rank, nranks, first + i));
    }
}

double zsh_check_reduced(zsh_op_t op, zsh_dtype_t dtype, int nranks, size_t idx)
{
    double acc = zsh_check_input(op, dtype, 0, nranks, idx), v;
    uint64_t cell;
    int r;

    for (r = 1; r < nranks; r++) {
        v = zsh_check_input(op, dtype, r, nranks, idx);
        switch (op) {
        case ZSH_SUM:
        case ZSH_AVG:  acc += v; break;
        case ZSH_PROD: acc *= v; break;
        case ZSH_MIN:  acc = (v < acc) ? v : acc; break;
        case ZSH_MAX:  acc = (v > acc) ? v : acc; break;
        }
    }
    if (op == ZSH_AVG) {
        acc /= nranks;
    }
    /* Round-trip through the dtype so integer wrap-around is expected too. */
    zsh_check_set(&cell, dtype, 0, acc);
    return zsh_check_get(&cell, dtype, 0);
}

bool zsh_check_buf(const void *buf, zsh_dtype_t dtype, zsh_op_t op, int nranks, int src_rank,
                   size_t first, size_t count, const char *what, const char *file, int line)
{
    double expected, actual;
    uint64_t cell;
    size_t i;

    for (i = 0; i < count; i++) {
        if (src_rank >= 0) {
            zsh_check_set(&cell, dtype, 0, zsh_check_input(op, dtype, src_rank, nranks, first + i));
            expected = zsh_check_get(&cell, dtype, 0);
        } else {
            expected = zsh_check_reduced(op, dtype, nranks, first + i);
        }
        actual = zsh_check_get(buf, dtype, i);
        if (actual != expected) {
            zsh_test_fail(file, line, "%s: index %zu: expected %g, actual %g", what, i, expected,
                          actual);
            return false;
        }
    }
    return true;
}

zsh_coll_config_t *zsh_check_cfg(zsh_comm_t *comm)
{
    return &comm->ctx->cfg;
}

zsh_ucx_config_t zsh_check_ucx_cfg(void)
{
    zsh_ucx_config_t cfg;

    if (zsh_ucx_config_read(&cfg) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "%s", zsh_last_error());
    }
    return cfg;
}

void *zsh_check_alloc(size_t bytes)
{
    void *buf = malloc(bytes ? bytes : 1);

    if (buf == NULL) {
        zsh_test_fail(__FILE__, __LINE__, "cannot allocate %zu bytes", bytes);
        abort();
    }
    return buf;
}

static int *zsh_check_algo_field(zsh_coll_config_t *cfg, zsh_coll_type_t type)
{
    switch (type) {
    case ZSH_COLL_ALLGATHER:      return &cfg->allgather_algo;
    case ZSH_COLL_REDUCE_SCATTER: return &cfg->reduce_scatter_algo;
    case ZSH_COLL_ALLREDUCE:      return &cfg->allreduce_algo;
    case ZSH_COLL_ALLTOALL:       return &cfg->alltoall_algo;
    default:                      return &cfg->broadcast_algo; /* the only other choice */
    }
}

const char *zsh_check_force(zsh_comm_t *comm, zsh_coll_type_t type, zsh_algo_t algo,
                            zsh_coll_config_t *saved)
{
    static _Thread_local char why[64];
    zsh_coll_config_t *cfg = zsh_check_cfg(comm);

    if ((algo == ZSH_ALGO_DIRECT) && !comm->local.direct) {
        return "direct needs every rank on one node, able to read each other's memory "
               "(ZSH_CMA=1, one PID namespace, ptrace_scope 0 or 1); these ranks are not";
    }
    if ((algo == ZSH_ALGO_EAGER) &&
        ((zsh_comm_size(comm) < 2) || (zsh_comm_size(comm) > ZSH_EAGER_MAX_RANKS))) {
        snprintf(why, sizeof(why), "eager runs on 2 to %d ranks", ZSH_EAGER_MAX_RANKS);
        return why;
    }
    *saved                           = *cfg;
    cfg->chunk_size                  = ZSH_CHECK_CHUNK;
    *zsh_check_algo_field(cfg, type) = algo;
    return NULL;
}

void zsh_check_restore(zsh_comm_t *comm, const zsh_coll_config_t *saved)
{
    *zsh_check_cfg(comm) = *saved;
}

void zsh_check_matrix(zsh_comm_t *comm, zsh_coll_type_t type, zsh_algo_t algo,
                      zsh_check_case_t one)
{
    bool moves  = (type == ZSH_COLL_ALLGATHER) || (type == ZSH_COLL_ALLTOALL);
    size_t nops = moves ? 1 : ZSH_CHECK_NOPS, d, o, c;
    zsh_coll_config_t saved;
    const char *why;
    zsh_op_t op;
    int inplace;

    why = zsh_check_force(comm, type, algo, &saved);
    if (why != NULL) {
        zsh_test_skip(__FILE__, __LINE__, why);
        return;
    }
    for (d = 0; d < ZSH_CHECK_NDTYPES; d++) {
        for (o = 0; o < nops; o++) {
            op = moves ? ZSH_MIN : zsh_check_ops[o];
            if (!zsh_op_supports(op, zsh_check_dtypes[d])) {
                continue;
            }
            for (c = 0; c < zsh_check_ncounts; c++) {
                for (inplace = 0; inplace < 2; inplace++) {
                    one(comm, zsh_check_dtypes[d], op, zsh_check_counts[c], inplace, algo);
                }
            }
        }
    }
    zsh_check_restore(comm, &saved);
}

void zsh_check_call_begin(zsh_check_call_t *call, const zsh_comm_t *comm, zsh_algo_t algo,
                          size_t total_bytes, const void *recv, size_t len)
{
    bool refused = (algo == ZSH_ALGO_EAGER) && !zsh_eager_fits(comm, total_bytes);

    call->expected = refused ? ZSH_ERR_UNSUPPORTED : ZSH_OK;
    call->recv     = recv;
    call->len      = len;
    call->before   = NULL;
    if (refused) {
        call->before = zsh_check_alloc(len);
        memcpy(call->before, recv, len);
    }
}

bool zsh_check_call_end(zsh_check_call_t *call, zsh_status_t status, const char *what,
                        const char *file, int line)
{
    const unsigned char *now = call->recv, *before = call->before;
    size_t i;

    if (status != call->expected) {
        zsh_test_fail(file, line, "%s: expected %s, actual %s; last error: %s", what,
                      zsh_status_string(call->expected), zsh_status_string(status),
                      zsh_last_error());
    } else if (before != NULL) {
        for (i = 0; i < call->len; i++) {
            if (now[i] != before[i]) {
                zsh_test_fail(file, line, "%s: refused, but byte %zu of recvbuf changed from "
                              "0x%02x to 0x%02x", what, i, before[i], now[i]);
                break;
            }
        }
    }
    free(call->before);
    call->before = NULL;
    return (status == ZSH_OK) && (call->expected == ZSH_OK);
}
