/*
 * The deterministic mode's exact sum of squares (zero/optim/norm.h): the
 * same bits whatever the order and split of the squares, where a plain
 * double's differ; and an inf still shows.
 */
#include "harness/zsh_test.h"

#include "optim/norm.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_NORM_TEST_N 20000

/* Floats of mixed magnitude, with the least subnormal among them. */
static void zsh_norm_test_fill(float *f, size_t n)
{
    uint32_t s = 12345u;
    size_t i;

    for (i = 0; i < n; i++) {
        s    = s * 1664525u + 1013904223u;
        f[i] = ldexpf((float)(s >> 8) / 16777216.0f - 0.5f, (int)(s % 97u) - 60);
    }
    f[7] = 1e-45f; /* the least subnormal: its square is 2^-298 */
}

/* The squares of @f added in @parts pieces of a shuffled order, each its
 * own sum, merged last to first; the plain sum in *@plain_p. */
static double zsh_norm_test_sum(const float *f, size_t n, size_t parts, uint32_t seed,
                                bool exact, double *plain_p)
{
    zsh_norm_sum_t part[16], total;
    float *g = malloc(n * sizeof(*g));
    size_t i, j, p;
    float t;

    memcpy(g, f, n * sizeof(*g));
    for (i = n - 1; i > 0; i--) {
        seed = seed * 1664525u + 1013904223u;
        j    = seed % (i + 1);
        t = g[i], g[i] = g[j], g[j] = t;
    }
    zsh_norm_sum_init(&total, exact);
    for (p = 0; p < parts; p++) {
        zsh_norm_sum_init(&part[p], exact);
        zsh_norm_sum_floats(&part[p], g + p * n / parts, (p + 1) * n / parts - p * n / parts);
    }
    for (p = parts; p-- > 0;) {
        zsh_norm_sum_merge(&total, &part[p]);
    }
    free(g);
    *plain_p = total.sum;
    return zsh_norm_sum_value(&total);
}

ZSH_TEST(norm_sum, exact_sum_has_the_same_bits_for_any_order_and_split_where_a_double_does_not)
{
    static const size_t parts[] = {1, 2, 3, 7, 16};
    float *f = malloc(ZSH_NORM_TEST_N * sizeof(*f));
    double first = 0.0, v, plain, plain_first = 0.0;
    int plain_differ = 0;
    size_t k;

    zsh_norm_test_fill(f, ZSH_NORM_TEST_N);
    for (k = 0; k < sizeof(parts) / sizeof(parts[0]); k++) {
        v = zsh_norm_test_sum(f, ZSH_NORM_TEST_N, parts[k], 99u + (uint32_t)k, true, &plain);
        if (k == 0) {
            first = v, plain_first = plain;
            ZSH_EXPECT_TRUE(isfinite(v) && (v > 0.0));
            /* within a few ulps of the plain sum, which rounds at every add */
            ZSH_EXPECT_TRUE(fabs(v - plain) <= 1e-12 * v);
        } else if (memcmp(&v, &first, sizeof(v)) != 0) {
            zsh_test_fail(__FILE__, __LINE__, "%zu parts: %a, one part %a", parts[k], v, first);
        }
        plain_differ += (plain != plain_first);
    }
    ZSH_EXPECT_TRUE(plain_differ > 0);
    free(f);
}

ZSH_TEST(norm_sum, an_infinite_square_makes_the_exact_sum_infinite)
{
    float f[3] = {1.0f, INFINITY, 2.0f};
    zsh_norm_sum_t s;

    zsh_norm_sum_init(&s, true);
    zsh_norm_sum_floats(&s, f, 3);
    ZSH_EXPECT_TRUE(isinf(zsh_norm_sum_value(&s)));
    zsh_norm_sum_init(&s, true);
    zsh_norm_sum_floats(&s, f, 1);
    zsh_norm_sum_floats(&s, f + 2, 1);
    ZSH_EXPECT_TRUE(zsh_norm_sum_value(&s) == 5.0);
}

/* The largest float's square and the least subnormal's, 554 bits apart, both kept. */
ZSH_TEST(norm_sum, the_largest_and_least_squares_are_held_exactly)
{
    float f[2] = {1e-45f, 3.4028235e38f}, big = 3.4028235e38f;
    zsh_norm_sum_t s;

    zsh_norm_sum_init(&s, true);
    zsh_norm_sum_floats(&s, f, 2);
    zsh_norm_sum_floats(&s, &big, 1);
    ZSH_EXPECT_TRUE(zsh_norm_sum_value(&s) == 2.0 * (double)big * (double)big);
    ZSH_EXPECT_EQ(1, s.limb[0]);
}
