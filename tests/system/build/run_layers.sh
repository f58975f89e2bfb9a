#!/bin/bash
# The layers hold: the include graph of the tree has no arrow up a layer and
# no circle between folders (include_graph.py), and the build enforces it:
# compiled with a layer's include roots (ZSH_LAYER_FLAGS_*, from
# Makefile.am), a header of the layer itself compiles and one of a layer
# above does not; and a folder's private headers are included only inside
# it and its tests. Ends with a GoogleTest-style summary that
# tests/run_all.sh counts.
set -u
srcdir=${abs_top_srcdir:?run through make check}
# shellcheck source=../../harness/results.sh
. "$srcdir/tests/harness/results.sh"
results_begin layers 8 # checks: 3 of the graph, 4 of the include roots, 1 of private headers

# The graph: three checks, printed by the script itself and counted here.
if [ -n "${PYTHON3:-}" ]; then
    graph=$("$PYTHON3" "$srcdir/tests/system/build/include_graph.py" "$srcdir" 2>&1)
    echo "$graph"
    for check in every_include_resolves_in_the_tree no_include_points_up_a_layer \
                 no_two_folders_include_each_other; do
        if echo "$graph" | grep -qx "\[       OK \] layers\.$check"; then
            passed=$((passed + 1))
        elif echo "$graph" | grep -qx "\[  FAILED  \] layers\.$check"; then
            failed=$((failed + 1))
        else
            result_as FAILED "$check" "include_graph.py reported nothing for it"
        fi
    done
else
    for check in every_include_resolves_in_the_tree no_include_points_up_a_layer \
                 no_two_folders_include_each_other; do
        result_skip "$check" "no python3 found by configure"
    done
fi

# The include roots: a probe file that includes one header, compiled with a
# layer's flags; a header of the layer must compile, one above must not.
probe() { # FLAGS HEADER
    printf '#include "%s"\n' "$2" >"$tmp/probe.c"
    # shellcheck disable=SC2086
    ${CC:-cc} -std=gnu11 -fsyntax-only $1 "$tmp/probe.c" >"$tmp/probe.out" 2>&1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
while read -r layer var own upper; do
    flags=${!var:-}
    if [ -z "$flags" ]; then
        result_as FAILED "${layer}_include_roots_refuse_${upper%%/*}" "$var is not set (run through make check)"
        continue
    fi
    name="${layer}_include_roots_refuse_$(echo "$upper" | tr '/.' '__')"
    if ! probe "$flags" "$own"; then
        result_as FAILED "$name" "its own $own does not compile with them: $(head -3 "$tmp/probe.out")"
    elif probe "$flags" "$upper"; then
        result_as FAILED "$name" "$upper, of a layer above, compiles with: $flags"
    elif ! grep -qE "No such file|file not found" "$tmp/probe.out"; then # gcc, clang
        result_as FAILED "$name" "$upper failed for another reason: $(head -3 "$tmp/probe.out")"
    else
        result_as OK "$name"
    fi
done <<'PROBES'
services ZSH_LAYER_FLAGS_SERVICES core/status.h tl.h
transports ZSH_LAYER_FLAGS_TRANSPORTS tl.h task/task.h
coll ZSH_LAYER_FLAGS_COLL task/task.h optim/optim_impl.h
zero ZSH_LAYER_FLAGS_ZERO optim/optim_impl.h comm/comm.h
PROBES

# Private headers: a folder's internals, which only its own files and their
# tests include; what others need of it is in a header it exports (zero/ckpt
# walks the optimizer's state through optim/state.h). One line per folder:
# the folder, then its private headers.
private=""
while read -r folder headers; do
    for header in $headers; do
        # Any spelling: "optim/optim_impl.h", "optim_impl.h", "../optim/optim_impl.h".
        pattern="^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]([^\">]*/)?${header//./\\.}[\">]"
        private+=$(cd "$srcdir" && grep -rnE "$pattern" --include='*.c' --include='*.h' \
                       --include='*.cc' --include='*.cpp' --include='*.cu' \
                       include src transports coll zero tools perf examples python tests |
                       grep -vE "^($folder|tests/$folder)/" | sed "s|\$| (private to $folder/)|")
        private+=$'\n'
    done
done <<'PRIVATE'
zero/optim optim_impl.h
PRIVATE
result no_private_header_is_included_outside_its_folder "$private"

results_end
