# Sourced by tests/system/python/run_*.sh: start a Python test script once per
# rank with the torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR,
# MASTER_PORT on a free port) and the build tree's package on PYTHONPATH, and
# merge the ranks' "RESULT <case> OK|FAILED|SKIPPED ..." lines into
# GoogleTest-style ones that tests/run_all.sh counts (tests/harness/results.sh):
# a case passes when every rank reports it passed.
#
#   py_setup SUITE MODULES   find the interpreter importing MODULES (and
#                            zeroshard); exits 77 with a SKIPPED line when the
#                            package is not built, or when MODULES has torch
#                            and no interpreter has it
#   py_count_cases SCRIPT [LIST]
#                            the number of cases SCRIPT registers: harness.CASES,
#                            or the module-level list LIST
#   py_job TAG N WANT ARGS   start N ranks of "$python ARGS", each of which must
#                            print WANT RESULT lines and exit within $py_limit
#                            seconds; cases are named SUITE/TAG.case
#   py_summary               the totals (results_end); its status is the script's
builddir=${abs_top_builddir:-$(pwd)}
srcdir=${abs_top_srcdir:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
pkg=$builddir/python
# shellcheck source=../../harness/results.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../harness/results.sh"

py_skip_all() { # WHY
    result_skip all "$1"
    results_end
    exit 77
}

py_setup() { # SUITE MODULES
    suite=$1
    local modules=$2 p versions
    # The cases are only known as the ranks report them: no count to check.
    results_begin "$suite"
    if [ ! -f "$pkg/zeroshard/_zeroshard.so" ]; then
        py_skip_all "the package zeroshard is not built: see configure's 'Python' line"
    fi
    # The interpreter the package was built for: $PYTHON (configure's), then
    # /usr/bin/python3, then python3. The one that has them says its version
    # and torch's in the same start. torch is found, not imported: its import
    # is the slow part of a start, and the ranks import it anyway.
    python=
    for p in ${PYTHON:-} /usr/bin/python3 python3; do
        [ "$p" = : ] && continue
        if versions=$(PYTHONPATH=$pkg "$p" -c "import importlib.metadata, importlib.util, sys, zeroshard
for m in '$modules'.split(','):
    if m == 'torch':
        assert importlib.util.find_spec(m) is not None
    else:
        importlib.import_module(m)
try:
    t = importlib.metadata.version('torch')
except Exception:
    t = 'not installed'
print('%s), torch: %s' % (sys.version.split()[0], t))" 2>/dev/null); then
            python=$p
            break
        fi
    done
    if [ -z "$python" ] && [[ ",$modules," == *,torch,* ]]; then
        py_skip_all "no interpreter of \$PYTHON='${PYTHON:-}', /usr/bin/python3, python3 imports torch"
    fi
    if [ -z "$python" ]; then
        result_as FAILED interpreter "no interpreter of \$PYTHON='${PYTHON:-}', /usr/bin/python3, python3 imports $modules and zeroshard from $pkg"
        results_end
        exit 1
    fi
    echo "interpreter: $python ($versions"
    # No __pycache__ in the source tree (read-only under make distcheck).
    export PYTHONDONTWRITEBYTECODE=1
    log=$(mktemp -d)
    trap 'rm -rf "$log"' EXIT
}

py_count_cases() { # SCRIPT [LIST]
    PYTHONPATH=$pkg "$python" -c "
import sys; sys.argv = ['x']; sys.path.insert(0, '$srcdir/tests/python')
import runpy; names = runpy.run_path('$1', run_name='cases')
import harness; print(len(names['${2:-}'] if '${2:-}' else harness.CASES))"
}

# shellcheck source=../../harness/free_port.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../harness/free_port.sh"

# Seconds a rank may run.
py_limit=100

py_job() { # TAG N WANT ARGS...
    local tag=$1 n=$2 want=$3 r port store_port name before=$failed pids=() rcs=()
    shift 3
    port=$(free_port)
    store_port=$(free_port)
    if [ "${ZSH_PYTEST_FORK:-1}" != 0 ]; then
        # One interpreter imports torch once and forks the ranks
        # (tests/python/fork_ranks.py); each rank's status in rc.TAG.RANK.
        MASTER_ADDR=127.0.0.1 MASTER_PORT=$port ZSH_PYTEST_STORE_PORT=$store_port \
            PYTHONPATH=$pkg${PYTHONPATH:+:$PYTHONPATH} "$python" "$srcdir/tests/python/fork_ranks.py" \
            "$n" "$tag" "$log" "$py_limit" "$@" >"$log/fork.$tag" 2>&1
        for ((r = 0; r < n; r++)); do
            rcs+=("$(cat "$log/rc.$tag.$r" 2>/dev/null || echo 1)")
        done
        cat "$log/fork.$tag"
    else
        for ((r = 0; r < n; r++)); do
            RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port ZSH_PYTEST_STORE_PORT=$store_port \
                PYTHONPATH=$pkg${PYTHONPATH:+:$PYTHONPATH} timeout "$py_limit" "$python" "$@" \
                >"$log/out.$tag.$r" 2>&1 &
            pids+=($!)
        done
        for ((r = 0; r < n; r++)); do
            wait "${pids[r]}"
            rcs+=($?)
        done
    fi
    results_suite=$suite/$tag
    # The cases, in the order the ranks reported them (rank 0's, then any other's).
    for name in $(cat "$log/out.$tag".* | sed -n 's/^RESULT \([^ ]*\) .*/\1/p' | awk '!seen[$0]++'); do
        local status=OK why=
        for ((r = 0; r < n; r++)); do
            local line
            line=$(grep -m1 "^RESULT $name " "$log/out.$tag.$r")
            case $line in
            "RESULT $name OK"*) ;;
            "RESULT $name SKIPPED"*) [ $status = OK ] && status=SKIPPED && why=${line#RESULT $name SKIPPED } ;;
            *) status=FAILED; line=${line#RESULT $name }; why+=$'\n'"rank $r: ${line:-no result}" ;;
            esac
        done
        result_as "$status" "$name" "${why#$'\n'}"
    done
    # Every rank ran every case and exited. A rank that reported every case
    # and then hung (a teardown waiting for a peer that had gone on) would pass
    # by its results alone, and cost the limit each run.
    for ((r = 0; r < n; r++)); do
        if [ "$(grep -c '^RESULT ' "$log/out.$tag.$r")" != "$want" ]; then
            result_as FAILED "rank_${r}_reported_every_case" \
                "$want results expected; its output:"$'\n'"$(tail -40 "$log/out.$tag.$r")"
        elif [ "${rcs[r]}" = 124 ]; then
            result_as FAILED "rank_${r}_exited_within_${py_limit}_s" \
                "it reported every case, then ran until timeout ended it; its output:"$'\n'"$(tail -20 "$log/out.$tag.$r")"
        fi
    done
    if [ "$failed" -gt "$before" ]; then
        for ((r = 0; r < n; r++)); do
            echo "---- $tag rank $r"
            grep -v '^RESULT .* OK' "$log/out.$tag.$r" | tail -40
        done
    fi
}

py_summary() {
    results_end
}
