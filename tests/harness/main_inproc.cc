/*
 * The in-process runner: plain tests run once, rank tests once per rank count
 * of DESIGN.md's test strategy, each rank a thread.
 */
#include "harness/inproc.h"
#include "harness/registry.h"
#include "harness/watchdog.h"

#include <cstdlib>

static const int zsh_rank_counts[] = {1, 2, 3, 4, 5, 8};

static void zsh_run_rank_test(zsh_comm_t *comm, void *arg)
{
    (*static_cast<zsh_rank_test_fn_t *>(arg))(comm);
}

int main(int argc, char **argv)
{
    /* A hung collective should fail the test, not the CI job. */
    setenv("ZSH_TIMEOUT", "60", 0);
    ::testing::InitGoogleTest(&argc, argv);
    zsh_watchdog_install();
    for (const zsh_test_entry &e : zsh_test_entries()) {
        if (e.fn != nullptr) {
            zsh_test_add(e.suite, e.name, e.file, e.line, e.fn);
            continue;
        }
        for (int np : zsh_rank_counts) {
            zsh_rank_test_fn_t fn = e.rank_fn;
            zsh_test_add(e.suite, e.name + "/np" + std::to_string(np), e.file, e.line, [np, fn]() {
                zsh_rank_test_fn_t body = fn;
                zsh_inproc_run(np, zsh_run_rank_test, &body);
            });
        }
    }
    return RUN_ALL_TESTS();
}
