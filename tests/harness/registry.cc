#include "harness/registry.h"

#include <gtest/gtest.h>

#include <cstdarg>
#include <cstdio>

static std::vector<zsh_test_entry> &zsh_test_registry()
{
    static std::vector<zsh_test_entry> entries;
    return entries;
}

const std::vector<zsh_test_entry> &zsh_test_entries()
{
    return zsh_test_registry();
}

extern "C" void zsh_test_register(const char *suite, const char *name, zsh_test_fn_t fn,
                                  const char *file, int line)
{
    zsh_test_registry().push_back({suite, name, file, line, fn, nullptr});
}

extern "C" void zsh_test_register_ranks(const char *suite, const char *name,
                                        zsh_rank_test_fn_t fn, const char *file, int line)
{
    zsh_test_registry().push_back({suite, name, file, line, nullptr, fn});
}

static thread_local int zsh_test_rank     = -1;
static thread_local int zsh_test_nfailed  = 0;

extern "C" void zsh_test_set_rank(int rank)
{
    zsh_test_rank    = rank;
    zsh_test_nfailed = 0;
}

extern "C" int zsh_test_failures(void)
{
    return zsh_test_nfailed;
}

extern "C" void zsh_test_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    zsh_test_nfailed++;
    if (zsh_test_rank >= 0) {
        ADD_FAILURE_AT(file, line) << "[rank " << zsh_test_rank << "] " << msg;
    } else {
        ADD_FAILURE_AT(file, line) << msg;
    }
}

extern "C" bool zsh_test_status_is(const char *file, int line, const char *expr,
                                   zsh_status_t expected, zsh_status_t actual)
{
    if (expected == actual) {
        return true;
    }
    zsh_test_fail(file, line, "%s: expected %s, actual %s; last error: %s", expr,
                  zsh_status_string(expected), zsh_status_string(actual), zsh_last_error());
    return false;
}

extern "C" void zsh_test_skip(const char *file, int line, const char *reason)
{
    GTEST_MESSAGE_AT_(file, line, reason, ::testing::TestPartResult::kSkip);
}
