/*
 * The integer types' semantics in the reduction kernels: SUM and PROD wrap as
 * two's complement, and AVG, which callers reject, is SUM / nranks.
 */
#include "reduce/kernels.h"

#include "harness/zsh_test.h"

#include <stdint.h>

ZSH_TEST(kernels, integer_sum_and_prod_wrap_as_twos_complement)
{
    int8_t   i8[2]  = {100, 16}, i8b[2] = {100, 16}, i8o[2];
    int32_t  i32    = INT32_MAX, i32b = 1, i32o;
    int64_t  i64[2] = {INT64_MIN, INT64_MAX}, i64b[2] = {-1, 2}, i64o[2];
    uint64_t u64    = UINT64_MAX, u64b = 1, u64o;

    zsh_reduce_acc_store(i8o, i8, i8b, 1, ZSH_INT8, ZSH_SUM, 1);
    ZSH_EXPECT_EQ(-56, i8o[0]);
    zsh_reduce_acc_store(i8o, i8, i8b, 2, ZSH_INT8, ZSH_PROD, 1);
    ZSH_EXPECT_EQ(0, i8o[1]);
    zsh_reduce_acc_store(&i32o, &i32, &i32b, 1, ZSH_INT32, ZSH_SUM, 1);
    ZSH_EXPECT_EQ(INT32_MIN, i32o);
    zsh_reduce_acc_store(i64o, i64, i64b, 2, ZSH_INT64, ZSH_PROD, 1);
    ZSH_EXPECT_EQ(INT64_MIN, i64o[0]);
    ZSH_EXPECT_EQ(-2, i64o[1]);
    zsh_reduce_acc(&u64, &u64b, 1, ZSH_UINT64, ZSH_SUM);
    zsh_reduce_store(&u64o, &u64, 1, ZSH_UINT64, ZSH_SUM, 1);
    ZSH_EXPECT_EQ(0, u64o);
}

/* Callers reject AVG on integers; if it comes anyway, it is SUM / nranks. */
ZSH_TEST(kernels, integer_avg_is_sum_divided_by_nranks)
{
    int32_t  acc = 7, src = 6, out = 0;
    uint8_t  uacc = 250, usrc = 10, uout = 0;

    zsh_reduce_acc_store(&out, &acc, &src, 1, ZSH_INT32, ZSH_AVG, 4);
    ZSH_EXPECT_EQ(3, out);
    acc = -13;
    zsh_reduce_store(&out, &acc, 1, ZSH_INT32, ZSH_AVG, 4);
    ZSH_EXPECT_EQ(-3, out);
    zsh_reduce_acc_store(&uout, &uacc, &usrc, 1, ZSH_UINT8, ZSH_AVG, 2);
    ZSH_EXPECT_EQ(2, uout);   /* 250 + 10 wraps to 4 */
}
