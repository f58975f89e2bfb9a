#!/bin/bash
# The beyond-memory measurement in one command: measure the disk under DIR
# with fio (O_DIRECT, io_uring, 1 MiB blocks, queue depth 16, a sequential
# write then read), then train zsh_train with --params P at stage 3 with its
# state offloaded to NVMe files under DIR on 2 ranks, under a memory limit
# where one can be set, and compare the last step's time with the disk
# bound: the bytes the ranks read and wrote in that step over the
# bandwidths fio measured. Every file it makes is removed at the end, on
# failure and on Ctrl-C too.
#
#   perf/offload_run.sh [options] [-- zsh_train options]
#     --dir DIR             where the files go (default /var/tmp/zsh-offload)
#     --params P            model size (default 2e9)
#     --ranks N             ranks (default 2)
#     --steps K             steps; the last is measured (default 2)
#     --offload-optimizer T none, cpu or nvme (default nvme)
#     --offload-params T    none, cpu or nvme (default nvme)
#     --mem-max BYTES       memory limit of the ranks together (default 8G)
#     --fio-size SIZE       bytes of fio's file (default 4g)
#     --max-ratio R         exit 3 when the step takes more than R times the
#                           disk bound (default: report only)
#     --build DIR           the build tree (default: ./build, or the script's ../build)
#
# Exit status: 0 when the run finished with a finite loss equal on every
# rank; 1 on a failed run or check; 2 on bad options; 3 as --max-ratio says.
set -u

dir=/var/tmp/zsh-offload
params=2e9
ranks=2
steps=2
topt=nvme
tparams=nvme
mem_max=8G
fio_size=4g
max_ratio=
build=
while [ $# -gt 0 ]; do
    case $1 in
    --dir | --params | --ranks | --steps | --offload-optimizer | --offload-params | --mem-max | \
        --fio-size | --max-ratio | --build)
        [ $# -ge 2 ] || { echo "offload_run.sh: $1 needs a value" >&2; exit 2; }
        case $1 in
        --dir) dir=$2 ;; --params) params=$2 ;; --ranks) ranks=$2 ;; --steps) steps=$2 ;;
        --offload-optimizer) topt=$2 ;; --offload-params) tparams=$2 ;; --mem-max) mem_max=$2 ;;
        --fio-size) fio_size=$2 ;; --max-ratio) max_ratio=$2 ;; --build) build=$2 ;;
        esac
        shift 2 ;;
    --) shift; break ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "offload_run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ $ranks =~ ^[1-9][0-9]*$ ]] || { echo "offload_run.sh: --ranks '$ranks' is not a count" >&2; exit 2; }
[[ $steps =~ ^[1-9][0-9]*$ ]] || { echo "offload_run.sh: --steps '$steps' is not a count" >&2; exit 2; }

if [ -z "$build" ]; then
    for build in ./build "$(dirname "$0")/../build" .; do
        [ -x "$build/tools/zsh_train" ] && break
    done
fi
train=$build/tools/zsh_train
launcher=$build/tools/zshrun
for p in "$train" "$launcher"; do
    [ -x "$p" ] || { echo "offload_run.sh: no $p (build first, or give --build)" >&2; exit 1; }
done

# --- clean-up of everything made below ---------------------------------------
made_dir=
work=
cgroup=
child=
cleanup() {
    # The launcher stops its ranks when it is stopped; they must be gone
    # before their files and their cgroup can go.
    if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
        kill -TERM "$child" 2>/dev/null
        wait "$child" 2>/dev/null
    fi
    [ -n "$work" ] && rm -rf "$work"
    [ -n "$made_dir" ] && rmdir "$made_dir" 2>/dev/null
    [ -n "$cgroup" ] && rmdir "$cgroup" 2>/dev/null
}
trap cleanup EXIT
trap 'echo "offload_run.sh: interrupted; removing its files" >&2; exit 130' INT TERM

if [ ! -d "$dir" ]; then
    mkdir -p "$dir" || { echo "offload_run.sh: cannot create $dir" >&2; exit 1; }
    made_dir=$dir
fi
work=$(mktemp -d "$dir/zsh-offload.XXXXXX") || { echo "offload_run.sh: cannot write in $dir" >&2; exit 1; }
log=$work/log

# --- the disk, measured where the files will go -------------------------------
read_bw=
write_bw=
fio_bw() { # RW ENGINE: bytes/s of a sequential RW of fio's file
    fio --name=zsh-offload --directory="$work" --filename=fio.dat --size="$fio_size" --bs=1m \
        --iodepth=16 --ioengine="$2" --direct=1 --rw="$1" --output-format=json 2>"$work/fio.err" |
        python3 -c 'import json, sys
j = json.load(sys.stdin)["jobs"][0]
print(j[sys.argv[1]]["bw_bytes"])' "$1" 2>>"$work/fio.err"
}
if ! command -v fio >/dev/null; then
    echo "fio: not installed, so no disk bound (apt-get install fio)"
elif ! command -v python3 >/dev/null; then
    echo "fio: python3 is needed to read its JSON, so no disk bound"
else
    engine=io_uring
    write_bw=$(fio_bw write $engine)
    if [ -z "$write_bw" ]; then
        # Container seccomp profiles often refuse io_uring.
        engine=libaio
        write_bw=$(fio_bw write $engine)
    fi
    [ -n "$write_bw" ] && read_bw=$(fio_bw read $engine)
    rm -f "$work/fio.dat"
    if [ -n "$read_bw" ] && [ "$read_bw" -gt 0 ] && [ "$write_bw" -gt 0 ]; then
        awk -v r="$read_bw" -v w="$write_bw" -v e=$engine -v s="$fio_size" 'BEGIN {
            printf "fio (%s, O_DIRECT, 1 MiB blocks, QD16, %s file): write %.3f GB/s, read %.3f GB/s\n",
                   e, s, w / 1e9, r / 1e9 }'
    else
        echo "fio failed, so no disk bound: $(tail -2 "$work/fio.err")"
        read_bw= write_bw=
    fi
fi

# --- a memory limit for the ranks together ------------------------------------
to_bytes() { # 8G -> bytes
    awk -v v="$1" 'BEGIN { n = v + 0; u = toupper(substr(v, length(v)));
        m = (u == "K") ? 1024 : (u == "M") ? 1048576 : (u == "G") ? 1073741824 : (u == "T") ? 1099511627776 : 1;
        printf "%.0f\n", n * m }'
}
limit=none
wrap=()
limit_bytes=$(to_bytes "$mem_max")
if [ -w /sys/fs/cgroup/cgroup.subtree_control ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null &&
    mkdir "/sys/fs/cgroup/zsh-offload.$$" 2>/dev/null; then
    cgroup=/sys/fs/cgroup/zsh-offload.$$
    if echo "$limit_bytes" >"$cgroup/memory.max" && echo 0 >"$cgroup/memory.swap.max" 2>/dev/null; then
        limit="cgroup v2 memory.max $mem_max (no swap)"
        wrap=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cgroup")
    fi
elif [ -w /sys/fs/cgroup/memory ] && mkdir "/sys/fs/cgroup/memory/zsh-offload.$$" 2>/dev/null; then
    cgroup=/sys/fs/cgroup/memory/zsh-offload.$$
    if echo "$limit_bytes" >"$cgroup/memory.limit_in_bytes"; then
        limit="cgroup v1 memory.limit_in_bytes $mem_max"
        wrap=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cgroup")
    fi
elif command -v systemd-run >/dev/null &&
    systemd-run --quiet --user --scope -p MemoryMax="$mem_max" true >/dev/null 2>&1; then
    limit="systemd-run --user --scope MemoryMax=$mem_max"
    wrap=(systemd-run --quiet --user --scope -p MemoryMax="$mem_max" -p MemorySwapMax=0)
fi
[ "$limit" = none ] &&
    echo "memory limit: none could be set here (no writable cgroup, no systemd user scope); the peak RSS below is measured with getrusage only"
[ "$limit" != none ] && echo "memory limit: $limit"

# --- the run --------------------------------------------------------------------
cmd=("$launcher" -n "$ranks" --no-prefix "$train" --params "$params" --stage 3
     --offload-optimizer "$topt" --offload-params "$tparams" --nvme-dir "$work"
     --steps "$steps" "$@")
echo "run: ${wrap[*]:+${wrap[*]} }${cmd[*]}"
start=$(date +%s.%N)
# In the background, so that a signal reaches the trap while the run goes on.
"${wrap[@]}" "${cmd[@]}" >"$log" 2>&1 &
child=$!
wait $child
rc=$?
child=
wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
if [ $rc != 0 ]; then
    echo "offload_run.sh: the run failed (exit $rc, $wall s):"
    tail -n 15 "$log"
    exit 1
fi
[ -n "$cgroup" ] && [ -r "$cgroup/memory.peak" ] &&
    echo "memory limit: the cgroup's peak $(awk '{ printf "%.2f GiB", $1 / 2^30 }' "$cgroup/memory.peak")"
[ -n "$cgroup" ] && [ -r "$cgroup/memory.max_usage_in_bytes" ] &&
    echo "memory limit: the cgroup's peak $(awk '{ printf "%.2f GiB", $1 / 2^30 }' "$cgroup/memory.max_usage_in_bytes")"
grep -e '^model:' -e '^parameters:' "$log"

# Every rank's last loss: finite and the same.
verdict=$(awk -v n="$ranks" '
    /^rank [0-9]+: last loss/ { k++; v = $5; sub(",", "", v)
        if (v !~ /^[-+]?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/) bad = "rank " $2 " loss " v " is not finite"
        if (k == 1) first = v; else if (v != first) bad = "losses differ: " first " and " v }
    END { if (k != n) print k + 0 " ranks reported, expected " n; else if (bad) print bad; else print "ok " first }' "$log")
case $verdict in
ok*) echo "loss: ${verdict#ok } on all $ranks ranks (finite, equal)" ;;
*) echo "offload_run.sh: $verdict"; tail -n 5 "$log"; exit 1 ;;
esac

# The last step: its split, and the disk bound of its bytes.
split=$(grep '^split ' "$log" | tail -1)
[ -n "$split" ] || { echo "offload_run.sh: no split line in the output"; exit 1; }
echo "$split" | awk -v rbw="$read_bw" -v wbw="$write_bw" -v wall="$wall" -v max="$max_ratio" '{
    for (i = 3; i < NF; i += 2) v[$i] = $(i + 1)
    printf "step %s: %.3f s = compute %.3f + comm %.3f + io wait %.3f + optimizer %.3f s (rank 0)\n",
        substr($2, 1, length($2) - 1), v["total_s"], v["compute_s"], v["comm_s"], v["io_wait_s"], v["optimizer_s"]
    printf "peak rss: %.2f GiB summed over the ranks (most of one rank %.2f GiB)\n",
        v["rss_sum_kib"] / 2^20, v["rss_max_kib"] / 2^20
    printf "disk traffic of the step, all ranks: read %.3f GB, written %.3f GB%s\n",
        v["io_read_bytes"] / 1e9, v["io_write_bytes"] / 1e9, ("io_engine" in v) ? " (" v["io_engine"] ")" : ""
    printf "whole run: %s s (set-up included)\n", wall
    if (rbw == "" || wbw == "") { print "disk bound: not known (no fio measurement)"; exit 0 }
    bound = v["io_read_bytes"] / rbw + v["io_write_bytes"] / wbw
    if (bound <= 0) { print "disk bound: 0 (the step moved no bytes to or from the disk)"; exit 0 }
    ratio = v["total_s"] / bound
    printf "disk bound: %.3f s; the step takes %.2fx the bound\n", bound, ratio
    if (max != "" && ratio > max + 0) { printf "offload_run.sh: above --max-ratio %s\n", max; exit 3 }
}'
