#include <config.h>

#include "harness/zsh_test.h"

#include "core/array.h"

#include <stdlib.h>
#include <string.h>

/* An array of 8 ints, grown by a first use and then filled with ones. */
static int *zsh_array_dirty(unsigned *cap)
{
    void *arr = NULL;
    int i;

    *cap = 0;
    if (zsh_array_reset(&arr, cap, 8, sizeof(int), "test slots") != ZSH_OK) {
        return NULL;
    }
    for (i = 0; i < 8; i++) {
        ((int *)arr)[i] = 1;
    }
    return arr;
}

ZSH_TEST(array, reset_zeroes_the_whole_capacity_for_a_smaller_use)
{
    unsigned cap;
    void *arr = zsh_array_dirty(&cap);
    int i;

    ZSH_ASSERT_TRUE(arr != NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_array_reset(&arr, &cap, 2, sizeof(int), "test slots"));
    ZSH_EXPECT_EQ(8, (int)cap);
    for (i = 0; i < 8; i++) {
        ZSH_EXPECT_EQ(0, ((int *)arr)[i]);
    }
    free(arr);
}

ZSH_TEST(array, use_zeroes_the_slots_in_use_and_grows_when_they_do_not_fit)
{
    unsigned cap;
    void *arr = zsh_array_dirty(&cap);
    int i;

    ZSH_ASSERT_TRUE(arr != NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_array_use(&arr, &cap, 3, sizeof(int), "test slots"));
    ZSH_EXPECT_EQ(8, (int)cap);
    for (i = 0; i < 8; i++) {
        ZSH_EXPECT_EQ((i < 3) ? 0 : 1, ((int *)arr)[i]);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_array_use(&arr, &cap, 12, sizeof(int), "test slots"));
    ZSH_EXPECT_EQ(12, (int)cap);
    for (i = 0; i < 12; i++) {
        ZSH_EXPECT_EQ(0, ((int *)arr)[i]);
    }
    free(arr);
}
