#include "core/dtype.h"

static const struct {
    const char *name;
    size_t      size;
    bool        is_float;
} zsh_dtype_info[ZSH_DTYPE_COUNT] = {
    [ZSH_INT8]     = {"int8", 1, false},   [ZSH_UINT8]    = {"uint8", 1, false},
    [ZSH_INT32]    = {"int32", 4, false},  [ZSH_UINT32]   = {"uint32", 4, false},
    [ZSH_INT64]    = {"int64", 8, false},  [ZSH_UINT64]   = {"uint64", 8, false},
    [ZSH_FLOAT16]  = {"fp16", 2, true},    [ZSH_BFLOAT16] = {"bf16", 2, true},
    [ZSH_FLOAT32]  = {"fp32", 4, true},    [ZSH_FLOAT64]  = {"fp64", 8, true},
};

static const char *const zsh_op_names[ZSH_OP_COUNT] = {
    [ZSH_SUM] = "sum", [ZSH_PROD] = "prod", [ZSH_MIN] = "min", [ZSH_MAX] = "max",
    [ZSH_AVG] = "avg",
};

bool zsh_dtype_valid(zsh_dtype_t dtype)
{
    return (unsigned)dtype < ZSH_DTYPE_COUNT;
}

bool zsh_op_valid(zsh_op_t op)
{
    return (unsigned)op < ZSH_OP_COUNT;
}

bool zsh_dtype_is_float(zsh_dtype_t dtype)
{
    return zsh_dtype_valid(dtype) && zsh_dtype_info[dtype].is_float;
}

size_t zsh_dtype_size(zsh_dtype_t dtype)
{
    return zsh_dtype_valid(dtype) ? zsh_dtype_info[dtype].size : 0;
}

zsh_dtype_t zsh_dtype_acc(zsh_dtype_t dtype)
{
    return ((dtype == ZSH_FLOAT16) || (dtype == ZSH_BFLOAT16)) ? ZSH_FLOAT32 : dtype;
}

bool zsh_op_supports(zsh_op_t op, zsh_dtype_t dtype)
{
    return zsh_op_valid(op) && zsh_dtype_valid(dtype) &&
           ((op != ZSH_AVG) || zsh_dtype_is_float(dtype));
}

const char *zsh_dtype_name(zsh_dtype_t dtype)
{
    return zsh_dtype_valid(dtype) ? zsh_dtype_info[dtype].name : "unknown";
}

const char *zsh_op_name(zsh_op_t op)
{
    return zsh_op_valid(op) ? zsh_op_names[op] : "unknown";
}
