#!/usr/bin/env bash
# Usage: bench/allreduce/run_multinode.sh <build-dir> [bench options]
# The allreduce benchmark on 2 "hosts" x 2 ranks: two network namespaces joined by a bridge
# (tests/multinode/with_topology.sh builds them, and tears them down however the run ends), each
# with its own address and host name, ranks 0-1 on the first and 2-3 on the second, started by
# mpirun through the topology's launch agent. Between the hosts Open MPI uses TCP over the veth
# pairs; inside one host its shared-memory transport. Columns as in run.sh: raw MPI_Allreduce,
# the MPI plugin flat (its shm path cannot span hosts, so plugin-shm is MPI too here) and
# hierarchical (plugin-hier: two levels, reduce-scatter through each host's shared memory, every
# local rank allreducing its slice across hosts, allgather through shared memory), and the gloo
# plugin flat and hierarchical (the same two levels) up to 64 MiB. Ends with
#   headline hier_vs_flat_2x2_min=R mpi_hier_vs_flat_2x2_min=M gloo_vs_mpi_2x2_min=G
#            gloo_flat_vs_mpi_2x2_min=F gloo_vs_torch_gloo_2x2_min=T mpi_plugin_vs_mpi_2x2_1kib=P
# R: the lowest gloo-hier/gloo bus-bandwidth ratio from 64 KiB up; M: the same for plugin-hier/
# plugin-mpi (plugin-hier's two levels are the MPI plugin's default on 2 x 2); G: the lowest ratio
# of the Gloo backend as configured by default to MPI from 64 KiB up ("nan" when the gloo plugin
# is not built): on 2 x 2 the gloo plugin's default
# ("hierarchical": "auto") is the two-level form (every host holds the same number of ranks, more
# than one; tests/multinode's strata_run_2x2.gloo_default_manifest checks its create line), so G
# reads the gloo-hier column; F: the same for the flat gloo column; T: the lowest ratio of that
# default form to torch.distributed's gloo over every size, torch's allreduce run by
# peer_allreduce.py --impl torch-gloo under PEER_PYTHON (a Python with torch) right after the
# bench on the same 2x2 ranks ("nan", saying why, without PEER_PYTHON); P: the MPI plugin's
# 1 KiB allreduce on its flat path (plugin-mpi: shm and hierarchical off) over raw MPI's ("nan"
# when the run has no 1 KiB row). Sizes run up to 64 MiB unless --max-bytes is given.
# With --collective reduce_scatter or allgather the keys start with rs_ or ag_ (no torch column). Needs root (network namespaces);
# says SKIP and exits 77 otherwise.
# On a shared machine run it as `chrt -r 1 bench/allreduce/run_multinode.sh build`.
# The veth links are far faster than a real network: STRATA_MN_LINK_RATE=10gbit (and, where the
# kernel has netem, STRATA_MN_LINK_DELAY=25us) shapes each host's outgoing link
# (tests/multinode/with_topology.sh); the run prints "links: ..." before its rows.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: run_multinode.sh <build-dir> [bench options]}
build=$(cd "$build" && pwd)
shift
bench="$build/bin/strata_allreduce_bench"
if [[ ! -x $bench ]]; then
  echo "run_multinode.sh: $bench not found; build the target strata_allreduce_bench" >&2
  exit 1
fi

if [[ -z ${STRATA_MN_AGENT:-} ]]; then
  exec "$root/tests/multinode/with_topology.sh" -- "$0" "$build" "$@"
fi

# Inside the topology.
options=("$@")
[[ " $* " == *" --max-bytes "* ]] || options+=(--max-bytes $((64 << 20)))
export MASTER_ADDR=$STRATA_MN_HOST_A  # rank 0's host
# A fresh namespace: nothing listens there yet. Below the ephemeral range, so that none of the
# flat instance's Gloo connections can hold MASTER_PORT + 1 or + 2 when the others bind them.
read -r low _ </proc/sys/net/ipv4/ip_local_port_range || low=32768
export MASTER_PORT=$((10000 + RANDOM % (low - 10003)))
export STRATA_JOB_SECRET
STRATA_JOB_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
# mpi_yield_when_idle: each "host" has 2 slots, so Open MPI does not know that 4 ranks share this
# machine's cores and would busy-poll; measured on the 2-core VM, that made a 1 KiB allreduce
# take milliseconds (0.000 GB/s) and 256 KiB 0.007 GB/s, against 0.024 and 1.0 GB/s yielding.
launch_2x2() {
  mpirun --allow-run-as-root --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 \
    -H "$STRATA_MN_HOST_A:2,$STRATA_MN_HOST_B:2" -np 4 \
    --mca plm_rsh_agent "$STRATA_MN_AGENT" \
    --mca btl_tcp_if_include "$STRATA_MN_SUBNET" --mca oob_tcp_if_include "$STRATA_MN_SUBNET" \
    --mca btl_vader_single_copy_mechanism none --mca rtc_hwloc_vmhole none \
    -x MASTER_ADDR -x MASTER_PORT -x STRATA_JOB_SECRET -x GLOO_SOCKET_IFNAME "$@"
}
# Each namespace's one interface (torch's gloo would otherwise pick one by the host name).
export GLOO_SOCKET_IFNAME=eth0
echo "links: ${STRATA_MN_LINK:-unshaped}"
out=$(launch_2x2 "$bench" "${options[@]}")
echo "$out" | grep -v '^headline'
line=$(echo "$out" | grep '^headline ' || true)
[[ -n $line ]] || { echo "run_multinode.sh: no headline from the 2x2 run" >&2; exit 1; }
key() { echo "$line" | sed -n "s/.* $1=\([0-9.a-z+-]*\).*/\1/p"; }
# --collective reduce_scatter / allgather: the bench's keys and this headline's carry rs_ / ag_,
# and torch's gloo (an allreduce peer) is not run.
collective=$(printf '%s\n' "${options[@]}" | awk 'prev == "--collective" { v = $1 } { prev = $1 } END { print v }')
case $collective in
  reduce_scatter) p=rs_ ;;
  allgather) p=ag_ ;;
  *) p="" ;;
esac
launched=$(sort -u "$STRATA_MN_AGENT_LOG" | awk '{print $1}' | tr '\n' ' ')
echo "# hosts started through the agent: $launched"
# The table's column named $1 (its header line starts with "bytes"; the gloo columns are there
# only when the gloo plugin ran), or nothing.
column() { echo "$out" | awk -v name="$1" '$1 == "bytes" { for (i = 2; i <= NF; i++) if ($i == name) { print i; exit } }'; }
gloo_col=$(column gloo-hier)   # the Gloo backend's default form here (see above)
flat_col=$(column gloo)
# Column $1 over mpi from 64 KiB up ("nan" without the column; the bench's own key covers every
# size).
over_mpi_64k() {
  [[ -n $1 ]] || { echo nan; return; }
  echo "$out" | awk -v c="$1" '$1 ~ /^[0-9]+$/ && $1 >= 65536 && $c != "-" { r = $c / $2; if (min == "" || r < min) min = r } END { if (min == "") print "nan"; else printf "%.2f", min }'
}
gloo64=$(over_mpi_64k "$gloo_col")
gloo_flat64=$(over_mpi_64k "$flat_col")
plugin_1kib=$(echo "$out" | awk -v c="$(column plugin-mpi)" '$1 == 1024 && c != "" { r = sprintf("%.2f", $c / $2) } END { print r == "" ? "nan" : r }')

# torch.distributed's gloo on the same ranks and sizes: per size, the gloo plugin's busbw in its
# default form (the bench's gloo-hier column) over torch's, the flat gloo column beside it.
torch_ratio=nan
max_bytes=$(printf '%s\n' "${options[@]}" | awk 'prev == "--max-bytes" { v = $1 } { prev = $1 } END { print v }')
min_bytes=$(printf '%s\n' "${options[@]}" | awk 'prev == "--min-bytes" { v = $1 } { prev = $1 } END { print v + 0 ? v : 1024 }')
if [[ -n $p ]]; then
  echo "torch gloo: not run (--collective $collective; the peer times allreduce)"
elif [[ -z $gloo_col ]]; then
  echo "torch gloo: not run (the gloo plugin was not built)"
elif [[ -z ${PEER_PYTHON:-} ]]; then
  echo "torch gloo: not run (set PEER_PYTHON to a Python with torch)"
elif ! "$PEER_PYTHON" -c "import torch.distributed" > /dev/null 2>&1; then
  echo "torch gloo: not run ($PEER_PYTHON cannot import torch.distributed)"
else
  MASTER_PORT=$((MASTER_PORT + 3))
  if torch_out=$(launch_2x2 "$PEER_PYTHON" "$root/bench/allreduce/peer_allreduce.py" \
                 --impl torch-gloo --min-bytes "$min_bytes" --max-bytes "$max_bytes" 2>&1); then
    echo "gloo plugin vs torch.distributed gloo, 2x2 (busbw GB/s)"
    printf '%12s %12s %12s %12s %10s %10s\n' bytes gloo gloo-flat torch-gloo gloo/torch flat/torch
    # The table, then one line with the lowest gloo/torch ratio.
    table=$( { echo "$out" | awk -v g="$gloo_col" -v f="$flat_col" '$1 ~ /^[0-9]+$/ && $g != "-" { print "strata", $1, $g; print "flat", $1, $f }'
               echo "$torch_out" | awk '$1 == "torch-gloo" { print "torch", $2, $3 }'; } |
      sort -k2,2n | awk '
        { v[$1, $2] = $3; if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } }
        END {
          for (i = 1; i <= n; i++) {
            b = order[i]
            if (!((("strata", b) in v) && (("torch", b) in v))) continue
            r = v["strata", b] / v["torch", b]
            printf "%12d %12.3f %12.3f %12.3f %10.2f %10.2f\n", b, v["strata", b], v["flat", b],
                   v["torch", b], r, v["flat", b] / v["torch", b]
            if (m == "" || r < m) m = r
          }
          if (m == "") print "nan"; else printf "%.2f\n", m
        }')
    echo "$table" | sed '$d'
    torch_ratio=$(echo "$table" | tail -1)
  else
    echo "$torch_out" | tail -5
    echo "torch gloo: the 2x2 run failed"
  fi
fi
if [[ -n $p ]]; then
  echo "headline ${p}hier_vs_flat_2x2_min=$(key ${p}hier_vs_flat_64kib_up) ${p}mpi_hier_vs_flat_2x2_min=$(key ${p}mpi_hier_vs_flat_64kib_up) ${p}gloo_vs_mpi_2x2_min=$gloo64 ${p}gloo_flat_vs_mpi_2x2_min=$gloo_flat64"
else
  echo "headline hier_vs_flat_2x2_min=$(key hier_vs_flat_64kib_up) mpi_hier_vs_flat_2x2_min=$(key mpi_hier_vs_flat_64kib_up) gloo_vs_mpi_2x2_min=$gloo64 gloo_flat_vs_mpi_2x2_min=$gloo_flat64 gloo_vs_torch_gloo_2x2_min=$torch_ratio mpi_plugin_vs_mpi_2x2_1kib=$plugin_1kib"
fi
