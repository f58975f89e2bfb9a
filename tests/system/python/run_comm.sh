#!/bin/bash
# zeroshard.Comm from Python at 1, 2 and 4 ranks: tests/python/test_comm.py
# runs once per rank with the torchrun-style variables (RANK, WORLD_SIZE,
# MASTER_ADDR, MASTER_PORT on a free port) and the build tree's package on
# PYTHONPATH. A case passes when every rank reports it passed. Ends with a
# GoogleTest-style summary that tests/run_all.sh counts.
set -u
builddir=${abs_top_builddir:-$(pwd)}
srcdir=${abs_top_srcdir:-$(cd "$(dirname "$0")/../../.." && pwd)}
script=$srcdir/tests/python/test_comm.py
pkg=$builddir/python
sizes=${ZSH_PYTEST_SIZES:-1 2 4}

if [ ! -f "$pkg/zeroshard/_zeroshard.so" ]; then
    echo "[  SKIPPED ] python_comm.all (the package zeroshard is not built: see configure's 'Python' line)"
    echo "[  PASSED  ] 0 tests."
    echo "[  SKIPPED ] 1 test, listed above"
    exit 77
fi

# The interpreter the package was built for, with numpy: $PYTHON (configure's),
# then /usr/bin/python3, then python3.
python=
for p in ${PYTHON:-} /usr/bin/python3 python3; do
    [ "$p" = : ] && continue
    if PYTHONPATH=$pkg "$p" -c 'import numpy, zeroshard' >/dev/null 2>&1; then
        python=$p
        break
    fi
done
if [ -z "$python" ]; then
    echo "[  FAILED  ] python_comm.interpreter (no interpreter of \$PYTHON='${PYTHON:-}', /usr/bin/python3, python3 imports numpy and zeroshard from $pkg)"
    echo "[  PASSED  ] 0 tests."
    echo "[  FAILED  ] 1 test, listed above"
    exit 1
fi
echo "interpreter: $python ($("$python" -c 'import sys; print(sys.version.split()[0])'))," \
    "torch: $("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo 'not importable')"

free_port() {
    "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# No __pycache__ in the source tree (read-only under make distcheck).
export PYTHONDONTWRITEBYTECODE=1
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
passed=0
failed=0
skipped=0

# run_size N: start N ranks, wait, and merge their RESULT lines per case.
run_size() {
    local n=$1 r port store_port name
    port=$(free_port)
    store_port=$(free_port)
    for ((r = 0; r < n; r++)); do
        RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port ZSH_PYTEST_STORE_PORT=$store_port \
            PYTHONPATH=$pkg${PYTHONPATH:+:$PYTHONPATH} timeout 100 "$python" "$script" \
            >"$log/out.$n.$r" 2>&1 &
    done
    wait
    # The cases, in rank 0's order.
    for name in $(sed -n 's/^RESULT \([^ ]*\) .*/\1/p' "$log/out.$n.0"); do
        local status=OK why=
        for ((r = 0; r < n; r++)); do
            local line
            line=$(grep -m1 "^RESULT $name " "$log/out.$n.$r")
            case $line in
            "RESULT $name OK"*) ;;
            "RESULT $name SKIPPED"*) [ $status = OK ] && status=SKIPPED && why=${line#RESULT $name SKIPPED } ;;
            *) status=FAILED; why="$why rank $r: ${line:+${line#RESULT $name }}${line:-no result}" ;;
            esac
        done
        case $status in
        OK) echo "[       OK ] python_comm/np$n.$name"; passed=$((passed + 1)) ;;
        SKIPPED) echo "[  SKIPPED ] python_comm/np$n.$name ($why)"; skipped=$((skipped + 1)) ;;
        FAILED) echo "[  FAILED  ] python_comm/np$n.$name:$why"; failed=$((failed + 1)) ;;
        esac
    done
    # Every rank ran every case and exited.
    local want
    want=$(PYTHONPATH=$pkg "$python" -c "
import sys; sys.argv = ['x']; sys.path.insert(0, '$srcdir/tests/python')
import runpy; runpy.run_path('$script', run_name='cases')
import harness; print(len(harness.CASES))")
    for ((r = 0; r < n; r++)); do
        if [ "$(grep -c '^RESULT ' "$log/out.$n.$r")" != "$want" ]; then
            echo "[  FAILED  ] python_comm/np$n.rank_${r}_reported_every_case ($want expected); its output:"
            sed 's/^/    /' "$log/out.$n.$r" | tail -40
            failed=$((failed + 1))
        fi
    done
    if [ "$failed" -gt 0 ]; then
        for ((r = 0; r < n; r++)); do
            echo "---- np$n rank $r"
            grep -v '^RESULT .* OK' "$log/out.$n.$r" | tail -40
        done
    fi
}

for n in $sizes; do
    run_size "$n"
done
echo "[  PASSED  ] $passed tests."
[ "$skipped" -gt 0 ] && echo "[  SKIPPED ] $skipped tests, listed above"
[ "$failed" -gt 0 ] && echo "[  FAILED  ] $failed tests, listed above"
[ "$failed" = 0 ]
