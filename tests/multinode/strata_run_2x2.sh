#!/usr/bin/env bash
# strata_run_2x2.sh STRATA_RUN BACKEND -- PROGRAM [ARGS...]
# Inside with_topology.sh: runs PROGRAM as 2 hosts x 2 ranks through strata-run and the
# topology's launch agent, on the topology's subnet. Exits with strata-run's status.
# STRATA_MN_SLOTS_B (default 2) gives the second host fewer ranks: uneven hosts.
set -euo pipefail
run=${1:?usage: strata_run_2x2.sh STRATA_RUN BACKEND -- PROGRAM [ARGS...]}
backend=${2:?usage: strata_run_2x2.sh STRATA_RUN BACKEND -- PROGRAM [ARGS...]}
[[ ${3:-} == -- ]] || { echo "strata_run_2x2.sh: expected -- before the program" >&2; exit 2; }
shift 3
: "${STRATA_MN_HOST_A:?run me inside tests/multinode/with_topology.sh}"
exec "$run" -H "$STRATA_MN_HOST_A:2,$STRATA_MN_HOST_B:${STRATA_MN_SLOTS_B:-2}" --backend "$backend" \
  --launch-agent "$STRATA_MN_AGENT" --network-interface "$STRATA_MN_SUBNET" -- "$@"
