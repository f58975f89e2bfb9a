#!/bin/bash
# ZeroShard installed by real Spack from this tree (contrib/spack/install.sh:
# the system's libraries as externals, pkg-config limited to the declared
# dependencies, spack audit, spack install --test=root, spack load and a
# program built with pkg-config run at 2 ranks, Lmod and Tcl modules).
# Skipped (77) with the reason where there is no Spack: SPACK=/path/to/spack
# or spack on PATH. It takes as long as a build and the install test
# (about 20 minutes on 2 cores). GoogleTest-style results
# (tests/harness/results.sh).
set -u
srcdir=${abs_top_srcdir:-$(cd "$(dirname "$0")/../../.." && pwd)}
builddir=${abs_top_builddir:-$srcdir/build}
unset MAKEFLAGS MFLAGS MAKELEVEL
# shellcheck source=../../harness/results.sh
. "$srcdir/tests/harness/results.sh"
results_begin spack 1
spack_cmd=${SPACK:-spack}
if ! command -v "$spack_cmd" >/dev/null; then
    result_skip installs_audits_tests_loads_and_makes_modules \
        "no Spack ('$spack_cmd' not found; SPACK=/path/to/spack/bin/spack)"
    results_end
    exit 77
fi
work=$(mktemp -d /var/tmp/zsh-spack-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
# ZSH_SPACK_SPEC: the spec to install (default install.sh's, zeroshard@VERSION);
# ~python where Spack has only its original concretizer (docs/install-spack.md).
# shellcheck disable=SC2086 # a spec may be several words
out=$("$srcdir/contrib/spack/install.sh" -b "$builddir" -w "$work" ${ZSH_SPACK_SPEC:-} 2>&1)
rc=$?
echo "$out" | grep "^=="
if [ $rc = 0 ]; then
    modules=$(find "$work/modules" -type f | grep -c .)
    result installs_audits_tests_loads_and_makes_modules \
        "$([ "$modules" -ge 2 ] || echo "$modules module files under $work/modules")"
else
    result installs_audits_tests_loads_and_makes_modules "install.sh exit $rc:" "$(echo "$out" | tail -40)"
fi
results_end
