#!/bin/bash
# perf/offload_run.sh at a small size (the beyond-memory run itself is far
# too big for a test): it measures the disk with fio, trains on 2 ranks at
# stage 3 with the nvme tiers under its directory, checks the ranks' losses,
# prints the step's split, the peak RSS and the disk bound, and leaves no
# file behind, also when it is stopped mid-run. Skipped without fio.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
srcdir=${abs_top_srcdir:-$(cd "$(dirname "$0")/../../.." && pwd)}
script="$srcdir/perf/offload_run.sh"
SUITE=offload_run
. "$(dirname "$0")/../../harness/mpirun_script.sh"
expected=3

if ! command -v fio >/dev/null; then
    for name in small_run_reports_the_split_the_rss_and_the_disk_bound_and_cleans_up \
        stopped_run_removes_its_files bad_options_are_refused; do
        result_skip "$name" "fio is not installed: the script measures the disk with it"
    done
    summary
fi

small_run() {
    local dir="$out/disk" line
    timeout 300 "$script" --build "$top_builddir" --dir "$dir" --params 2e6 --fio-size 16m \
        >"$out/run" 2>&1 || { echo "exit $?: $(tail -5 "$out/run")"; return; }
    for line in '^fio (' '^memory limit: ' '^loss: .* on all 2 ranks (finite, equal)' \
        '^step 2: .* = compute .* + comm .* + io wait .* + optimizer ' '^peak rss: .* summed over the ranks' \
        '^disk traffic of the step' '^disk bound: '; do
        grep -q "$line" "$out/run" || echo "no line matching '$line' in: $(cat "$out/run")"
    done
    if [ -e "$dir" ]; then echo "left behind: $(find "$dir" | head -5)"; fi
}
check small_run_reports_the_split_the_rss_and_the_disk_bound_and_cleans_up small_run

stopped_run() {
    local dir="$out/disk2" pid
    # There before the first look: the job below opens it in its own time,
    # and grep's "No such file" would be taken for a failure.
    : >"$out/stopped"
    "$script" --build "$top_builddir" --dir "$dir" --params 2e6 --fio-size 16m --steps 100000 \
        >"$out/stopped" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        grep -q '^run: ' "$out/stopped" && break
        sleep 0.1
    done
    sleep 1
    kill -TERM $pid
    wait $pid
    [ $? = 130 ] || echo "exit status not 130: $(tail -3 "$out/stopped")"
    if [ -e "$dir" ]; then echo "left behind: $(find "$dir" | head -5)"; fi
}
check stopped_run_removes_its_files stopped_run

bad_options() {
    local rc
    "$script" --ranks x >"$out/bad" 2>&1
    rc=$?
    [ $rc = 2 ] || echo "--ranks x: exit $rc"
    grep -q -- "--ranks" "$out/bad" || echo "--ranks x: $(cat "$out/bad")"
    "$script" --bogus >"$out/bad" 2>&1
    rc=$?
    [ $rc = 2 ] || echo "--bogus: exit $rc"
}
check bad_options_are_refused bad_options

summary
