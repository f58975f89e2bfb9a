#!/bin/bash
# Snapshots across the nodes of a simulated cluster (cluster.sh), with no
# checkpoint on disk: zsh_train --stage 3 --snapshot-every 5 on 2 nodes x 2
# ranks, one zshrun per node, each node's snapshot directory its zshrun's
# own in /dev/shm. Each rank's part is also copied into a rank's of the other
# node, so:
# - the second node lost whole (its zshrun and ranks killed with kill -9):
#   the first node goes on alone at 2 ranks from the snapshot in its own
#   memory, which holds the lost node's parts too;
# - a rank of the second node killed: 3 ranks restore, each from its node.
# In both at most 5 steps are lost, and the losses after the restart equal,
# bit for bit, a job started by hand in the same placement from a copy of
# the snapshot directories taken as the restart began (a resharded resume).
# Prints the time from the kill to the first step after it.
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
cases_begin cluster_snapshot
results_expected=2
names=(the_second_node_lost_whole_the_first_restores_from_its_memory_as_resumed_by_hand
    a_rank_of_the_second_node_killed_three_ranks_restore_from_both_nodes_as_by_hand)
if why=$(cluster_unsupported); then
    for n in "${names[@]}"; do result_skip "$n" "$why"; done
    results_end
    exit 77
fi
cluster_create 2 || { echo "cannot make the cluster" >&2; exit 1; }

model=(--stage 3 --hidden 64 --layers 2 --batch 24 --loss-bits)
steps=40
every=5
export ZSH_TIMEOUT=60
# At the first restart each node's first rank copies its node's snapshot
# directory, before any rank can train (and so snapshot) again, for the job
# by hand. The first start runs far past any step the test kills at
# (--steps 1000), so that it cannot end before its kill however late the
# kill comes; the restart, like the job by hand, stops at restart_stop's
# step, past the kill's.
# shellcheck disable=SC2016 # the ranks' shell expands it
line=$(snapshot_line '$GROUP_RANK')

last_step() { awk '$2 == "step" && $4 == "loss" { s = $3 } END { print s + 0 }' "$log/$1.0.out"; }
started() { # TAG I: start I of job TAG has trained a step
    awk -v i="$2" '$2 == "start" && $3 == i { s = 1 } s && $2 == "step" { f = 1 } END { exit !f }' \
        "$log/$1.0.out"
}
ended() { [ -e "$log/$1.0.rc" ] && [ -e "$log/$1.1.rc" ]; }

# job TAG: zshrun on both nodes in the background, as run_elastic_nodes.sh,
# without --ckpt-dir.
job() {
    local tag=$1 i port=$((20000 + (RANDOM % 20000)))
    for i in 0 1; do
        (
            # shellcheck disable=SC2016 # the node's shell expands it
            cluster_exec $i env SNAP="$log/$tag.snap" STOP="$log/$tag.stop" sh -c 'echo $$ >"$0"; exec "$@"' \
                "$log/$tag.$i.pid" timeout 120 "$zshrun" -n 2 --nnodes 2 --node-rank $i \
                --master-addr "${CLUSTER_ADDRS[0]}" --master-port $port --max-restarts 1 \
                --min-ranks 2 --join-timeout 3 --grace 2 \
                sh -c "$line" "$train" "${model[@]}" --steps 1000 --snapshot-every $every \
                >"$log/$tag.$i.out" 2>"$log/$tag.$i.err"
            echo $? >"$log/$tag.$i.rc"
        ) &
    done
}

ranks_of() { pgrep -P "$(pgrep -P "$(cat "$log/$1.$2.pid")")"; }

# elastic TAG WHAT N: start the job, wait a few steps past a snapshot, kill
# WHAT (node: node 1's zshrun and ranks; rank: one rank of node 1), expect N
# ranks after.
elastic() {
    local tag=$1 what=$2 n=$3 at left resumed pids t0 ms z=
    job "$tag"
    poll 60 started "$tag" 0 || { echo "no step in 60 s: $(cat "$log/$tag".*.err)"; return; }
    at=$((every + 1 + RANDOM % 12))
    poll 60 eval "[ \$(last_step $tag) -ge $at ]" || { echo "step $at not reached"; return; }
    mapfile -t pids < <(ranks_of "$tag" 1)
    [ ${#pids[@]} = 2 ] || { echo "node 1 runs ${#pids[@]} ranks, expected 2"; return; }
    left=$(last_step "$tag")
    t0=$(now_ms)
    if [ "$what" = rank ]; then
        kill -9 "${pids[RANDOM % 2]}"
    else
        z=$(pgrep -P "$(cat "$log/$tag.1.pid")")
        kill -9 "$z" "$(cat "$log/$tag.1.pid")" "${pids[@]}"
    fi
    restart_stop "$tag"
    poll 90 started "$tag" 1 || { echo "no step 90 s after the kill: $(cat "$log/$tag".*.err)"; return; }
    ms=$(($(now_ms) - t0))
    resumed=$(awk '$2 == "start" && $3 == 1 { s = 1 } s && $2 == "resumed" { print $(NF - 3); exit }' \
        "$log/$tag.0.out")
    echo "$tag: kill at step $left, resumed from ${resumed:-nothing} at $n ranks, the first step $ms ms after the kill" >&2
    grep -q "^\[0\] resumed from the snapshot in memory at step" "$log/$tag.0.out" ||
        { echo "not resumed from the snapshot: $(grep -i 'resum\|snapshot restored' "$log/$tag.0.out")"; return; }
    [ $((left - ${resumed:-0})) -le $every ] || echo "$((left - ${resumed:-0})) steps lost, more than $every"
    grep -q "^\[0\] start 1 $n\$" "$log/$tag.0.out" || echo "the restart is not at $n ranks: $(grep start "$log/$tag.0.out")"
    poll 120 ended "$tag" || { echo "the job did not end"; return; }
    # What the killed zshrun could not remove (its ranks are gone).
    [ -z "$z" ] || rm -rf /dev/shm/zshrun-"$z"-*
    [ "$(cat "$log/$tag.0.rc")" = 0 ] || echo "node 0's zshrun exited $(cat "$log/$tag.0.rc"): $(tail -5 "$log/$tag.0.err")"
    # The lost node's parts were in the first node's memory: 3 files a rank.
    f=$(find "$log/$tag.snap.0/step-$(printf %08d "$resumed")" -name '*.bin' | wc -l)
    [ "$f" = 12 ] || echo "node 0 held $f shard files of the restored snapshot, expected 12 (4 ranks x 3)"
    # The bound on memory: the newest snapshot, and at most the next.
    f=$(find "$log/$tag.snap.0" -mindepth 1 -maxdepth 1 -name '*step-*' | wc -l)
    [ "$f" -le 2 ] || echo "node 0 held $f snapshots, more than 2: $(ls -a "$log/$tag.snap.0")"
    if [ "$what" = rank ]; then
        [ "$(cat "$log/$tag.1.rc")" = 0 ] || echo "node 1's zshrun exited $(cat "$log/$tag.1.rc"): $(tail -5 "$log/$tag.1.err")"
        by_hand "$tag" 0 0 1
    else
        by_hand "$tag" 0 0
    fi
}

# by_hand TAG NODES...: a job started by hand (one rank per NODES argument,
# on that node, as the restart placed them), each node restoring from its
# copy of the snapshot directory: the same losses, bit for bit.
by_hand() {
    local tag=$1 a b
    shift
    # shellcheck disable=SC2016 # the node's shell expands it
    run=(sh -c 'ZSH_SNAPSHOT_DIR=$0.$GROUP_RANK exec "$@"' "$log/$tag.snap" "$train" "${model[@]}"
        --steps "$stop" --snapshot-every "$stop" --resume)
    rm -f "$log"/rc.*
    launch_env "$@"
    [ "$(cat "$log/rc.0")" = 0 ] || { echo "the job by hand exited $(cat "$log/rc.0"): $(tail -3 "$log/out.0")"; return; }
    a=$(awk '$2 == "start" && $3 == 1 { s = 1 } s && $2 == "step" && $4 == "loss" { print $3, $5, $7 }' "$log/$tag.0.out")
    b=$(awk '$1 == "step" && $3 == "loss" { print $2, $4, $6 }' "$log/out.0")
    [ -n "$b" ] && [ "$a" = "$b" ] || echo "losses differ from the job by hand: $(diff <(echo "$a") <(echo "$b") | head -4)"
}

result "${names[0]}" "$(elastic node node 2)"
result "${names[1]}" "$(elastic rank rank 3)"
results_end
