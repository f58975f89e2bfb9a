#!/bin/bash
# zshrun --max-restarts across the nodes of a simulated cluster (cluster.sh):
# zsh_train --stage 3 on 2 nodes x 2 ranks, one zshrun per node, checkpoints
# on the file system the nodes share. A rank of the second node killed with
# kill -9: the two zshruns agree on 3 ranks (the first node's two, then the
# second's one, renumbered) and the job resumes from the newest complete
# checkpoint. The second node lost whole (its zshrun and ranks killed with
# kill -9): the first node's zshrun waits --join-timeout for it, then goes on
# alone at 2 ranks. The first node lost whole (every process in it, its
# zshrun, rank 0 and rank 0's store included): the second node's zshrun
# finds it gone, coordinates in its place and goes on alone at 2 ranks as
# the new first node, rank 0's store moved to it. Both ranks of the first
# node killed, its zshrun left running: it still coordinates, hands rank 0
# to the second node and ends; the second goes on alone at 2 ranks as the
# first node has. The first node lost whole again, with snapshots in node
# memory in place of checkpoints: the second restores from the copies it
# holds of the first's parts. In each the losses after
# the restart and the final checkpoint's bytes equal a job resumed by hand
# at that many ranks from the same step, bit for bit, and at most
# --ckpt-every steps are lost.
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
cases_begin cluster_elastic
results_expected=5
names=(a_rank_killed_on_the_second_node_the_nodes_agree_on_three_ranks_and_resume_as_by_hand
    the_second_node_lost_whole_the_first_goes_on_alone_as_resumed_by_hand
    the_first_node_lost_whole_the_second_takes_over_rank_0_and_goes_on_as_resumed_by_hand
    both_ranks_of_the_first_node_killed_it_hands_rank_0_to_the_second_which_goes_on_as_by_hand
    the_first_node_lost_whole_the_second_restores_its_snapshot_copies_and_goes_on_as_by_hand)
if why=$(cluster_unsupported); then
    for n in "${names[@]}"; do result_skip "$n" "$why"; done
    results_end
    exit 77
fi
cluster_create 2 || { echo "cannot make the cluster" >&2; exit 1; }

model=(--stage 3 --hidden 64 --layers 2 --batch 24)
steps=60
every=5
export ZSH_TIMEOUT=60
# Rank 0 marks each start; a start with a checkpoint resumes from it.
# shellcheck disable=SC2016
line='[ "$RANK" = 0 ] && echo "start $ZSH_RESTART_COUNT $WORLD_SIZE"
exec "$0" "$@" $([ -e "$CK/latest" ] && echo --resume)'
# With snapshots: at the restart the node's first rank copies its snapshot
# directory, before any rank can snapshot again, for the job by hand.
# shellcheck disable=SC2016
line_snap='[ "$RANK" = 0 ] && echo "start $ZSH_RESTART_COUNT $WORLD_SIZE"
[ "$ZSH_RESTART_COUNT" = 1 ] && [ "$LOCAL_RANK" = 0 ] && cp -a "$ZSH_SNAPSHOT_DIR" "$SNAP"
exec "$0" "$@" $([ "$ZSH_RESTART_COUNT" != 0 ] && echo --resume)'

last_step() { awk '$2 == "step" && $4 == "loss" { s = $3 } END { print s + 0 }' "$log/$1.0.out"; }
started() { # TAG I [NODE]: start I of job TAG has trained a step (rank 0 on NODE, default 0)
    awk -v i="$2" '$2 == "start" && $3 == i { s = 1 } s && $2 == "step" { f = 1 } END { exit !f }' \
        "$log/$1.${3:-0}.out"
}
ended() { [ -e "$log/$1.0.rc" ] && [ -e "$log/$1.1.rc" ]; }

# job TAG [snap]: zshrun on both nodes in the background, saving checkpoints
# (or snapshots); each node's output in $log/TAG.I.out and .err, its
# zshrun's pid in TAG.I.pid, its status in TAG.I.rc.
job() {
    local tag=$1 i port=$((20000 + (RANDOM % 20000))) sh=$line
    local save=(--ckpt-dir "$log/$tag.ck" --ckpt-every "$every")
    if [ "${2:-}" = snap ]; then
        sh=$line_snap save=(--snapshot-every "$every")
    fi
    for i in 0 1; do
        (
            # shellcheck disable=SC2016 # the node's shell expands it
            cluster_exec $i env CK="$log/$tag.ck" SNAP="$log/$tag.snap" sh -c 'echo $$ >"$0"; exec "$@"' \
                "$log/$tag.$i.pid" timeout 120 "$zshrun" -n 2 --nnodes 2 --node-rank $i \
                --master-addr "${CLUSTER_ADDRS[0]}" --master-port $port --max-restarts 1 \
                --min-ranks 2 --join-timeout 3 --grace 2 \
                sh -c "$sh" "$train" "${model[@]}" --steps $steps "${save[@]}" \
                >"$log/$tag.$i.out" 2>"$log/$tag.$i.err"
            echo $? >"$log/$tag.$i.rc"
        ) &
    done
}

# The ranks of node I's zshrun (timeout runs zshrun, which runs them).
ranks_of() { pgrep -P "$(pgrep -P "$(cat "$log/$1.$2.pid")")"; }

# elastic TAG WHAT N: start the job, wait a few steps, kill WHAT (rank: one
# rank of node 1; node: node 1's zshrun and ranks; first: every process of
# node 0; ranks0: node 0's ranks; firstsnap: every process of node 0, with
# snapshots), expect N ranks after.
elastic() {
    local tag=$1 what=$2 n=$3 at left resumed pids t0 ms z="" r0=0 keep=0 p
    case $what in first | ranks0 | firstsnap) r0=1 keep=1 ;; esac
    job "$tag" "$([ "$what" = firstsnap ] && echo snap)"
    poll 60 started "$tag" 0 || { echo "no step in 60 s: $(cat "$log/$tag".*.err)"; return; }
    at=$(($(last_step "$tag") + 3 + RANDOM % 10))
    # Past the first save, so that there is something to resume from (under
    # AddressSanitizer a kill at step 5 came before the first checkpoint).
    [ $at -gt $every ] || at=$((every + 1 + RANDOM % 3))
    poll 60 eval "[ \$(last_step $tag) -ge $at ]" || { echo "step $at not reached"; return; }
    mapfile -t pids < <(ranks_of "$tag" 1)
    [ ${#pids[@]} = 2 ] || { echo "node 1 runs ${#pids[@]} ranks, expected 2"; return; }
    left=$(last_step "$tag")
    t0=$(now_ms)
    if [ "$what" = rank ]; then
        kill -9 "${pids[RANDOM % 2]}"
    elif [ "$what" = node ]; then
        z=$(pgrep -P "$(cat "$log/$tag.1.pid")")
        kill -9 "$z" "$(cat "$log/$tag.1.pid")" "${pids[@]}"
    elif [ "$what" = ranks0 ]; then
        mapfile -t pids < <(ranks_of "$tag" 0)
        kill -9 "${pids[@]}"
    else
        # Everything in node 0's namespace but the holder, which keeps it.
        z=$(pgrep -P "$(cat "$log/$tag.0.pid")")
        for p in $(ip netns pids "${CLUSTER_HOSTS[0]}"); do
            [ "$p" = "${CLUSTER_PIDS[0]}" ] || kill -9 "$p"
        done
    fi
    poll 90 started "$tag" 1 $r0 || { echo "no step 90 s after the kill: $(cat "$log/$tag".*.err)"; return; }
    ms=$(($(now_ms) - t0))
    resumed=$(awk '$2 == "start" && $3 == 1 { s = 1 } s && $2 == "resumed" { print $(NF - 3); exit }' \
        "$log/$tag.$r0.out")
    echo "$tag: kill at step $left, resumed from ${resumed:-nothing} at $n ranks, the first step $ms ms after the kill" >&2
    [ $((left - ${resumed:-0})) -le $every ] || echo "$((left - ${resumed:-0})) steps lost, more than $every"
    grep -q "^\[0\] start 1 $n\$" "$log/$tag.$r0.out" || echo "the restart is not at $n ranks: $(grep start "$log/$tag.$r0.out")"
    poll 120 ended "$tag" || { echo "the job did not end"; return; }
    # The snapshot directory the killed zshrun made and could not remove.
    [ -z "$z" ] || rm -rf /dev/shm/zshrun-"$z"-*
    [ "$(cat "$log/$tag.$keep.rc")" = 0 ] || echo "node $keep's zshrun exited $(cat "$log/$tag.$keep.rc"): $(tail -5 "$log/$tag.$keep.err")"
    if [ "$what" = rank ]; then
        [ "$(cat "$log/$tag.1.rc")" = 0 ] || echo "node 1's zshrun exited $(cat "$log/$tag.1.rc"): $(tail -5 "$log/$tag.1.err")"
        grep -q '^zshrun: restart 1 of 1 as node 1 of 2 with ranks 2 to 2 of 3 (1 here lost)$' \
            "$log/$tag.1.err" || echo "node 1 did not restart as rank 2 of 3: $(cat "$log/$tag.1.err")"
    fi
    if [ "$what" = ranks0 ]; then
        grep -q '^zshrun: not restarting here: no rank left on this node; the job goes on on 1 node$' \
            "$log/$tag.0.err" || echo "node 0 did not hand the job on: $(cat "$log/$tag.0.err")"
    fi
    if [ "$what" != rank ] && [ "$what" != node ]; then
        grep -q '^zshrun: restart 1 of 1 as node 0 of 1 with ranks 0 to 1 of 2 (0 here lost)$' \
            "$log/$tag.1.err" || echo "node 1 did not restart as ranks 0 to 1 of 2: $(cat "$log/$tag.1.err")"
    fi
    if [ "$what" = rank ]; then
        by_hand "$tag" "$resumed" 0 0 0 1
    elif [ "$what" = node ]; then
        by_hand "$tag" "$resumed" 0 0 0
    elif [ "$what" = firstsnap ]; then
        grep -q "^\[0\] resumed from the snapshot in memory at step" "$log/$tag.1.out" ||
            { echo "not resumed from the snapshot: $(grep -i 'resum' "$log/$tag.1.out")"; return; }
        by_snapshot "$tag"
    else
        # Rank 0's store is on node 1 now.
        launch_vars=(MASTER_ADDR="${CLUSTER_ADDRS[1]}")
        by_hand "$tag" "$resumed" 1 1 1
        launch_vars=()
    fi
}

# by_hand TAG S R0 NODES...: a job started by hand (one rank per NODES
# argument, on that node, as the restart placed them) from step S of a copy
# of TAG's checkpoints: the same losses as TAG's rank 0 printed on node R0,
# the same final checkpoint.
by_hand() {
    local tag=$1 s=$2 r0=$3 ref=$1.ref a b f=0 last
    shift 3
    last=step-$(printf %08d $steps)
    [ -n "$s" ] || { echo "the restart resumed from nothing"; return; }
    cp -a "$log/$tag.ck" "$log/$ref.ck"
    rm -rf "${log:?}/$ref.ck/$last"
    printf 'step-%08d\n' "$s" >"$log/$ref.ck/latest"
    run=("$train" "${model[@]}" --steps "$steps" --ckpt-dir "$log/$ref.ck" --ckpt-every "$steps"
        --resume)
    rm -f "$log"/rc.*
    launch_env "$@"
    [ "$(cat "$log/rc.0")" = 0 ] || { echo "the job by hand exited $(cat "$log/rc.0"): $(tail -3 "$log/out.0")"; return; }
    a=$(awk '$2 == "start" && $3 == 1 { s = 1 } s && $2 == "step" && $4 == "loss" { print $3, $5 }' "$log/$tag.$r0.out")
    b=$(awk '$1 == "step" && $3 == "loss" { print $2, $4 }' "$log/out.0")
    [ -n "$b" ] && [ "$a" = "$b" ] || echo "losses differ from the job by hand: $(diff <(echo "$a") <(echo "$b") | head -4)"
    for b in "$log/$ref.ck/$last"/*.bin; do
        cmp -s "$b" "$log/$tag.ck/$last/${b##*/}" || echo "${b##*/} differs"
        f=$((f + 1))
    done
    [ $f = $((3 * $#)) ] || echo "$f shard files, expected $((3 * $#))"
}

# by_snapshot TAG: 2 ranks on node 1 started by hand from the copy of its
# snapshot directory taken at TAG's restart: the same losses as TAG's.
by_snapshot() {
    local tag=$1 a b
    # shellcheck disable=SC2016 # the node's shell expands it
    run=(sh -c 'ZSH_SNAPSHOT_DIR=$0 exec "$@"' "$log/$tag.snap" "$train" "${model[@]}"
        --steps "$steps" --snapshot-every "$steps" --resume)
    rm -f "$log"/rc.*
    launch_vars=(MASTER_ADDR="${CLUSTER_ADDRS[1]}")
    launch_env 1 1
    [ "$(cat "$log/rc.0")" = 0 ] || { echo "the job by hand exited $(cat "$log/rc.0"): $(tail -3 "$log/out.0")"; return; }
    a=$(awk '$2 == "start" && $3 == 1 { s = 1 } s && $2 == "step" && $4 == "loss" { print $3, $5 }' "$log/$tag.1.out")
    b=$(awk '$1 == "step" && $3 == "loss" { print $2, $4 }' "$log/out.0")
    [ -n "$b" ] && [ "$a" = "$b" ] || echo "losses differ from the job by hand: $(diff <(echo "$a") <(echo "$b") | head -4)"
}

result "${names[0]}" "$(elastic rank rank 3)"
result "${names[1]}" "$(elastic node node 2)"
result "${names[2]}" "$(elastic first first 2)"
result "${names[3]}" "$(elastic ranks0 ranks0 2)"
result "${names[4]}" "$(elastic firstsnap firstsnap 2)"
results_end
