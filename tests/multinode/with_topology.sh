#!/usr/bin/env bash
# with_topology.sh [--keep-going] -- COMMAND [ARGS...]
#
# Builds a two-"host" test network on this machine, runs COMMAND in the root namespace with the
# topology described in the environment, and always tears the network down again (trap on EXIT,
# INT, TERM, HUP), whether COMMAND passed, failed or the script was interrupted. Exits with
# COMMAND's status.
#
# The topology (X: a free subnet index, taken under a lock so that concurrent runs differ):
#
#   root namespace: bridge smn<pid>br holding 10.218.X.254/24
#     |-- veth smn<pid>a0 <-> eth0 in namespace smn<pid>a: 10.218.X.1/24, UTS name smn<pid>-a
#     '-- veth smn<pid>b0 <-> eth0 in namespace smn<pid>b: 10.218.X.2/24, UTS name smn<pid>-b
#
# Each namespace stands for one host: its own address and (through the launch agent) its own
# host name, so Open MPI and Gloo see two hosts. Before COMMAND runs, the script checks that the
# root namespace reaches both hosts, that each host reaches the other and reaches the root
# namespace's address, and that the agent gives each host its own name.
#
# COMMAND sees:
#   STRATA_MN_HOST_A, STRATA_MN_HOST_B  the hosts' addresses (10.218.X.1, 10.218.X.2)
#   STRATA_MN_NAME_A, STRATA_MN_NAME_B  their UTS host names
#   STRATA_MN_ROOT_ADDR                 the bridge's address in the root namespace (10.218.X.254)
#   STRATA_MN_SUBNET                    10.218.X.0/24 (for btl_tcp_if_include and the like)
#   STRATA_MN_AGENT                     the launch agent: AGENT HOST SHELL_COMMAND... runs the
#                                       command (words joined by spaces, as ssh does) through
#                                       `sh -c` on HOST (an address or a UTS name), stdin kept
#   STRATA_MN_AGENT_LOG                 the agent appends "HOST NAMESPACE" per launch here
#   STRATA_MN_DIR                       a scratch folder, removed at the end
#   STRATA_MN_LINK                      how the hosts' links are shaped (below), or "unshaped"
#
# Without the rights or the tools to build the network (not root, no iproute2, no unshare, no
# veth or bridge support) it prints "SKIP: ..." and exits 77, which the tests' SKIP_RETURN_CODE
# reports as skipped. Any other failure while building or checking the network exits 1.
# STRATA_MN_SUBNET_FIRST (default 10) is the first index tried.
#
# A real network is slower than veth pairs through a bridge. STRATA_MN_LINK_RATE (tc's units, e.g.
# 10gbit) shapes each host's outgoing link (its eth0) to that rate with tbf; STRATA_MN_LINK_DELAY
# (e.g. 25us) adds that one-way delay with netem (rate and delay both: one netem qdisc). A kernel
# without the qdisc fails the run naming it ("Specified qdisc kind is unknown"), it never runs
# unshaped. COMMAND sees STRATA_MN_LINK ("rate 10gbit delay 25us", or "unshaped").
set -uo pipefail

skip() {
  echo "SKIP: cannot create network namespaces ($*)"
  exit 77
}
die() {
  echo "with_topology.sh: $*" >&2
  exit 1
}

[[ ${1:-} == -- ]] || die "usage: with_topology.sh -- COMMAND [ARGS...]"
shift
[[ $# -gt 0 ]] || die "usage: with_topology.sh -- COMMAND [ARGS...]"

[[ $(id -u) -eq 0 ]] || skip "not root"
for tool in ip unshare hostname flock timeout; do
  command -v "$tool" >/dev/null 2>&1 || skip "no $tool (iproute2 / util-linux)"
done

tag=smn$$
ns_a=${tag}a ns_b=${tag}b bridge=${tag}br
name_a=${tag}-a name_b=${tag}-b
work=$(mktemp -d "${TMPDIR:-/tmp}/strata-multinode.$$.XXXXXX") || die "mktemp failed"
lock_fd=""

teardown() {
  local status=$?
  trap - EXIT INT TERM HUP
  ip netns del "$ns_a" 2>/dev/null  # takes its end of the veth pair with it, and so the pair
  ip netns del "$ns_b" 2>/dev/null
  ip link del "${tag}a0" 2>/dev/null
  ip link del "${tag}b0" 2>/dev/null
  ip link del "$bridge" 2>/dev/null
  rm -rf "$work"
  exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Leftovers of runs that were killed outright (SIGKILL skips the trap): namespaces, links and
# scratch folders named after a pid that no longer exists.
for ns in $(ip netns list 2>/dev/null | sed -n 's/^\(smn[0-9]*[ab]\)\( .*\)\{0,1\}$/\1/p'); do
  pid=${ns#smn}
  pid=${pid%[ab]}
  [[ -d /proc/$pid ]] || ip netns del "$ns" 2>/dev/null
done
for link in $(ip -o link show 2>/dev/null | sed -n 's/^[0-9]*: \(smn[0-9]*\(br\|a0\|b0\)\)[@:].*/\1/p'); do
  pid=${link#smn}
  pid=${pid%??}
  [[ -d /proc/$pid ]] || ip link del "$link" 2>/dev/null
done

for dir in "${TMPDIR:-/tmp}"/strata-multinode.[0-9]*.*; do
  pid=${dir##*/strata-multinode.}
  pid=${pid%%.*}
  [[ -d $dir && ! -d /proc/$pid ]] && rm -rf "$dir"
done

# A subnet index no other run holds (the lock lives as long as this shell) and no interface uses.
subnet=""
for ((x = ${STRATA_MN_SUBNET_FIRST:-10}; x < 250; ++x)); do
  exec {fd}>"${TMPDIR:-/tmp}/strata-multinode-subnet-$x.lock" || continue
  if flock -n "$fd"; then
    if ! ip -4 -o addr show | grep -q " 10\.218\.$x\."; then
      subnet=$x
      lock_fd=$fd
      break
    fi
  fi
  exec {fd}>&-
done
[[ -n $subnet ]] || die "no free subnet 10.218.X.0/24 (X from ${STRATA_MN_SUBNET_FIRST:-10} to 249)"
net=10.218.$subnet
host_a=$net.1 host_b=$net.2 root_addr=$net.254

# The first step decides between "cannot" (skip) and "broken" (fail).
ip netns add "$ns_a" 2>"$work/err" || skip "ip netns add: $(head -c 300 "$work/err")"
ip link add "$bridge" type bridge 2>"$work/err" || skip "bridge: $(head -c 300 "$work/err")"
ip link add "${tag}a0" type veth peer name "${tag}a1" 2>"$work/err" ||
  skip "veth: $(head -c 300 "$work/err")"
ip netns add "$ns_b" || die "ip netns add $ns_b failed"
ip link add "${tag}b0" type veth peer name "${tag}b1" || die "veth for $ns_b failed"

run() { "$@" || die "failed: $*"; }
run ip addr add "$root_addr/24" dev "$bridge"
run ip link set "$bridge" up
for side in a b; do
  ns_var=ns_$side host_var=host_$side
  ns=${!ns_var} addr=${!host_var}
  run ip link set "${tag}${side}1" netns "$ns"
  run ip -n "$ns" link set "${tag}${side}1" name eth0
  run ip -n "$ns" addr add "$addr/24" dev eth0
  run ip -n "$ns" link set eth0 up
  run ip -n "$ns" link set lo up
  run ip link set "${tag}${side}0" master "$bridge"
  run ip link set "${tag}${side}0" up
done

# The hosts' links, shaped as asked (tbf's burst: 256 KiB, above a 64 KiB GSO segment; its queue:
# 10 ms at the rate before it drops).
link="unshaped"
rate=${STRATA_MN_LINK_RATE:-} delay=${STRATA_MN_LINK_DELAY:-}
if [[ -n $rate || -n $delay ]]; then
  if [[ -n $delay ]]; then
    qdisc=(netem delay "$delay" ${rate:+rate "$rate"})
  else
    qdisc=(tbf rate "$rate" burst 256kb latency 10ms)
  fi
  for ns in "$ns_a" "$ns_b"; do
    tc -n "$ns" qdisc add dev eth0 root "${qdisc[@]}" 2>"$work/err" ||
      die "STRATA_MN_LINK_RATE='$rate' STRATA_MN_LINK_DELAY='$delay': tc qdisc add dev eth0 root ${qdisc[*]} failed: $(head -c 300 "$work/err")"
  done
  link="${rate:+rate $rate}${rate:+${delay:+ }}${delay:+delay $delay}"
fi

# The launch agent, with this run's addresses, names and namespaces written in. It first checks the
# host is reachable from here, as ssh needs it to be.
agent=$work/agent.sh
agent_log=$work/agent.log
: >"$agent_log"
cat >"$agent" <<EOF
#!/bin/sh
# Launch agent for the test topology $tag: AGENT HOST COMMAND... runs COMMAND (its words joined
# by spaces, as ssh joins them) through sh -c inside HOST's network namespace and in a UTS
# namespace of its own named after HOST, with stdin, stdout and stderr passed through.
host=\$1
shift
case \$host in
  $host_a|$name_a) ns=$ns_a name=$name_a addr=$host_a ;;
  $host_b|$name_b) ns=$ns_b name=$name_b addr=$host_b ;;
  *) echo "agent: unknown host '\$host' (this topology has $host_a and $host_b)" >&2; exit 255 ;;
esac
# As ssh would, the agent needs the network: a host whose link is down (tests/multinode's link cut)
# does not answer. A connect to port 9 is refused at once when packets go both ways; a timeout or
# no route means the host is cut off.
probe=\$(LC_ALL=C timeout 3 bash -c "exec 3<>/dev/tcp/\$addr/9" 2>&1)
if [ \$? -eq 124 ] || echo "\$probe" | grep -Eq "No route|unreachable"; then
  echo "ssh: connect to host \$host port 22: Connection timed out" >&2
  exit 255
fi
echo "\$host \$ns" >>"$agent_log"
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$name && \$*"
EOF
chmod 755 "$agent"

# Reachability, without ping: a TCP connect to a closed port answers "connection refused" only
# when the packets went both ways; no route or a silent drop times out instead.
reach() {  # reach FROM_NS|root ADDR
  local from=$1 addr=$2 out
  local probe="exec 3<>/dev/tcp/$addr/9"
  if [[ $from == root ]]; then
    out=$(timeout 5 bash -c "$probe" 2>&1)
  else
    out=$(timeout 5 ip netns exec "$from" bash -c "$probe" 2>&1)
  fi
  if [[ $? -eq 0 || $out == *"refused"* ]]; then
    return 0
  fi
  die "no connectivity from $from to $addr: ${out:-timed out}"
}
reach root "$host_a"
reach root "$host_b"
reach "$ns_a" "$host_b"
reach "$ns_b" "$host_a"
reach "$ns_a" "$root_addr"
reach "$ns_b" "$root_addr"
got_a=$("$agent" "$host_a" hostname </dev/null) || die "the agent failed on $host_a"
got_b=$("$agent" "$host_b" hostname </dev/null) || die "the agent failed on $host_b"
[[ $got_a == "$name_a" && $got_b == "$name_b" ]] ||
  die "the agent's host names are '$got_a' and '$got_b', not $name_a and $name_b"
stdin_back=$(echo secret | "$agent" "$host_b" cat) || die "the agent failed on $host_b"
[[ $stdin_back == secret ]] || die "the agent did not pass stdin through (got '$stdin_back')"
: >"$agent_log"
echo "with_topology.sh: $name_a=$host_a ($ns_a), $name_b=$host_b ($ns_b), bridge $bridge=$root_addr; reachable both ways; links $link"

export STRATA_MN_HOST_A=$host_a STRATA_MN_HOST_B=$host_b
export STRATA_MN_NAME_A=$name_a STRATA_MN_NAME_B=$name_b
export STRATA_MN_ROOT_ADDR=$root_addr STRATA_MN_SUBNET=$net.0/24 STRATA_MN_LINK=$link
export STRATA_MN_AGENT=$agent STRATA_MN_AGENT_LOG=$agent_log STRATA_MN_DIR=$work
# COMMAND runs in a process group of its own (setsid), to which a signal to this script is
# passed on as SIGTERM (mpirun then stops its ranks; a shell's children go with it), and the
# network goes once COMMAND has ended.
setsid "$@" {lock_fd}>&- &
child=$!
stop() {
  kill -TERM -- "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null
  wait "$child"
  exit "$1"
}
trap 'stop 130' INT
trap 'stop 143' TERM
trap 'stop 129' HUP
wait "$child"
