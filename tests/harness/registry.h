/*
 * What the C test registry holds, for the two runners (in-process and MPI)
 * that turn its entries into GoogleTest tests.
 */
#ifndef ZSH_TESTS_GTEST_REGISTRY_H_
#define ZSH_TESTS_GTEST_REGISTRY_H_

#include "harness/zsh_test.h"

#include <string>
#include <vector>

struct zsh_test_entry {
    std::string        suite, name, file;
    int                line;
    zsh_test_fn_t      fn;       /* plain test, or NULL */
    zsh_rank_test_fn_t rank_fn;  /* rank test, or NULL */
};

/* Every test registered by ZSH_TEST and ZSH_RANK_TEST, in registration order. */
const std::vector<zsh_test_entry> &zsh_test_entries();

/* Register a gtest test that calls @body. */
template <typename Body>
void zsh_test_add(const std::string &suite, const std::string &name, const std::string &file,
                  int line, Body body);

#include <gtest/gtest.h>

template <typename Body>
class zsh_test_case : public ::testing::Test {
public:
    explicit zsh_test_case(Body body) : m_body(body) {}
    void TestBody() override { m_body(); }

private:
    Body m_body;
};

template <typename Body>
void zsh_test_add(const std::string &suite, const std::string &name, const std::string &file,
                  int line, Body body)
{
    ::testing::RegisterTest(suite.c_str(), name.c_str(), nullptr, nullptr, file.c_str(), line,
                            [body]() -> ::testing::Test * { return new zsh_test_case<Body>(body); });
}

#endif
