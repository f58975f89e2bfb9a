#!/bin/sh
# The rank tests as real processes under mpirun, at every rank count of the
# test strategy. Ranks outnumber the cores here, hence --oversubscribe.
# Output is rank 0's GoogleTest report per job, which tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
MPIRUN=${MPIRUN:-mpirun}
if [ -z "$MPIRUN" ]; then
    echo "mpirun not found: skipping the MPI tests"
    exit 77
fi
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
status=0
for np in 1 2 3 4 5 8; do
    echo "=== mpirun -np $np zsh_mpi_tests"
    timeout 600 "$MPIRUN" --oversubscribe -np "$np" "$top_builddir/tests/zsh_mpi_tests" \
        --gtest_brief=1 --gtest_color=no || status=1
done
exit $status
