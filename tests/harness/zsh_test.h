/*
 * C test bodies under GoogleTest.
 *
 * ZSH_TEST(suite, name) defines a plain test. ZSH_RANK_TEST(suite, name)
 * defines a test that every rank of a communicator runs: the in-process
 * runner runs it on 1, 2, 3, 4, 5 and 8 threads, the MPI runner once per
 * mpirun. Expectations turn into gtest failures, prefixed with the rank that
 * saw them, so filters, repeat, shuffle and XML output work as usual.
 */
#ifndef ZSH_TESTS_GTEST_ZSH_TEST_H_
#define ZSH_TESTS_GTEST_ZSH_TEST_H_

#include <zeroshard.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*zsh_test_fn_t)(void);
typedef void (*zsh_rank_test_fn_t)(zsh_comm_t *comm);

void zsh_test_register(const char *suite, const char *name, zsh_test_fn_t fn, const char *file,
                       int line);
void zsh_test_register_ranks(const char *suite, const char *name, zsh_rank_test_fn_t fn,
                             const char *file, int line);

/* Record a failure at file:line; the message is printf-style. */
void zsh_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether @actual is @expected; if not, a failure at file:line naming @expr,
 * both statuses and the thread's last error. */
bool zsh_test_status_is(const char *file, int line, const char *expr, zsh_status_t expected,
                        zsh_status_t actual);

/* Mark the running test skipped, with a reason that gtest reports. */
void zsh_test_skip(const char *file, int line, const char *reason);

/* Failures recorded so far by this thread in the running test. */
int zsh_test_failures(void);

/* The rank prefixed to this thread's failure messages (-1: none). */
void zsh_test_set_rank(int rank);

#ifdef __cplusplus
}
#endif

#define ZSH_TEST(_suite, _name) \
    static void zsh_test_body_##_suite##_##_name(void); \
    __attribute__((constructor)) static void zsh_test_reg_##_suite##_##_name(void) \
    { \
        zsh_test_register(#_suite, #_name, zsh_test_body_##_suite##_##_name, __FILE__, __LINE__); \
    } \
    static void zsh_test_body_##_suite##_##_name(void)

#define ZSH_RANK_TEST(_suite, _name) \
    static void zsh_test_body_##_suite##_##_name(zsh_comm_t *comm); \
    __attribute__((constructor)) static void zsh_test_reg_##_suite##_##_name(void) \
    { \
        zsh_test_register_ranks(#_suite, #_name, zsh_test_body_##_suite##_##_name, __FILE__, \
                                __LINE__); \
    } \
    static void zsh_test_body_##_suite##_##_name(zsh_comm_t *comm)

#define ZSH_EXPECT_TRUE(_cond) \
    do { \
        if (!(_cond)) { \
            zsh_test_fail(__FILE__, __LINE__, "expected true: %s", #_cond); \
        } \
    } while (0)

#define ZSH_EXPECT_EQ(_expected, _actual) \
    do { \
        intmax_t zsh_e_ = (intmax_t)(_expected), zsh_a_ = (intmax_t)(_actual); \
        if (zsh_e_ != zsh_a_) { \
            zsh_test_fail(__FILE__, __LINE__, "%s: expected %jd, actual %jd (%s)", #_actual, \
                          zsh_e_, zsh_a_, #_expected); \
        } \
    } while (0)

#define ZSH_EXPECT_STATUS(_expected, _actual) \
    ((void)zsh_test_status_is(__FILE__, __LINE__, #_actual, (_expected), (_actual)))

#define ZSH_EXPECT_STR_CONTAINS(_haystack, _needle) \
    do { \
        const char *zsh_h_ = (_haystack), *zsh_n_ = (_needle); \
        if ((zsh_h_ == NULL) || (strstr(zsh_h_, zsh_n_) == NULL)) { \
            zsh_test_fail(__FILE__, __LINE__, "expected \"%s\" to contain \"%s\"", \
                          zsh_h_ ? zsh_h_ : "(null)", zsh_n_); \
        } \
    } while (0)

/* The ASSERT forms return from the calling function after a failure. */
#define ZSH_ASSERT_TRUE(_cond) \
    do { \
        if (!(_cond)) { \
            zsh_test_fail(__FILE__, __LINE__, "expected true: %s", #_cond); \
            return; \
        } \
    } while (0)

#define ZSH_ASSERT_STATUS(_expected, _actual) \
    do { \
        if (!zsh_test_status_is(__FILE__, __LINE__, #_actual, (_expected), (_actual))) { \
            return; \
        } \
    } while (0)

#define ZSH_SKIP(_reason) \
    do { \
        zsh_test_skip(__FILE__, __LINE__, (_reason)); \
        return; \
    } while (0)

#endif
