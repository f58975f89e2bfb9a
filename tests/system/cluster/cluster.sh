#!/bin/bash
# A simulated cluster on one machine: K "nodes", each a network, UTS and IPC
# namespace with its own host name, joined by a Linux bridge through veth
# pairs, optionally rate-limited with tc tbf. Root only.
#
# Sourced, it gives functions (cluster_create, cluster_exec, cluster_bytes,
# cluster_destroy, ...); run, it is a command:
#   cluster.sh run K [RATE] -- COMMAND...   make K nodes, run COMMAND in the
#                                           root namespace with CLUSTER_* set,
#                                           remove everything when it ends
#   cluster.sh shell K [RATE]               the same with an interactive shell
#   cluster.sh cleanup [PREFIX|--all]       remove what killed runs left behind
#                                           (those whose creator is gone)
#
# What a node is: a holder process ("sleep") started in fresh network, UTS
# and IPC namespaces. The network namespace is also attached as a named one
# (ip netns), so "ip netns exec", "ip -n" and "ip netns pids" work on it.
# cluster_exec runs a command in all three namespaces of a node (nsenter), so
# it sees the node's host name, which is what ZeroShard's rank map and Open
# MPI take for the node's identity. The IPC namespace is what tells UCX's
# shared-memory transports that two nodes are different machines: they
# compare the kernel's boot id, the same for every node here, and the IPC
# namespace. PID and mount namespaces are shared: /dev/shm, memfd and
# process_vm_readv can still cross nodes, so a transport that used them
# across nodes would not be stopped by the simulation (what a test wants to
# see).
#
# Everything is named after a prefix unique to the run ("zshc" and 4 hex
# digits): nodes ${prefix}n0.. (host names and netns names), the bridge
# ${prefix}br, the root-side veth ends ${prefix}v0.., a state directory
# /run/zsh-cluster/${prefix}. Addresses live only inside the nodes, in a
# private /24 picked per run (10.X.Y.0/24, X in 200..249); the bridge has
# none, so nothing in the root namespace routes to the cluster, and a
# launcher that must reach its daemons (mpirun) runs inside node 0.
#
# cluster_create installs an EXIT, INT and TERM trap that removes the
# cluster. A sourcing script with traps of its own sets CLUSTER_TRAPS=0 and
# calls cluster_destroy in its EXIT trap (and exits on INT and TERM).

CLUSTER_STATE_ROOT=${CLUSTER_STATE_ROOT:-/run/zsh-cluster}

# Why this machine cannot host a cluster, or nothing.
cluster_unsupported() {
    local tool
    if [ "$(id -u)" != 0 ]; then
        echo "needs root (network namespaces, a bridge, tc)"
        return 0
    fi
    for tool in ip unshare nsenter tc; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "no $tool on PATH"
            return 0
        fi
    done
    if ! unshare --net --uts --ipc true 2>/dev/null; then
        echo "unshare --net --uts --ipc fails here (no namespace support or not allowed)"
        return 0
    fi
    # A name of this script's own: scripts that probe at once (make check
    # runs them side by side) found one name taken and skipped every case.
    if ! ip link add "zshcp$$" type bridge 2>/dev/null; then
        echo "cannot create a bridge (ip link add type bridge)"
        return 0
    fi
    ip link del "zshcp$$" 2>/dev/null
    return 1
}

# The IPC namespace's option for unshare or nsenter; CLUSTER_IPC=0 leaves
# the nodes in the root IPC namespace (to see what a transport does when
# only the host name tells nodes apart).
_cluster_ipc() {
    [ "${CLUSTER_IPC:-1}" = 0 ] && return 0
    if [ "$1" = unshare ]; then echo --ipc; else echo -i; fi
}

_cluster_log() {
    [ -n "${CLUSTER_VERBOSE:-}" ] && echo "cluster: $*" >&2
    return 0
}

# A 10.X.Y.0/24 no route of the root namespace and no live cluster uses.
_cluster_pick_subnet() {
    local net used
    used=$(cat "$CLUSTER_STATE_ROOT"/*/subnet 2>/dev/null)
    for _ in $(seq 1 50); do
        net="10.$((200 + RANDOM % 50)).$((RANDOM % 256))"
        if ip -4 route show table all 2>/dev/null | grep -q "\b${net//./\\.}\." ||
            ip -4 addr show 2>/dev/null | grep -q " ${net//./\\.}\." ||
            grep -qx "$net" <<<"$used"; then
            continue
        fi
        echo "$net"
        return 0
    done
    return 1
}

# cluster_create K [RATE]: make K nodes; RATE (a tc rate: 1gbit, 100mbit)
# limits each node's link in both directions. Sets CLUSTER_PREFIX,
# CLUSTER_SIZE, CLUSTER_DIR (the state directory), CLUSTER_HOSTS[i] (host
# names), CLUSTER_ADDRS[i] (addresses), CLUSTER_PIDS[i] (holders),
# CLUSTER_LINKS[i] (root-side veth ends) and CLUSTER_AGENT (an rsh agent for
# mpirun). Returns non-zero, having removed what it made, on failure.
cluster_create() {
    local k=$1 rate=${2:-} i prefix net burst=${CLUSTER_BURST:-512kb}
    if ! [[ "$k" =~ ^[1-9][0-9]*$ ]] || [ "$k" -gt 200 ]; then
        echo "cluster_create: node count '$k' is not in 1..200" >&2
        return 2
    fi
    mkdir -p "$CLUSTER_STATE_ROOT" || return 1
    # The state directory is the lock on the prefix: mkdir either makes it or fails.
    for _ in $(seq 1 20); do
        prefix=$(printf 'zshc%04x' $((RANDOM % 65536)))
        ip netns list 2>/dev/null | grep -q "^${prefix}n" && continue
        ip link show "${prefix}br" >/dev/null 2>&1 && continue
        mkdir "$CLUSTER_STATE_ROOT/$prefix" 2>/dev/null && break
        prefix=
    done
    if [ -z "$prefix" ]; then
        echo "cluster_create: no free prefix under $CLUSTER_STATE_ROOT" >&2
        return 1
    fi
    CLUSTER_PREFIX=$prefix
    CLUSTER_DIR=$CLUSTER_STATE_ROOT/$prefix
    CLUSTER_SIZE=0
    CLUSTER_HOSTS=()
    CLUSTER_ADDRS=()
    CLUSTER_PIDS=()
    CLUSTER_LINKS=()
    echo $$ >"$CLUSTER_DIR/owner"
    if [ "${CLUSTER_TRAPS:-1}" != 0 ]; then
        CLUSTER_TRAPPED=1
        trap 'cluster_destroy' EXIT
        trap '_cluster_signal INT' INT
        trap '_cluster_signal TERM' TERM
    fi

    if ! net=$(_cluster_pick_subnet); then
        echo "cluster_create: no free 10.X.Y.0/24" >&2
        cluster_destroy
        return 1
    fi
    echo "$net" >"$CLUSTER_DIR/subnet"
    CLUSTER_SUBNET=$net.0/24
    if ! ip link add "${prefix}br" type bridge || ! ip link set "${prefix}br" up; then
        echo "cluster_create: cannot create the bridge ${prefix}br" >&2
        cluster_destroy
        return 1
    fi
    for ((i = 0; i < k; i++)); do
        if ! _cluster_add_node "$i" "$net" "$rate" "$burst"; then
            echo "cluster_create: node $i failed" >&2
            cluster_destroy
            return 1
        fi
        CLUSTER_SIZE=$((i + 1))
    done
    _cluster_write_agent
    _cluster_log "$prefix: $k nodes on $CLUSTER_SUBNET${rate:+, links at $rate}"
    return 0
}

# Node I on subnet NET: holder, netns name, veth pair, address, tbf.
_cluster_add_node() {
    local i=$1 net=$2 rate=$3 burst=$4 prefix=$CLUSTER_PREFIX pid name n
    name="${prefix}n$i"
    # The holder sets the host name, brings loopback up and turns IPv6 off (its
    # duplicate address detection would only add traffic to the links), then
    # sleeps until cluster_destroy kills it.
    # It is started from a subshell, so it is no child of the caller's: a
    # plain "wait" there does not wait for it.
    # shellcheck disable=SC2046 # _cluster_ipc gives one option or none
    pid=$(unshare --net --uts $(_cluster_ipc unshare) sh -c "hostname $name && ip link set lo up &&
        sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1;
        exec sleep 2147483647" </dev/null >/dev/null 2>&1 & echo $!)
    echo "$pid" >>"$CLUSTER_DIR/pids"
    CLUSTER_PIDS[i]=$pid
    # Wait until it has its own host name, which it sets after unsharing.
    for n in $(seq 1 100); do
        [ "$(nsenter -t "$pid" -u hostname 2>/dev/null)" = "$name" ] && break
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.05
    done
    [ "$(nsenter -t "$pid" -u hostname 2>/dev/null)" = "$name" ] || return 1
    ip netns attach "$name" "$pid" || return 1
    echo "$name" >>"$CLUSTER_DIR/netns"
    ip link add "${prefix}v$i" type veth peer name "${prefix}p$i" || return 1
    ip link set "${prefix}p$i" netns "$name" || return 1
    ip -n "$name" link set "${prefix}p$i" name eth0 || return 1
    ip -n "$name" addr add "$net.$((i + 1))/24" dev eth0 || return 1
    ip -n "$name" link set eth0 up || return 1
    ip link set "${prefix}v$i" master "${prefix}br" up || return 1
    if [ -n "$rate" ]; then
        # Root-side egress is the node's ingress; the node's egress is its own.
        tc qdisc add dev "${prefix}v$i" root tbf rate "$rate" burst "$burst" latency 100ms ||
            return 1
        ip netns exec "$name" tc qdisc add dev eth0 root tbf rate "$rate" burst "$burst" \
            latency 100ms || return 1
    fi
    CLUSTER_HOSTS[i]=$name
    CLUSTER_ADDRS[i]=$net.$((i + 1))
    CLUSTER_LINKS[i]=${prefix}v$i
    echo "$i $name $net.$((i + 1)) $pid" >>"$CLUSTER_DIR/nodes"
}

# The rsh agent mpirun's plm_rsh_agent calls as "agent [options] HOST CMD...":
# runs CMD through sh inside HOST's namespaces (HOST: a node's host name or
# address), as ssh would.
_cluster_write_agent() {
    CLUSTER_AGENT=$CLUSTER_DIR/rsh-agent
    cat >"$CLUSTER_AGENT" <<EOF
#!/bin/bash
# mpirun's rsh agent for cluster $CLUSTER_PREFIX: runs a command in a node.
while [ \$# -gt 0 ] && [[ "\$1" == -* ]]; do
    case "\$1" in -o|-l|-p) shift ;; esac
    shift
done
host=\$1
shift
while read -r i name addr pid; do
    if [ "\$host" = "\$name" ] || [ "\$host" = "\$addr" ]; then
        exec nsenter -t "\$pid" -n -u $(_cluster_ipc nsenter) -- sh -c "\$*"
    fi
done <"$CLUSTER_DIR/nodes"
echo "rsh agent: no node \$host in cluster $CLUSTER_PREFIX" >&2
exit 255
EOF
    chmod +x "$CLUSTER_AGENT"
}

# cluster_exec I COMMAND...: run COMMAND in node I (its network, UTS and IPC
# namespaces), in the caller's directory and environment.
cluster_exec() {
    local i=$1
    shift
    # shellcheck disable=SC2046 # _cluster_ipc gives one option or none
    nsenter -t "${CLUSTER_PIDS[$i]}" -n -u $(_cluster_ipc nsenter) -- "$@"
}

# cluster_bytes I: "RX TX" of node I's link as the node sees it: bytes the
# node received and bytes it sent (the root-side end counts them the other
# way round).
cluster_bytes() {
    local dev=/sys/class/net/${CLUSTER_LINKS[$1]}/statistics
    echo "$(cat "$dev/tx_bytes") $(cat "$dev/rx_bytes")"
}

# cluster_link I up|down: take node I's link down or up (both ends).
cluster_link() {
    ip link set "${CLUSTER_LINKS[$1]}" "$2" &&
        ip -n "${CLUSTER_HOSTS[$1]}" link set eth0 "$2"
}

# Kill every process in netns NAME: TERM, then KILL after a grace period.
_cluster_kill_netns() {
    local name=$1 pids n
    for n in 1 2 3 4 5 6 7 8 9 10 11 12; do
        pids=$(ip netns pids "$name" 2>/dev/null)
        [ -z "$pids" ] && return 0
        if [ "$n" -le 6 ]; then
            kill -TERM $pids 2>/dev/null
        else
            kill -KILL $pids 2>/dev/null
        fi
        sleep 0.1
    done
}

# Remove the cluster in state directory DIR (default: this shell's).
_cluster_destroy_dir() {
    local dir=$1 prefix name pid
    prefix=$(basename "$dir")
    [[ "$prefix" =~ ^zshc[0-9a-f]{4}$ ]] || return 1
    # The process group of the command "cluster.sh run" started, if it still
    # leads it (a killed run's command lives on in the root namespace).
    pid=$(cat "$dir/group" 2>/dev/null)
    if [ -n "$pid" ] && [ "$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{ print $3 }')" = "$pid" ]; then
        kill -TERM -- "-$pid" 2>/dev/null
    fi
    # Every process in a node's network namespace: ranks, mpirun, orted, the holder.
    for name in $(cat "$dir/netns" 2>/dev/null) $(ip netns list 2>/dev/null |
        awk -v p="$prefix" 'index($1, p "n") == 1 { print $1 }'); do
        _cluster_kill_netns "$name"
        ip netns del "$name" 2>/dev/null
    done
    # Holders whose namespace was never attached, also one still setting its
    # node up (its shell names the node) when the creation gave up on it.
    for pid in $(cat "$dir/pids" 2>/dev/null); do
        if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" |
            grep -qE "^sleep 2147483647|^sh -c hostname ${prefix}n"; then
            kill -KILL "$pid" 2>/dev/null
        fi
    done
    # A veth end dies with its peer's namespace; remove any left in the root one.
    for name in $(ip -o link show 2>/dev/null | awk -F': ' '{ print $2 }' | sed 's/@.*//' |
        grep "^${prefix}"); do
        ip link del "$name" 2>/dev/null
    done
    rm -rf "$dir"
}

# On INT or TERM: stop the command "cluster.sh run" started, remove the
# cluster, and die of the same signal.
_cluster_signal() {
    [ -n "${CLUSTER_CHILD:-}" ] && kill -TERM -- "-$CLUSTER_CHILD" 2>/dev/null
    cluster_destroy
    trap - "$1"
    kill -"$1" $$
}

# cluster_destroy: remove this shell's cluster, if any. Safe to call twice.
cluster_destroy() {
    [ -n "${CLUSTER_DIR:-}" ] || return 0
    _cluster_log "removing $CLUSTER_PREFIX"
    _cluster_destroy_dir "$CLUSTER_DIR"
    CLUSTER_DIR=
    CLUSTER_SIZE=0
    if [ -n "${CLUSTER_TRAPPED:-}" ]; then
        CLUSTER_TRAPPED=
        trap - EXIT INT TERM
    fi
}

# cluster_cleanup [PREFIX|--all]: remove leftovers of killed runs: every
# cluster whose creating shell is gone, PREFIX's whatever its state, or with
# --all every one. Also named namespaces and links of the zshcXXXX pattern
# without a state directory.
cluster_cleanup() {
    local what=${1:-} dir owner prefix
    for dir in "$CLUSTER_STATE_ROOT"/zshc*; do
        [ -d "$dir" ] || continue
        prefix=$(basename "$dir")
        owner=$(cat "$dir/owner" 2>/dev/null)
        if [ "$what" = --all ] || [ "$what" = "$prefix" ] ||
            { [ -z "$what" ] && ! kill -0 "$owner" 2>/dev/null; }; then
            echo "cluster: removing $prefix"
            _cluster_destroy_dir "$dir"
        fi
    done
    for prefix in $({ ip netns list 2>/dev/null | awk '{ print $1 }'
        ip -o link show 2>/dev/null | awk -F': ' '{ print $2 }'; } |
        sed -n 's/^\(zshc[0-9a-f]\{4\}\).*/\1/p' | sort -u); do
        [ -d "$CLUSTER_STATE_ROOT/$prefix" ] && continue
        if [ -z "$what" ] || [ "$what" = --all ] || [ "$what" = "$prefix" ]; then
            echo "cluster: removing $prefix (no state directory)"
            mkdir -p "$CLUSTER_STATE_ROOT/$prefix"
            _cluster_destroy_dir "$CLUSTER_STATE_ROOT/$prefix"
        fi
    done
}

# cluster_env: the CLUSTER_* variables a command run by "cluster.sh run" gets.
_cluster_export() {
    export CLUSTER_PREFIX CLUSTER_DIR CLUSTER_SIZE CLUSTER_AGENT CLUSTER_SUBNET
    export CLUSTER_IPC=${CLUSTER_IPC:-1}
    export CLUSTER_HOSTS_LIST="${CLUSTER_HOSTS[*]}" CLUSTER_ADDRS_LIST="${CLUSTER_ADDRS[*]}"
    export CLUSTER_PIDS_LIST="${CLUSTER_PIDS[*]}" CLUSTER_LINKS_LIST="${CLUSTER_LINKS[*]}"
}

# cluster_attach: in a command run by "cluster.sh run", rebuild the arrays
# from the exported lists (without taking over the removal).
cluster_attach() {
    read -r -a CLUSTER_HOSTS <<<"$CLUSTER_HOSTS_LIST"
    read -r -a CLUSTER_ADDRS <<<"$CLUSTER_ADDRS_LIST"
    read -r -a CLUSTER_PIDS <<<"$CLUSTER_PIDS_LIST"
    read -r -a CLUSTER_LINKS <<<"$CLUSTER_LINKS_LIST"
}

_cluster_main() {
    local cmd=${1:-} k rate why
    shift
    case "$cmd" in
    run | shell)
        k=${1:-}
        shift
        rate=
        if [ $# -gt 0 ] && [ "$1" != -- ]; then
            rate=$1
            shift
        fi
        [ "${1:-}" = -- ] && shift
        if why=$(cluster_unsupported); then
            echo "cluster: $why" >&2
            return 77
        fi
        cluster_create "$k" "$rate" || return 1
        _cluster_export
        echo "cluster $CLUSTER_PREFIX: ${CLUSTER_HOSTS[*]} at ${CLUSTER_ADDRS[*]}; rsh agent $CLUSTER_AGENT" >&2
        if [ "$cmd" = shell ]; then
            PS1="[$CLUSTER_PREFIX] \\w\\$ " bash --norc -i
        else
            # In the background, so that a signal's trap runs at once (bash
            # defers traps while a foreground command runs), and in a process
            # group of its own, which the trap stops whole.
            setsid "$@" &
            CLUSTER_CHILD=$!
            echo "$CLUSTER_CHILD" >"$CLUSTER_DIR/group"
            wait "$CLUSTER_CHILD"
        fi
        ;;
    cleanup)
        cluster_cleanup "${1:-}"
        ;;
    *)
        sed -n '2,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
        return 2
        ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    _cluster_main "$@"
    exit $?
fi
