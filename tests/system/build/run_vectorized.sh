#!/bin/bash
# The reduction kernels that every reduce-scatter and all-reduce runs come
# out of the compiler as vector code, whatever -O the user's CFLAGS carry
# (configure's ZSH_OPT_FLAGS). A scalar fp32 sum runs at under half the
# speed, and nothing else in the suite would notice.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
lib="$top_builddir/.libs/libzeroshard.so"
name=reduction_kernels_are_vectorized
# shellcheck source=../../harness/results.sh
. "$(dirname "$0")/../../harness/results.sh"
# One check, and one result line for it whichever way it ends.
results_begin build 1

# The check skipped: exits 77 (make check's SKIP), or 1 if the results
# reported were not the expected number.
skip() { # REASON
    result_skip "$name" "$1"
    results_end || exit 1
    exit 77
}

case $(uname -m) in
x86_64) ;;
*) skip "the packed instructions checked for are x86-64's, this is $(uname -m)" ;;
esac
command -v objdump >/dev/null || skip "objdump not found (apt-get install binutils)"
case $(sed -n 's/^CFLAGS = //p' "$top_builddir/Makefile" 2>/dev/null) in
*-fsanitize=*undefined*)
    skip "UBSan's checks keep gcc and clang from vectorizing any loop; the plain build is checked" ;;
esac
[ -f "$lib" ] || skip "no shared library at $lib (--disable-shared)"

# The packed single-precision adds in one function's disassembly.
packed_adds() { # FUNCTION
    objdump -d --no-show-raw-insn "$lib" |
        awk -v f="<$1>:" '$2 == f { on = 1; next } on && /^$/ { exit } on' |
        grep -cE '\s(v?addps)\s'
}

bad=
for fn in zsh_reduce_acc_store_fp32_sum zsh_reduce_acc_fp32_sum; do
    n=$(packed_adds "$fn")
    if [ "$n" = 0 ]; then
        # No adds may mean no such function: unchecked, which is not a pass.
        if ! objdump -d "$lib" | grep -q "<$fn>:"; then
            skip "$fn is not among the library's symbols; stripped?"
        fi
        bad="$bad $fn"
    fi
done
if [ -z "$bad" ]; then
    result_as OK "$name"
else
    result_as FAILED "$name" \
        "scalar loops (no addps) in:$bad; built with: $(grep -m1 '^ZSH_OPT_FLAGS' "$top_builddir/Makefile")"
fi
results_end
