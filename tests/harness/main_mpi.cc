/*
 * The MPI runner: every rank test runs once on the real processes of an
 * mpirun job, over a communicator made by zsh_comm_init_mpi(). After each
 * test the ranks agree on whether any of them failed, so rank 0's report
 * (the only full one) counts failures seen anywhere. Rank 0 alone watches
 * the time a test takes (harness/watchdog.h): when it ends the job over a
 * hung test, mpirun takes the other ranks down with it.
 */
#include "harness/registry.h"
#include "harness/watchdog.h"

#include <zeroshard/mpi.h>

#include <cstdio>
#include <cstdlib>

static zsh_comm_t *zsh_mpi_world;
static int         zsh_mpi_rank;

/* Other ranks print only their own failures, prefixed with their rank. */
class zsh_mpi_failure_printer : public ::testing::EmptyTestEventListener {
    void OnTestPartResult(const ::testing::TestPartResult &result) override
    {
        if (result.failed()) {
            std::fprintf(stderr, "[rank %d] %s:%d: %s\n", zsh_mpi_rank,
                         result.file_name() ? result.file_name() : "?", result.line_number(),
                         result.summary());
        }
    }
};

static void zsh_mpi_run(zsh_rank_test_fn_t fn)
{
    int mine, any = 0;

    zsh_test_set_rank(zsh_mpi_rank);
    fn(zsh_mpi_world);
    mine = ::testing::Test::HasFailure() ? 1 : 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any && !mine) {
        ADD_FAILURE() << "failed on another rank (see its output)";
    }
}

int main(int argc, char **argv)
{
    zsh_status_t status;
    int ret, worst = 0, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &zsh_mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    setenv("ZSH_TIMEOUT", "60", 0);
    ::testing::InitGoogleTest(&argc, argv);

    status = zsh_comm_init_mpi(MPI_COMM_WORLD, &zsh_mpi_world);
    if (status != ZSH_OK) {
        std::fprintf(stderr, "[rank %d] zsh_comm_init_mpi: %s: %s\n", zsh_mpi_rank,
                     zsh_status_string(status), zsh_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (const zsh_test_entry &e : zsh_test_entries()) {
        if (e.rank_fn != nullptr) {
            zsh_rank_test_fn_t fn = e.rank_fn;
            zsh_test_add(e.suite, e.name + "/mpi" + std::to_string(size), e.file, e.line,
                         [fn]() { zsh_mpi_run(fn); });
        }
    }
    if (zsh_mpi_rank != 0) {
        ::testing::TestEventListeners &listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
        listeners.Append(new zsh_mpi_failure_printer);
    } else {
        zsh_watchdog_install();
    }
    ret = RUN_ALL_TESTS();
    status = zsh_comm_destroy(zsh_mpi_world);
    if (status != ZSH_OK) {
        std::fprintf(stderr, "[rank %d] zsh_comm_destroy: %s\n", zsh_mpi_rank, zsh_last_error());
        ret = 1;
    }
    MPI_Allreduce(&ret, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return worst;
}
