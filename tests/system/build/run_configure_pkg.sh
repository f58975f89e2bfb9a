#!/bin/bash
# configure's options for packagers (Spack's recipe, debian/rules):
#   - -Werror by default in a git checkout, not from a source tree without
#     .git (a release tarball), and --enable-werror turns it on there;
#   - --enable-python stops configure, naming numpy, where the interpreter
#     lacks it (without the option the package is only left out).
# The -Werror cases stop configure right after the choice (a bad
# --enable-sanitizers) and read it from config.log's output variables.
# GoogleTest-style results (tests/harness/results.sh).
set -u
srcdir=${abs_top_srcdir:?run through make check}
. "$srcdir/tests/harness/results.sh"
results_begin configure_pkg 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A source tree as a tarball has it: everything but .git.
mkdir -p "$tmp/tarball"
for f in "$srcdir"/*; do ln -s "$f" "$tmp/tarball/"; done

warn_flags() { # SRCDIR DIR ARGS...: ZSH_WARN_FLAGS as configure chose it
    local src=$1 dir=$2
    shift 2
    mkdir -p "$dir" && (cd "$dir" && "$src/configure" --cache-file="$tmp/cache" \
        --enable-sanitizers=none-such "$@" >out 2>&1)
    sed -n "s/^ZSH_WARN_FLAGS='\(.*\)'$/\1/p" "$dir/config.log"
}
werror() { # WANT(yes|no) SRCDIR DIR ARGS...
    local want=$1 flags
    shift
    flags=$(warn_flags "$@")
    case "$want:$flags" in
    yes:*-Werror*) ;;
    no:*-Werror*) echo "ZSH_WARN_FLAGS='$flags' has -Werror" ;;
    no:-Wall*) ;;
    *) echo "ZSH_WARN_FLAGS='$flags', wanted -Werror: $want"; tail -3 "$3/out" ;;
    esac
}
if [ -e "$srcdir/.git" ]; then
    result werror_by_default_in_a_git_checkout "$(werror yes "$srcdir" "$tmp/w1")"
else
    result_skip werror_by_default_in_a_git_checkout "$srcdir is not a git checkout"
fi
result no_werror_by_default_without_git "$(werror no "$tmp/tarball" "$tmp/w2")"
result enable_werror_turns_it_on_without_git "$(werror yes "$tmp/tarball" "$tmp/w3" --enable-werror)"

# An interpreter whose numpy does not import.
mkdir -p "$tmp/nonumpy/numpy"
echo 'raise ImportError("numpy left out by the test")' >"$tmp/nonumpy/numpy/__init__.py"
printf '#!/bin/sh\nPYTHONPATH=%s exec /usr/bin/python3 "$@"\n' "$tmp/nonumpy" >"$tmp/python3"
chmod +x "$tmp/python3"
python_missing() {
    mkdir -p "$tmp/p1" && cd "$tmp/p1" || return
    if "$srcdir/configure" --cache-file="$tmp/cache" --without-mpi --without-pmix --without-cuda \
        --enable-python PYTHON="$tmp/python3" >out 2>&1; then
        echo "configure --enable-python succeeded without numpy"
    elif ! grep -q "error: --enable-python, but no interpreter fits:.*numpy" out; then
        echo "configure failed without naming numpy:"; tail -3 out
    fi
}
if [ -x /usr/bin/python3 ]; then
    result enable_python_fails_naming_numpy_when_it_is_missing "$(python_missing)"
else
    result_skip enable_python_fails_naming_numpy_when_it_is_missing "no /usr/bin/python3"
fi
results_end
