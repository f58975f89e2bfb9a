#!/bin/bash
# Snapshots across 3 nodes of a simulated cluster (cluster.sh), where a node
# holds only its own ranks' parts and the previous node's:
# zsh_train --stage 3 --snapshot-every 5 on 3 nodes x 2 ranks, one zshrun
# per node, each node's snapshot directory its zshrun's own in /dev/shm.
# - the middle node lost whole (its zshrun and ranks killed with kill -9), no
#   checkpoint on disk: the other two go on at 4 ranks, the first node
#   fetching from the last the lost node's part that only the last holds;
# - the last node lost whole, no checkpoint on disk: the first two go on,
#   each fetching from the other a part it lacks;
# In both at most 5 steps are lost, and the losses after the restart equal,
# bit for bit, a job started by hand in the same placement from a copy of the
# snapshot directories taken as the restart began (it fetches too, and takes
# no snapshot of its own, so that the fetched files can be counted), both
# trained to step 20 or, where the kill came later, a few steps past it.
# - the middle and last nodes lost at once, with checkpoints on disk: the
#   first node alone lacks the middle node's parts (their copies were on the
#   last), says which, and resumes from the disk.
# Prints the time from the kill to the first step after it, and what the
# restore left in the node's memory.
# Root only: elsewhere each case is skipped with the reason.
# Ends with a GoogleTest-style summary that tests/run_all.sh counts.
set -u
top_builddir=${top_builddir:-.}
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$top_builddir" && pwd)
train=$build/tools/zsh_train
zshrun=$build/tools/zshrun
. "$here/cluster.sh"
# shellcheck source=cases.sh
. "$here/cases.sh"
# shellcheck source=../../harness/poll.sh
. "$here/../../harness/poll.sh"
cases_begin cluster_snapshot_fetch
results_expected=3
names=(the_middle_node_lost_the_first_fetches_its_part_from_the_last_and_goes_on_as_by_hand
    the_last_node_lost_the_first_two_fetch_from_each_other_and_go_on_as_by_hand
    two_nodes_lost_the_survivor_lacks_a_part_says_which_and_resumes_from_the_disk)
if why=$(cluster_unsupported); then
    for n in "${names[@]}"; do result_skip "$n" "$why"; done
    results_end
    exit 77
fi
cluster_create 3 || { echo "cannot make the cluster" >&2; exit 1; }

model=(--stage 3 --hidden 64 --layers 2 --batch 24 --loss-bits)
steps=20
every=5
export ZSH_TIMEOUT=60
# At the first restart each node's first rank copies its node's snapshot
# directory, named by the node's host name, for the job by hand. No rank
# fetches before every rank has entered the restore, so the copies are of
# what the nodes held. The first start runs far past any step the test kills
# at (--steps 1000), so that it cannot end before its kill however late the
# kill comes; the restart, like the job by hand, stops at restart_stop's
# step, past the kill's.
# shellcheck disable=SC2016 # the ranks' shell expands it
line=$(snapshot_line '$(hostname)')

last_step() { awk '$2 == "step" && $4 == "loss" { s = $3 } END { print s + 0 }' "$log/$1.0.out"; }
started() { # TAG I: start I of job TAG has trained a step
    awk -v i="$2" '$2 == "start" && $3 == i { s = 1 } s && $2 == "step" { f = 1 } END { exit !f }' \
        "$log/$1.0.out"
}
ended() { [ -e "$log/$1.0.rc" ] && [ -e "$log/$1.1.rc" ] && [ -e "$log/$1.2.rc" ]; }

# job TAG ARGS...: zshrun on the 3 nodes in the background, zsh_train with
# ARGS besides the model's.
job() {
    local tag=$1 i port=$((20000 + (RANDOM % 20000)))
    shift
    for i in 0 1 2; do
        (
            # shellcheck disable=SC2016 # the node's shell expands it
            cluster_exec $i env SNAP="$log/$tag.snap" STOP="$log/$tag.stop" sh -c 'echo $$ >"$0"; exec "$@"' \
                "$log/$tag.$i.pid" timeout 120 "$zshrun" -n 2 --nnodes 3 --node-rank $i \
                --master-addr "${CLUSTER_ADDRS[0]}" --master-port $port --max-restarts 1 \
                --min-ranks 2 --join-timeout 3 --grace 2 \
                sh -c "$line" "$train" "${model[@]}" --steps 1000 --snapshot-every $every "$@" \
                >"$log/$tag.$i.out" 2>"$log/$tag.$i.err"
            echo $? >"$log/$tag.$i.rc"
        ) &
    done
}

ranks_of() { pgrep -P "$(pgrep -P "$(cat "$log/$1.$2.pid")")"; }

# elastic TAG N NODES... -- ARGS...: start the job with ARGS, wait a few
# steps past a snapshot, kill NODES whole (their zshruns and ranks), expect
# a restart at N ranks; prints what failed. Sets $resumed and $left.
elastic() {
    local tag=$1 n=$2 i t0 ms z pids=() zs=() lost=() victims=()
    shift 2
    while [ "$1" != -- ]; do lost+=("$1"); shift; done
    shift
    job "$tag" "$@"
    poll 60 started "$tag" 0 || { echo "no step in 60 s: $(cat "$log/$tag".*.err)"; return 1; }
    poll 60 eval "[ \$(last_step $tag) -ge $((every + 1 + RANDOM % 4)) ]" ||
        { echo "no step past the first snapshot"; return 1; }
    for i in "${lost[@]}"; do
        mapfile -t pids < <(ranks_of "$tag" "$i")
        [ ${#pids[@]} = 2 ] || { echo "node $i runs ${#pids[@]} ranks, expected 2"; return 1; }
        z=$(pgrep -P "$(cat "$log/$tag.$i.pid")")
        zs+=("$z")
        victims+=("$z" "$(cat "$log/$tag.$i.pid")" "${pids[@]}")
    done
    left=$(last_step "$tag")
    t0=$(now_ms)
    kill -9 "${victims[@]}"
    restart_stop "$tag"
    # What the killed zshruns cannot remove; the survivors never read it.
    for z in "${zs[@]}"; do rm -rf /dev/shm/zshrun-"$z"-*; done
    # A job that ended instead is reported at once.
    poll 90 eval "started $tag 1 || ended $tag"
    started "$tag" 1 || { echo "no step after the kill: $(tail -q -n 3 "$log/$tag".*.err)"; return 1; }
    ms=$(($(now_ms) - t0))
    resumed=$(awk '$2 == "start" && $3 == 1 { s = 1 } s && $2 == "resumed" { print $(NF - 3); exit }' \
        "$log/$tag.0.out")
    echo "$tag: kill at step $left, resumed from ${resumed:-nothing} at $n ranks, the first step $ms ms after the kill; $(grep -o 'snapshot in node memory after the restore.*' "$log/$tag.0.out")" >&2
    grep -q "^\[0\] start 1 $n\$" "$log/$tag.0.out" || {
        echo "the restart is not at $n ranks: $(grep start "$log/$tag.0.out"); the nodes' zshruns said:"
        grep -H "zshrun:" "$log/$tag".*.err | head -n 20
        return 1
    }
    poll 120 ended "$tag" || { echo "the job did not end"; return 1; }
    [ "$(cat "$log/$tag.0.rc")" = 0 ] || { echo "node 0's zshrun exited $(cat "$log/$tag.0.rc"): $(tail -5 "$log/$tag.0.err")"; return 1; }
    return 0
}

# from_snapshot TAG: resumed from the snapshot, at most $every steps lost.
from_snapshot() {
    grep -q "^\[0\] resumed from the snapshot in memory at step" "$log/$1.0.out" ||
        { echo "not resumed from the snapshot: $(grep -ih 'resum\|restore' "$log/$1".*.out "$log/$1".*.err | head -3)"; return 1; }
    [ $((left - ${resumed:-0})) -le $every ] || { echo "$((left - ${resumed:-0})) steps lost, more than $every"; return 1; }
}

# shards TAG NODE: shard files in the copy of NODE's snapshot directory, of
# the restored step.
shards() {
    find "$log/$1.snap.${CLUSTER_HOSTS[$2]}/step-$(printf %08d "$resumed")" -name '*.bin' | wc -l
}

# by_hand TAG BEFORE NODES...: a job started by hand (one rank per NODES
# argument, on that node, as the restart placed them), each node restoring
# from its copy of the snapshot directory: the same losses, bit for bit.
# BEFORE: "NODE:FILES ..." the shard files each copy held, and FILES=AFTER
# what it holds after the fetch.
by_hand() {
    local tag=$1 a b nf want
    local -a expect
    read -r -a expect <<<"$2"
    shift 2
    for want in "${expect[@]}"; do
        nf=$(shards "$tag" "${want%%:*}")
        b=${want#*:}
        [ "$nf" = "${b%%=*}" ] ||
            { echo "the copy of node ${want%%:*} held $nf shard files, expected ${want#*:}"; return; }
    done
    # shellcheck disable=SC2016 # the node's shell expands it
    run=(sh -c 'ZSH_SNAPSHOT_DIR=$0.$(hostname) exec "$@"' "$log/$tag.snap" "$train" "${model[@]}"
        --steps "$stop" --snapshot-every 1000 --resume)
    rm -f "$log"/rc.*
    launch_env "$@"
    [ "$(cat "$log/rc.0")" = 0 ] || { echo "the job by hand exited $(cat "$log/rc.0"): $(tail -3 "$log/out.0")"; return; }
    a=$(awk '$2 == "start" && $3 == 1 { s = 1 } s && $2 == "step" && $4 == "loss" { print $3, $5, $7 }' "$log/$tag.0.out")
    b=$(awk '$1 == "step" && $3 == "loss" { print $2, $4, $6 }' "$log/out.0")
    if [ -z "$b" ] || [ "$a" != "$b" ]; then
        echo "losses differ from the job by hand: $(diff <(echo "$a") <(echo "$b") | head -4)"
        return
    fi
    # The fetched files are in place, and nothing half-written is left.
    for want in "${expect[@]}"; do
        nf=$(shards "$tag" "${want%%:*}")
        [ "$nf" = "${want#*=}" ] || { echo "node ${want%%:*} holds $nf shard files after the fetch, expected ${want#*=}"; return; }
    done
    nf=$(find "$log/$tag".snap.* -name '.fetch-*' | wc -l)
    [ "$nf" = 0 ] || echo "$nf half-fetched files left"
}

# Old shards (6 ranks, 3 files each) a node's ranks read at 4 ranks: the
# first node's two, shards 0-2; the second's, 3-5. Node 0 holds 0, 1 and
# its buddies' copies of the last node's 4, 5; node 1 holds 2, 3, 0, 1;
# node 2 holds 4, 5, 2, 3.
middle() {
    elastic mid 4 1 -- || return
    from_snapshot mid || return
    # Node 0 fetches shard 2; node 2 holds all it reads.
    by_hand mid "0:12=15 2:12=12" 0 0 2 2
}

last() {
    elastic last 4 2 -- || return
    from_snapshot last || return
    # Node 0 fetches shard 2 from node 1, node 1 shards 4 and 5 from node 0.
    by_hand last "0:12=15 1:12=18" 0 0 1 1
}

two() {
    elastic two 2 1 2 -- --ckpt-dir "$log/two.ck" --ckpt-every 5 || return
    grep -q "^\[0\] no snapshot restored (.*no node left holds shard 2 of the snapshot step-.*); resuming from $log/two.ck" "$log/two.0.out" ||
        { echo "no fallback naming the shard lost: $(grep -h 'restor\|resum' "$log"/two.*.out "$log"/two.*.err | head -4)"; return; }
    grep -q "^\[0\] resumed from $log/two.ck at step" "$log/two.0.out" || echo "not resumed from the disk"
}

result "${names[0]}" "$(middle)"
result "${names[1]}" "$(last)"
result "${names[2]}" "$(two)"
results_end
