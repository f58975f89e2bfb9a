#!/bin/bash
# Print the tests named on the command line (or, with none, make check's
# TESTS from make -s print-tests in the current build tree) one per line,
# the longest scripts first: make -j starts scripts in the order given, and
# a long one started last runs alone at the end while the other cores idle
# (in one clean-clone run the mpirun jobs, 233 s, started at 363 s of 596).
# The GoogleTest programs start after every script whatever their place
# (make -j reaches a target with a deep tree of prerequisites last), and
# they run as shards on every core (tests/harness/shards.sh), so they are
# not listed. The list is the scripts that took longest in the clean-clone
# runs (docs/DECISIONS.md, "The test house's time"); a test not in it keeps
# its place after them, and one in it that the build does not run is left
# out.
#   bash tests/harness/long_first.sh [TEST...]
set -u
long="tests/system/mpi/run.sh
tests/system/python/run_torch_dist.sh
tests/system/train/run_ckpt.sh
tests/system/install/run_install.sh
tests/system/cluster/run_link_fault.sh
tests/system/perf/run_bench.sh
tests/system/cluster/run_cluster.sh
tests/system/python/run_torch.sh"
if [ $# = 0 ]; then
    set -- $(make -s print-tests)
fi
printf '%s\n' "$@" | awk -v long="$long" '
    BEGIN { n = split(long, order, "\n"); for (i = 1; i <= n; i++) rank[order[i]] = i }
    { if ($0 in rank) found[rank[$0]] = $0; else rest[++m] = $0 }
    END {
        for (i = 1; i <= n; i++) if (i in found) print found[i]
        for (i = 1; i <= m; i++) print rest[i]
    }'
