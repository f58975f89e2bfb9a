#include "coll/check.h"

#include "algo/eager.h"
#include "ucx/config.h"

#include "core/elem.h"

#include <math.h>
#include <stdint.h>
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

bool zsh_check_algo_runs(const zsh_comm_t *comm, zsh_algo_t algo, size_t total_bytes)
{
    switch (algo) {
    case ZSH_ALGO_DIRECT:
        return comm->local.direct;
    case ZSH_ALGO_EAGER:
        return zsh_eager_fits(comm, total_bytes);
    default:
        return true;
    }
}
