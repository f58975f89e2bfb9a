#!/bin/bash
# zsh_bench as real processes under mpirun at 2 and 3 ranks: for every
# collective, the OSU header and columns, Validation Pass on every size, a
# well-formed CSV whose busbw follows the nccl-tests formula of the
# collective, the MPI baseline columns, every element type, --cold, the plot
# script, the barrier's one row of latency against MPI_Barrier, and bad
# options refused with a message.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
srcdir=${abs_top_srcdir:-$(cd "$(dirname "$0")/../../.." && pwd)}
prog="$top_builddir/perf/zsh_bench"
SUITE=zsh_bench
CALLS_MPI_INIT=1
. "$(dirname "$0")/../../harness/mpirun_script.sh"

# The rank counts of the per-collective cases: ZSH_BENCH_TEST_SIZES, 2 and 3
# by default (the AddressSanitizer stage takes 3 alone, as it does for the
# rank tests under mpirun).
sizes=${ZSH_BENCH_TEST_SIZES:-2 3}
# Two per collective at each of those counts, the MPI baseline of each
# collective, every element type, --cold, -m, the plot, the barrier, and the
# 14 bad options below.
expected=$((2 * 5 * $(wc -w <<<"$sizes") + 5 + 10 + 1 + 1 + 1 + 1 + 14))

# On failure it says so, with the ends of both outputs: the checks that run
# it pass only when they print nothing, and a bench that dies can leave
# both outputs empty.
bench() { # NP FILE ARGS...: output in FILE, standard error in FILE.err
    local np=$1 file=$2 rc
    shift 2
    timeout 120 "$MPIRUN" --oversubscribe -np "$np" "$prog" "$@" </dev/null >"$file" 2>"$file.err" && return 0
    rc=$?
    echo "zsh_bench $* at $np ranks exited $rc"
    tail -n 5 "$file" "$file.err"
    return $rc
}

# The factor of busbw over algbw (nccl-tests).
factor() { # COLL NP
    case $1 in
    allgather | reduce_scatter | alltoall) echo "($2 - 1) / $2" ;;
    allreduce) echo "2 * ($2 - 1) / $2" ;;
    broadcast) echo 1 ;;
    esac
}

# OSU's layout: a title line, the column line, then rows of COLUMNS fields
# ending in Pass; at least MIN_ROWS of them, sizes doubling.
osu_table_ok() { # FILE COLUMNS MIN_ROWS COLUMN_NAMES...
    local file=$1 ncol=$2 min_rows=$3 name cols
    shift 3
    head -1 "$file" | grep -q '^# OSU-style ZeroShard .* Latency Test' || { echo "no OSU title line"; return 1; }
    cols=$(grep '^# Size ' "$file")
    [[ $cols == "# Size       Avg Latency(us)"* ]] || { echo "columns: '$cols'"; return 1; }
    for name in "$@"; do
        [[ $cols == *"$name"* ]] || { echo "no column $name in '$cols'"; return 1; }
    done
    grep -v '^#' "$file" | awk -v n="$ncol" -v min="$min_rows" '
        NF != n || $NF != "Pass" || $2 !~ /^[0-9.]+$/ || $2 <= 0 { print "bad row: " $0; bad = 1 }
        { rows++ }
        END { if (rows < min) { print rows " rows"; bad = 1 } exit bad }'
}

# The CSV: a header, one row per table row, 15 fields, and busbw = algbw *
# factor, algbw = size / avg latency.
csv_ok() { # CSV TABLE COLL NP BASELINE(0|1)
    local csv=$1 table=$2 coll=$3 np=$4 baseline=$5
    head -1 "$csv" | grep -qx 'collective,ranks,dtype,size_bytes,count,iterations,avg_us,min_us,max_us,algbw_gbs,busbw_gbs,mpi_avg_us,mpi_busbw_gbs,zsh_over_mpi,validation' ||
        { echo "CSV header: $(head -1 "$csv")"; return 1; }
    [ "$(($(wc -l <"$csv") - 1))" = "$(grep -vc '^#' "$table")" ] || { echo "CSV and table row counts differ"; return 1; }
    awk -F, -v coll="$coll" -v np="$np" -v f="$(echo "$(factor "$coll" "$np")" | bc -l)" -v base="$baseline" '
        NR == 1 { next }
        function near(a, b) { d = a - b; if (d < 0) d = -d; return d <= 5e-3 * (b < 0 ? -b : b) + 1e-5 }
        NF != 15 || $1 != coll || $2 != np || $15 != "pass" { print "bad row: " $0; bad = 1; next }
        !near($10, $4 / $7 / 1e3) { print "algbw is not size/time: " $0; bad = 1 }
        !near($11, $10 * f) { print "busbw is not algbw * " f ": " $0; bad = 1 }
        # Each busbw is printed to 6 decimals, off by up to 5e-7: times its time, that is
        # more than 0.5% of the product when the bandwidth is tiny (a slow, loaded run).
        function near_times(a, b, slack) { d = a - b; if (d < 0) d = -d; return d <= 5e-3 * (b < 0 ? -b : b) + slack }
        base && (!near_times($13 * $12, $11 * $7, 1e-6 * ($12 + $7)) || !near($14, $12 / $7)) { print "MPI busbw or ratio: " $0; bad = 1 }
        !base && ($12 != "" || $13 != "" || $14 != "") { print "MPI fields without a baseline: " $0; bad = 1 }
        END { exit bad }' "$csv"
}

for np in $sizes; do
    for coll in allgather reduce_scatter allreduce broadcast alltoall; do
        t=$out/np$np.$coll
        if ! detail=$(bench $np "$t" $coll -m 1:64k -i 5 -x 1 -f -c --csv "$t.csv"); then
            result "np${np}_${coll}_prints_osu_columns_and_validates_every_size" 0 "$detail"
            result "np${np}_${coll}_csv_has_every_row_and_nccl_tests_busbw" 0 "no CSV: zsh_bench failed"
            continue
        fi
        check "np${np}_${coll}_prints_osu_columns_and_validates_every_size" osu_table_ok "$t" 8 10 \
            "Min Latency(us)" "Max Latency(us)" Iterations "algbw(GB/s)" "busbw(GB/s)" Validation
        check "np${np}_${coll}_csv_has_every_row_and_nccl_tests_busbw" csv_ok "$t.csv" "$t" $coll $np 0
    done
done

# The MPI baseline: two more columns, and in the CSV the ratio of the busbw figures.
baseline_ok() { # COLL
    local t=$out/base.$1
    bench 3 "$t" $1 -m 1k:16k -i 3 -x 1 -c --baseline mpi --csv "$t.csv" || return 1
    osu_table_ok "$t" 7 5 "MPI busbw(GB/s)" "zsh/MPI" Validation || return 1
    grep -q "^# Baseline: MPI_" "$t" || { echo "no '# Baseline: MPI_...' line"; return 1; }
    csv_ok "$t.csv" "$t" $1 3 1
}
for coll in allgather reduce_scatter allreduce broadcast alltoall; do
    check "baseline_mpi_${coll}_adds_mpi_busbw_and_ratio" baseline_ok $coll
done

# Every element type validates, in one job of them all (-T all: a table
# each, in turn); MPI has no fp16 or bf16, and says so.
types_why=$(bench 3 "$out/types" allreduce -m 64:4k -i 2 -x 0 -c -T all --baseline mpi)
types_rc=$?
# Each table into type.<its Datatype>, without the blank lines between them.
awk -v out="$out" '/^# OSU-style/ { title = $0; next }
    title != "" && match($0, /Datatype: [a-z0-9]+/) {
        file = out "/type." substr($0, RSTART + 10, RLENGTH - 10); print title >file; title = "" }
    NF > 0 && file != "" { print >file }' "$out/types"
type_ok() { # DTYPE
    local t=$out/type.$1
    [ $types_rc = 0 ] || { echo "$types_why"; return 1; }
    [ -f "$t" ] || { echo "no table with 'Datatype: $1' in the -T all job's output"; return 1; }
    case $1 in
    fp16 | bf16)
        grep -q "MPI has no $1 type" "$t" || { echo "no 'MPI has no $1 type' line"; return 1; }
        osu_table_ok "$t" 5 3 Validation ;;
    *) osu_table_ok "$t" 7 3 "MPI busbw(GB/s)" ;;
    esac
}
for dtype in int8 uint8 int32 uint32 int64 uint64 fp16 bf16 fp32 fp64; do
    check "type_${dtype}_allreduce_validates" type_ok $dtype
done

# Two sizes: each gets twice the last-level cache in buffers, up to 1 GiB a
# rank, filled before its calls, which on a host with a large L3 is slow
# under AddressSanitizer beside the sanitizer stage's other tests.
cold_ok() {
    local t=$out/cold
    bench 2 "$t" reduce_scatter -m 4k:8k -i 3 -x 1 -c --cold || return 1
    grep -q '^# Cold: calls rotate through [0-9]* MiB' "$t" ||
        { echo "no '# Cold: calls rotate through N MiB' line"; return 1; }
    osu_table_ok "$t" 5 2 Validation
}
check cold_rotates_through_buffers_and_validates cold_ok

# Sizes: -m with suffixes gives exactly the powers of two between them (total
# bytes for allreduce: 1k..8k is 4 rows).
sizes_ok() {
    local t=$out/sizes sizes
    bench 2 "$t" allreduce -m 1k:8k -i 2 -x 0 || return 1
    sizes=$(grep -v '^#' "$t" | awk '{print $1}' | paste -sd' ')
    [ "$sizes" = "1024 2048 4096 8192" ] || { echo "sizes: $sizes"; return 1; }
}
check m_takes_a_range_with_suffixes sizes_ok

# The barrier moves nothing: one row of size 0 whatever -m says, a latency,
# zero bandwidths, and against MPI_Barrier the ratio of the two times.
barrier_ok() {
    local t=$out/barrier rows
    bench 3 "$t" barrier -m 1k:64k -i 20 -x 2 -c --baseline mpi --csv "$t.csv" || return 1
    grep -q "^# Baseline: MPI_Barrier" "$t" || { echo "no '# Baseline: MPI_Barrier' line"; return 1; }
    rows=$(grep -v '^#' "$t")
    [ "$(echo "$rows" | wc -l)" = 1 ] || { echo "rows: $rows"; return 1; }
    echo "$rows" | awk 'NF != 7 || $1 != 0 || !($2 > 0) || $3 != "0.000" || $4 != "0.000" ||
                        !($6 > 0) || $7 != "Pass" { print "bad row: " $0; exit 1 }' || return 1
    awk -F, 'NR == 2 && ($1 != "barrier" || $4 != 0 || !($7 > 0) || !($12 > 0)) { print "bad CSV row: " $0; exit 1 }
             END { if (NR != 2) { print NR " CSV lines"; exit 1 } }' "$t.csv"
}
check barrier_prints_one_row_of_latency_against_mpi_barrier barrier_ok

if command -v gnuplot >/dev/null; then
    plot_ok() {
        bash "$srcdir/perf/plot_busbw.sh" "$out/base.allgather.csv" "$out/plot.png" >/dev/null ||
            { echo "plot_busbw.sh failed"; return 1; }
        [ "$(head -c 4 "$out/plot.png" | tail -c 3)" = PNG ] || { echo "no PNG"; return 1; }
    }
    check plot_script_draws_a_png_from_the_csv plot_ok
else
    result_skip plot_script_draws_a_png_from_the_csv "no gnuplot"
fi

# Bad options: a non-zero exit and a message naming the problem. A lone
# process is an MPI job of one (mpirun takes seconds over a failed job).
bad_option() { # EXPECTED_MESSAGE ARGS...
    local want=$1 t=$out/bad
    shift
    if timeout 60 "$prog" "$@" </dev/null >"$t" 2>"$t.err"; then
        echo "'$*' exited 0"
        return 1
    fi
    grep -q "zsh_bench: .*$want" "$t.err" || { echo "'$*': no message with '$want':"; cat "$t.err"; return 1; }
}
i=0
while IFS='|' read -r want args; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    check "bad_option_${i}_$(echo "$args" | tr -c 'a-z0-9\n' '_' | sed 's/__*/_/g; s/_$//')_is_refused" \
        bad_option "$want" $args
done <<'CASES'
unknown collective|gather
expected one collective|
-m '8:2'|allreduce -m 8:2
-m '1x'|allreduce -m 1x
-i '0'|allreduce -i 0
-x '-1'|allreduce -x -1
unknown type|allreduce -T fp8
unknown type|allreduce -T fp32,,bf16
unknown type|allreduce -T fp32,fp8
only baseline is 'mpi'|allreduce --baseline nccl
unknown option|allreduce --bogus
needs an argument|allreduce -T
--csv /nonexistent/dir/x.csv|allreduce -m 1k:1k --csv /nonexistent/dir/x.csv
--device cuda: |barrier --device cuda
CASES

summary
