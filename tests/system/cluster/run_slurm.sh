#!/bin/bash
# A real Slurm on the simulated cluster (cluster.sh): munged in the root
# namespace, slurmctld on node 0 and a slurmd in each node's namespaces, from
# a slurm.conf made here (no cgroups: proctrack/linuxproc, task/none), its
# state, spool and temporary directories in this run's log directory. Jobs of
# zsh_train then train on 2 nodes x 2 ranks: under srun --mpi=pmix (the PMIx
# bootstrap forced), from an sbatch script, and by zshrun --slurm in an
# sbatch script and under salloc. Each must place ranks 0-1 on node 0 and 2-3
# on node 1 and give the lone process's losses, falling. Before that, without
# Slurm running, zshrun --slurm's reading of a step's variables and its
# refusals. Everything started here is stopped, and everything made removed,
# on any exit. Where Slurm cannot run (not root, no namespaces, packages
# missing, daemons that do not come up) the Slurm cases are skipped with the
# reason and the script exits 77. Ends with a GoogleTest-style summary that
# tests/run_all.sh counts.
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
cases_begin slurm
steps=12
slurm_cases=(srun_mpi_pmix_job_trains_4_ranks_on_2_nodes
    sbatch_job_trains_4_ranks_on_2_nodes
    zshrun_slurm_in_an_sbatch_script_trains_across_the_allocation
    zshrun_slurm_under_salloc_trains_across_the_allocation)
results_expected=$((4 + ${#slurm_cases[@]}))
munged_pid=
trap 'slurm_stop; cluster_destroy; rm -rf "$log"' EXIT

# --- zshrun --slurm without Slurm running: a step's variables as srun sets them.

# A configuration scontrol can read to expand a host list (it contacts no one).
printf 'ClusterName=zshtest\nSlurmctldHost=localhost\nNodeName=zn[07-08]\n' >"$log/mini.conf"
step_env=(SLURM_JOB_ID=5 SLURM_STEP_ID=3 SLURM_STEP_NUM_NODES=2 SLURM_STEP_NUM_TASKS=2
    SLURM_NODEID=1 "SLURM_STEP_NODELIST=zn[07-08]" "SLURM_CONF=$log/mini.conf"
    ZSH_JOB_KEY=0123456789abcdef0123456789abcdef)

# refused WANT_RC NEEDLE ENV... -- ARGS...: zshrun exits WANT_RC naming NEEDLE.
refused() {
    local want=$1 needle=$2 rc
    shift 2
    local -a env=()
    while [ "$1" != -- ]; do env+=("$1"); shift; done
    shift
    env -u SLURM_JOB_ID -u SLURM_STEP_ID "${env[@]}" timeout 20 "$zshrun" "$@" \
        >"$log/z.out" 2>"$log/z.err"
    rc=$?
    [ $rc = "$want" ] || echo "zshrun $*: exit $rc, expected $want: $(cat "$log/z.err")"
    grep -qF -- "$needle" "$log/z.err" || echo "zshrun $*: no '$needle' in: $(cat "$log/z.err")"
    [ ! -s "$log/z.out" ] || echo "zshrun $*: ran something: $(cat "$log/z.out")"
}

step_vars() {
    local want
    if ! command -v scontrol >/dev/null; then
        echo "no scontrol on PATH (Debian: slurm-client)"
        return
    fi
    # Node 1 of 2 runs ranks 2 and 3; rank 0's host is the list's first; the
    # port is 20000 + (job * 64 + step) mod 12768, the same on every node.
    env "${step_env[@]}" timeout 20 "$zshrun" --slurm -n 2 sh -c \
        'echo "$RANK $LOCAL_RANK $WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE $MASTER_ADDR $MASTER_PORT"' \
        >"$log/z.out" 2>"$log/z.err" || echo "zshrun exited $?: $(cat "$log/z.err")"
    want=$(printf '[2] 2 0 4 1 2 zn07 20323\n[3] 3 1 4 1 2 zn07 20323')
    [ "$(sort "$log/z.out")" = "$want" ] ||
        echo "ranks saw: $(cat "$log/z.out"); expected: $want"
}
result_check zshrun_slurm_in_a_step_takes_nodes_rank_and_master_from_slurm step_vars
result_check zshrun_slurm_outside_a_job_is_refused_naming_SLURM_JOB_ID \
    refused 2 SLURM_JOB_ID -- --slurm true
result_check zshrun_slurm_in_a_step_of_several_tasks_per_node_is_refused \
    refused 2 "--ntasks-per-node=1" "${step_env[@]}" SLURM_STEP_NUM_TASKS=4 -- --slurm -n 2 true
result_check zshrun_slurm_with_nnodes_or_node_rank_is_refused \
    refused 2 "--nnodes is not given with it" -- --slurm --nnodes 2 true

# --- A real Slurm.

skip_slurm() {
    local name
    for name in "${slurm_cases[@]}"; do
        result_skip "$name" "$1"
    done
    results_end || exit 1
    exit 77
}

slurm_unsupported() {
    local tool
    cluster_unsupported && return 0
    for tool in munged slurmctld slurmd srun sbatch salloc scontrol sinfo; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "no $tool on PATH (Debian: slurmctld, slurmd, slurm-client, munge)"
            return 0
        fi
    done
    if ! unshare --mount --propagation private true 2>/dev/null; then
        echo "unshare --mount fails here (each node needs its own /etc/hosts)"
        return 0
    fi
    return 1
}

# node_run I COMMAND...: COMMAND in node I, seeing the cluster's /etc/hosts
# (a mount namespace of its own), as a node of a real cluster resolves the
# others' names. The daemons run this way, and so does what they start.
node_run() {
    local i=$1
    shift
    cluster_exec "$i" unshare --mount --propagation private \
        sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$log/hosts" "$@"
}

slurm_stop() {
    # slurmctld, the slurmd and every job step live in the nodes' network
    # namespaces, which cluster_destroy empties; munged lives in the root one.
    if [ -n "$munged_pid" ]; then
        kill "$munged_pid" 2>/dev/null
        munged_pid=
    fi
}

# slurm_start: munged, slurmctld, a slurmd per node, every node idle; on
# failure says why (for the skip).
slurm_start() {
    local i s=$log/slurm
    mkdir -p "$s/munge" "$s/state" "$s/log"
    chmod 700 "$s/munge"
    head -c 1024 /dev/urandom >"$s/munge/key"
    chmod 600 "$s/munge/key"
    if ! munged --force --socket="$s/munge/sock" --key-file="$s/munge/key" \
        --log-file="$s/munge/log" --pid-file="$s/munge/pid" --seed-file="$s/munge/seed" \
        >"$s/munge/out" 2>&1; then
        echo "munged did not start: $(cat "$s/munge/out" "$s/munge/log" 2>/dev/null | tail -3)"
        return 1
    fi
    munged_pid=$(cat "$s/munge/pid" 2>/dev/null)
    if ! poll 10 test -S "$s/munge/sock"; then
        echo "munged made no socket in 10 s: $(tail -3 "$s/munge/log")"
        return 1
    fi
    printf '127.0.0.1 localhost\n' >"$log/hosts"
    {
        echo "ClusterName=$CLUSTER_PREFIX"
        echo "SlurmctldHost=${CLUSTER_HOSTS[0]}(${CLUSTER_ADDRS[0]})"
        echo "SlurmUser=root"
        echo "AuthType=auth/munge"
        echo "AuthInfo=socket=$s/munge/sock"
        echo "CredType=cred/munge"
        # No cgroups: the nodes share the machine's, and CI may have none.
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "SelectType=select/linear"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "MpiDefault=none"
        echo "StateSaveLocation=$s/state"
        echo "SlurmdSpoolDir=$s/spool/%n"
        # The PMIx plugin makes its clients' directory under TmpFS, named by
        # job and step only: the nodes, which share one file system, each
        # need their own.
        echo "TmpFS=$s/tmp/%n"
        echo "SlurmctldPidFile=$s/slurmctld.pid"
        echo "SlurmdPidFile=$s/slurmd.%n.pid"
        echo "SlurmctldLogFile=$s/log/slurmctld.log"
        echo "SlurmdLogFile=$s/log/slurmd.%n.log"
        # The nodes' CPUs as written here, not as the machine has them: the
        # nodes share its cores.
        echo "SlurmdParameters=config_overrides"
        echo "ReturnToService=2"
        echo "MessageTimeout=10"
        echo "KillWait=2"
        echo "InactiveLimit=0"
        for ((i = 0; i < CLUSTER_SIZE; i++)); do
            echo "NodeName=${CLUSTER_HOSTS[i]} NodeAddr=${CLUSTER_ADDRS[i]} CPUs=2 State=UNKNOWN"
            echo "${CLUSTER_ADDRS[i]} ${CLUSTER_HOSTS[i]}" >>"$log/hosts"
            mkdir -p "$s/spool/${CLUSTER_HOSTS[i]}" "$s/tmp/${CLUSTER_HOSTS[i]}"
        done
        echo "PartitionName=all Nodes=ALL Default=YES MaxTime=10 State=UP"
    } >"$s/slurm.conf"
    export SLURM_CONF=$s/slurm.conf
    if ! node_run 0 slurmctld >"$s/log/slurmctld.out" 2>&1; then
        echo "slurmctld did not start: $(tail -3 "$s/log/slurmctld.out" "$s/log/slurmctld.log" 2>/dev/null)"
        return 1
    fi
    if ! poll 20 eval 'node_run 0 scontrol ping 2>/dev/null | grep -q "is UP"'; then
        echo "slurmctld not up in 20 s: $(tail -3 "$s/log/slurmctld.log" 2>/dev/null)"
        return 1
    fi
    for ((i = 0; i < CLUSTER_SIZE; i++)); do
        if ! node_run "$i" slurmd >"$s/log/slurmd.$i.out" 2>&1; then
            echo "slurmd on node $i did not start: $(tail -3 "$s/log/slurmd.$i.out" \
                "$s/log/slurmd.${CLUSTER_HOSTS[i]}.log" 2>/dev/null)"
            return 1
        fi
    done
    if ! poll 30 eval '[ "$(node_run 0 sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)" = "$CLUSTER_SIZE" ]'; then
        echo "not every node idle in 30 s: $(node_run 0 sinfo -N 2>&1 | tail -3)" \
            "$(tail -2 "$s"/log/slurmd.*.log 2>/dev/null)"
        return 1
    fi
}

if why=$(slurm_unsupported); then
    skip_slurm "$why"
fi
if ! cluster_create 2 >"$log/create.out" 2>&1; then
    skip_slurm "cluster_create 2: $(cat "$log/create.out")"
fi
if ! slurm_start >"$log/why"; then
    skip_slurm "$(cat "$log/why")"
fi
echo "slurm: $CLUSTER_PREFIX, ${CLUSTER_HOSTS[*]} idle"

# The lone process's losses, which every job must give.
timeout 120 "$train" --steps $steps >"$log/ref" 2>&1

# trained FILE: FILE (a job's output, zshrun's "[RANK] " prefixes allowed)
# shows ranks 0-1 on node 0 and 2-3 on node 1, and the lone losses, falling.
trained() {
    local map="rank map: 4 ranks on 2 nodes, 2 per node, block; ${CLUSTER_HOSTS[0]}=0-1 ${CLUSTER_HOSTS[1]}=2-3"
    if ! grep -qF "$map" "$1"; then
        echo "no '$map' in the output: $(grep -F 'rank map' "$1" | head -1)"
        tail -5 "$1"
        return
    fi
    paste <(awk '$1 == "step" { print $4 }' "$log/ref") \
        <(sed 's/^\[[0-9]*\] //' "$1" | awk '$1 == "step" { print $4 }') | awk -F'\t' -v n=$steps '
        function num(x) { return x ~ /^[-+]?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ }
        { if (!num($1) || !num($2) || ($1 - $2) > 1e-4 * (1 + $1) || ($2 - $1) > 1e-4 * (1 + $1)) bad = NR; k++ }
        NR == 1 { first = $2 } { last = $2 }
        END { if (k != n) print "got " k + 0 " steps of " n;
              else if (bad) print "step " bad " differs from the lone process";
              else if (!(last < first - 0.3)) print "loss did not fall: " first " -> " last }'
}

# ran NAME RC FILE: the result of a job that exited RC with output FILE.
ran() {
    if [ "$2" != 0 ]; then
        result "$1" "exit $2: $(grep -v DEBUG "$3" | tail -8)"
    else
        result "$1" "$(trained "$3")"
    fi
}

train_args=(--steps "$steps")
export ZSH_LOG_LEVEL=info ZSH_TIMEOUT=60

# srun: the PMIx plugin starts the 4 ranks, which must join through PMIx.
node_run 0 env ZSH_BOOTSTRAP=pmix timeout 120 srun --mpi=pmix -t 2 -N 2 -n 4 \
    "$train" "${train_args[@]}" >"$log/srun.out" 2>&1
ran srun_mpi_pmix_job_trains_4_ranks_on_2_nodes $? "$log/srun.out"

# batch JOBNAME BODY: submit a script of BODY on 2 nodes, wait for its end
# (at most 120 s), its output in $log/JOBNAME.out; the job's exit status.
batch() {
    local name=$1 rc
    printf '#!/bin/bash\n#SBATCH -N 2\n#SBATCH -t 2\n%s\n' "$2" >"$log/$name.sh"
    node_run 0 timeout 120 sbatch --wait -J "$name" -o "$log/$name.out" "$log/$name.sh" \
        >"$log/$name.sbatch" 2>&1
    rc=$?
    if [ $rc = 124 ]; then
        node_run 0 scancel -n "$name" 2>/dev/null
        echo "sbatch --wait: no end in 120 s" >>"$log/$name.out"
    fi
    return $rc
}

batch sbatch_train "ZSH_BOOTSTRAP=pmix srun --mpi=pmix -n 4 $train ${train_args[*]}"
ran sbatch_job_trains_4_ranks_on_2_nodes $? "$log/sbatch_train.out"

# zshrun --slurm in the script (outside any step): it starts itself on both
# nodes through srun, each starting 2 ranks.
batch sbatch_zshrun "$zshrun --slurm -n 2 $train ${train_args[*]}"
ran zshrun_slurm_in_an_sbatch_script_trains_across_the_allocation $? "$log/sbatch_zshrun.out"

node_run 0 timeout 120 salloc -N 2 -t 2 "$zshrun" --slurm -n 2 "$train" "${train_args[@]}" \
    >"$log/salloc.out" 2>&1
ran zshrun_slurm_under_salloc_trains_across_the_allocation $? "$log/salloc.out"

results_end
